"""Template deep judgment: evidence and reasoning per template attribute before the parse.

``full``: (1) one call quotes the response per attribute; each quote is validated with
:func:`verify.judging.excerpts.match.validate_excerpts`; attributes whose quotes were all rejected are asked again
with feedback naming each rejected quote, up to ``deep_judgment_excerpt_retry_attempts`` times
(quotes validated in an earlier attempt are kept); (1.5) optionally every valid quote is searched
and one call rates each quote's hallucination risk; (2) one reasoning call per template, citing the
evidence; the parse that follows (in the stage) reads that reasoning. ``reasoning_only``: the
reasoning call without excerpts. Attributes left without a valid quote are listed in
``attributes_without_excerpts`` (computed from the final state, not accumulated over attempts), and
``DeepJudgmentAutoFail`` fails the task on them.

Field names of the section are karenina's (``extracted_excerpts``, ``attribute_reasoning``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from verify.judging.deep_judgment import RISK_ORDER, TraitContext, check_with_search
from verify.judging.excerpts import validate_excerpts
from verify.judging.prompts import JudgeInstructions
from verify.judging.quotes import read_quotes
from verify.llm.ports import ChatModel, Purpose, Search
from verify.llm.structured import ask_structured
from verify.results.models import DeepJudgmentSection, Excerpt, RejectedExcerpt
from verify.templates import prompts as tp
from verify.templates.compiler import CompiledTemplate, FieldSpec

if TYPE_CHECKING:
    from verify.config.prompts import PromptTask


@dataclass(frozen=True)
class DJSettings:
    mode: str
    max_excerpts: int
    threshold: float
    retry_attempts: int
    search_enabled: bool


@dataclass(frozen=True)
class DJInput:
    question: str
    response: str
    template: CompiledTemplate
    judge: ChatModel
    search: Search | None
    instructions: JudgeInstructions = field(default_factory=JudgeInstructions)


async def extract_excerpts(inp: DJInput, fields: list[FieldSpec], s: DJSettings, section: DeepJudgmentSection) -> None:
    """Fill ``extracted_excerpts``, ``rejected_excerpts``, retries and ``attributes_without_excerpts``."""
    names = [f.name for f in fields]
    valid: dict[str, list[Excerpt]] = {n: [] for n in names}
    rejected: dict[str, list[RejectedExcerpt]] = {}
    feedback: str | None = None
    parsed_any = False
    error: str | None = None
    attempts = s.retry_attempts + 1
    attempt = 0
    for attempt in range(1, attempts + 1):
        prompt = tp.template_excerpt_prompt(inp.question, inp.response, inp.template.class_name, fields,
                                            s.max_excerpts, feedback)
        messages = inp.instructions.messages("dj_template_excerpt_extraction", prompt)
        reply = await ask_structured(inp.judge, messages, tp.TemplateExcerptsOutput,
                                     purpose=Purpose.TEMPLATE_DJ_EXCERPTS, max_parse_retries=0)
        if reply.value is None:
            error = f"excerpt reply unparseable: {reply.error}"
            feedback = (f"Attempt {attempt + 1} of {attempts}. Your previous reply could not be used ({reply.error}). "
                        "Reply with the JSON format asked.")
            continue
        parsed_any, error = True, None
        lines: list[str] = []
        retry_placeholder: set[str] = set()
        for name in names:
            if valid[name]:
                continue  # validated in an earlier attempt
            items, placeholders = read_quotes(reply.value.excerpts.get(name), s.max_excerpts)
            if placeholders and not items:
                retry_placeholder.add(name)
                lines.append(f"- {name}: a placeholder copied from the instructions is not a quote of the response")
            matches = validate_excerpts([e.text for e in items], inp.response, s.threshold)
            for item, m in zip(items, matches, strict=True):
                if m.valid:
                    valid[name].append(Excerpt(text=item.text, confidence=item.confidence,
                                               similarity_score=round(m.similarity, 4), start=m.start, end=m.end,
                                               match_method=m.method, spans=list(m.spans) if len(m.spans) > 1 else None))
                else:
                    rejected.setdefault(name, []).append(RejectedExcerpt(
                        text=item.text, similarity_score=round(m.similarity, 4), reason=m.reason, attempt=attempt))
                    lines.append(f'- {name}: "{item.text}" (similarity {m.similarity:.2f}: {m.reason})')
        retry_names = [n for n in names if not valid[n] and (
            n in retry_placeholder or any(r.attempt == attempt for r in rejected.get(n, [])))]
        if not retry_names:
            break
        # the attempt number makes every retry a new request (never answered from the response cache)
        feedback = (f"Attempt {attempt + 1} of {attempts}. These quotes do not appear verbatim in the response "
                    f"(threshold {s.threshold:.2f}):\n" + "\n".join(lines) + "\nCopy passages exactly as written.")
    section.deep_judgment_excerpt_retry_count = max(0, attempt - 1)
    section.extracted_excerpts = {n: v for n, v in valid.items() if v}
    section.rejected_excerpts = rejected
    section.deep_judgment_stages_completed.append("excerpts")
    if not parsed_any:
        section.error = error  # a judge failure, not missing evidence: no auto-fail
        return
    section.attributes_without_excerpts = [n for n in names if not valid[n]]


async def assess_search(inp: DJInput, section: DeepJudgmentSection) -> None:
    flat = [(name, e) for name, items in section.extracted_excerpts.items() for e in items]
    if not flat or inp.search is None:
        return
    ctx = TraitContext(inp.question, inp.response, inp.judge, inp.search, inp.instructions, "dj_template_hallucination")
    await check_with_search([e for _, e in flat], ctx, trait=None, purpose=Purpose.TEMPLATE_DJ_HALLUCINATION)
    risks: dict[str, str] = {}
    for name, excerpt in flat:
        risk = excerpt.hallucination_risk
        if risk in RISK_ORDER and (name not in risks or RISK_ORDER[risk] > RISK_ORDER[risks[name]]):
            risks[name] = risk
    section.hallucination_risk_assessment = risks or None
    section.deep_judgment_stages_completed.append("excerpt_hallucination_assessment")


def _evidence(fields: list[FieldSpec], section: DeepJudgmentSection) -> dict[str, str]:
    out: dict[str, str] = {}
    for f in fields:
        items = section.extracted_excerpts.get(f.name, [])
        out[f.name] = "\n".join(
            f"[E{i}] {e.text}" + (f" (hallucination risk: {e.hallucination_risk})" if e.hallucination_risk else "")
            for i, e in enumerate(items, 1)
        ) or "No passage of the response was validated for this field."
    return out


async def judge_template(inp: DJInput, s: DJSettings) -> tuple[DeepJudgmentSection, dict[str, str] | None]:
    """Run the deep-judgment steps before the parse; returns the section and the reasoning per field."""
    section = DeepJudgmentSection(
        deep_judgment_mode="full" if s.mode == "full" else "reasoning_only",
        deep_judgment_search_enabled=s.search_enabled and s.mode == "full",
    )
    fields = inp.template.fields()
    evidence: dict[str, str] | None = None
    if s.mode == "full":
        await extract_excerpts(inp, fields, s, section)
        if s.search_enabled:
            await assess_search(inp, section)
        evidence = _evidence(fields, section)
    prompt = tp.template_reasoning_prompt(inp.question, inp.response, inp.template.class_name, fields, evidence)
    task: PromptTask = "dj_template_reasoning" if s.mode == "full" else "dj_template_reasoning_only"
    reply = await ask_structured(inp.judge, inp.instructions.messages(task, prompt), tp.TemplateReasoningOutput,
                                 purpose=Purpose.TEMPLATE_DJ_REASONING)
    reasoning: dict[str, str] | None = None
    if reply.value is None:
        section.error = section.error or f"reasoning reply unparseable: {reply.error}"
    else:
        known = {f.name for f in fields}
        reasoning = {k: v for k, v in reply.value.reasoning.items() if k in known}
        section.attribute_reasoning = reasoning
        section.deep_judgment_stages_completed.append("reasoning")
    section.deep_judgment_performed = True
    return section, reasoning
