"""The answer-template stages: ValidateTemplate, ParseTemplate, VerifyTemplate.

* ``validate_template`` compiles the question's template (:mod:`verify.templates.compiler`); a refused or
  broken template fails only that task (category ``template_validation``), with a located message.
* ``parse_template`` has the judge fill the template's fields (a null-tolerant schema), after
  template deep judgment when ``deep_judgment_mode`` is on, then builds the strict answer. An
  unusable reply or a required field left null fails the task (category ``parsing``); a VerifiedField
  left null is not a failure here: it is a null result, which does not pass (karenina's semantics).
  A template with nothing for the judge to fill (karenina's regex-only and trace-only templates)
  makes no parse call: its answer is built from no values.
* ``verify_template`` runs ``verify()`` (karenina's automatic one for VerifiedField templates; a
  regex-only template without one counts as True, as in karenina), the template's regex checks and
  ``verify_granular()``. A False verdict becomes the ``content`` failure when the result is finalized
  (the embedding check may still overturn it); an exception in ``verify()`` is recorded as
  ``field_verification_error`` on that task only.

The template's code runs in a worker process under ``deps.code_time_limit`` per call
(:mod:`verify.sandbox`); its regex checks run off the event loop under the same limit. Running out
of time is never "the answer is wrong": it fails the task as ``template_validation``, ``parsing`` or
``field_verification_error`` (group ``system``), with the question named.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any

from verify.judging.prompts import JudgeInstructions
from verify.llm.ports import Purpose
from verify.llm.structured import Check, ask_structured
from verify.results.models import StageError, TemplateSection
from verify.sandbox.calls import (
    BuiltAnswer,
    VerifyReply,
    build_answer,
    compile_template_checked,
    run_granular,
    run_verify,
)
from verify.sandbox.pool import CodeFailed, WorkerLost
from verify.stages.transcripts import judged_text
from verify.templates import prompts as tp
from verify.templates.answer_base import check_regex, has_own_verify
from verify.templates.compiler import CompiledTemplate, TemplateError
from verify.templates.deep_judgment import DJInput, DJSettings, judge_template
from verify.templates.time_limit import CodeTimeout

if TYPE_CHECKING:
    from verify.config.verification import VerificationConfig
    from verify.run.state import Deps, TaskState

log = logging.getLogger("verify")


class ValidateTemplate:
    name = "validate_template"
    summary = "compile the answer template (import allow-list, restricted builtins)"

    def enabled(self, config: VerificationConfig) -> bool:
        return config.template_enabled

    def should_run(self, state: TaskState) -> bool:
        return True

    async def run(self, state: TaskState, deps: Deps) -> None:
        question = state.task.question
        try:
            state.template.compiled = await compile_template_checked(
                question.template_code, question.id, deps.code_time_limit
            )
        except (TemplateError, CodeTimeout, WorkerLost) as exc:
            message = str(exc) if isinstance(exc, TemplateError) else f"question {question.id!r}: {exc}"
            state.template.validation_error = message
            state.errors.append(StageError(stage=self.name, message=message[:500], category="template_validation"))
            state.fail("template_validation", self.name, message, "system")
            # template_only has nothing left to do without a template: do not pay for an answer
            state.template.answer_needed = deps.config.rubric_enabled
            return
        state.template.section.parsed_gt_response = state.template.compiled.ground_truth


def _dj_settings(config: VerificationConfig) -> DJSettings:
    return DJSettings(
        mode=config.deep_judgment_mode,
        max_excerpts=config.deep_judgment_max_excerpts_per_attribute,
        threshold=config.deep_judgment_fuzzy_match_threshold,
        retry_attempts=config.deep_judgment_excerpt_retry_attempts,
        search_enabled=config.deep_judgment_search_enabled,
    )


def parse_check(compiled: CompiledTemplate) -> Check:
    """What makes a parse reply unusable although it validates against the null-tolerant model.

    Any JSON object fits a model whose fields are all optional: ``{}`` or an echoed schema would
    parse with every field null, and the answer would then look wrong when the judge failed.
    """
    names = compiled.field_names
    rules = compiled.rules  # a VerifiedField left null is an answer (a null result), not a bad reply
    required = [n for n in names if compiled.answer_cls.model_fields[n].is_required() and n not in rules]

    def check(raw: dict[str, Any], value: Any) -> str | None:
        if not any(name in raw for name in names):
            return f"the reply names no field of the template; give a value (or null) for each of: {', '.join(names)}"
        if required and all(getattr(value, name, None) is None for name in required):
            return (f"every required field is null ({', '.join(required)}); fill each with the value the response "
                    "gives, and use null only for a field the response really does not give")
        return None

    return check


class ParseTemplate:
    name = "parse_template"
    summary = "the judge fills the template's fields (after template deep judgment, when on)"

    def enabled(self, config: VerificationConfig) -> bool:
        return config.template_enabled

    def should_run(self, state: TaskState) -> bool:
        tpl = state.template
        return (
            tpl.compiled is not None and state.answer is not None
            and not state.abstention_detected and tpl.section.sufficiency_detected is not False
        )

    async def run(self, state: TaskState, deps: Deps) -> None:
        tpl, config = state.template, deps.config
        compiled = tpl.compiled
        assert compiled is not None
        question, answer = state.task.question.text, judged_text(state, deps.config, rubric=False)
        if not compiled.field_names:  # regex-only or trace-only: nothing to parse, so no judge call
            await self._build(state, deps, {}, None)
            return
        instructions = JudgeInstructions.of(state.task.parsing, config)
        reasoning: dict[str, str] | None = None
        if config.deep_judgment_mode != "disabled":
            inp = DJInput(question, answer, compiled, deps.judge, deps.template_search or deps.search, instructions)
            tpl.deep_judgment, reasoning = await judge_template(inp, _dj_settings(config))
        prompt = tp.parse_prompt(question, answer, compiled.class_name, compiled.fields(config.include_extraction_hints),
                                 compiled.relaxed_schema(), reasoning)
        messages = instructions.messages("parsing", prompt, tp.PARSE_SYSTEM)
        reply = await ask_structured(deps.judge, messages, compiled.relaxed_cls,
                                     purpose=Purpose.PARSING, check=parse_check(compiled))
        if tpl.deep_judgment is not None:
            dj = tpl.deep_judgment
            dj.deep_judgment_model_calls = reply.calls + sum(
                1 for r in deps.judge.records if r.purpose.is_template_deep_judgment
            )
        if reply.value is None:
            self._fail(state, f"judge reply unusable after {reply.attempts} attempt(s): {reply.error}", reply.raw_text)
            return
        await self._build(state, deps, reply.value.model_dump(), reply.raw_text)

    async def _build(self, state: TaskState, deps: Deps, values: dict[str, Any], raw: str | None) -> None:
        tpl, compiled = state.template, state.template.compiled
        assert compiled is not None
        code = state.task.question.template_code or ""
        try:
            # trace checks read the whole run, as karenina's read its raw trace (a transcript: rendered)
            trace = state.transcript.rendered().text if state.transcript else state.answer or ""
            built = await build_answer(compiled, code, values, deps.code_time_limit, trace=trace)
        except CodeFailed as exc:
            if exc.kind == "ValidationError":
                rules = compiled.rules  # a VerifiedField left null does not fail the build
                nulls = [k for k, v in values.items() if v is None and k not in rules
                         and compiled.answer_cls.model_fields[k].is_required()]
                why = (f"the judge left required field(s) null: {', '.join(nulls)}" if nulls
                       else f"parsed values do not fit the template: {'; '.join(exc.lines)}")
            else:  # the template's own model_post_init raised on these values
                why = f"the template raised while building the answer: {exc}"
            self._fail(state, why, raw)
            return
        except (CodeTimeout, WorkerLost) as exc:
            self._fail(state, f"the template raised while building the answer: {described(exc)}", raw)
            return
        tpl.instance = built
        tpl.section.parsed_llm_response = built.parsed
        tpl.section.parsed_gt_response = built.expected or tpl.section.parsed_gt_response
        if tpl.deep_judgment is not None:
            tpl.deep_judgment.deep_judgment_stages_completed.append("parameters")

    def _fail(self, state: TaskState, reason: str, raw: str | None) -> None:
        if raw is not None:
            state.warnings.append(f"parse_template: judge reply was: {raw[:300]}")
        state.fail("parsing", self.name, reason, "system")


def _short(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)[:160]


def _record_fields(sec: TemplateSection, verdict: VerifyReply) -> None:
    """karenina's per-field outcomes of a VerifiedField template."""
    sec.field_results, sec.field_scores = verdict.fields or None, verdict.scores or None
    sec.composition_strategy = verdict.strategy


def _field_problems(fields: dict[str, bool | None]) -> str:
    """Which VerifiedFields did not pass (failed, or left null by the judge), as a reason's prefix."""
    failed = [n for n, ok in fields.items() if ok is False]
    nulls = [n for n, ok in fields.items() if ok is None]
    return (f"VerifiedFields failed: {', '.join(failed)}; " if failed else "") + (
        f"left null by the judge: {', '.join(nulls)}; " if nulls else "")


def described(exc: Exception) -> str:
    """``"<type>: <message>"`` of what the template's code raised (in its worker) or of our own error."""
    return str(exc) if isinstance(exc, CodeFailed) else f"{type(exc).__name__}: {exc}"


class VerifyTemplate:
    name = "verify_template"
    summary = "the template's verify(), regex checks and verify_granular() decide correctness"

    def enabled(self, config: VerificationConfig) -> bool:
        return config.template_enabled

    def should_run(self, state: TaskState) -> bool:
        return state.template.instance is not None and not state.abstention_detected

    async def run(self, state: TaskState, deps: Deps) -> None:
        tpl = state.template
        sec = tpl.section
        built, compiled, limit = tpl.instance, tpl.compiled, deps.code_time_limit
        assert isinstance(built, BuiltAnswer) and compiled is not None
        sec.template_verification_performed = True
        field_ok: bool | None
        fields: dict[str, bool | None] = {}
        if not has_own_verify(compiled.answer_cls) and not compiled.rules:
            field_ok = True  # a regex-only template: its regex checks decide (karenina's regex-only path)
        else:
            try:
                verdict = await run_verify(built, limit)
            except Exception as exc:
                field_ok = None
                sec.field_verification_error = described(exc)[:500]
            else:
                if verdict.type_name != "bool":
                    state.warnings.append(f"verify() returned {verdict.type_name}, not bool; using its truth value")
                field_ok, fields = verdict.verdict, verdict.fields
                _record_fields(sec, verdict)
        tpl.field_verification_result = field_ok
        where = f"question {state.task.question.id}"
        regex = await asyncio.to_thread(check_regex, built.checks, state.answer or "", timeout=limit, where=where)
        sec.regex_validations_performed = regex.performed
        sec.regex_validation_results, sec.regex_validation_details = regex.results, regex.details
        sec.regex_extraction_results = regex.extractions
        sec.regex_overall_success = regex.success
        if field_ok is None:
            reason = f"the template's verify() raised {sec.field_verification_error}"
            log.warning("task %s: %s", state.task.key, reason)
            state.fail("field_verification_error", self.name, reason, "system")
            return
        failed = [n for n, ok in regex.results.items() if not ok and n not in regex.timed_out]
        if regex.timed_out:
            for why in regex.timed_out.values():
                state.errors.append(StageError(stage=self.name, message=why[:500], category="field_verification_error"))
            if field_ok and not failed:  # nothing judged the answer wrong: it is not judged at all
                reason = "; ".join(regex.timed_out.values())
                log.warning("task %s: %s", state.task.key, reason)
                state.fail("field_verification_error", self.name, reason, "system")
                return
        sec.verify_result = field_ok and regex.success
        if compiled.has_granular:
            try:
                sec.verify_granular_result = await run_granular(built, limit)
            except Exception as exc:
                state.warnings.append(f"verify_granular() raised {described(exc)}"[:300])
        if not sec.verify_result:
            problems = []
            if not field_ok:
                problems.append(f"verify() returned False ({_field_problems(fields)}parsed "
                                f"{_short(sec.parsed_llm_response)}; expected {_short(sec.parsed_gt_response)})")
            if failed:
                problems.append(f"regex check(s) failed: {', '.join(failed)}")
            tpl.verify_reason = "; ".join(problems)
