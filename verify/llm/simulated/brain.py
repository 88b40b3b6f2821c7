"""The simulated judge's brain: a pure, deterministic function from a request to reply text.

What kind of reply to give is decided by the request's :class:`~verify.llm.ports.Purpose` (over HTTP
without a purpose: by the requested schema's ``title``), never by the prompt's wording; see
:data:`HANDLERS`. The inputs are then read from the prompt's structural tags (``<question>``,
``<response>``, ``<trait ...>``, ``<excerpt>``, ...) of ``verify.judging.prompts``, so rewording a
prompt does not change what the judge does. It answers sensibly (the template stages' replies are
in ``verify.llm.simulated.template_brain``): it quotes real sentences of the response as excerpts,
scores by word overlap between the trait description and the response, and returns valid JSON.
Absence criteria ("does not recommend X") are recognised by the judging code's own rule
(:func:`verify.judging.consistency.absence_cue`). It is a stand-in for tests and the offline
demo, not a judge of quality.

Faults (decided by hashing, so they are reproducible): ``malformed_json`` breaks a share of JSON
replies; ``fabricate_excerpts`` makes the excerpts for a share of *responses* fabricated (number
changed, words invented), on every attempt, so those tasks end up without valid evidence.
``imperfections`` (``verify.llm.simulated.imperfect``) give a share of replies the form mistakes of
small models (the schema echoed, prose around the JSON, a class description for its name, ...),
never changing the judgment underneath; ``constant_reply`` answers every judge call with one text.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from verify.judging.consistency import absence_cue
from verify.llm.ports import Message, Purpose
from verify.llm.simulated import batch_brain as bb
from verify.llm.simulated import judge_brain as jb
from verify.llm.simulated import reviser
from verify.llm.simulated import template_brain as tb
from verify.llm.simulated.imperfect import Imperfections, imperfect_reply
from verify.llm.simulated.text import TraitSpec, fabricate, overlap, sentences, tag, traits, words

VERSION = "5"  # bump when replies change, so cached simulated replies are not reused


@dataclass(frozen=True)
class Faults:
    """Reply-level faults, decided deterministically per request (rates in 0..1)."""

    malformed_json: float = 0.0
    fabricate_excerpts: float = 0.0
    seed: int = 0
    imperfections: Imperfections = Imperfections()


@dataclass(frozen=True)
class SimulatedRequest:
    """One request to the simulated judge.

    ``purpose`` is the asking step; ``None`` when it is not known (an HTTP request without the
    ``X-Verify-Purpose`` header): then the schema's title decides, and free text is an answer.
    """

    purpose: Purpose | None
    messages: tuple[Message, ...]
    schema: dict[str, Any] | None = None
    faults: Faults | None = None


ReplyFunction = Callable[[SimulatedRequest], str]
"""What the simulated HTTP server calls to answer a request (``respond`` by default)."""


def _share(key: str, seed: int) -> float:
    digest = hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()
    return int(digest[:8], 16) / 0xFFFFFFFF


def fabricates(response: str, faults: Faults | None) -> bool:
    """Whether excerpts for this response are fabricated under ``faults`` (same rule as ``reply``)."""
    return bool(faults and faults.fabricate_excerpts and _share(response, faults.seed) < faults.fabricate_excerpts)


def _absence_terms(criterion: str) -> list[str]:
    m = absence_cue(criterion)
    tail = criterion[m.end():] if m else criterion
    return words(tail)


def is_absence(criterion: str) -> bool:
    """Whether the criterion asks for something to be absent (the judging code's rule)."""
    return absence_cue(criterion) is not None


_NEGATED = re.compile(r"\b(no|not|never|cannot|can't|don't|doesn't|only|without|won't)\b", re.I)


def violating_sentences(criterion: str, response: str) -> list[str]:
    """For an absence criterion: affirmative sentences that mention what it forbids."""
    terms = {w[:5] for w in _absence_terms(criterion)}
    if not terms:
        return []
    out = []
    for sentence in sentences(response) or [response]:
        have = {w[:5] for w in words(sentence)}
        if len(terms & have) / len(terms) >= 0.5 and not _NEGATED.search(sentence):
            out.append(sentence)
    return out


def violated(criterion: str, response: str) -> bool:
    return bool(violating_sentences(criterion, response))


def judge_value(trait: TraitSpec, response: str) -> Any:
    """The verdict for a trait, from overlap (or, for absence criteria, from what is present)."""
    if trait.kind == "literal":
        classes = trait.classes
        best = max(classes, key=lambda c: (overlap(c[1] + " " + c[0], response), -classes.index(c)))
        return best[0]
    if is_absence(trait.criterion):
        ok = not violated(trait.criterion, response)
        if trait.kind == "boolean":
            return ok
        lo, hi = trait.lo or 1, trait.hi or 5
        return hi if ok else lo
    share = overlap(trait.description, response)
    if trait.kind == "boolean":
        return share >= 0.2 or len(words(response)) >= 12 or not words(trait.description)
    lo, hi = trait.lo if trait.lo is not None else 1, trait.hi if trait.hi is not None else 5
    # Long, on-topic answers score higher; anything readable gets at least the middle third.
    length_bonus = min(len(words(response)) / 30, 1.0)
    return max(lo, min(hi, lo + round((0.2 + 0.5 * share + 0.6 * length_bonus) * (hi - lo))))


def excerpts_for(trait: TraitSpec, response: str, limit: int) -> dict[str, Any]:
    sents = sentences(response) or ([response.strip()] if response.strip() else [])
    if is_absence(trait.criterion):
        hits = violating_sentences(trait.criterion, response)
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


def _reasoning(prompt: str) -> str:
    specs = traits(prompt)
    if not specs:
        return "No <trait> was given, so there is nothing to reason about. VERDICT: null"
    evidence = tag(prompt, "evidence")
    return _reasoning_text(specs[0], tag(prompt, "response") or "", bool(evidence and "[E1]" in evidence))


def _reasoning_text(trait: TraitSpec, response: str, quoted: bool) -> str:
    cited = "[E1]" if quoted else "the response as a whole"
    return (
        f"Considering the trait '{trait.name}' ({trait.description.strip()[:120]}), I looked at {cited}. "
        f"Word overlap with the criterion is {overlap(trait.description, response):.2f}. "
        f"VERDICT: {json.dumps(judge_value(trait, response))}"
    )


def _from_reasoning(prompt: str) -> Any:
    reasoning = tag(prompt, "reasoning") or ""
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


@dataclass(frozen=True)
class _Ask:
    """A request as the handlers see it: the prompt (non-system messages joined) and the schema."""

    prompt: str
    messages: tuple[Message, ...]
    schema: dict[str, Any]
    title: str
    faults: Faults | None

    @property
    def response(self) -> str:
        return tag(self.prompt, "response") or ""


def _answer(ask: _Ask) -> str:
    if reviser.is_revision(ask.messages):  # revise until satisfied: address the failing criteria
        return reviser.revise(ask.messages, violated)
    question = tag(ask.prompt, "question") or (ask.messages[-1].content if ask.messages else "")
    return f"This is a simulated answer to: {question.strip()}"


def _batch_scores(ask: _Ask) -> dict[str, Any]:
    return {"scores": {t.name: judge_value(t, ask.response) for t in traits(ask.prompt)}}


def _batch_literal(ask: _Ask) -> dict[str, Any]:
    classifications = [
        {"trait_name": t.name, "class_name": judge_value(t, ask.response)} for t in traits(ask.prompt)
    ]
    return {"classifications": classifications}


_VERDICT_KEYS = {"SingleBooleanScore": "result", "SingleNumericScore": "score", "SingleLiteralClassification": "classification"}


def _verdict(ask: _Ask) -> dict[str, Any]:
    """One trait's verdict: taken from a ``<reasoning>`` block's VERDICT line when the prompt has one."""
    value = _from_reasoning(ask.prompt)
    specs = traits(ask.prompt)
    if value is None and specs:
        value = judge_value(specs[0], ask.response)
    key = _VERDICT_KEYS.get(ask.title) or next(iter(ask.schema.get("properties") or {}), "result")
    return {key: value}


def _confusion(ask: _Ask) -> dict[str, Any]:
    expected = re.findall(r"^- (.+)$", tag(ask.prompt, "expected") or "", re.M)
    absent = re.findall(r"^- (.+)$", tag(ask.prompt, "should_be_absent") or "", re.M)
    tp = [e for e in expected if overlap(e, ask.response) >= 0.6]
    return {
        "tp": tp, "fn": [e for e in expected if e not in tp], "fp": [],
        "tn": [a for a in absent if overlap(a, ask.response) < 0.6],
    }


def _excerpts(ask: _Ask) -> dict[str, Any]:
    specs = traits(ask.prompt)
    if not specs:
        return {"excerpts": [], "nothing_relevant": True}
    return _quotes(specs[0], ask, int(tag(ask.prompt, "max_excerpts") or 3))


def _batch_excerpts(ask: _Ask) -> dict[str, Any]:
    """Every trait's quotes at once: each exactly the per-trait reply (faults included)."""
    limit = bb.limits(ask.prompt)
    return {"traits": {spec.name: _quotes(spec, ask, limit(spec.name)) for spec in traits(ask.prompt)}}


def _batch_verdicts(ask: _Ask) -> dict[str, Any]:
    """Every trait's reasoning and verdict (the per-trait ones) and, for searched quotes, their risk."""
    evidence = bb.evidence(ask.prompt)
    out: dict[str, Any] = {}
    for spec in traits(ask.prompt):
        quotes = evidence.get(spec.name, [])
        item: dict[str, Any] = {"reasoning": _reasoning_text(spec, ask.response, bool(quotes)),
                                "verdict": judge_value(spec, ask.response)}
        risks = [_risk(eid, text, sources) for eid, text, sources in quotes if sources is not None]
        if risks:
            item["risks"] = risks
        out[spec.name] = item
    return {"traits": out}


def _quotes(spec: TraitSpec, ask: _Ask, limit: int) -> dict[str, Any]:
    response = ask.response
    out = excerpts_for(spec, response, limit)
    if fabricates(response, ask.faults):
        out["excerpts"] = [{"text": fabricate(e["text"]), "confidence": "high"} for e in out["excerpts"]] or [
            {"text": fabricate("The answer cites 3 independent sources."), "confidence": "high"}
        ]
        out["nothing_relevant"] = False
    return out


def _hallucination(ask: _Ask) -> dict[str, Any]:
    prompt = ask.prompt
    assessments: list[dict[str, str]] = []
    for eid, text in re.findall(r'<excerpt id="([^"]+)">(.*?)</excerpt>', prompt, re.S):
        sources = prompt.split(f'<search_results for="{eid}">', 1)[-1].split("</search_results>", 1)[0]
        assessments.append(_risk(eid, text, sources))
    return {"assessments": assessments}


def _risk(eid: str, text: str, sources: str) -> dict[str, str]:
    share = overlap(text, sources)
    risk = "none" if share >= 0.6 else "low" if share >= 0.4 else "medium" if share >= 0.2 else "high"
    return {"excerpt_id": eid, "risk": risk, "justification": f"overlap with sources {share:.2f}"}


HANDLERS: dict[Purpose, Callable[[_Ask], str | dict[str, Any]]] = {
    Purpose.ANSWER: _answer,
    Purpose.PARSING: lambda ask: tb.parse(ask.schema, ask.prompt),
    Purpose.ABSTENTION_CHECK: lambda ask: tb.abstention(ask.prompt),
    Purpose.SUFFICIENCY_CHECK: lambda ask: tb.sufficiency(ask.prompt),
    Purpose.EMBEDDING_CHECK: lambda ask: tb.equivalence(ask.prompt),
    Purpose.RUBRIC_BATCH: _batch_scores,
    Purpose.RUBRIC_LITERAL_BATCH: _batch_literal,
    Purpose.RUBRIC_SINGLE: _verdict,
    Purpose.RUBRIC_METRIC: _confusion,
    Purpose.RUBRIC_GRADER: lambda ask: jb.grader(ask.prompt),
    Purpose.RUBRIC_SCHEMA_JUDGE: lambda ask: jb.schema_judge(ask.prompt, ask.schema, lambda run: fabricates(run, ask.faults)),
    Purpose.DJ_EXCERPTS: _excerpts,
    Purpose.DJ_HALLUCINATION: _hallucination,
    Purpose.DJ_REASONING: lambda ask: _reasoning(ask.prompt),
    Purpose.DJ_SCORE: _verdict,
    Purpose.DJ_BATCH_EXCERPTS: _batch_excerpts,
    Purpose.DJ_BATCH_SCORE: _batch_verdicts,
    Purpose.TEMPLATE_DJ_EXCERPTS: lambda ask: tb.excerpts(ask.prompt, fabricates(ask.response, ask.faults)),
    Purpose.TEMPLATE_DJ_HALLUCINATION: _hallucination,
    Purpose.TEMPLATE_DJ_REASONING: lambda ask: tb.reasoning(ask.prompt),
}
"""The reply for each purpose: a string is sent as is (free text), a dict as JSON."""

PURPOSE_BY_TITLE: dict[str, Purpose] = {
    "BatchRubricScores": Purpose.RUBRIC_BATCH,
    "BatchLiteralClassifications": Purpose.RUBRIC_LITERAL_BATCH,
    "SingleBooleanScore": Purpose.RUBRIC_SINGLE,
    "SingleNumericScore": Purpose.RUBRIC_SINGLE,
    "SingleLiteralClassification": Purpose.RUBRIC_SINGLE,
    "ConfusionMatrixOutput": Purpose.RUBRIC_METRIC,
    "TraitExcerptsOutput": Purpose.DJ_EXCERPTS,
    "HallucinationRiskOutput": Purpose.DJ_HALLUCINATION,
    "AbstentionResult": Purpose.ABSTENTION_CHECK,
    "SufficiencyResult": Purpose.SUFFICIENCY_CHECK,
    "EquivalenceResult": Purpose.EMBEDDING_CHECK,
    "TemplateExcerptsOutput": Purpose.TEMPLATE_DJ_EXCERPTS,
    "TemplateReasoningOutput": Purpose.TEMPLATE_DJ_REASONING,
}
"""Reply model title -> purpose, for requests that do not say their purpose (plain HTTP clients).

Template parsing has no fixed title (the schema is the template's own class) and the verdict
titles are shared by ``rubric_single`` and ``dj_score`` (one handler serves both), so a client
that wants those replies says its purpose.
"""


def purpose_for(purpose: Purpose | None, schema: dict[str, Any] | None) -> Purpose | None:
    """The purpose to answer for: the given one; else free text is an answer and a schema is
    looked up by its title (``None`` for an unknown title: the reply is the schema's defaults)."""
    if purpose is not None:
        return purpose
    if schema is None:
        return Purpose.ANSWER
    return PURPOSE_BY_TITLE.get(str(schema.get("title", "")))


def reply(
    purpose: Purpose | None,
    messages: Sequence[Message],
    schema: dict[str, Any] | None,
    faults: Faults | None = None,
) -> str:
    """Return the reply text for a request: free text or JSON, as the purpose's step expects."""
    prompt = "\n".join(m.content for m in messages if m.role != "system")
    title = str((schema or {}).get("title", ""))
    ask = _Ask(prompt, tuple(messages), schema or {}, title, faults)
    kind = purpose_for(purpose, schema)
    imperfect = faults.imperfections if faults else Imperfections()
    if imperfect.constant_reply is not None and kind is not Purpose.ANSWER:
        return imperfect.constant_reply
    value: str | dict[str, Any]
    if kind is None:
        value = dict(_schema_default(ask.schema, ask.schema.get("$defs", {})))
    else:
        value = HANDLERS[kind](ask)
    if isinstance(value, str):
        return value
    if faults and imperfect.rate:
        changed = imperfect_reply(kind, messages, prompt, ask.schema, value, imperfect, faults.seed)
        if changed is not None:
            return changed.text
    text = json.dumps(value)
    if faults and faults.malformed_json and _share(prompt + title, faults.seed + 1) < faults.malformed_json:
        return "Sure! Here is my assessment: " + text[: max(1, len(text) // 2)]
    return text


def respond(request: SimulatedRequest) -> str:
    """The default :data:`ReplyFunction`: :func:`reply` for a :class:`SimulatedRequest`."""
    return reply(request.purpose, request.messages, request.schema, request.faults)
