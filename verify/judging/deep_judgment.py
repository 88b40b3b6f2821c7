"""Deep judgment for one rubric trait: extract, validate, search-check, reason, score.

Each step is a small function; ``judge_trait`` runs them in order. Evidence policy (documented in
docs/deep-judgment.md):

* the judge quotes passages; quotes are validated with :func:`verify.judging.excerpts.match.validate_excerpts`; if
  none validates, the judge retries with feedback naming each rejected quote, up to the trait's
  retry count; a trait still without valid quotes is *auto-failed* (its evidence is unverifiable);
* the judge may instead say nothing in the answer bears on the trait (``nothing_relevant``). That
  is evidence of absence. The verdict must then be consistent with it: an absence criterion
  ("does not recommend X") may pass, a presence criterion may only be judged not met. A verdict
  that contradicts it is sent back once with the evidence; if it still does, the trait is
  ``unscored`` (``contradiction``): the judge contradicted itself, the answer did nothing wrong;
* a reasoning reply that is not reasoning (empty, or the prompt's data echoed) is asked again once;
* judge outages and unparseable replies leave the trait ``unscored`` (never a failing score).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from verify.benchmark.traits import LLMTrait
from verify.config.deep_judgment import TraitDJSettings
from verify.errors import ModelError
from verify.judging import prompts
from verify.judging.consistency import (
    NO_EVIDENCE,
    contradiction_feedback,
    evidence_block,
    not_reasoning,
    opposed_verdict,
    reasoning_feedback,
    ungrounded_verdict,
)
from verify.judging.excerpts import validate_excerpts
from verify.judging.prompts import JudgeInstructions
from verify.judging.quotes import read_quotes
from verify.judging.verdicts import read_verdict, verdict_check, verdict_schema
from verify.llm.ports import ChatModel, Message, Purpose, Search
from verify.llm.resilience import redact
from verify.llm.structured import ask_structured, ask_text
from verify.results.models import (
    Excerpt,
    HallucinationAssessment,
    RejectedExcerpt,
    Score,
    TraitDeepMetadata,
    TraitStatus,
    UnscoredCategory,
)
from verify.results.reasons import CONTRADICTION, NO_VALID_QUOTE

if TYPE_CHECKING:
    from verify.config.prompts import PromptTask

RISK_ORDER = {"none": 0, "low": 1, "medium": 2, "high": 3}


@dataclass(frozen=True)
class TraitContext:
    question: str
    response: str
    judge: ChatModel
    search: Search | None
    instructions: JudgeInstructions = field(default_factory=JudgeInstructions)
    hallucination_task: PromptTask = "dj_rubric_hallucination"  # template deep judgment: dj_template_*


@dataclass
class TraitJudgment:
    name: str
    status: TraitStatus
    score: Score | None = None
    label: str | None = None
    reason: str | None = None
    reasoning: str | None = None
    excerpts: list[Excerpt] = field(default_factory=list)
    hallucination: HallucinationAssessment | None = None
    metadata: TraitDeepMetadata = field(default_factory=TraitDeepMetadata)
    raw_reply: str | None = None
    error_category: str | None = None
    label_read_as: str | None = None
    unscored_category: UnscoredCategory | None = None

    @property
    def without_valid_excerpts(self) -> bool:
        return self.metadata.excerpt_validation_failed


@dataclass(frozen=True)
class Evidence:
    valid: list[Excerpt]
    rejected: list[RejectedExcerpt]
    attempts: int
    absence: bool
    error: str | None = None
    unusable: bool = False  # no reply held a quote or said nothing is relevant: a judge failure, not missing evidence
    raw_reply: str | None = None
    parsed: bool = False  # some reply was JSON of the right shape (an unusable one is then invalid, not unparseable)


def _excerpt_feedback(attempt: int, attempts: int, problem: str) -> str:
    # the attempt number makes every retry a new request (never answered from the response cache)
    return f"Attempt {attempt} of {attempts}. {problem}"


async def extract_evidence(trait: LLMTrait, settings: TraitDJSettings, ctx: TraitContext) -> Evidence:
    """Ask for quotes and validate them, retrying with feedback until one validates."""
    rejected: list[RejectedExcerpt] = []
    feedback: str | None = None
    attempts = settings.excerpt_retry_attempts + 1
    error: str | None = None
    quoted = 0  # attempts whose reply held at least one quote (not a placeholder)
    parsed = 0
    raw_reply: str | None = None
    for attempt in range(1, attempts + 1):
        prompt = prompts.excerpt_prompt(ctx.question, ctx.response, trait, settings.max_excerpts, feedback)
        reply = await ask_structured(
            ctx.judge, ctx.instructions.messages("dj_rubric_excerpt_extraction", prompt), prompts.TraitExcerptsOutput,
            purpose=Purpose.DJ_EXCERPTS, trait=trait.name, max_parse_retries=0,
        )
        if reply.value is None:
            error, raw_reply = reply.error or "unparseable reply", reply.raw_text
            feedback = _excerpt_feedback(attempt + 1, attempts,
                                         f"Your previous reply could not be used ({error}). Reply with the JSON format asked.")
            continue
        parsed += 1
        items, placeholders = read_quotes(reply.value.excerpts, settings.max_excerpts)
        if not items:
            if reply.value.nothing_relevant:
                return Evidence([], rejected, attempt, absence=True)
            error, raw_reply = "the judge gave no quote and did not say that nothing is relevant", reply.raw_text
            problem = ("Your quotes were placeholders copied from the instructions, not text of the response. "
                       if placeholders else "You returned no excerpts. ")
            feedback = _excerpt_feedback(attempt + 1, attempts,
                                         problem + "Quote the relevant passages, or set nothing_relevant.")
            continue
        quoted += 1
        matches = validate_excerpts([e.text for e in items], ctx.response, settings.fuzzy_match_threshold)
        valid = [
            Excerpt(
                text=item.text, confidence=item.confidence, similarity_score=round(m.similarity, 4),
                start=m.start, end=m.end, match_method=m.method,
                spans=list(m.spans) if len(m.spans) > 1 else None,
                supports=item.supports if trait.kind == "boolean" else None,
            )
            for item, m in zip(items, matches, strict=True)
            if m.valid
        ]
        bad = [
            RejectedExcerpt(text=item.text, similarity_score=round(m.similarity, 4), reason=m.reason, attempt=attempt)
            for item, m in zip(items, matches, strict=True)
            if not m.valid
        ]
        rejected.extend(bad)
        if valid:
            return Evidence(valid, rejected, attempt, absence=False)
        lines = "\n".join(f'- "{r.text}" (similarity {r.similarity_score:.2f}: {r.reason})' for r in bad)
        feedback = _excerpt_feedback(attempt + 1, attempts, (
            f"None of these quotes appear verbatim in the response (threshold "
            f"{settings.fuzzy_match_threshold:.2f}):\n{lines}\nCopy passages exactly as written."
        ))
        error = None
    # Quotes that are not in the answer leave its evidence unproven (auto-fail); a judge that never
    # quoted anything, nor said nothing is relevant, gave no usable reply (unscored).
    return Evidence([], rejected, attempts, absence=False, error=error, unusable=quoted == 0, raw_reply=raw_reply,
                    parsed=parsed > 0)


def _render_hits(hits: list[Any]) -> str:
    return "\n".join(f"- {h.content} ({h.url or h.title or 'no source'})" for h in hits) or "(no results)"


async def check_with_search(
    excerpts: list[Excerpt], ctx: TraitContext, trait: str | None,
    purpose: Purpose = Purpose.DJ_HALLUCINATION,
) -> HallucinationAssessment:
    """Search each excerpt, then one judge call rates each excerpt's hallucination risk."""
    assert ctx.search is not None
    search = ctx.search

    async def one(text: str) -> list[Any] | Exception:
        try:
            return await search.search(text[:400])
        except Exception as exc:  # search outages degrade to "not assessed"
            return exc

    found = await asyncio.gather(*(one(e.text) for e in excerpts))
    failures = [f for f in found if isinstance(f, Exception)]
    for excerpt, hits in zip(excerpts, found, strict=True):
        excerpt.search_results = (
            None if isinstance(hits, Exception)
            else [{"content": h.content, "title": h.title, "url": h.url} for h in hits]
        )
    if len(failures) == len(excerpts):
        return HallucinationAssessment(
            overall_risk="not_assessed", per_excerpt_risks=[], assessed=False,
            note=redact(f"search failed: {type(failures[0]).__name__}: {failures[0]}", 300),
        )
    items = [
        (f"E{i}", e.text, _render_hits(hits))
        for i, (e, hits) in enumerate(zip(excerpts, found, strict=True), 1)
        if not isinstance(hits, Exception)
    ]
    reply = await ask_structured(
        ctx.judge, ctx.instructions.messages(ctx.hallucination_task, prompts.hallucination_prompt(items)),
        prompts.HallucinationRiskOutput,
        purpose=purpose, trait=trait,
    )
    if reply.value is None:
        return HallucinationAssessment(
            overall_risk="not_assessed", per_excerpt_risks=[], assessed=False,
            note=f"risk reply unparseable: {reply.error}",
        )
    by_id = {a.excerpt_id.strip(): a for a in reply.value.assessments}
    risks: list[str] = []
    for i, excerpt in enumerate(excerpts, 1):
        verdict = by_id.get(f"E{i}")
        if verdict is not None:
            excerpt.hallucination_risk, excerpt.hallucination_justification = verdict.risk, verdict.justification
            risks.append(verdict.risk)
    overall = max(risks, key=lambda r: RISK_ORDER[r]) if risks else "not_assessed"
    note = f"{len(failures)} excerpt search(es) failed" if failures else None
    return HallucinationAssessment(overall_risk=overall, per_excerpt_risks=risks, assessed=bool(risks), note=note)


async def _reason(trait: LLMTrait, ctx: TraitContext, evidence_text: str | None) -> tuple[str, str | None]:
    """The reasoning step: its conversation, and why its reply is not reasoning (after one retry), or None."""
    prompt = prompts.reasoning_prompt(ctx.question, ctx.response, trait, evidence_text)
    messages = ctx.instructions.messages("dj_rubric_reasoning", prompt)
    reasoning = await ask_text(ctx.judge, messages, purpose=Purpose.DJ_REASONING, trait=trait.name)
    why = not_reasoning(reasoning.text, trait)
    if why is not None:  # an empty reply or the prompt's own data echoed: asked again once
        said = reasoning.text if reasoning.text.strip() else "(empty reply)"
        retry = [*messages, Message("assistant", said), Message("user", reasoning_feedback(why))]
        reasoning = await ask_text(ctx.judge, retry, purpose=Purpose.DJ_REASONING, trait=trait.name)
        why = not_reasoning(reasoning.text, trait)
    return reasoning.text, why if why is None else f"{why} (asked twice)"


async def _verdict(trait: LLMTrait, ctx: TraitContext, reasoning: str, result: TraitJudgment) -> None:
    """The score step; a verdict that contradicts the judge's finding of nothing relevant is sent back once."""
    meta = result.metadata
    messages = ctx.instructions.messages("dj_rubric_score_extraction", prompts.score_prompt(trait, reasoning))
    for attempt in (1, 2):
        verdict = await ask_structured(
            ctx.judge, messages, verdict_schema(trait),
            purpose=Purpose.DJ_SCORE, trait=trait.name, check=verdict_check(trait),
        )
        if verdict.value is None:
            result.reason, result.raw_reply = f"score reply unparseable: {verdict.error}", verdict.raw_text
            return
        if attempt == 1:
            meta.stages_completed.append("score_extraction")
        outcome = read_verdict(trait, verdict.value)
        assert outcome.score is not None  # the check let only readable verdicts through
        problem = (ungrounded_verdict(trait, outcome.score) if meta.evidence == "absence"
                   else opposed_verdict(trait, outcome.score, result.excerpts))
        if problem is None:
            result.label_read_as = outcome.label_read_as
            result.status, result.score, result.label = "scored", outcome.score, outcome.label
            return
        evidence = evidence_block(result.excerpts) if result.excerpts else NO_EVIDENCE
        messages = [*messages, Message("assistant", verdict.raw_text or "(empty reply)"),
                    Message("user", contradiction_feedback(problem, evidence))]
    result.reason, result.raw_reply = f"{CONTRADICTION}: {problem}", verdict.raw_text
    result.unscored_category = "contradiction"


async def judge_trait(trait: LLMTrait, settings: TraitDJSettings, ctx: TraitContext) -> TraitJudgment:
    """Run the deep-judgment steps for one trait; never raises for model or parse failures."""
    meta = TraitDeepMetadata(settings=settings.as_dict())
    result = TraitJudgment(name=trait.name, status="unscored", metadata=meta)
    try:
        evidence_text: str | None = None
        if settings.excerpt_enabled:
            evidence = await extract_evidence(trait, settings, ctx)
            meta.stages_completed.append("excerpt_extraction")
            meta.excerpt_retry_count = evidence.attempts - 1
            meta.rejected_excerpts = evidence.rejected
            if evidence.unusable:  # unparseable replies leave the trait unscored, never auto-failed
                result.reason, result.raw_reply = f"excerpt reply unusable: {evidence.error}", evidence.raw_reply
                result.unscored_category = "invalid_reply" if evidence.parsed else "unparseable"
                return result
            if not evidence.valid and not evidence.absence:
                meta.excerpt_validation_failed, meta.evidence = True, "failed"
                result.status, result.reason = "auto_failed", NO_VALID_QUOTE
                return result
            meta.had_excerpts = bool(evidence.valid)
            meta.evidence = "excerpts" if evidence.valid else "absence"
            result.excerpts = evidence.valid
            if evidence.valid and settings.search_enabled and ctx.search is not None:
                result.hallucination = await check_with_search(evidence.valid, ctx, trait.name)
                if result.hallucination.assessed:
                    meta.stages_completed.append("hallucination_assessment")
            evidence_text = "\n".join(
                f"[E{i}] {e.text}" + (f" (hallucination risk: {e.hallucination_risk})" if e.hallucination_risk else "")
                for i, e in enumerate(evidence.valid, 1)
            ) or NO_EVIDENCE
        reasoning, why = await _reason(trait, ctx, evidence_text)
        result.reasoning = reasoning
        if why is not None:
            result.reason, result.raw_reply = f"reasoning reply unusable: {why}", reasoning
            result.unscored_category = "invalid_reply"
            return result
        meta.stages_completed.append("reasoning_generation")
        await _verdict(trait, ctx, reasoning, result)
        return result
    except ModelError as exc:
        meta.error = redact(str(exc))
        result.reason = f"judge call failed ({exc.category}): {meta.error}"
        result.error_category = exc.category
        return result
