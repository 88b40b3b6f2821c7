"""The simulated judge's brain: a pure, deterministic function from (messages, schema) to reply text.

It reads the prompt conventions of ``verify.judging.prompts`` (``<question>``, ``<response>``, ``<trait>``
blocks) and the requested schema's title, and answers sensibly (the template stages' replies are in
``verify.llm.simulated.template_brain``): it quotes real sentences of the
response as excerpts, scores by word overlap between the trait description and the response,
and returns valid JSON. It is a stand-in for tests and the offline demo, not a judge of quality.

Faults (decided by hashing, so they are reproducible): ``malformed_json`` breaks a share of JSON
replies; ``fabricate_excerpts`` makes the excerpts for a share of *responses* fabricated (number
changed, words invented), on every attempt, so those tasks end up without valid evidence.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from verify.llm.ports import Message

STOP = set(
    "the a an and or of to in on for with is are was were be been by as at that this it its from "
    "which who whom whose what when where how why does do did not no response answer question trait "
    "should must provide provides includes include contains contain mentions mention any all each "
    "well clear more most very than then there their they them these those into about over under".split()
)
_TRAIT = re.compile(r'<trait name="([^"]*)" kind="([^"]*)"(?: min="([^"]*)" max="([^"]*)")?>(.*?)</trait>', re.S)
_ABSENCE = re.compile(
    r"\b(does not|doesn't|do not|don't|never|avoids?|without|free of|absence of|refrains? from|"
    r"not (?:mention|include|contain|recommend|use|suggest|claim))\b",
    re.I,
)


VERSION = "2"  # bump when replies change, so cached simulated replies are not reused


@dataclass(frozen=True)
class Faults:
    """Reply-level faults, decided deterministically per request (rates in 0..1)."""

    malformed_json: float = 0.0
    fabricate_excerpts: float = 0.0
    seed: int = 0


@dataclass(frozen=True)
class TraitSpec:
    name: str
    kind: str
    lo: int | None
    hi: int | None
    description: str


def _share(key: str, seed: int) -> float:
    digest = hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()
    return int(digest[:8], 16) / 0xFFFFFFFF


def fabricates(response: str, faults: Faults | None) -> bool:
    """Whether excerpts for this response are fabricated under ``faults`` (same rule as ``reply``)."""
    return bool(faults and faults.fabricate_excerpts and _share(response, faults.seed) < faults.fabricate_excerpts)


def _tag(text: str, tag: str) -> str | None:
    m = re.search(rf"<{tag}(?: [^>]*)?>(.*?)</{tag}>", text, re.S)
    return m.group(1) if m else None


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2 and w not in STOP]


def overlap(criterion: str, text: str) -> float:
    """Share of the criterion's content words (5-letter stems) found in the text."""
    wanted = {w[:5] for w in _words(criterion)}
    if not wanted:
        return 0.0
    have = {w[:5] for w in _words(text)}
    return len(wanted & have) / len(wanted)


def _traits(prompt: str) -> list[TraitSpec]:
    out = []
    for name, kind, lo, hi, desc in _TRAIT.findall(prompt):
        out.append(TraitSpec(name, kind, int(lo) if lo else None, int(hi) if hi else None, desc))
    return out


def _classes(desc: str) -> list[tuple[str, str]]:
    m = re.search(r"Classes: (.*)", desc)
    if not m:
        return []
    return [(p.split(":", 1)[0].strip(), p.split(":", 1)[-1]) for p in m.group(1).split("; ")]


def _absence_terms(desc: str) -> list[str]:
    m = _ABSENCE.search(desc)
    tail = desc[m.end():] if m else desc
    return _words(tail)


def is_absence(desc: str) -> bool:
    return bool(_ABSENCE.search(desc))


_NEGATED = re.compile(r"\b(no|not|never|cannot|can't|don't|doesn't|only|without|won't)\b", re.I)


def violating_sentences(desc: str, response: str) -> list[str]:
    """For an absence criterion: affirmative sentences that mention what it forbids."""
    terms = {w[:5] for w in _absence_terms(desc)}
    if not terms:
        return []
    out = []
    for sentence in sentences(response) or [response]:
        have = {w[:5] for w in _words(sentence)}
        if len(terms & have) / len(terms) >= 0.5 and not _NEGATED.search(sentence):
            out.append(sentence)
    return out


def violated(desc: str, response: str) -> bool:
    return bool(violating_sentences(desc, response))


def judge_value(trait: TraitSpec, response: str) -> Any:
    """The verdict for a trait, from overlap (or, for absence criteria, from what is present)."""
    if trait.kind == "literal":
        classes = _classes(trait.description)
        best = max(classes, key=lambda c: (overlap(c[1] + " " + c[0], response), -classes.index(c)))
        return best[0]
    if is_absence(trait.description):
        ok = not violated(trait.description, response)
        if trait.kind == "boolean":
            return ok
        lo, hi = trait.lo or 1, trait.hi or 5
        return hi if ok else lo
    share = overlap(trait.description, response)
    if trait.kind == "boolean":
        return share >= 0.2 or len(_words(response)) >= 12 or not _words(trait.description)
    lo, hi = trait.lo if trait.lo is not None else 1, trait.hi if trait.hi is not None else 5
    # Long, on-topic answers score higher; anything readable gets at least the middle third.
    length_bonus = min(len(_words(response)) / 30, 1.0)
    return max(lo, min(hi, lo + round((0.2 + 0.5 * share + 0.6 * length_bonus) * (hi - lo))))


def sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|\n+", text)
    return [p.strip() for p in parts if len(p.strip()) >= 12]


def excerpts_for(trait: TraitSpec, response: str, limit: int) -> dict[str, Any]:
    sents = sentences(response) or ([response.strip()] if response.strip() else [])
    if is_absence(trait.description):
        hits = violating_sentences(trait.description, response)
        if not hits:
            return {"excerpts": [], "nothing_relevant": True}
        ranked = hits
    else:
        ranked = sorted(sents, key=lambda s: -overlap(trait.description, s))
    chosen = ranked[: max(1, min(limit, 3))]
    return {
        "excerpts": [{"text": s, "confidence": "high" if overlap(trait.description, s) > 0.3 else "medium"} for s in chosen],
        "nothing_relevant": False,
    }


def fabricate(text: str) -> str:
    """An altered quote: numbers changed, a word invented, so validation must reject it."""
    changed = re.sub(r"\d+", lambda m: str(int(m.group()) + 7), text)
    return f"Reportedly, {changed.rstrip('.')} according to an unnamed 2019 review."


def _reasoning(prompt: str) -> str:
    trait = _traits(prompt)[0]
    response = _tag(prompt, "response") or ""
    evidence = _tag(prompt, "evidence")
    value = judge_value(trait, response)
    cited = "[E1]" if evidence and "[E1]" in evidence else "the response as a whole"
    return (
        f"Considering the trait '{trait.name}' ({trait.description.strip()[:120]}), I looked at {cited}. "
        f"Word overlap with the criterion is {overlap(trait.description, response):.2f}. "
        f"VERDICT: {json.dumps(value)}"
    )


def _from_reasoning(prompt: str) -> Any:
    reasoning = _tag(prompt, "reasoning") or ""
    m = re.findall(r"VERDICT: (.+)", reasoning)
    return json.loads(m[-1]) if m else None


def _schema_default(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    if "$ref" in schema:
        return _schema_default(defs.get(schema["$ref"].split("/")[-1], {}), defs)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return _schema_default(schema[key][0], defs)
    kind = schema.get("type")
    if kind == "object":
        return {k: _schema_default(v, defs) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return []
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    return "simulated"


def structured(title: str, prompt: str, schema: dict[str, Any], faults: Faults | None) -> dict[str, Any]:
    response = _tag(prompt, "response") or ""
    traits = _traits(prompt)
    if title == "BatchRubricScores":
        return {"scores": {t.name: judge_value(t, response) for t in traits}}
    if title == "BatchLiteralClassifications":
        return {"classifications": [{"trait_name": t.name, "class_name": judge_value(t, response)} for t in traits]}
    if title in ("SingleBooleanScore", "SingleNumericScore", "SingleLiteralClassification"):
        value = _from_reasoning(prompt) if "<reasoning>" in prompt else None
        if value is None and traits:
            value = judge_value(traits[0], response)
        key = {"SingleBooleanScore": "result", "SingleNumericScore": "score"}.get(title, "classification")
        return {key: value}
    if title == "TraitExcerptsOutput":
        limit = int(_tag(prompt, "max_excerpts") or 3)
        out = excerpts_for(traits[0], response, limit)
        if fabricates(response, faults):
            out["excerpts"] = [{"text": fabricate(e["text"]), "confidence": "high"} for e in out["excerpts"]] or [
                {"text": fabricate("The answer cites 3 independent sources."), "confidence": "high"}
            ]
            out["nothing_relevant"] = False
        return out
    if title == "ConfusionMatrixOutput":
        expected = re.findall(r"^- (.+)$", _tag(prompt, "expected") or "", re.M)
        absent = re.findall(r"^- (.+)$", _tag(prompt, "should_be_absent") or "", re.M)
        tp = [e for e in expected if overlap(e, response) >= 0.6]
        return {
            "tp": tp, "fn": [e for e in expected if e not in tp], "fp": [],
            "tn": [a for a in absent if overlap(a, response) < 0.6],
        }
    if title == "HallucinationRiskOutput":
        assessments: list[dict[str, str]] = []
        for eid, text in re.findall(r'<excerpt id="([^"]+)">(.*?)</excerpt>', prompt, re.S):
            sources = prompt.split(f'<search_results for="{eid}">', 1)[-1].split("</search_results>", 1)[0]
            share = overlap(text, sources)
            risk = "none" if share >= 0.6 else "low" if share >= 0.4 else "medium" if share >= 0.2 else "high"
            assessments.append({"excerpt_id": eid, "risk": risk, "justification": f"overlap with sources {share:.2f}"})
        return {"assessments": assessments}
    template = _template_reply(title, prompt, schema, faults)
    if template is not None:
        return template
    return dict(_schema_default(schema, schema.get("$defs", {})))


def _template_reply(title: str, prompt: str, schema: dict[str, Any], faults: Faults | None) -> dict[str, Any] | None:
    """The template stages' replies (verify.llm.simulated.template_brain); None for other schemas."""
    from verify.llm.simulated import template_brain as tb

    if title == "AbstentionResult":
        return tb.abstention(prompt)
    if title == "SufficiencyResult":
        return tb.sufficiency(prompt)
    if title == "EquivalenceResult":
        return tb.equivalence(prompt)
    if title == "TemplateExcerptsOutput":
        return tb.excerpts(prompt, fabricates(_tag(prompt, "response") or "", faults))
    if title == "TemplateReasoningOutput":
        return tb.reasoning(prompt)
    if tb.is_parse(title, prompt):
        return tb.parse(schema, prompt)
    return None


def reply(messages: Sequence[Message], schema: dict[str, Any] | None, faults: Faults | None = None) -> str:
    """Return the reply text for a request: JSON matching ``schema`` when one is given."""
    prompt = "\n".join(m.content for m in messages if m.role != "system")
    if schema is None:
        if "<trait" in prompt and "Explain" in prompt:
            return _reasoning(prompt)
        question = _tag(prompt, "question") or (messages[-1].content if messages else "")
        return f"This is a simulated answer to: {question.strip()}"
    title = str(schema.get("title", ""))
    text = json.dumps(structured(title, prompt, schema, faults))
    if faults and faults.malformed_json and _share(prompt + title, faults.seed + 1) < faults.malformed_json:
        return "Sure! Here is my assessment: " + text[: max(1, len(text) // 2)]
    return text
