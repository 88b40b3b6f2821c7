"""Task expansion: which questions run, and every question x answering model x judge x replicate.

Also the checks before any model call (:func:`preflight`): a custom deep-judgment config must name
traits and questions of the benchmark (else :class:`ConfigError`), and every selected question's
answer template is compiled, so a broken one is reported up front (as a warning: its own tasks
still fail with ``template_validation`` and the other questions run).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from verify.benchmark.judge_tools import SEARCH_TOOL, tool_name
from verify.benchmark.traits import Provenance, Rubric
from verify.config.deep_judgment import check_custom_names, resolve_trait
from verify.errors import ConfigError
from verify.results.gates import check_gates
from verify.results.rubric_verdict import check_weighable, gives_verdict
from verify.run.state import Task
from verify.sandbox.calls import compile_template_checked
from verify.sandbox.pool import CodeFailed, WorkerLost
from verify.stages.rubric import evaluates
from verify.templates.answer_base import BaseAnswer, has_own_verify
from verify.templates.compiler import CompiledTemplate, TemplateError
from verify.templates.composition import strategy_of
from verify.templates.primitives import SemanticMatch
from verify.templates.time_limit import DEFAULT_CODE_TIME_LIMIT, CodeTimeout

if TYPE_CHECKING:
    from verify.benchmark.jsonld import Benchmark
    from verify.benchmark.question import Question
    from verify.config.models import ModelConfig
    from verify.config.verification import VerificationConfig

__all__ = [
    "TemplateCheck", "build_tasks", "canonical", "check_command_trust", "check_deep_judgment_names",
    "check_model_tools", "check_something_to_evaluate",
    "check_templates", "check_templates_async", "needs_search", "preflight", "preflight_async",
    "select_questions", "task_rubric", "template_style",
]

T = TypeVar("T")


def canonical(model: ModelConfig) -> str:
    """The identity of a model inside a task key."""
    return f"{model.interface}:{model.model_name}:{model.id}"


def select_questions(
    benchmark: Benchmark, question_ids: Sequence[str] | None = None, include_unfinished: bool = False
) -> list[Question]:
    """The questions a run covers: the named ones, else the finished ones (or all)."""
    questions = list(benchmark.questions)
    if question_ids:
        wanted = list(question_ids)
        known = {q.id for q in questions}
        missing = [q for q in wanted if q not in known]
        if missing:
            raise ConfigError(f"unknown question id(s): {', '.join(missing)}", "list ids with --show-plan")
        questions = [q for q in questions if q.id in set(wanted)]
    elif not include_unfinished:
        questions = [q for q in questions if q.finished]
    return questions


def task_rubric(benchmark: Benchmark, config: VerificationConfig, question: Question) -> tuple[Rubric, dict[str, Provenance]]:
    """The question's merged rubric, narrowed to ``rubric_trait_names`` when set; none when rubrics
    are not evaluated (so a trait name in both rubrics stops only runs that evaluate them, as in karenina)."""
    if not config.rubric_enabled:
        return Rubric(), {}
    try:
        rubric, provenance = benchmark.rubric_for(question)
    except ValueError as exc:
        raise ConfigError(f"question {question.id!r}: {exc}") from None
    if config.rubric_trait_names is not None:  # honoured (inert in karenina's batch path)
        wanted = set(config.rubric_trait_names)
        rubric = Rubric(traits=[t for t in rubric.traits if t.name in wanted])
        provenance = {k: v for k, v in provenance.items() if k in wanted}
    return rubric, provenance


def check_something_to_evaluate(benchmark: Benchmark, config: VerificationConfig, questions: Sequence[Question]) -> None:
    """Fail before any call when a question would be judged on nothing (its result could only be empty).

    Without the template stages, a question needs a rubric trait the rubric stage evaluates. Every
    question's rubrics are merged here, so a trait name in both stops the run before it starts.
    """
    rubrics = [task_rubric(benchmark, config, q)[0] for q in questions]
    check_weighable(config, questions, rubrics)  # a rubric verdict can weigh every trait it needs
    pass_rule = config.template_enabled or any(gives_verdict(r, config) for r in rubrics)
    check_gates(config.gates, rubrics, pass_rule=pass_rule)  # every trait a gate names is evaluated
    if config.template_enabled:
        return
    empty = [q.id for q, rubric in zip(questions, rubrics, strict=True) if not any(evaluates(t) for t in rubric.traits)]
    if not empty:
        return
    where = benchmark.source or "the benchmark"
    more = f" and {len(empty) - 1} more" if len(empty) > 1 else ""
    raise ConfigError(
        f"{where}: nothing to evaluate for question {empty[0]!r}{more}: evaluation_mode "
        f"{config.evaluation_mode} judges rubric traits only, and it has none that can be evaluated",
        "add rubric traits, leave these questions out with --question-ids, or use evaluation_mode template_and_rubric",
    )


def build_tasks(benchmark: Benchmark, config: VerificationConfig, questions: Sequence[Question]) -> Iterator[Task]:
    """Every question x answering model x parsing model x replicate, lazily."""
    replicates: list[int | None] = (
        [None] if config.replicate_count == 1 else list(range(1, config.replicate_count + 1))
    )
    for question in questions:
        rubric, provenance = task_rubric(benchmark, config, question)
        for answering in config.answering_models:
            for parsing in config.parsing_models:
                for rep in replicates:
                    parts = [question.id, canonical(answering), canonical(parsing)] + ([f"rep{rep}"] if rep else [])
                    yield Task(question, rubric, dict(provenance), answering, parsing, rep, "\t".join(parts))


def needs_search(benchmark: Benchmark, config: VerificationConfig, questions: Sequence[Question]) -> bool:
    """Whether some trait of these questions may check its excerpts with rubric search, or is a judge
    given the search tool, or an answering model has the search tool."""
    if any(SEARCH_TOOL in map(tool_name, m.tools or []) for m in config.answering_models):
        return True
    if not config.rubric_enabled:
        return False
    for question in questions:
        if any(SEARCH_TOOL in map(tool_name, t.tools or []) for t in benchmark.rubric_for(question)[0].llm_traits):
            return True  # a judge with the search tool (verify.judging.tool_judge)
        if config.deep_judgment_rubric_mode == "disabled":
            continue
        rubric, _ = benchmark.rubric_for(question)
        settings = (resolve_trait(config, question.id, t) for t in rubric.llm_traits)
        # search only checks validated excerpts, so a trait without excerpts never searches
        if any(s.enabled and s.excerpt_enabled and s.search_enabled for s in settings):
            return True
    return False


# --------------------------------------------------------------------------- before any model call


def preflight(
    benchmark: Benchmark, config: VerificationConfig, questions: Sequence[Question], *,
    code_time_limit: float = DEFAULT_CODE_TIME_LIMIT,
) -> list[str]:
    """The checks before any model call; returns warnings (one located line each).

    Raises ConfigError when a custom deep-judgment config names a trait or question the benchmark
    does not have. Compiles the template of every question in ``questions`` (when templates are
    evaluated), each within ``code_time_limit`` seconds; a broken one is a warning naming the
    question and the compiler's located message. Safe to call with an event loop running (it then
    runs in a helper thread); from async code, ``await`` :func:`preflight_async` instead.
    """
    return _run_blocking(preflight_async(benchmark, config, questions, code_time_limit=code_time_limit))


async def preflight_async(
    benchmark: Benchmark, config: VerificationConfig, questions: Sequence[Question], *,
    code_time_limit: float = DEFAULT_CODE_TIME_LIMIT,
) -> list[str]:
    """:func:`preflight` for async callers."""
    check_command_trust(benchmark, config, questions)
    warnings = check_deep_judgment_names(benchmark, config)
    if config.template_enabled:
        where = benchmark.source or "the benchmark"
        for check in await check_templates_async(questions, code_time_limit):
            if check.error is not None:
                warnings.append(f"{where}: {check.error} (its tasks will fail with template_validation; "
                                "the other questions run)")
            elif check.unchecked:
                warnings.append(f"{where}: question {check.question_id!r}: VerifiedField(s) "
                                f"{', '.join(check.unchecked)} use SemanticMatch, which needs an embedding "
                                "model: its tasks will fail with field_verification_error")
    return warnings


def check_command_trust(benchmark: Benchmark, config: VerificationConfig, questions: Sequence[Question]) -> None:
    """A judge's command runner runs commands written in the checkpoint: like cloudpickle callables,
    only with ``trust_checkpoint_code`` (refused before any call, naming the question and trait). So
    does an answering model's (named). Judge models take no ``tools`` of their own (a trait's do)."""
    check_model_tools(config)
    if config.trust_checkpoint_code:
        return
    for model in config.answering_models:
        runners = [t for t in (model.tools or []) if isinstance(t, dict) and t.get("commands")]
        if runners:
            raise ConfigError(f"answering model {model.id!r}: its tool {runners[0].get('name')!r} runs commands",
                              "rerun with --trust-checkpoint-code if you trust this config")
    if not config.rubric_enabled:
        return
    for question in questions:
        for trait in task_rubric(benchmark, config, question)[0].llm_traits:
            runners = [t for t in (trait.tools or []) if isinstance(t, dict) and t.get("commands")]
            if runners:
                raise ConfigError(
                    f"{benchmark.source or 'the benchmark'}: question {question.id!r} / trait {trait.name!r}: its judge "
                    f"tool {runners[0].get('name')!r} runs commands from the checkpoint",
                    "rerun with --trust-checkpoint-code if you trust this checkpoint",
                )


def check_model_tools(config: VerificationConfig) -> None:
    """``tools`` belong to answering models; a judge model's are refused before any call."""
    for model in config.parsing_models:
        if model.tools:
            raise ConfigError(f"parsing model {model.id!r}: tools are for answering models; a judge uses the tools "
                              "its trait lists", "move the tools to the trait (tools: [..., 'submit_grade'])")


def check_deep_judgment_names(benchmark: Benchmark, config: VerificationConfig) -> list[str]:
    """Raise ConfigError when the custom deep-judgment config names an unknown trait or question (with
    the closest names); return warnings for entries that cannot take effect (not LLM traits)."""
    custom = config.deep_judgment_rubric_config
    if config.deep_judgment_rubric_mode != "custom" or custom is None or not config.rubric_enabled:
        return []
    traits_of = {}
    for question in benchmark.questions:
        try:
            rubric, _ = benchmark.rubric_for(question)
        except ValueError:
            continue  # a name in both rubrics: reported when the question's tasks are built
        traits_of[question.id] = {trait.name: trait for trait in rubric.traits}
    found = check_custom_names(custom, traits_of, benchmark.source or "the benchmark")
    if found.problems:
        more = f"; and {len(found.problems) - 3} more" if len(found.problems) > 3 else ""
        raise ConfigError(
            "; ".join(found.problems[:3]) + more,
            "fix the names in the deep-judgment rubric config (custom mode); --show-plan lists each question's traits",
        )
    return found.warnings


@dataclass(frozen=True)
class TemplateCheck:
    """Whether a question's template compiles: its ``style`` if so, else the compiler's ``error``.
    ``unchecked``: its VerifiedFields that cannot be checked (SemanticMatch needs embeddings)."""

    question_id: str
    style: str = ""
    error: str | None = None
    unchecked: tuple[str, ...] = ()


def check_templates(questions: Sequence[Question], time_limit: float = DEFAULT_CODE_TIME_LIMIT) -> list[TemplateCheck]:
    """Compile every question's template as the ``validate_template`` stage does (same compiler,
    same worker processes, same time limit per template), all at once."""
    return _run_blocking(check_templates_async(questions, time_limit))


async def check_templates_async(
    questions: Sequence[Question], time_limit: float = DEFAULT_CODE_TIME_LIMIT
) -> list[TemplateCheck]:
    """:func:`check_templates` for async callers."""
    return list(await asyncio.gather(*(_check_template(q, time_limit) for q in questions)))


async def _check_template(question: Question, time_limit: float) -> TemplateCheck:
    try:
        compiled = await compile_template_checked(question.template_code, question.id, time_limit)
    except TemplateError as exc:
        return TemplateCheck(question.id, error=str(exc))
    except (CodeTimeout, WorkerLost, CodeFailed) as exc:
        return TemplateCheck(question.id, error=f"question {question.id!r}: {exc}")
    unchecked = tuple(n for n, r in compiled.rules.items() if isinstance(r.primitive, SemanticMatch))
    return TemplateCheck(question.id, style=template_style(compiled), unchecked=unchecked)


def template_style(compiled: CompiledTemplate) -> str:
    """How a template decides, e.g. ``Answer: verify() + verify_granular() + regex checks``,
    ``Answer: VerifiedField (2 fields: ExactMatch, TraceRegex)``, ``Answer: regex-only``,
    ``Answer: trace-only (1 field: TraceContains)``. Regex-only and trace-only templates make no
    parse call."""
    cls, rules = compiled.answer_cls, compiled.rules
    own_granular = compiled.has_granular and (
        not rules or getattr(cls, "verify_granular", None) is not BaseAnswer._auto_verify_granular)
    parts = ["verify()"] if has_own_verify(cls) else []
    if rules:
        kind = "VerifiedField" if compiled.field_names else "trace-only"
        strategy = strategy_of(cls)
        primitives = ", ".join(type(r.primitive).__name__ for r in rules.values())
        plural = "s" if len(rules) > 1 else ""
        described = f"{kind} ({len(rules)} field{plural}: {primitives}"
        described += f"; {type(strategy).__name__})" if strategy is not None else ")"
        parts = [f"{parts[0]} over {described}" if parts else described]
    elif not compiled.field_names and compiled.regex:
        parts.insert(0, "regex-only")
    parts += [name for name, used in (("verify_granular()", own_granular),
                                      ("regex checks", bool(compiled.regex) and "regex-only" not in parts)) if used]
    unchecked = [n for n, r in rules.items() if isinstance(r.primitive, SemanticMatch)]
    note = f" (SemanticMatch on {', '.join(unchecked)}: cannot be checked)" if unchecked else ""
    return f"{compiled.class_name}: {' + '.join(parts) or 'no checks'}{note}"


def _run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)``; in a helper thread when this thread already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, T] = {}
    errors: list[BaseException] = []

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            errors.append(exc)

    thread = threading.Thread(target=target, name="verify-preflight", daemon=True)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return box["value"]
