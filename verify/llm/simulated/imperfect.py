"""An imperfect simulated judge: the reply mistakes small models make (Qwen2.5-0.5B, SmolLM2).

``brain.reply`` first builds the perfect reply; for a share of requests (``Imperfections.rate``)
:func:`imperfect_reply` then rewrites its *form* with one behaviour. The judgment underneath (the
score, the class, the passages quoted) stays the perfect judge's, so a verifier that recovers from
the mistake (by reading leniently or by asking again) reaches the same verdicts.

Behaviours (:data:`BEHAVIOURS`), each applied only where it makes sense:

* ``schema_echo``: the JSON schema it was given (the request's, or the one in the prompt after
  "matching this schema") instead of an answer; any JSON reply.
* ``placeholder_copy``: the prompt's placeholders copied: ``"confidence": "high|medium|low"`` or an
  extra ``"..."`` / ``"text"`` quote in excerpt replies, ``"reasoning": "..."`` in the checks,
  ``"justification": "..."`` in risk replies, an extra ``{"trait_name": "...", "class_name": "..."}``.
* ``class_description``: a literal trait answered with its class's description, not its name.
* ``invented_trait``: a batch reply (also batched deep judgment's) with one trait renamed (spaces for
  underscores, other case, or the first words of its description) and/or a trait not asked added.
* ``quote_question``: an excerpt reply quoting a sentence of the ``<question>``, not the response.
* ``insert_words``: a word ("very", "also", "clearly") inserted inside a quote.
* ``elide``: a quote spanning two sentences (or a long one) with the middle cut to "..." / "…" / "[...]".
* ``prose_wrap``: prose and a code fence around the JSON; any JSON reply.
* ``out_of_range``: a score outside the trait's [min, max] (batch, single and batched-deep-judgment verdicts).

Free-text replies (answers, deep-judgment reasoning) have no imperfection. Whether a request gets
one, which one (among those enabled that apply) and which variant, is decided by hashing the seed
and every message: the same request always gets the same reply, while a retry (whose messages
carry the feedback) is drawn again. ``constant_reply`` answers every judge call (any purpose but
the answer) with that one text, as a stub judge would.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from verify.llm.ports import Message, Purpose
from verify.llm.simulated.batch_brain import changed_verdicts, trait_entries
from verify.llm.simulated.text import TraitSpec, sentences, tag, traits

BEHAVIOURS: tuple[str, ...] = (
    "schema_echo", "placeholder_copy", "class_description", "invented_trait", "quote_question",
    "insert_words", "elide", "prose_wrap", "out_of_range",
)
"""Every imperfection, in a fixed order (the order the pick among applicable ones follows)."""

T = TypeVar("T")


@dataclass(frozen=True)
class Imperfections:
    """How imperfect the simulated judge is. ``rate``: the share of replies (0..1) that get one
    imperfection, chosen among ``behaviours``; ``constant_reply``: answer every judge call with it."""

    rate: float = 0.0
    behaviours: tuple[str, ...] = BEHAVIOURS
    constant_reply: str | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"imperfection_rate must be between 0 and 1, got {self.rate}")
        unknown = [b for b in self.behaviours if b not in BEHAVIOURS]
        if unknown:
            raise ValueError(f"unknown imperfection(s) {unknown}; choose from {list(BEHAVIOURS)}")

    @classmethod
    def of(
        cls, rate: float = 0.0, behaviours: str | Sequence[str] | None = None, constant_reply: str | None = None
    ) -> Imperfections:
        """Settings as given in ``extra_kwargs`` or on the command line: ``behaviours`` is a list or a
        comma-separated string, ``None`` or empty for all of them."""
        if isinstance(behaviours, str):
            behaviours = [b for b in (part.strip() for part in behaviours.split(",")) if b]
        chosen = tuple(dict.fromkeys(behaviours or BEHAVIOURS))
        return cls(float(rate), chosen, constant_reply)

    @property
    def label(self) -> str:
        """These settings in a model id (``""`` for the perfect judge), so cached replies of one
        judge are never served for another."""
        parts = []
        if self.rate:
            chosen = "all" if set(self.behaviours) == set(BEHAVIOURS) else "+".join(self.behaviours)
            parts.append(f"i{self.rate}:{chosen}")
        if self.constant_reply is not None:
            parts.append(f"c{hashlib.sha256(self.constant_reply.encode()).hexdigest()[:12]}")
        return ":".join(parts)


@dataclass(frozen=True)
class PerfectReply:
    """What a behaviour rewrites: the request (resolved purpose, prompt, schema) and the perfect
    reply; ``variant`` is a hashed number that picks among a behaviour's variants."""

    purpose: Purpose | None
    prompt: str
    schema: dict[str, Any]
    value: dict[str, Any]
    variant: int

    def copy(self) -> dict[str, Any]:
        return copy.deepcopy(self.value)

    def pick(self, options: Sequence[T], salt: int = 0) -> T:
        return options[(self.variant >> (8 * salt)) % len(options)]


@dataclass(frozen=True)
class Imperfect:
    """The reply a request got instead of the perfect one, and the behaviour that shaped it."""

    behaviour: str
    text: str


Behaviour = Callable[[PerfectReply], str | None]
"""Rewrites a perfect reply, or returns ``None`` where the behaviour does not apply."""


def _digest(messages: Sequence[Message], seed: int) -> bytes:
    hasher = hashlib.sha256(f"imperfect:{seed}".encode())
    for message in messages:
        hasher.update(f"\x1e{message.role}\x1f{message.content}".encode())
    return hasher.digest()


def imperfect_reply(
    purpose: Purpose | None,
    messages: Sequence[Message],
    prompt: str,
    schema: dict[str, Any],
    value: dict[str, Any],
    settings: Imperfections,
    seed: int,
) -> Imperfect | None:
    """The reply with one imperfection, or ``None`` when this request gets the perfect ``value``
    (not drawn, or no enabled behaviour applies)."""
    if not settings.rate:
        return None
    digest = _digest(messages, seed)
    if int.from_bytes(digest[:4], "big") / 2**32 >= settings.rate:
        return None
    reply = PerfectReply(purpose, prompt, schema, value, int.from_bytes(digest[8:12], "big"))
    options = [(name, text) for name in settings.behaviours if (text := BEHAVIOUR_FUNCTIONS[name](reply)) is not None]
    if not options:
        return None
    name, text = options[int.from_bytes(digest[4:8], "big") % len(options)]
    return Imperfect(name, text)


# --- the behaviours -----------------------------------------------------------------------------

_SCHEMA_CUE = "matching this schema"


def embedded_schema(prompt: str) -> dict[str, Any] | None:
    """The JSON schema a prompt shows after "matching this schema" (template parsing), if any."""
    at = prompt.find(_SCHEMA_CUE)
    start = prompt.find("{", at) if at >= 0 else -1
    if start < 0:
        return None
    try:
        found, _ = json.JSONDecoder().raw_decode(prompt, start)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def schema_echo(reply: PerfectReply) -> str | None:
    schema = reply.schema or embedded_schema(reply.prompt)
    return json.dumps(schema) if schema else None


_WRAPS = (
    ("Sure! Here is the JSON:\n```json\n", "\n```\nHope this helps."),
    ("Here is my evaluation:\n\n", "\n\nLet me know if you need anything else."),
    ("```json\n", "\n```"),
    ("Okay. Based on the response, the answer is ", " I hope this is correct!"),
)


def prose_wrap(reply: PerfectReply) -> str:
    head, tail = reply.pick(_WRAPS)
    return head + json.dumps(reply.value, indent=2 if "```" in head else None) + tail


_CHECKS = frozenset({Purpose.ABSTENTION_CHECK, Purpose.SUFFICIENCY_CHECK, Purpose.EMBEDDING_CHECK})
_RISKS = frozenset({Purpose.DJ_HALLUCINATION, Purpose.TEMPLATE_DJ_HALLUCINATION})
_VERDICTS = frozenset({Purpose.RUBRIC_SINGLE, Purpose.DJ_SCORE})


def _quote_lists(purpose: Purpose | None, value: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The lists of quote items of an excerpt reply (one per template field or batched trait), in order."""
    excerpts = value.get("excerpts")
    if purpose is Purpose.DJ_EXCERPTS and isinstance(excerpts, list):
        return [excerpts]
    if purpose is Purpose.DJ_BATCH_EXCERPTS:
        return [e["excerpts"] for _, e in trait_entries(value) if isinstance(e.get("excerpts"), list)]
    if purpose is Purpose.TEMPLATE_DJ_EXCERPTS and isinstance(excerpts, dict):
        return [items for items in excerpts.values() if isinstance(items, list)]
    return []


def placeholder_copy(reply: PerfectReply) -> str | None:
    out = reply.copy()
    purpose = reply.purpose
    lists = _quote_lists(purpose, out)
    if lists:
        items = [item for quotes in lists for item in quotes]
        options = ["extra_dots", "extra_text"] + (["confidence"] if items else [])
        choice = reply.pick(options)
        if choice == "confidence":
            for item in items:
                item["confidence"] = "high|medium|low"
        else:
            target = next((quotes for quotes in lists if quotes), lists[0])
            target.append({"text": "..." if choice == "extra_dots" else "text", "confidence": "high|medium|low"})
        return json.dumps(out)
    if purpose in _CHECKS and isinstance(out.get("reasoning"), str):
        out["reasoning"] = "..."
        return json.dumps(out)
    if purpose in _RISKS and out.get("assessments"):
        for item in out["assessments"]:
            item["justification"] = "..."
        return json.dumps(out)
    if purpose is Purpose.RUBRIC_LITERAL_BATCH and isinstance(out.get("classifications"), list):
        out["classifications"].append({"trait_name": "...", "class_name": "..."})
        return json.dumps(out)
    if purpose is Purpose.TEMPLATE_DJ_REASONING and isinstance(out.get("reasoning"), dict):
        out["reasoning"]["<field name>"] = "..."
        return json.dumps(out)
    return None


def _description(spec: TraitSpec | None, name: Any) -> str | None:
    if spec is None or spec.kind != "literal":
        return None
    desc = dict(spec.classes).get(str(name), "").strip()
    return desc if desc and desc.lower() != str(name).lower() else None


def class_description(reply: PerfectReply) -> str | None:
    out = reply.copy()
    specs = traits(reply.prompt)
    if reply.purpose is Purpose.RUBRIC_LITERAL_BATCH:
        by_name = {s.name: s for s in specs}
        changed = False
        for item in out.get("classifications") or []:
            desc = _description(by_name.get(item.get("trait_name")), item.get("class_name"))
            if desc:
                item["class_name"], changed = desc, True
        return json.dumps(out) if changed else None
    if reply.purpose in _VERDICTS and "classification" in out and specs:
        desc = _description(specs[0], out["classification"])
        if desc:
            out["classification"] = desc
            return json.dumps(out)
    found = changed_verdicts(out, specs, _description)
    if reply.purpose is Purpose.DJ_BATCH_SCORE and found:
        entry, entry["verdict"] = reply.pick(found)
        return json.dumps(out)
    return None


_EXTRA_TRAITS = ("overall_quality", "accuracy", "helpfulness", "relevance")


def renamings(spec: TraitSpec, taken: set[str]) -> list[str]:
    """Names a small model writes for ``spec``: spaces for underscores, another case, or the first
    words of its description; never one of the ``taken`` names."""
    options = [spec.name.replace("_", " "), spec.name.title(), spec.name.upper()]
    first = " ".join(re.findall(r"[\w'-]+", spec.summary)[:4])
    if first:
        options.append(first)
    return [o for o in dict.fromkeys(options) if o != spec.name and o not in taken]


def invented_trait(reply: PerfectReply) -> str | None:
    out = reply.copy()
    specs = {s.name: s for s in traits(reply.prompt)}
    if reply.purpose is Purpose.RUBRIC_BATCH and isinstance(out.get("scores"), dict) and out["scores"]:
        keys = list(out["scores"])
    elif reply.purpose is Purpose.RUBRIC_LITERAL_BATCH and out.get("classifications"):
        keys = [item.get("trait_name") for item in out["classifications"]]
    elif reply.purpose in (Purpose.DJ_BATCH_EXCERPTS, Purpose.DJ_BATCH_SCORE) and trait_entries(out):  # one renamed key, or one more trait
        keys = [name for name, _ in trait_entries(out)]
    else:
        return None
    renamed: dict[str, str] = {}
    mode = reply.pick(("rename", "add", "both"))
    if mode != "add":
        target = reply.pick(keys, 1)
        options = renamings(specs[target], set(specs)) if target in specs else []
        if options:
            renamed[target] = reply.pick(options, 2)
    extra = next((n for n in _EXTRA_TRAITS if n not in specs), None) if mode != "rename" or not renamed else None
    if not renamed and extra is None:
        return None
    key = "scores" if isinstance(out.get("scores"), dict) else "traits" if isinstance(out.get("traits"), dict) else None
    if key is not None:  # a {trait name: value} object
        mapping = {renamed.get(k, k): v for k, v in out[key].items()}
        if extra is not None:
            mapping[extra] = next(iter(out[key].values()))
        out[key] = mapping
        return json.dumps(out)
    for item in out["classifications"]:
        item["trait_name"] = renamed.get(item["trait_name"], item["trait_name"])
    if extra is not None:
        out["classifications"].append({"trait_name": extra, "class_name": out["classifications"][0]["class_name"]})
    return json.dumps(out)


def quote_question(reply: PerfectReply) -> str | None:
    question = (tag(reply.prompt, "question") or "").strip()
    out = reply.copy()
    target = next((quotes for quotes in _quote_lists(reply.purpose, out) if quotes), None)
    if not question or target is None:
        return None
    target[:] = [{"text": reply.pick(sentences(question) or [question]), "confidence": "high"}]
    return json.dumps(out)


_INSERTED = ("very", "also", "clearly")


def insert_words(reply: PerfectReply) -> str | None:
    out = reply.copy()
    items = [item for quotes in _quote_lists(reply.purpose, out) for item in quotes
             if len(str(item.get("text", "")).split()) >= 4]
    if not items:
        return None
    item = reply.pick(items)
    text = str(item["text"])
    words = list(re.finditer(r"\S+", text))
    at = words[len(words) // 2].start()
    item["text"] = f"{text[:at]}{reply.pick(_INSERTED, 1)} {text[at:]}"
    return json.dumps(out)


_ELLIPSES = (" ... ", " … ", " [...] ", "...")


def elided(quote: str, response: str) -> tuple[str, str] | None:
    """(head, tail) of the passage from ``quote`` to the end of the sentence after it (or of
    ``quote`` alone when it is long): both verbatim in ``response``, the middle left out."""
    start = response.find(quote)
    if start < 0:
        return None
    end = start + len(quote)
    following = sentences(response[end:])
    if following:
        at = response.find(following[0], end)
        end = at + len(following[0])
    span = response[start:end]
    words = list(re.finditer(r"\S+", span))
    if len(words) < 9:
        return None
    keep = min(5, len(words) // 3)
    return span[: words[keep - 1].end()], span[words[-keep].start():]


def elide(reply: PerfectReply) -> str | None:
    response = tag(reply.prompt, "response") or ""
    out = reply.copy()
    items = [item for quotes in _quote_lists(reply.purpose, out) for item in quotes]
    cut = [(item, parts) for item in items if (parts := elided(str(item.get("text", "")), response))]
    if not cut:
        return None
    item, (head, tail) = reply.pick(cut)
    item["text"] = head + reply.pick(_ELLIPSES, 1) + tail
    return json.dumps(out)


def outside(spec: TraitSpec, value: Any, variant: int) -> int | None:
    """A score outside ``spec``'s range that leans the way ``value`` does (``None`` unless a score trait)."""
    if spec.kind != "score" or isinstance(value, bool) or not isinstance(value, int):
        return None
    lo = spec.lo if spec.lo is not None else 1
    hi = spec.hi if spec.hi is not None else 5
    options = [hi + 1 if 2 * value >= lo + hi else lo - 1]
    if hi > lo:
        tenths = round((value - lo) / (hi - lo) * 10)  # read as a score out of 10
        if not lo <= tenths <= hi:
            options.append(tenths)
    return options[variant % len(options)]


def out_of_range(reply: PerfectReply) -> str | None:
    out = reply.copy()
    specs = traits(reply.prompt)
    if reply.purpose is Purpose.RUBRIC_BATCH and isinstance(out.get("scores"), dict):
        by_name = {s.name: s for s in specs}
        scored = [(name, bad) for name, v in out["scores"].items()
                  if name in by_name and (bad := outside(by_name[name], v, reply.variant)) is not None]
        if not scored:
            return None
        name, bad = reply.pick(scored, 1)
        out["scores"][name] = bad
        return json.dumps(out)
    if reply.purpose in _VERDICTS and "score" in out and specs:
        bad = outside(specs[0], out["score"], reply.variant)
        if bad is not None:
            out["score"] = bad
            return json.dumps(out)
    found = changed_verdicts(out, specs, lambda spec, value: outside(spec, value, reply.variant))
    if reply.purpose is Purpose.DJ_BATCH_SCORE and found:
        entry, entry["verdict"] = reply.pick(found, 1)
        return json.dumps(out)
    return None


BEHAVIOUR_FUNCTIONS: dict[str, Behaviour] = dict(zip(BEHAVIOURS, (
    schema_echo, placeholder_copy, class_description, invented_trait, quote_question, insert_words, elide,
    prose_wrap, out_of_range,
), strict=True))
"""Each behaviour by its name (the function of that name)."""
