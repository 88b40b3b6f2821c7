"""The fixed stage order, the per-config plan, and running one task through it.

Order follows karenina's numbering (ValidateTemplate, GenerateAnswer, guards, AbstentionCheck,
SufficiencyCheck, ParseTemplate, VerifyTemplate, EmbeddingCheck, DeepJudgmentAutoFail,
RubricEvaluation, DeepJudgmentRubricAutoFail, FinalizeResult). Stages not built yet (karenina's
MCP-trace guards, agentic parsing and rubrics) are absent from ``STAGES``; FinalizeResult is the
loop's own last step and always runs.

Failure classification: stages record auto-fails as they happen (the first one wins); a False
template verdict becomes the ``content`` failure (stage ``verify_template``) at finalize time, so
the embedding check can still overturn it and deep-judgment auto-fails take precedence, as in
karenina's classifier. A failed rubric verdict (:mod:`verify.results.rubric_verdict`, only when the
rubric or the config asks for one) comes next: ``required_trait`` or ``rubric_threshold``, group
``content``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from verify.benchmark.traits import CallableTrait, RegexTrait
from verify.errors import TRANSIENT_CATEGORIES, ModelError, failure_category
from verify.llm.call_log import calls_for_stage
from verify.llm.recording import CallRecord
from verify.results.models import (
    Coverage,
    Metadata,
    ModelIdentity,
    StageError,
    StageUsage,
    TemplateSection,
    VerificationResult,
)
from verify.results.rubric_verdict import verdict_failure, weigh
from verify.results.verdict import coverage_of, pass_rule_of, verdict_of
from verify.secrets import redact
from verify.stages import Stage
from verify.stages.answer import GenerateAnswer
from verify.stages.auto_fail import DeepJudgmentAutoFail, DeepJudgmentRubricAutoFail
from verify.stages.checks import AbstentionCheck, EmbeddingCheck, SufficiencyCheck
from verify.stages.rubric import RubricEvaluation, evaluates
from verify.stages.template import ParseTemplate, ValidateTemplate, VerifyTemplate
from verify.stages.transcripts import judged_text, mark_blocks

if TYPE_CHECKING:
    from verify.config.models import ModelConfig
    from verify.config.verification import VerificationConfig
    from verify.run.state import Deps, TaskState

STAGES: tuple[Stage, ...] = (
    ValidateTemplate(),
    GenerateAnswer(),
    AbstentionCheck(),
    SufficiencyCheck(),
    ParseTemplate(),
    VerifyTemplate(),
    EmbeddingCheck(),
    DeepJudgmentAutoFail(),
    RubricEvaluation(),
    DeepJudgmentRubricAutoFail(),
)
FINALIZE = "finalize_result"


def plan(config: VerificationConfig) -> list[Stage]:
    """The stages that run for this config, in order (FinalizeResult follows them)."""
    return [stage for stage in STAGES if stage.enabled(config)]


def identity(model: ModelConfig) -> ModelIdentity:
    name = model.model_name or "manual"
    return ModelIdentity(interface=model.interface, model_name=name, config_id=model.id)


_USAGE_FIELDS = ("input_tokens", "output_tokens", "total_tokens", "calls", "cached_calls", "failed_calls",
                 "http_attempts")


def _usage(records: Sequence[CallRecord]) -> dict[str, StageUsage]:
    # summed in plain lists, one model per group at the end (a model's __setattr__ per field per call costs more)
    sums: dict[str, list[int]] = {}
    for r in records:
        row = (r.usage.input_tokens, r.usage.output_tokens, r.usage.total_tokens, 1, int(r.cached), int(r.failed),
               r.attempts)
        for name in (r.purpose.usage_group, "total"):
            total = sums.setdefault(name, [0] * len(_USAGE_FIELDS))
            for i, value in enumerate(row):
                total[i] += value
    return {name: StageUsage(**dict(zip(_USAGE_FIELDS, total, strict=True))) for name, total in sums.items()}


def task_coverage(state: TaskState, deps: Deps) -> Coverage:
    config = deps.config
    planned = [t for t in state.task.rubric.traits if evaluates(t)] if config.rubric_enabled else []
    return coverage_of(
        planned_traits=[t.name for t in planned], by_code=[t.name for t in planned if isinstance(t, RegexTrait | CallableTrait)],
        rubric=state.rubric, template_planned=config.template_enabled,
        template=state.template.section, failure=state.failure, answered=state.answer is not None,
    )


def finalize(state: TaskState, deps: Deps, started: float) -> VerificationResult:
    task = state.task
    tpl = state.template
    if state.failure is None and tpl.section.template_verification_performed and tpl.section.verify_result is False:
        state.fail("content", "verify_template", tpl.verify_reason or "template verification failed", "content")
    if state.rubric is not None:  # the weighted score always; a failed verdict (when asked for) fails the task
        state.rubric.rubric_verdict = weigh(task.rubric, state.rubric, deps.config)
        failed = verdict_failure(state.rubric.rubric_verdict)
        if failed is not None:
            state.fail(failed[0], "rubric_evaluation", failed[1], "content")
    if state.failure is None and state.errors:
        err = state.errors[-1]
        group = "retry" if err.category in TRANSIENT_CATEGORIES else "system"
        category = failure_category(err.category, err.message)  # a 401: "authentication", as --resume says
        state.fail(category, err.stage, err.message, group)
    coverage = task_coverage(state, deps)
    records = [*(deps.answerer.records if deps.answerer else []), *deps.judge.records]
    metadata = Metadata(
        question_id=task.question.id,
        template_id=task.question.template_id,
        task_key=task.key,
        result_id=hashlib.sha256(task.key.encode()).hexdigest()[:16],
        question_text=task.question.text,
        raw_answer=task.question.raw_answer,
        keywords=task.question.keywords or None,
        answering=identity(task.answering),
        parsing=identity(task.parsing),
        answering_system_prompt=task.answering.system_prompt,
        replicate=task.replicate,
        run_name=deps.run_name,
        evaluation_mode=deps.config.evaluation_mode,
        stages=[*state.stages, FINALIZE],
        failure=state.failure,
        verdict=verdict_of(state.failure, coverage,
                           pass_rule=pass_rule_of(deps.config.template_enabled, state.rubric)),
        coverage=coverage,
        caveats=list(tpl.caveats),
        errors=state.errors,
        warnings=state.warnings[:50],
        execution_time=round(time.perf_counter() - started, 4),
        timestamp=datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
    )
    # the stages assign to the section without validation: validate it once here, into a fresh copy
    mark_blocks(state, deps.config)
    trace = state.transcript
    template = TemplateSection.model_validate({
        **dict(tpl.section), "raw_llm_response": trace.rendered().text if trace else state.answer,
        "trace_messages": trace.trace_messages() if trace else [], "answer_source": state.answer_source,
        "usage_metadata": _usage(records), "abstention_detected": state.abstention_detected,
    })
    full = deps.config.use_full_trace_for_rubric if state.rubric is not None else deps.config.use_full_trace_for_template
    return VerificationResult(
        metadata=metadata, template=template, rubric=state.rubric, deep_judgment=tpl.deep_judgment,
        deep_judgment_rubric=state.deep_judgment_rubric, used_full_trace=trace is None or full,
        evaluation_input=None if trace is None else judged_text(state, deps.config, rubric=state.rubric is not None),
    )


async def run_task(state: TaskState, deps: Deps, stages: Sequence[Stage]) -> VerificationResult:
    """Run the planned stages for one task; a stage that raises is recorded and later stages go on."""
    started = time.perf_counter()
    for stage in stages:
        if not stage.should_run(state):
            continue
        state.stages.append(stage.name)
        try:
            with calls_for_stage(stage.name):  # names the stage in the call log (--log-calls)
                await stage.run(state, deps)
        except ModelError as exc:
            state.errors.append(StageError(stage=stage.name, message=redact(str(exc)), category=exc.category))
        except Exception as exc:  # a bug or bad data in one task must not stop the run
            state.errors.append(
                StageError(stage=stage.name, message=redact(f"{type(exc).__name__}: {exc}"))
            )
    return finalize(state, deps, started)
