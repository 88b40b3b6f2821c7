"""The simulated judge's answers for the template stages (deterministic heuristics, no model).

``brain`` picks the function by the request's purpose (``Purpose.PARSING``, ``ABSTENTION_CHECK``, ...);
these functions only read their inputs out of the prompt's tags.

* ``AbstentionResult``: refusal phrases ("I cannot", "I don't know", "as an AI", ...).
* ``SufficiencyResult``: sufficient when every field can be filled strictly from the response.
* template parsing (any schema, usually the template's own class): each property is filled from
  the response: numbers -> the number whose surrounding words best match the field (numbers also
  in the question count last), booleans -> the best matching sentence, negated or not, strings ->
  a capitalised entity not in the question ("Paris"), or for descriptive fields the best matching
  sentence, lists -> an enumeration.
* ``EquivalenceResult``: expected and parsed values equal after normalising, or one's words
  contained in the other's ("Shakespeare" vs "William Shakespeare").
* ``TemplateExcerptsOutput`` / ``TemplateReasoningOutput``: sentences that contain each field's
  value, and a short reasoning per field.
"""

from __future__ import annotations

import json
import re
from typing import Any

from verify.llm.simulated.text import fabricate
from verify.llm.simulated.text import overlap as _overlap
from verify.llm.simulated.text import tag as _tag

REFUSAL = re.compile(
    r"\b(I cannot|I can't|I can ?not|I'm unable|I am unable|I'm not able|I am not able|I don't know|"
    r"I do not know|as an AI|I won't|I will not|I'd rather not|cannot (?:answer|help|provide)|"
    r"unable to (?:answer|help|provide)|no idea)\b",
    re.I,
)
_FIELD = re.compile(r'<field name="([^"]+)" type="([^"]*)">(.*?)</field>', re.S)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")
_ENTITY = re.compile(r"\b[A-Z][\w'-]*(?:\s+(?:of\s+|de\s+)?[A-Z][\w'-]*)*")
_NEGATION = re.compile(r"\b(no|not|never|cannot|can't|don't|doesn't|isn't|aren't|won't|without|only|neither|nor)\b", re.I)
_DESCRIPTIVE = re.compile(
    r"descri|explan|explain|reason|summar|function|role|mechanism|process|effect|detail|statement|"
    r"sentence|text|definition|justif|why|how", re.I,
)
_LEADING = {"the", "a", "an", "it", "its", "this", "that", "these", "those", "in", "on", "at", "yes", "no", "i",
            "i'm", "i've", "i'd", "i'll", "sorry",
            "hey", "sure", "so", "well", "also", "however", "but", "and", "or", "my", "our", "we", "they"}


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|\n+", text)
    return [p.strip() for p in parts if p.strip()]


def field_hints(prompt: str) -> dict[str, str]:
    return {name: f"{name.replace('_', ' ')} {desc}" for name, _type, desc in _FIELD.findall(prompt)}


# --- filling one property -----------------------------------------------------------------------


def _resolve(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in prop:
        return _resolve(defs.get(prop["$ref"].split("/")[-1], {}), defs)
    for key in ("anyOf", "oneOf"):
        if key in prop:
            options = [o for o in prop[key] if o.get("type") != "null"]
            if options:
                return _resolve(options[0], defs)
    return prop


def _number(kind: str, hint: str, response: str, question: str) -> float | int | None:
    asked = set(_NUMBER.findall(question))
    best: tuple[float, int] | None = None
    value: float | int | None = None
    for index, m in enumerate(_NUMBER.finditer(response)):
        text = m.group()
        number: float | int = float(text) if "." in text else int(text)
        if kind == "integer" and isinstance(number, float):
            if not number.is_integer():
                continue
            number = int(number)
        after = " ".join(response[m.end():].split()[:3])
        before = " ".join(response[: m.start()].split()[-2:])
        score = _overlap(hint, after) + 0.5 * _overlap(hint, before) - (1.0 if text in asked else 0.0)
        key = (score, -index)
        if best is None or key > best:
            best, value = key, number
    return value


def _boolean(hint: str, response: str, strict: bool) -> bool | None:
    sents = _sentences(response) or [response]
    ranked = sorted(sents, key=lambda s: -_overlap(hint, s))
    top = ranked[0] if ranked else ""
    if _overlap(hint, top) >= 0.3:
        return not _NEGATION.search(top)
    first = response.strip().lower()
    if re.match(r"(yes|yeah|true|correct)\b", first):
        return True
    if re.match(r"(no|false|incorrect)\b", first):
        return False
    return None if strict else False


def _entities(response: str, question: str) -> list[str]:
    asked = {w.lower() for w in re.findall(r"\w+", question)}
    scored: list[tuple[int, int, str]] = []
    for index, m in enumerate(_ENTITY.finditer(response)):
        words = m.group().split()
        while words and words[0].lower() in _LEADING:
            words = words[1:]
        if not words:
            continue
        entity = " ".join(words).strip("'-")
        before = response[: m.start()].rstrip()
        initial = not before or before[-1] in ".!?:\n"
        score = (0 if all(w.lower() in asked for w in words) else 2) + (0 if initial else 1) + (1 if len(words) > 1 else 0)
        scored.append((score, -index, entity))
    return [e for _, _, e in sorted(scored, reverse=True)]


def _best_sentence(hint: str, response: str, question: str, strict: bool) -> str | None:
    sents = _sentences(response)
    if not sents:
        return None
    best = max(sents, key=lambda s: (_overlap(hint, s), -sents.index(s)))
    if strict and _overlap(hint, best) == 0:
        # nothing names the field: still sufficient when the sentence is on the question's topic
        best = max(sents, key=lambda s: (_overlap(question, s), -sents.index(s)))
        if _overlap(question, best) < 0.2:
            return None
    return best.rstrip(".!? ")


def _string(prop: dict[str, Any], hint: str, response: str, question: str, strict: bool) -> str | None:
    if "enum" in prop:
        for option in prop["enum"]:
            if str(option).lower() in response.lower():
                return str(option)
        return None if strict else str(prop["enum"][0])
    if not _DESCRIPTIVE.search(hint):
        found = _entities(response, question)
        if found:
            return found[0]
    return _best_sentence(hint, response, question, strict)


def _items(hint: str, response: str, question: str) -> list[str] | None:
    for sentence in sorted(_sentences(response), key=lambda s: -_overlap(hint, s)):
        parts = [p for p in re.split(r"\s*,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+", sentence.rstrip(".!?")) if p.strip()]
        if len(parts) < 2:
            continue
        out = [parts[0].split()[-1]]
        for part in parts[1:]:
            words = part.split()
            out.append(" ".join(words if len(words) <= 3 else words[:1]))
        return [o.strip(" .;:!?") for o in out]
    found = _entities(response, question)
    return found or None


def fill(prop: dict[str, Any], defs: dict[str, Any], hint: str, response: str, question: str, strict: bool = False) -> Any:
    prop = _resolve(prop, defs)
    if "const" in prop:
        return prop["const"]
    kind = prop.get("type")
    if "enum" in prop and kind != "string":
        return next((o for o in prop["enum"] if str(o).lower() in response.lower()), None)
    if kind in ("integer", "number"):
        return _number(kind, hint, response, question)
    if kind == "boolean":
        return _boolean(hint, response, strict)
    if kind == "string":
        return _string(prop, hint, response, question, strict)
    if kind == "array":
        inner = _resolve(prop.get("items", {}), defs)
        if inner.get("type") in ("integer", "number"):
            asked = set(_NUMBER.findall(question))
            nums = [n for n in _NUMBER.findall(response) if n not in asked]
            return [int(float(n)) if inner["type"] == "integer" else float(n) for n in nums] or None
        if inner.get("type") == "string":
            return _items(hint, response, question)
        return None if strict else []
    if kind == "object":
        props = prop.get("properties", {})
        return {k: fill(v, defs, f"{k.replace('_', ' ')} {v.get('description', '')}", response, question, strict)
                for k, v in props.items()}
    return None


def _hint(name: str, prop: dict[str, Any], hints: dict[str, str]) -> str:
    return hints.get(name) or f"{name.replace('_', ' ')} {prop.get('description', '')}"


def parse(schema: dict[str, Any], prompt: str) -> dict[str, Any]:
    response, question = _tag(prompt, "response") or "", _tag(prompt, "question") or ""
    defs, hints = schema.get("$defs", {}), field_hints(prompt)
    return {name: fill(prop, defs, _hint(name, prop, hints), response, question)
            for name, prop in schema.get("properties", {}).items()}


# --- the other replies --------------------------------------------------------------------------


def abstention(prompt: str) -> dict[str, Any]:
    response = _tag(prompt, "response") or ""
    m = REFUSAL.search(response)
    if m or not response.strip():
        why = f"the response refuses or abstains ('{m.group()}')" if m else "the response is empty"
        return {"reasoning": why, "abstention_detected": True}
    return {"reasoning": "the response attempts an answer", "abstention_detected": False}


def sufficiency(prompt: str) -> dict[str, Any]:
    response, question = _tag(prompt, "response") or "", _tag(prompt, "question") or ""
    schema = json.loads(_tag(prompt, "template_schema") or "{}")
    defs, hints = schema.get("$defs", {}), field_hints(prompt)
    missing = [name for name, prop in schema.get("properties", {}).items()
               if fill(prop, defs, _hint(name, prop, hints), response, question, strict=True) in (None, [], "")]
    if missing:
        return {"reasoning": f"the response gives no value for: {', '.join(missing)}", "sufficient": False}
    return {"reasoning": "every field can be filled from the response", "sufficient": True}


def _norm(value: Any) -> str:
    return " ".join(re.findall(r"[a-z0-9.]+", json.dumps(value).lower()))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return sorted(map(_norm, a)) == sorted(map(_norm, b))
    na, nb = _norm(a), _norm(b)
    if not na or not nb:
        return na == nb
    try:
        return float(na) == float(nb)
    except ValueError:
        pass
    wa, wb = set(na.split()), set(nb.split())
    return wa <= wb or wb <= wa


def equivalence(prompt: str) -> dict[str, Any]:
    expected = json.loads(_tag(prompt, "expected") or "{}")
    parsed = json.loads(_tag(prompt, "parsed") or "{}")
    if not isinstance(expected, dict) or not isinstance(parsed, dict):
        return {"reasoning": "not comparable", "equivalent": False}
    different = [k for k in expected if not _same(expected[k], parsed.get(k))]
    if different:
        return {"reasoning": f"different values for: {', '.join(different)}", "equivalent": False}
    return {"reasoning": "same facts, different wording", "equivalent": True}


def _simple(label: str) -> dict[str, Any]:
    kinds = [k.strip() for k in label.split("|") if k.strip() and k.strip() != "null"]
    kind = kinds[0] if kinds else "string"
    return {"type": kind if kind in ("integer", "number", "boolean", "string") else "string"}


def excerpts(prompt: str, fabricated: bool) -> dict[str, Any]:
    response, question = _tag(prompt, "response") or "", _tag(prompt, "question") or ""
    limit = int(_tag(prompt, "max_excerpts") or 3)
    out: dict[str, list[dict[str, str]]] = {}
    sents = _sentences(response) or [response]
    for name, _type, desc in _FIELD.findall(prompt):
        hint = f"{name.replace('_', ' ')} {desc}"
        value = fill(_simple(_type), {}, hint, response, question)
        text = str(value).lower() if value not in (None, True, False) else ""
        chosen = [s for s in sents if text and text in s.lower()] or sorted(sents, key=lambda s: -_overlap(hint, s))[:1]
        chosen = [s for s in chosen if s.strip()][: max(1, min(limit, 2))]
        if fabricated:
            chosen = [fabricate(s) for s in chosen] or [fabricate("The answer cites 3 independent sources.")]
        out[name] = [{"text": s, "confidence": "high"} for s in chosen]
    return {"excerpts": out}


def reasoning(prompt: str) -> dict[str, Any]:
    response, question = _tag(prompt, "response") or "", _tag(prompt, "question") or ""
    out: dict[str, str] = {}
    for name, _type, desc in _FIELD.findall(prompt):
        hint = f"{name.replace('_', ' ')} {desc}"
        value = fill(_simple(_type), {}, hint, response, question)
        cited = "[E1]" if re.search(rf'<evidence field="{re.escape(name)}">\s*\[E1\]', prompt) else "the response"
        out[name] = f"Based on {cited}, the response gives {json.dumps(value)} for '{name}'."
    return {"reasoning": out}
