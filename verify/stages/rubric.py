"""RubricEvaluation: score every trait of the task's merged rubric.

Reads ``state.answer`` and the rubric; writes ``state.rubric`` and, when any trait runs deep
judgment, ``state.deep_judgment_rubric``. Regex, callable, metric, template-kind and standard LLM
traits are evaluated whether or not deep judgment is on for other traits. LLM calls of one task run
concurrently (standard batch call, each metric, template-kind and deep-judgment trait). A trait the judge
could not score is ``unscored`` with the reason; it never takes other traits' scores with it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from verify.benchmark.traits import AgenticTrait, CallableTrait, LLMTrait, MetricTrait, RegexTrait
from verify.config.deep_judgment import resolve_rubric
from verify.errors import TRANSIENT_CATEGORIES
from verify.judging import prompts
from verify.judging.deep_batched import judge_traits
from verify.judging.deep_judgment import TraitContext, TraitJudgment, judge_trait
from verify.judging.deterministic import UNTRUSTED, confusion_metrics, eval_regex, is_pickled
from verify.judging.prompts import JudgeInstructions
from verify.judging.template_trait import TemplateTraitResult, judge_template_trait, stored_fields
from verify.judging.verdicts import (
    check_label,
    check_score,
    distinct,
    match_names,
    read_verdict,
    verdict_check,
    verdict_schema,
)
from verify.llm.ports import ChatModel, Message, Purpose
from verify.llm.structured import ask_structured
from verify.results.models import (
    DeepJudgmentRubricSection,
    RubricSection,
    Score,
    StageError,
    TraitOutcome,
    TraitValue,
)
from verify.results.reasons import CONTRADICTION
from verify.sandbox.calls import run_callable
from verify.sandbox.pool import WorkerLost
from verify.stages import rubric_judges
from verify.stages.guard import guard as _guard
from verify.stages.transcripts import judged_text
from verify.templates.time_limit import CodeTimeout

if TYPE_CHECKING:
    from verify.config.prompts import PromptTask
    from verify.config.verification import VerificationConfig
    from verify.run.state import Deps, TaskState

Outcomes = dict[str, TraitOutcome]


def evaluates(trait: Any) -> bool:
    """Whether the rubric stage evaluates this trait (agentic traits are skipped)."""
    return not isinstance(trait, AgenticTrait)


MISSING_FROM_RESPONSE = "[MISSING_FROM_RESPONSE]"
"""karenina's label for a literal trait its judge left out of a batch reply (score -1). We store
the same -1 and label, but the trait stays ``unscored``: never judged, never a pass."""


BATCH_ATTEMPTS = 3
"""Batch replies with invalid or missing traits are asked again, for those traits only, up to this many times."""


def _batch_feedback(problems: list[str], attempt: int, example: str) -> str:
    lines = "\n".join(f"- {p}" for p in problems)
    return (
        f"Some traits of your reply could not be used:\n{lines}\n"
        f"Reply again (attempt {attempt} of {BATCH_ATTEMPTS}) for these traits only, with their exact names: "
        f"{example}"
    )


async def ask_batch(
    judge: ChatModel, messages: list[Message], traits: list[LLMTrait], schema: type[BaseModel], purpose: Purpose,
    read: Callable[[Any], dict[str, Any]], check: Callable[[LLMTrait, Any], TraitOutcome], example: str,
) -> Outcomes:
    """One batch call for several traits; traits whose value is missing or invalid are asked again,
    alone, with feedback. Every trait left unscored keeps the reply it was last read from."""
    outcomes: Outcomes = {}
    pending = list(traits)
    conversation = list(messages)
    for attempt in range(1, BATCH_ATTEMPTS + 1):
        reply = await ask_structured(judge, conversation, schema, purpose=purpose)
        if reply.value is None:
            why = f"judge reply unusable after {reply.attempts} attempt(s): {reply.error}"
            for t in pending:
                outcomes[t.name] = TraitOutcome(status="unscored", reason=why, raw_reply=reply.raw_text,
                                                unscored_category="unparseable")
            return outcomes
        values = match_names(read(reply.value), [t.name for t in pending])
        problems: list[str] = []
        for t in pending:
            if t.name in values:
                outcome = check(t, values[t.name])
            else:
                outcome = TraitOutcome(status="unscored", reason="trait missing from the judge's reply",
                                       unscored_category="invalid_reply",
                                       label=MISSING_FROM_RESPONSE if t.kind == "literal" else None)
            if outcome.status == "unscored":
                outcome.raw_reply = reply.raw_text
                problems.append(f"{t.name}: {outcome.reason}")
            outcomes[t.name] = outcome
        pending = [t for t in pending if outcomes[t.name].status == "unscored"]
        if not pending or attempt == BATCH_ATTEMPTS:
            break
        said = reply.raw_text if reply.raw_text.strip() else "(empty reply)"
        conversation += [Message("assistant", said), Message("user", _batch_feedback(problems, attempt + 1, example))]
    return outcomes


def _scores(value: Any) -> dict[str, Any]:
    return dict(value.scores)


def _labels(value: Any) -> dict[str, Any]:
    found = value.classifications
    if isinstance(found, dict):
        return dict(found)
    names = dict.fromkeys(c.trait_name for c in found)  # a trait classified twice differently is a Conflicting
    return {n: distinct(c.class_name for c in found if c.trait_name == n) for n in names}


async def batch_scores(judge: ChatModel, question: str, answer: str, traits: list[LLMTrait], reference: str | None,
                       instructions: JudgeInstructions) -> Outcomes:
    text = prompts.batch_rubric_prompt(question, answer, traits, reference)
    return await ask_batch(
        judge, instructions.messages("rubric_llm_trait_batch", text), traits, prompts.BatchRubricScores,
        Purpose.RUBRIC_BATCH, _scores, check_score, '{"scores": {"<trait name>": <value>}}.',
    )


async def batch_labels(judge: ChatModel, question: str, answer: str, traits: list[LLMTrait],
                       instructions: JudgeInstructions) -> Outcomes:
    text = prompts.batch_literal_prompt(question, answer, traits)
    return await ask_batch(
        judge, instructions.messages("rubric_literal_trait_batch", text), traits,
        prompts.BatchLiteralClassifications, Purpose.RUBRIC_LITERAL_BATCH, _labels, check_label,
        '{"classifications": [{"trait_name": "...", "class_name": "<one class name>"}]}.',
    )


async def single_score(judge: ChatModel, question: str, answer: str, trait: LLMTrait, reference: str | None,
                       instructions: JudgeInstructions) -> Outcomes:
    text = prompts.single_trait_prompt(question, answer, trait, reference)
    task: PromptTask = "rubric_literal_trait_single" if trait.kind == "literal" else "rubric_llm_trait_single"
    reply = await ask_structured(
        judge, instructions.messages(task, text),
        verdict_schema(trait), purpose=Purpose.RUBRIC_SINGLE, trait=trait.name, check=verdict_check(trait),
    )
    if reply.value is None:
        return {trait.name: TraitOutcome(status="unscored", reason=f"judge reply unusable after {reply.attempts} attempt(s): {reply.error}",
                                         raw_reply=reply.raw_text, unscored_category="unparseable")}
    return {trait.name: read_verdict(trait, reply.value)}


def _some_list(raw: dict[str, Any], _value: Any) -> str | None:
    if not any(key in raw for key in ("tp", "fn", "fp", "tn")):
        return 'no list given: return {"tp": [...], "fn": [...], "fp": [...], "tn": [...]}'
    return None


async def metric_scores(judge: ChatModel, question: str, answer: str, trait: MetricTrait,
                        instructions: JudgeInstructions) -> tuple[str, Any]:
    reply = await ask_structured(
        judge, instructions.messages("rubric_metric_trait", prompts.metric_prompt(question, answer, trait)),
        prompts.ConfusionMatrixOutput, purpose=Purpose.RUBRIC_METRIC, trait=trait.name, check=_some_list,
    )
    if reply.value is None:
        return trait.name, TraitOutcome(status="unscored", reason=f"judge reply unusable after {reply.attempts} attempt(s): {reply.error}",
                                        raw_reply=reply.raw_text, unscored_category="unparseable")
    lists, metrics = confusion_metrics(trait, reply.value.model_dump())
    return trait.name, (lists, metrics)


async def code_outcome(trait: RegexTrait | CallableTrait, answer: str, question_id: str, limit: float,
                       trusted: bool = False) -> TraitOutcome:
    """A regex trait (off the event loop) or a callable trait (in a worker process), within ``limit``
    seconds. Running out of time, like any failure of the code, leaves the trait unscored (``code``).
    A pickled callable the run does not trust is skipped, and still counts as not judged."""
    if isinstance(trait, CallableTrait) and not trusted and is_pickled(trait):
        return TraitOutcome(status="skipped", reason=f"question {question_id}, trait {trait.name!r}: {UNTRUSTED}",
                            unscored_category="untrusted")
    try:
        if isinstance(trait, RegexTrait):
            verdict = await asyncio.to_thread(eval_regex, trait, answer, limit)
        else:
            verdict = await run_callable(trait, answer, limit, trusted=trusted)
    except (CodeTimeout, WorkerLost) as exc:
        return TraitOutcome(status="unscored", reason=f"question {question_id}, trait {trait.name!r}: {exc}",
                            unscored_category="code")
    if verdict.score is None:
        return TraitOutcome(status="unscored", reason=verdict.reason, unscored_category="code")
    return TraitOutcome(status="scored", score=verdict.score, label=verdict.label, reason=verdict.reason)


def standard_calls(config: VerificationConfig, judge: ChatModel, question: Any, answer: str, traits: list[LLMTrait],
                   instructions: JudgeInstructions) -> list[Any]:
    reference = question.raw_answer
    calls: list[Any] = []
    sequential = config.rubric_evaluation_strategy != "batch"
    graded = [t for t in traits if t.kind in ("boolean", "score")]
    literal = [t for t in traits if t.kind == "literal"]
    if sequential:
        for t in graded + literal:
            ref = reference if t.include_ground_truth else None
            calls.append(_guard([t.name], single_score(judge, question.text, answer, t, ref, instructions)))
        return calls
    for with_reference in (False, True):
        group = [t for t in graded if t.include_ground_truth == with_reference]
        if group:
            ref = reference if with_reference else None
            call = batch_scores(judge, question.text, answer, group, ref, instructions)
            calls.append(_guard([t.name for t in group], call))
    if literal:
        call = batch_labels(judge, question.text, answer, literal, instructions)
        calls.append(_guard([t.name for t in literal], call))
    return calls


class RubricEvaluation:
    name = "rubric_evaluation"
    summary = "score every rubric trait (LLM, deep judgment, regex, callable, metric)"

    def enabled(self, config: VerificationConfig) -> bool:
        return config.rubric_enabled

    def should_run(self, state: TaskState) -> bool:
        return state.answer is not None and bool(state.task.rubric.traits)

    async def run(self, state: TaskState, deps: Deps) -> None:
        config, task, answer = deps.config, state.task, judged_text(state, deps.config, rubric=True)
        rubric = task.rubric
        llm = [t for t in rubric.llm_traits if t.prompt is None]  # prompt graders: verify.stages.rubric_judges
        settings = resolve_rubric(config, task.question.id, llm)
        dj_traits = [t for t in llm if settings[t.name].enabled]
        std_traits = [t for t in llm if not settings[t.name].enabled and t.kind != "template"]
        shaped = [t for t in llm if t.kind == "template"]  # one call each, whatever the strategy
        metric_traits: list[MetricTrait] = rubric.of_type(MetricTrait)
        section = RubricSection(
            rubric_evaluation_strategy=config.rubric_evaluation_strategy or "sequential",
            trait_provenance=dict(task.provenance),
        )
        status = section.trait_status
        by_code = [t for t in rubric.traits if isinstance(t, RegexTrait | CallableTrait)]
        instructions = JudgeInstructions.of(task.parsing, config)
        ctx = TraitContext(task.question.text, answer, deps.judge, deps.search, instructions)
        std = standard_calls(config, deps.judge, task.question, answer, std_traits, instructions)
        metrics = [_guard([t.name], metric_scores(deps.judge, task.question.text, answer, t, instructions))
                   for t in metric_traits]
        if config.deep_judgment_rubric_strategy == "batched" and dj_traits:  # a few calls shared by all traits
            deep = [_guard([t.name for t in dj_traits], judge_traits(dj_traits, settings, ctx))]
        else:
            deep = [_guard([t.name], judge_trait(t, settings[t.name], ctx)) for t in dj_traits]
        trusted = config.trust_checkpoint_code
        code = [code_outcome(t, answer, task.question.id, deps.code_time_limit, trusted) for t in by_code]
        filled = [_guard([t.name], judge_template_trait(deps.judge, task.question.text, answer, t,
                                                        task.question.raw_answer if t.include_ground_truth else None,
                                                        instructions)) for t in shaped]
        code_out, std_out, metric_out, deep_out, filled_out, judged = await asyncio.gather(
            asyncio.gather(*code), asyncio.gather(*std), asyncio.gather(*metrics), asyncio.gather(*deep),
            asyncio.gather(*filled), rubric_judges.evaluate(deps.judge, task.question, answer, rubric, deps.judge_for,
                                  deps.search),
        )
        settled = dict(zip([t.name for t in by_code], code_out, strict=True)) | judged.outcomes
        template_values: dict[str, dict[str, Any]] = {}
        for result in filled_out:
            if isinstance(result, TemplateTraitResult):
                settled[result.name] = result.outcome
                template_values[result.name] = result.values
            else:  # the call itself failed (an outage)
                settled.update(result)
        for trait in rubric.traits:  # in the rubric's order, before the judge's traits, as always
            if trait.name in settled:  # regex, callable, template-kind, prompt-grader and schema-judge traits
                status[trait.name] = settled[trait.name]
            elif isinstance(trait, AgenticTrait):
                status[trait.name] = TraitOutcome(status="skipped", reason="agentic traits need an agent runtime")
        for outcomes in std_out:
            status.update(outcomes)
        for item in metric_out:
            if isinstance(item, dict):
                status.update(item)
                continue
            name, value = item
            if isinstance(value, TraitOutcome):
                status[name] = value
            else:
                lists, values = value
                section.metric_trait_confusion_lists = {**(section.metric_trait_confusion_lists or {}), name: lists}
                section.metric_trait_scores = {**(section.metric_trait_scores or {}), name: values}
                # The trait's headline number: F1 when asked for, else its first metric.
                headline = values.get("f1", next(iter(values.values()), None))
                status[name] = TraitOutcome(status="scored", score=headline)
        judgments: list[TraitJudgment] = []
        for item in (j for out in deep_out for j in (out if isinstance(out, list) else [out])):
            if isinstance(item, dict):  # the trait's evaluation itself failed
                status.update(item)
                continue
            judgments.append(item)
            status[item.name] = TraitOutcome(
                status=item.status, score=item.score, label=item.label,
                reason=item.reason, raw_reply=item.raw_reply, error_category=item.error_category,
                label_read_as=item.label_read_as,
                unscored_category=(item.unscored_category or "unparseable")
                if item.status == "unscored" and not item.error_category else None,
            )
        fill_scores(section, rubric.traits, template_values)
        rubric_judges.settle(state, section, rubric, judged)
        state.rubric = section
        if dj_traits:
            state.deep_judgment_rubric = deep_section(deps, judgments, std_traits, status)
        for j in judgments:
            if j.unscored_category == "contradiction":  # the judge's failure, said in the same words everywhere
                state.warnings.append(f"trait {j.name} unscored: {CONTRADICTION}")
        # Traits lost to an outage make the task an execution error, so --resume runs it again.
        failed = {n: o.error_category for n, o in status.items() if o.error_category}
        if failed:
            transient = [c for c in failed.values() if c in TRANSIENT_CATEGORIES]
            category = transient[0] if transient else next(iter(failed.values()))
            names = ", ".join(f"{n} ({c})" for n, c in failed.items())
            why = next(o.reason for o in status.values() if o.error_category == category)
            state.errors.append(StageError(stage=self.name, message=f"traits left unscored: {names}; {why}"[:500],
                                           category=category))


def fill_scores(section: RubricSection, traits: list[Any],
                template_values: dict[str, dict[str, Any]] | None = None) -> None:
    """The per-type score dicts karenina's readers use, from ``trait_status``. A template-kind trait
    adds one ``"<trait>.<field>"`` entry per field; a literal trait the judge left out gets
    karenina's -1 (and its label) although it is unscored."""
    def scored(kind: type) -> dict[str, Score]:
        out: dict[str, Score] = {}
        for t in traits:
            name: str = t.name
            outcome = section.trait_status.get(name)
            if isinstance(t, kind) and outcome and outcome.status == "scored" and outcome.score is not None:
                out[name] = outcome.score
        return out

    scores = scored(LLMTrait)
    llm_scores: dict[str, TraitValue] = {}
    for t in traits:
        if not isinstance(t, LLMTrait):
            continue
        outcome = section.trait_status.get(t.name)
        if t.name in scores:
            llm_scores[t.name] = scores[t.name]
        elif t.kind == "template" and outcome is not None and outcome.status == "scored":
            llm_scores.update(stored_fields(t.name, (template_values or {}).get(t.name, {})))
        elif t.kind == "literal" and outcome is not None and outcome.label == MISSING_FROM_RESPONSE:
            llm_scores[t.name] = -1
    section.llm_trait_scores = llm_scores or None
    labels = {n: o.label for n, o in section.trait_status.items() if o.label is not None}
    llm_names = {str(t.name) for t in traits if isinstance(t, LLMTrait)}
    section.llm_trait_labels = {n: v for n, v in labels.items() if n in llm_names} or None
    section.regex_trait_scores = {k: bool(v) for k, v in scored(RegexTrait).items()} or None
    section.callable_trait_scores = scored(CallableTrait) or None


def deep_section(deps: Deps, judgments: list[TraitJudgment], std_traits: list[LLMTrait], status: Outcomes) -> DeepJudgmentRubricSection:
    section = DeepJudgmentRubricSection()
    risks = {}
    for j in judgments:
        if not j.metadata.model_calls:  # batched judgments count their shared calls themselves
            j.metadata.model_calls = deps.judge.calls_for(j.name, lambda p: p.is_rubric_deep_judgment)
        section.trait_metadata[j.name] = j.metadata
        if j.excerpts:
            section.extracted_rubric_excerpts[j.name] = j.excerpts
        if j.reasoning is not None:
            section.rubric_trait_reasoning[j.name] = j.reasoning
        if j.status == "scored" and j.score is not None:
            section.deep_judgment_rubric_scores[j.name] = j.score
        if j.without_valid_excerpts:
            section.traits_without_valid_excerpts.append(j.name)
        if j.hallucination is not None:
            risks[j.name] = j.hallucination
        section.total_excerpt_retries += j.metadata.excerpt_retry_count
    section.total_traits_evaluated = len(judgments)
    names = {j.name for j in judgments}  # a shared (batched) call is recorded once, without a trait
    section.total_deep_judgment_model_calls = sum(
        1 for r in deps.judge.records if r.purpose.is_rubric_deep_judgment and (r.trait is None or r.trait in names))
    section.rubric_hallucination_risk_assessment = risks or None
    for t in std_traits:
        outcome = status.get(t.name)
        if outcome and outcome.status == "scored" and outcome.score is not None:
            section.standard_rubric_scores[t.name] = outcome.score
    return section
