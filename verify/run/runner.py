"""The batch runner: run every task concurrently, save each as it finishes, resume, export.

``run_verification(benchmark, config, ...)`` is the Python entry point (usable from a notebook);
the CLI calls the same function. Tasks are pulled by ``async_max_workers`` workers (unset:
:data:`AUTO_TASKS`, paced by each server's adaptive limit), model calls share one global limit
(``max_concurrent_requests``), and each finished task is appended to ``<output>.progress.jsonl``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verify.config.report import config_to_dict, config_warnings
from verify.errors import ConfigError, ModelError, RunInterrupted, RunStopped
from verify.judging.embedding import Embedder, get_embedder
from verify.llm.call_log import CallLog, calls_for_task
from verify.llm.ports import Search
from verify.llm.recording import RecordingModel
from verify.results.identity import run_identity
from verify.results.lock import OutputLock
from verify.results.models import SCHEMA_VERSION, VerificationResult, verify_version
from verify.results.outcome import RunOutcome
from verify.results.store import SavedState, latest_results, saved_state
from verify.results.summary import Summary
from verify.results.writer import ResultWriter
from verify.run.finish import Finish, finish_run
from verify.run.output import OutputPlan, check_output, prepare_output
from verify.run.pipeline import FINALIZE, plan
from verify.run.progress import ProgressBar
from verify.run.recorded import check_recorded_answers
from verify.run.revision import OnEvaluation, check_revisable, run_revising
from verify.run.services import AdapterFactory, Services
from verify.run.signals import stop_on_signals
from verify.run.state import AnswerMemo, Deps, Task
from verify.run.tasks import (
    build_tasks,
    check_something_to_evaluate,
    needs_search,
    preflight_async,
    select_questions,
)
from verify.secrets import register_config_secrets, register_env_secrets
from verify.stages import Stage
from verify.templates.time_limit import DEFAULT_CODE_TIME_LIMIT

if TYPE_CHECKING:
    from verify.benchmark.jsonld import Benchmark
    from verify.benchmark.question import Question
    from verify.config.verification import VerificationConfig

log = logging.getLogger("verify")

AUTO_TASKS = 64  # tasks in flight when async_max_workers is unset: the servers' adaptive limits pace the calls

__all__ = ["RunOptions", "RunOutcome", "run_async", "run_header", "run_verification"]

Answers = dict[str, dict[str, Any]]
Prices = dict[str, dict[str, float]]


@dataclass
class RunOptions:
    """How to run, beyond what the config says (the keyword arguments of :func:`run_verification`).

    ``output``: final export path (.json/.jsonl/.csv); progress goes to ``<output>.progress.jsonl``.
    ``resume``: skip tasks already finished there. ``cache_dir``: response cache (``None``: off).
    ``answers``: recorded answers ``{model id or "*": {question id or md5(text): answer}}``. ``adapter_factory``: builds the innermost
    model for a model config (a fake, or your own client); verify wraps it in its cache, retry
    and limit chain like its own adapters. ``search``: replaces every search port.
    ``code_time_limit``: seconds per call into code from the checkpoint. ``embedder_for``: the
    embedding model of a name, for the embedding check. ``overwrite``: replace an existing results
    or progress file (otherwise refused without ``resume``). ``inputs``: files the run reads, which
    ``output`` must not name. ``generate_missing_answers``: with recorded answers, let the answering
    model answer the questions they miss (otherwise an error). ``answers_source``: where the answers
    came from, for messages. ``deadline``: seconds the whole run may take. ``on_evaluation``: called
    with every grading pass when the config revises until satisfied (``revision_max_iterations``).
    ``log_calls``: a JSONL file of every model call (:mod:`verify.llm.call_log`), appended to on ``resume``.
    ``keep_results``: return every result in :attr:`RunOutcome.results`, all held in memory (the CLI
    passes False: the summary, gates and export need no result kept, see docs/performance.md).
    """

    output: Path | None = None
    resume: bool = False
    cache_dir: Path | None = None
    answers: Answers = field(default_factory=dict)
    run_name: str | None = None
    question_ids: Sequence[str] | None = None
    include_unfinished: bool = False
    progress: bool = False
    keep_results: bool = True
    adapter_factory: AdapterFactory | None = None
    search: Search | None = None
    on_result: Callable[[VerificationResult], None] | None = None
    prices: Prices | None = None
    code_time_limit: float = DEFAULT_CODE_TIME_LIMIT
    embedder_for: Callable[[str], Embedder] = get_embedder
    overwrite: bool = False
    inputs: Sequence[Path] = ()
    generate_missing_answers: bool = False
    answers_source: str | None = None
    deadline: float | None = None
    on_evaluation: OnEvaluation | None = None
    log_calls: Path | None = None


def run_header(
    config: VerificationConfig, stages: Sequence[Stage], run_name: str | None, tasks: int,
    structured_output: dict[str, str] | None = None, identity: dict[str, Any] | None = None,
    benchmark_path: str | None = None, gates: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """What a results file says about itself: versions, the effective config (secrets masked), the
    seed, the plan, the config warnings, each model's structured-output method, and each gate's value and verdict."""
    return {
        "schema_version": SCHEMA_VERSION, "verify_version": verify_version(), "run_name": run_name, "seed": config.seed,
        "evaluation_mode": config.evaluation_mode, "tasks": tasks,
        "plan": [*(stage.name for stage in stages), FINALIZE], "config_warnings": config_warnings(config),
        "structured_output": structured_output or {}, "config": config_to_dict(config),
        "benchmark": benchmark_path, "identity": identity or {}, "gates": gates or [],
    }


def _source(benchmark: Benchmark) -> str | None:  # saved with the run, for --resume PATH
    return str(Path(benchmark.source).resolve()) if benchmark.source else None


async def run_async(benchmark: Benchmark, config: VerificationConfig, options: RunOptions | None = None) -> RunOutcome:
    options = options or RunOptions()
    register_env_secrets()  # every configured secret is masked wherever the run writes text
    register_config_secrets(config)
    questions = select_questions(benchmark, options.question_ids, options.include_unfinished)
    if not questions:
        raise ConfigError(
            "no questions to verify: the benchmark has no finished questions",
            "mark questions finished, pass --include-unfinished, or select them with --question-ids",
        )
    if not config.answering_models:
        raise ConfigError(
            "answering_models is empty: there is no answer to judge (parsing_only runs are not supported)",
            "add an answering model, or record answers with --manual-traces FILE / --answers FILE",
        )
    check_something_to_evaluate(benchmark, config, questions)
    check_revisable(config, options.answers)  # recorded answers cannot be revised: refused before any call
    notes = await preflight_async(benchmark, config, questions, code_time_limit=options.code_time_limit)
    notes += check_recorded_answers(config, questions, options.answers, source=options.answers_source,
                                   generate_missing=options.generate_missing_answers)
    stages = plan(config)
    identity = run_identity(benchmark, config, verify_version())
    lock: OutputLock | None = None
    output_plan: OutputPlan | None = None
    if options.output is not None:
        check_output(options.output)
        lock = OutputLock(options.output).acquire()
    try:
        if options.output is not None:
            inputs = [*options.inputs, *([Path(benchmark.source)] if benchmark.source else [])]
            output_plan = prepare_output(
                options.output, resume=options.resume, overwrite=options.overwrite, inputs=inputs, identity=identity,
                task_keys=lambda: {t.key for t in build_tasks(benchmark, config, benchmark.questions)},
            )
            notes += output_plan.warnings
        for note in notes:
            log.warning(note)
        call_log = CallLog.for_run(options.log_calls, resume=options.resume, overwrite=options.overwrite)
        with call_log.closed_on_error() if call_log else nullcontext():
            services = Services(config, options.cache_dir, options.adapter_factory, call_log)
        try:
            for model in [*config.answering_models, *config.parsing_models]:
                services.model(model)  # a missing provider package or API key fails here, before any paid call
            with stop_on_signals() as stopped:
                return await _run(benchmark, config, options, questions, stages, services,
                                  output_plan, identity, stopped)
        finally:
            await services.close()
    finally:
        if lock is not None:
            lock.release()


async def _run(  # noqa: PLR0915 - one loop with its stop paths, kept together on purpose
    benchmark: Benchmark, config: VerificationConfig, options: RunOptions, questions: list[Question],
    stages: list[Stage], services: Services, output_plan: OutputPlan | None, identity: dict[str, Any],
    stopped: dict[str, str],
) -> RunOutcome:
    search = options.search
    if search is None and needs_search(benchmark, config, questions):
        search = services.rubric_search()
    template_search = options.search or services.template_search()
    progress_file = output_plan.progress if output_plan else None
    before = saved_state(progress_file) if (progress_file and output_plan and output_plan.append) else SavedState()
    writer: ResultWriter | None = None
    if progress_file is not None and output_plan is not None:
        try:
            writer = ResultWriter(progress_file, append=output_plan.append, header={"identity": identity,
                "run": {"benchmark": _source(benchmark), "config": config_to_dict(config, drop_secrets=True)}})
        except OSError as exc:
            raise ConfigError(f"cannot write {progress_file}: {exc.strerror or exc}", "pick a writable --output") from None
    memo = AnswerMemo(sharers=len(config.parsing_models))  # entries dropped once every judge took them
    summary = Summary(prices=options.prices, gates=config.gates)
    kept: dict[str, VerificationResult] = {}  # with keep_results: this process's results, by task key
    all_tasks = list(build_tasks(benchmark, config, questions)) if options.progress else None
    pending = (t for t in (all_tasks if all_tasks is not None else build_tasks(benchmark, config, questions)) if t.key not in before.done)
    resumed = len(before.done)
    bar = ProgressBar(len(all_tasks) if all_tasks is not None else None, resumed) if options.progress else None
    ran_keys: set[str] = set()  # the tasks this process saved (the others' calls were made by an earlier run)
    caps = answerer_caps(config)

    async def one(task: Task) -> VerificationResult:
        cap = caps.get(task.answering.id or "")
        if cap is None:
            return await judge_task(task)
        async with cap:  # answerer_concurrency_limits: tasks per answering model, at task start
            return await judge_task(task)

    async def judge_task(task: Task) -> VerificationResult:
        answerer = services.model(task.answering)
        judge = services.model(task.parsing)
        if judge is None:
            raise ModelError(f"parsing model {task.parsing.id!r} cannot be the manual interface")
        recorded = RecordingModel(judge, task.replicate)
        deps = Deps(
            config=config,
            answerer=RecordingModel(answerer, task.replicate) if answerer else None,
            judge=recorded,
            judge_for=lambda name, provider, temperature: RecordingModel(
                services.judge_variant(task.parsing, name, provider, temperature), task.replicate, recorded.records),
            search=search, template_search=template_search, recorded_answers=options.answers, answers=memo,
            run_name=options.run_name, code_time_limit=options.code_time_limit, embedder_for=options.embedder_for,
        )
        with calls_for_task(task.key):
            return await run_revising(task, deps, stages, options.on_evaluation)

    async def worker() -> None:
        for task in pending:
            result = await one(task)
            if writer:
                try:
                    await writer.save(result)  # durable before anything counts it
                except OSError as exc:
                    raise _WriteFailed(exc) from exc
            ran_keys.add(task.key)
            summary.add(result)
            if options.keep_results:
                kept[task.key] = result
            if options.on_result:
                options.on_result(result)
            if bar:
                bar.advance(result)

    # a given async_max_workers keeps karenina's meaning: that many questions at a time
    workers = (config.async_max_workers or AUTO_TASKS) if config.async_enabled else 1
    running = [asyncio.create_task(worker()) for _ in range(workers)]
    limits = [t for t in (config.batch_timeout_seconds, options.deadline) if t is not None]
    limit = min(limits) if limits else None
    saved = f" and are saved in {progress_file}" if progress_file else ""
    resume_hint = "rerun with --resume (and the same --output) to finish the others"
    try:
        if bar:
            bar.start()
        async with asyncio.timeout(limit):
            await asyncio.gather(*running)
    except TimeoutError:
        await _cancel(running)
        if writer:
            writer.close()  # flush what finished before reading it back
        finished = (list(latest_results(progress_file)) if progress_file else list(kept.values())) if options.keep_results else []
        which = "--deadline" if options.deadline == limit else "batch_timeout_seconds"
        raise RunStopped(
            f"the run reached {which}={limit:g} s: {resumed + len(ran_keys)} task(s) finished{saved}",
            f"{resume_hint}, or allow more time", results=finished,
        ) from None
    except _WriteFailed as exc:
        await _cancel(running)
        safe = (writer.written if writer else 0) + resumed
        raise RunStopped(
            f"cannot write {progress_file}: {exc.error.strerror or exc.error}; {safe} finished result(s) are safe in "
            f"{progress_file}", f"free space (or fix the folder), then {resume_hint}",
        ) from None
    except asyncio.CancelledError:
        await _cancel(running)
        if not stopped:
            raise
        done = (writer.written if writer else len(ran_keys)) + resumed
        raise RunInterrupted(
            f"stopped by {stopped['signal']}: {done} finished task(s){saved}", resume_hint,
            signal_name=stopped["signal"],
        ) from None
    except BaseException:
        await _cancel(running)  # one worker failed for good: stop the others before cleaning up
        raise
    finally:
        if bar:
            bar.stop()
        if writer:
            writer.close()
    warnings = config_warnings(config)
    results = list(kept.values())
    if progress_file is not None and options.output is not None:
        end = Finish(progress_file, options.output, before, ran_keys, summary, lambda done: run_header(
            config, stages, options.run_name, done.total, services.structured_output_methods(), identity,
            _source(benchmark), [gate.as_dict() for gate in done.gate_results()],
        ), finished=resumed + len(ran_keys), kept=kept if options.keep_results else None)
        try:
            results = finish_run(end)
        except OSError as exc:
            raise RunStopped(
                f"cannot write {options.output}: {exc.strerror or exc}; all {resumed + len(ran_keys)} result(s) are "
                f"safe in {progress_file}", "free space (or fix the folder), then rerun with --resume to write the export",
            ) from None
        progress_file.unlink()
    return RunOutcome(results=results, summary=summary, tasks=resumed + len(ran_keys), resumed=resumed,
                      output=options.output, config_warnings=warnings, seed=config.seed)


class _WriteFailed(Exception):
    """Writing a finished result failed (disk full, I/O error): the run stops, what was written is kept."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


async def _cancel(running: list[asyncio.Task[None]]) -> None:
    for task in running:
        task.cancel()
    await asyncio.gather(*running, return_exceptions=True)


def answerer_caps(config: VerificationConfig) -> dict[str, asyncio.Semaphore]:
    """``answerer_concurrency_limits`` as one semaphore per capped answering model id."""
    limits = config.answerer_concurrency_limits
    if limits is None:
        return {}
    ids = [m.id or "" for m in config.answering_models]
    wanted = dict.fromkeys(ids, limits) if isinstance(limits, int) else {i: limits[i] for i in ids if i in limits}
    return {model_id: asyncio.Semaphore(limit) for model_id, limit in wanted.items()}


def _run_in_new_loop(benchmark: Benchmark, config: VerificationConfig, options: RunOptions) -> RunOutcome:
    """``asyncio.run(run_async(...))``, except that the main task returns ``None``.

    When ``asyncio.run`` restores the SIGINT handler, CPython's ``signal`` module formats the old
    handler, which holds the main task, whose repr includes its result: the repr of a RunOutcome
    with every result in it (about 0.3 ms per kept result, and a string as large as the results).
    """
    box: dict[str, RunOutcome] = {}

    async def main() -> None:
        box["value"] = await run_async(benchmark, config, options)

    asyncio.run(main())
    return box["value"]


def run_verification(
    benchmark: Benchmark,
    config: VerificationConfig,
    *,
    output: Path | str | None = None,
    resume: bool = False,
    cache_dir: Path | str | None = None,
    answers: Answers | None = None,
    run_name: str | None = None,
    question_ids: Sequence[str] | None = None,
    include_unfinished: bool = False,
    progress: bool = False,
    keep_results: bool = True,
    adapter_factory: AdapterFactory | None = None,
    search: Search | None = None,
    on_result: Callable[[VerificationResult], None] | None = None,
    prices: Prices | None = None,
    code_time_limit: float = DEFAULT_CODE_TIME_LIMIT,
    embedder_for: Callable[[str], Embedder] = get_embedder,
    overwrite: bool = False,
    inputs: Sequence[Path | str] = (),
    generate_missing_answers: bool = False,
    answers_source: str | None = None,
    deadline: float | None = None,
    on_evaluation: OnEvaluation | None = None,
    log_calls: Path | str | None = None,
) -> RunOutcome:
    """Run a verification and return its results; works inside a notebook's running event loop.

    The keyword arguments are those of :class:`RunOptions`.
    """
    options = RunOptions(
        output=Path(output) if output is not None else None, resume=resume,
        cache_dir=Path(cache_dir) if cache_dir is not None else None, answers=answers or {},
        run_name=run_name, question_ids=question_ids, include_unfinished=include_unfinished,
        progress=progress, keep_results=keep_results, adapter_factory=adapter_factory, search=search,
        on_result=on_result, prices=prices, code_time_limit=code_time_limit, embedder_for=embedder_for,
        overwrite=overwrite, inputs=[Path(p) for p in inputs], generate_missing_answers=generate_missing_answers,
        answers_source=answers_source, deadline=deadline, on_evaluation=on_evaluation,
        log_calls=Path(log_calls) if log_calls is not None else None,
    )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_in_new_loop(benchmark, config, options)
    box: dict[str, RunOutcome] = {}
    errors: list[BaseException] = []

    def target() -> None:
        try:
            box["value"] = _run_in_new_loop(benchmark, config, options)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return box["value"]
