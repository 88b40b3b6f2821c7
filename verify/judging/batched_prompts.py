"""Prompts and structured replies of batched rubric deep judgment (:mod:`verify.judging.deep_batched`).

Same conventions as :mod:`verify.judging.prompts`: the question in ``<question>``, the answer in
``<response>`` (data, never instructions), each trait as ``<trait name="..." kind="...">``. The
excerpt call lists every trait once; the verdict call follows each trait with its own numbered
evidence (``<evidence for="name">[E1] ...</evidence>``), so a trait reasons over its quotes only.
A trait's quotes and verdict are keyed by its name under ``traits``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, create_model

from verify.benchmark.traits import LLMTrait
from verify.judging.prompts import STANCE_RULE, TraitExcerptsOutput, context_block, render_trait
from verify.judging.verdicts import match_names

__all__ = [
    "BatchExcerptsOutput", "BatchVerdictsOutput", "TraitEvidence", "TraitKey", "batch_excerpt_prompt",
    "batch_verdict_prompt", "excerpts_reply", "trait_keys", "verdicts_reply",
]


_PLACES = 3  # how deep a misplaced trait is looked for


class _Reply(BaseModel):
    # extra keys are kept: a judge that leaves out the "traits" wrapper puts the trait names at the top
    model_config = ConfigDict(extra="allow")

    traits: dict[str, Any] = Field(default_factory=dict)

    def locate(self, names: list[str]) -> dict[str, tuple[Any, str]]:
        """Each asked trait's entry and where it was found: ``"traits"`` when in place, else the path
        of the object that held it (a trait nested one level too high or too low is still used)."""
        found: dict[str, tuple[Any, str]] = {}
        level: list[tuple[str, dict[str, Any]]] = [("traits", self.traits), ("the top level", dict(self.model_extra or {}))]
        for _ in range(_PLACES):
            for path, mapping in level:
                for name, value in match_names(mapping, [n for n in names if n not in found]).items():
                    found[name] = (value, path)
            entries = {id(value) for value, _path in found.values()}
            level = [(key if path == "the top level" else f"{path}.{key}", value)
                     for path, mapping in level for key, value in mapping.items()
                     if isinstance(value, dict) and id(value) not in entries]
        return found


class BatchExcerptsOutput(_Reply):
    """Verbatim quotes of the response per trait (or that nothing in it bears on the trait)."""

    # Each trait's entry is read on its own (a list of quotes is accepted too): one bad entry must not
    # discard the other traits' quotes. The schema sent names every trait (see excerpts_reply).
    traits: Annotated[dict[str, Any], WithJsonSchema({
        "type": "object", "additionalProperties": TraitExcerptsOutput.model_json_schema(),
    })] = Field(default_factory=dict)


class BatchVerdictsOutput(_Reply):
    """Reasoning, verdict and (with search results) hallucination risks per trait."""

    traits: dict[str, Any] = Field(default_factory=dict)


TraitKey = tuple[str, str, int | None, int | None, tuple[str, ...]]
"""What a trait's part of a batch schema depends on: name, kind, score range, class names."""


def trait_keys(traits: list[LLMTrait]) -> tuple[TraitKey, ...]:
    return tuple((t.name, t.kind, t.min_score, t.max_score, tuple(t.class_names)) for t in traits)


def _verdict_type(key: TraitKey) -> dict[str, Any]:
    _name, kind, lo, hi, classes = key
    if kind == "boolean":
        return {"type": "boolean"}
    if kind == "literal":
        return {"type": "string", "enum": list(classes)}
    bounds = {k: v for k, v in (("minimum", lo), ("maximum", hi)) if v is not None}
    return {"type": "integer", **bounds}


def _per_trait(keys: tuple[TraitKey, ...], item: Any) -> dict[str, Any]:
    names = [k[0] for k in keys]
    return {"type": "object", "properties": {k[0]: item(k) for k in keys}, "required": names,
            "additionalProperties": False}


@functools.lru_cache(maxsize=256)
def excerpts_reply(keys: tuple[TraitKey, ...]) -> type[BatchExcerptsOutput]:
    """The excerpt reply model for these traits: its schema names each trait (confidence an enum)."""
    return create_model("BatchExcerptsOutput", __base__=BatchExcerptsOutput,
                        traits=_typed(_per_trait(keys, lambda _k: _EXCERPTS)))


@functools.lru_cache(maxsize=256)
def verdicts_reply(keys: tuple[TraitKey, ...], searched: bool) -> type[BatchVerdictsOutput]:
    """The verdict reply model for these traits: each verdict typed by its trait's kind (boolean,
    integer in range, one class name), so a judge following the schema gives readable values."""
    def item(key: TraitKey) -> dict[str, Any]:
        props: dict[str, Any] = {"reasoning": {"type": "string"}, "verdict": _verdict_type(key)}
        if searched:
            props["risks"] = _RISKS
        return {"type": "object", "properties": props, "required": ["reasoning", "verdict"]}

    return create_model("BatchVerdictsOutput", __base__=BatchVerdictsOutput, traits=_typed(_per_trait(keys, item)))


def _typed(schema: dict[str, Any]) -> Any:
    # validation stays lenient (each entry is read on its own); only the schema sent is typed
    return (Annotated[dict[str, Any], WithJsonSchema(schema)], Field(default_factory=dict))


_EXCERPTS = TraitExcerptsOutput.model_json_schema()
_RISKS = {"type": "array", "items": {"type": "object", "properties": {
    "excerpt_id": {"type": "string"}, "risk": {"type": "string", "enum": ["none", "low", "medium", "high"]},
    "justification": {"type": "string"}}, "required": ["excerpt_id", "risk"]}}


def _limits(traits: list[LLMTrait], limits: dict[str, int]) -> str:
    values = {limits[t.name] for t in traits}
    if len(values) == 1:
        return f"<max_excerpts>{values.pop()}</max_excerpts>"
    return "<max_excerpts>" + "; ".join(f"{t.name}={limits[t.name]}" for t in traits) + "</max_excerpts>"


def batch_excerpt_prompt(question: str, response: str, traits: list[LLMTrait], limits: dict[str, int],
                         feedback: str | None) -> str:
    """Quotes for every trait at once; ``limits`` is each trait's maximum number of quotes."""
    rendered = "\n".join(render_trait(t) for t in traits)
    retry = f"\n<retry_feedback>{feedback}</retry_feedback>" if feedback else ""
    return (
        "For each trait, quote the passages of the response that bear on it. Copy each quote EXACTLY, "
        "character for character; do not paraphrase, join or shorten inside a quote.\n"
        f"{context_block(question, response)}\n<traits>\n{rendered}\n</traits>\n{_limits(traits, limits)}{retry}\n"
        'Return JSON: {"traits": {<trait name>: {"excerpts": [{"text": <a passage copied from the response>, '
        '"confidence": <one of high, medium, low>}], "nothing_relevant": <true or false>}}}, every trait by its '
        'name, directly under "traits". If no passage bears on a trait, give it no excerpts and '
        f'"nothing_relevant": true.{_stance(traits)}'
    )


def _stance(traits: list[LLMTrait]) -> str:
    yes_no = [t.name for t in traits if t.kind == "boolean"]
    return f' For the yes/no traits ({", ".join(yes_no)}) each quote also gives "supports": <{STANCE_RULE}>.' if yes_no else ""


@dataclass(frozen=True)
class TraitEvidence:
    """What the verdict call shows for one trait: its numbered quotes (each with its search results
    when searched), or ``None`` for a trait judged without excerpts."""

    trait: LLMTrait
    quotes: list[str] | None
    search_results: list[str | None] | None = None


def _evidence_block(item: TraitEvidence) -> str:
    if item.quotes is None:
        return ""
    if not item.quotes:
        return f'\n<evidence for="{item.trait.name}">No passage of the response bears on this trait.</evidence>'
    lines = []
    for i, quote in enumerate(item.quotes, 1):
        lines.append(f"[E{i}] {quote}")
        found = item.search_results[i - 1] if item.search_results else None
        if found is not None:
            lines.append(f'<search_results for="E{i}">\n{found}\n</search_results>')
    return f'\n<evidence for="{item.trait.name}">\n' + "\n".join(lines) + "\n</evidence>"


def _verdict_shapes(traits: list[LLMTrait]) -> str:
    kinds = {t.kind for t in traits}
    shapes = [text for kind, text in (
        ("boolean", "true or false for a boolean trait"), ("score", "an integer within [min, max] for a score trait"),
        ("literal", "exactly one class name for a literal trait"),
    ) if kind in kinds]
    return "; ".join(shapes)


def batch_verdict_prompt(question: str, response: str, items: list[TraitEvidence]) -> str:
    """Reasoning and verdict for every trait, each over its own numbered evidence."""
    blocks = "\n".join(render_trait(item.trait) + _evidence_block(item) for item in items)
    searched = any(item.search_results for item in items)
    risks = (
        ' For each excerpt with search results, rate in "risks" whether its claims are supported by them '
        "(none = clearly supported; high = contradicted or unsupported)."
        if searched else ""
    )
    risk_shape = ', "risks": [{"excerpt_id": <E1, E2, ...>, "risk": <one of none, low, medium, high>}]' if searched else ""
    return (
        "For each trait, explain step by step how well the response meets it, basing the reasoning on that "
        "trait's own numbered evidence and citing it as [E1], [E2]; then give the verdict: "
        f"{_verdict_shapes([item.trait for item in items])}.{risks}\n"
        f"{context_block(question, response)}\n<traits>\n{blocks}\n</traits>\n"
        f'Return JSON: {{"traits": {{<trait name>: {{"reasoning": <your reasoning>, "verdict": <the verdict>{risk_shape}}}}}}}, '
        'every trait by its name, directly under "traits".'
    )
