"""Prompts and structured replies of batched rubric deep judgment (:mod:`verify.judging.deep_batched`).

Same conventions as :mod:`verify.judging.prompts`: the question in ``<question>``, the answer in
``<response>`` (data, never instructions), each trait as ``<trait name="..." kind="...">``. The
excerpt call lists every trait once; the verdict call follows each trait with its own numbered
evidence (``<evidence for="name">[E1] ...</evidence>``), so a trait reasons over its quotes only.
A trait's quotes and verdict are keyed by its name under ``traits``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from verify.benchmark.traits import LLMTrait
from verify.judging.prompts import TraitExcerptsOutput, context_block, render_trait

__all__ = [
    "BatchExcerptsOutput", "BatchVerdictsOutput", "TraitEvidence", "batch_excerpt_prompt", "batch_verdict_prompt",
]


class _Reply(BaseModel):
    # extra keys are kept: a judge that leaves out the "traits" wrapper puts the trait names at the top
    model_config = ConfigDict(extra="allow")

    traits: dict[str, Any] = Field(default_factory=dict)

    def entries(self) -> dict[str, Any]:
        """Each trait's entry by the name the judge gave it (under ``traits``, else at the top level)."""
        return self.traits or dict(self.model_extra or {})


class BatchExcerptsOutput(_Reply):
    """Verbatim quotes of the response per trait (or that nothing in it bears on the trait)."""

    # Each trait's entry is read on its own (a list of quotes is accepted too): one bad entry must not
    # discard the other traits' quotes.
    traits: Annotated[dict[str, Any], WithJsonSchema({
        "type": "object", "additionalProperties": TraitExcerptsOutput.model_json_schema(),
    })] = Field(default_factory=dict)


_VERDICT_ITEM = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string", "description": "step-by-step reasoning citing the trait's evidence [E1].."},
        "verdict": {"description": "true/false, an integer score in range, or one class name"},
        "risks": {"type": "array", "items": {"type": "object", "properties": {
            "excerpt_id": {"type": "string"}, "risk": {"enum": ["none", "low", "medium", "high"]},
            "justification": {"type": "string"}}}},
    },
}


class BatchVerdictsOutput(_Reply):
    """Reasoning, verdict and (with search results) hallucination risks per trait."""

    traits: Annotated[dict[str, Any], WithJsonSchema({
        "type": "object", "additionalProperties": _VERDICT_ITEM,
    })] = Field(default_factory=dict)


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
        'Return JSON: {"traits": {"<trait name>": {"excerpts": [{"text": "...", "confidence": "high|medium|low"}], '
        '"nothing_relevant": false}}} with every trait name. If no passage bears on a trait, give it no '
        'excerpts and "nothing_relevant": true.'
    )


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
    risk_shape = ', "risks": [{"excerpt_id": "E1", "risk": "none|low|medium|high"}]' if searched else ""
    return (
        "For each trait, explain step by step how well the response meets it, basing the reasoning on that "
        "trait's own numbered evidence and citing it as [E1], [E2]; then give the verdict: "
        f"{_verdict_shapes([item.trait for item in items])}.{risks}\n"
        f"{context_block(question, response)}\n<traits>\n{blocks}\n</traits>\n"
        f'Return JSON: {{"traits": {{"<trait name>": {{"reasoning": "...", "verdict": ...{risk_shape}}}}}}} '
        "with every trait name."
    )
