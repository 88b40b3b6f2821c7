"""The batch runner: expand tasks, run them concurrently, save as they finish, resume.

``run_verification(benchmark, config, ...)`` is the Python entry point (usable from a notebook);
the CLI calls the same function. Tasks are pulled by a fixed pool of workers
(``async_max_workers``), model calls share one global limit (``max_concurrent_requests``), and
each finished task is appended to ``<output>.progress.jsonl`` (fsynced) before the next starts.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verify.benchmark.traits import Rubric
from verify.config.dj_resolve import resolve_trait
from verify.errors import ConfigError, ModelError
from verify.llm.ports import ChatModel, Search
from verify.llm.recording import RecordingModel
from verify.results.export import Summary, export
from verify.results.models import VerificationResult
from verify.results.store import ResultWriter, done_keys, latest_results, progress_path
from verify.run.pipeline import plan, run_task
from verify.run.state import AnswerMemo, Deps, Task, TaskState
from verify.stages import Stage

if TYPE_CHECKING:
    from verify.benchmark.jsonld import Benchmark, Question
    from verify.config.verification import ModelConfig, VerificationConfig

ModelFactory = Callable[["ModelConfig"], ChatModel]


@dataclass
class RunOptions:
    """How to run, beyond what the config says.

    ``output``: final export path (.json/.jsonl/.csv); progress goes to ``<output>.progress.jsonl``.
    ``resume``: skip tasks already finished in the progress file. ``cache_dir``: response cache
    location (``None`` disables it). ``answers``: recorded answers ``{answering model id or "*":
    {question id or md5(question text): answer}}``.
    """

    output: Path | None = None
    resume: bool = False
    cache_dir: Path | None = None
    answers: dict[str, dict[str, str]] = field(default_factory=dict)
    run_name: str | None = None
    question_ids: Sequence[str] | None = None
    include_unfinished: bool = False
    progress: bool = False
    keep_results: bool = True
    model_factory: ModelFactory | None = None
    search: Search | None = None
    on_result: Callable[[VerificationResult], None] | None = None
    prices: dict[str, dict[str, float]] | None = None


@dataclass
class RunOutcome:
    results: list[VerificationResult]
    summary: Summary
    tasks: int
    resumed: int
    output: Path | None
    config_warnings: list[str] = field(default_factory=list)


def canonical(model: ModelConfig) -> str:
    return f"{model.interface}:{model.model_name}:{model.id}"


def select_questions(benchmark: Benchmark, options: RunOptions) -> list[Question]:
    questions = list(benchmark.questions)
    if options.question_ids:
        wanted = list(options.question_ids)
        known = {q.id for q in questions}
        missing = [q for q in wanted if q not in known]
        if missing:
            raise ConfigError(f"unknown question id(s): {', '.join(missing)}", "list ids with --show-plan")
        questions = [q for q in questions if q.id in set(wanted)]
    elif not options.include_unfinished:
        questions = [q for q in questions if q.finished]
    return questions


def build_tasks(benchmark: Benchmark, config: VerificationConfig, questions: Sequence[Question]) -> Iterator[Task]:
    """Every question x answering model x parsing model x replicate, lazily."""
    replicates: list[int | None] = [None] if config.replicate_count == 1 else list(range(1, config.replicate_count + 1))
    for question in questions:
        try:
            rubric, provenance = benchmark.rubric_for(question)
        except ValueError as exc:
            raise ConfigError(f"question {question.id!r}: {exc}") from None
        if config.rubric_trait_names is not None:  # honoured (inert in karenina's batch path)
            wanted = set(config.rubric_trait_names)
            rubric = Rubric(traits=[t for t in rubric.traits if t.name in wanted])
            provenance = {k: v for k, v in provenance.items() if k in wanted}
        for answering in config.answering_models:
            for parsing in config.parsing_models:
                for rep in replicates:
                    key = "\t".join([question.id, canonical(answering), canonical(parsing)] + ([f"rep{rep}"] if rep else []))
                    yield Task(question, rubric, dict(provenance), answering, parsing, rep, key)


def needs_search(benchmark: Benchmark, config: VerificationConfig, questions: Sequence[Question]) -> bool:
    if config.evaluation_mode == "template_only" or config.deep_judgment_rubric_mode == "disabled":
        return False
    for question in questions:
        rubric, _ = benchmark.rubric_for(question)
        settings = (resolve_trait(config, question.id, t) for t in rubric.llm_traits)
        # search only checks validated excerpts, so a trait without excerpts never searches
        if any(s.enabled and s.excerpt_enabled and s.search_enabled for s in settings):
            return True
    return False


def search_port(tool: Any, cache: Any) -> Search:
    """The search for ``tool`` ("tavily", "simulated" or a callable), with results cached."""
    from verify.llm.adapters.tavily import make_search
    from verify.llm.cache import CachedSearch

    tool_id = tool if isinstance(tool, str) else getattr(tool, "__qualname__", repr(tool))
    # API keys are read here, at the edge, never inside the config model.
    return CachedSearch(make_search(tool, api_key=os.environ.get("TAVILY_API_KEY")), cache, tool_id=tool_id)


def template_search_port(config: VerificationConfig, cache: Any) -> Search | None:
    """The search for template deep judgment (``deep_judgment_search_tool``), when it may run."""
    if config.evaluation_mode == "rubric_only" or config.deep_judgment_mode != "full" or not config.deep_judgment_search_enabled:
        return None
    return search_port(config.deep_judgment_search_tool, cache)


class _Models:
    """One live model per model config, built on first use and shared by all tasks."""

    def __init__(self, config: VerificationConfig, options: RunOptions) -> None:
        self.config, self.options = config, options
        self.built: dict[str, ChatModel] = {}
        self.owned: set[str] = set()
        self.cache = None
        if options.cache_dir is not None:
            from verify.llm.cache import ResponseCache

            try:
                self.cache = ResponseCache(Path(options.cache_dir) / "responses.sqlite")
            except OSError as exc:
                raise ConfigError(
                    f"cache folder {options.cache_dir}: {exc.strerror or exc}", "pass another --cache-dir, or --no-cache"
                ) from None
        limit = config.max_concurrent_requests
        self.limiter = asyncio.Semaphore(limit) if limit else None

    async def close(self) -> None:
        for key, built in self.built.items():
            if key not in self.owned:
                continue  # a model_factory's models belong to the caller
            layer: Any = built
            while layer is not None:  # walk the wrapper chain down to the adapter
                closer = getattr(layer, "aclose", None)
                if closer is not None:
                    await closer()
                layer = getattr(layer, "inner", None)
        if self.cache is not None:
            self.cache.close()

    def get(self, model: ModelConfig) -> ChatModel | None:
        key = canonical(model)
        if key not in self.built:
            if self.options.model_factory is not None:
                self.built[key] = self.options.model_factory(model)
            elif model.interface == "manual":
                return None
            else:
                from verify.llm.build import build_model

                self.owned.add(key)
                self.built[key] = build_model(
                    model, cache=self.cache, limiter=self.limiter, policy=self.config.retry_policy,
                    request_timeout=self.config.request_timeout,
                )
        return self.built[key]


def check_output(output: Path) -> None:
    """Fail before any model call when the results could not be written."""
    from verify.results.export import FORMATS

    if output.suffix.lower() not in FORMATS:
        raise ConfigError(
            f"output {output}: unknown format {output.suffix or '(no suffix)'!r}",
            f"name the results file with one of {', '.join(FORMATS)}",
        )
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"output {output}: cannot create its folder ({exc.strerror})", "pick a writable path") from None
    if output.is_dir():
        raise ConfigError(f"output {output} is a folder", "give a file name, e.g. results.json")


async def run_async(benchmark: Benchmark, config: VerificationConfig, options: RunOptions | None = None) -> RunOutcome:
    options = options or RunOptions()
    questions = select_questions(benchmark, options)
    if not questions:
        raise ConfigError(
            "no questions to verify: the benchmark has no finished questions",
            "mark questions finished, pass --include-unfinished, or select them with --question-ids",
        )
    if options.output is not None:
        check_output(options.output)
    stages = plan(config)
    models = _Models(config, options)
    try:
        for model in [*config.answering_models, *config.parsing_models]:
            models.get(model)  # a missing provider package or API key fails here, before any paid call
        return await _run(benchmark, config, options, questions, stages, models)
    finally:
        await models.close()


async def _run(
    benchmark: Benchmark, config: VerificationConfig, options: RunOptions, questions: list[Question],
    stages: list[Stage], models: _Models,
) -> RunOutcome:
    search = options.search
    if search is None and needs_search(benchmark, config, questions):
        search = search_port(config.deep_judgment_rubric_search_tool, models.cache)
    template_search = options.search or template_search_port(config, models.cache)
    progress_file = progress_path(options.output) if options.output else None
    if progress_file and options.output and options.resume and not progress_file.exists():
        seed_progress(options.output, progress_file)
    skip = done_keys(progress_file) if (progress_file and options.resume) else set()
    if progress_file and not options.resume and progress_file.exists():
        progress_file.unlink()
    writer = ResultWriter(progress_file, append=options.resume) if progress_file else None
    memo = AnswerMemo(sharers=len(config.parsing_models))  # entries dropped once every judge took them
    summary = Summary(prices=options.prices)
    results: list[VerificationResult] = []
    all_tasks = list(build_tasks(benchmark, config, questions)) if options.progress else None
    total = len(all_tasks) if all_tasks is not None else None
    pending = (t for t in (all_tasks if all_tasks is not None else build_tasks(benchmark, config, questions)) if t.key not in skip)
    resumed = len(skip)
    bar = _Progress(total, resumed) if options.progress else None
    ran = 0

    async def one(task: Task) -> VerificationResult:
        answerer = models.get(task.answering)
        judge = models.get(task.parsing)
        if judge is None:
            raise ModelError(f"parsing model {task.parsing.id!r} cannot be the manual interface")
        deps = Deps(
            config=config,
            answerer=RecordingModel(answerer, task.replicate) if answerer else None,
            judge=RecordingModel(judge, task.replicate),
            search=search,
            template_search=template_search,
            recorded_answers=options.answers,
            answers=memo,
            run_name=options.run_name,
        )
        return await run_task(TaskState(task), deps, stages)

    async def worker() -> None:
        nonlocal ran
        for task in pending:
            result = await one(task)
            ran += 1
            if writer:
                writer.write(result)
            summary.add(result)
            if options.keep_results and not progress_file:
                results.append(result)
            if options.on_result:
                options.on_result(result)
            if bar:
                bar.advance(result)

    workers = max(1, config.async_max_workers if config.async_enabled else 1)
    running = [asyncio.create_task(worker()) for _ in range(workers)]
    try:
        if bar:
            bar.start()
        await asyncio.gather(*running)
    except BaseException:
        for task in running:  # one worker failed for good: stop the others before cleaning up
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        raise
    finally:
        if bar:
            bar.stop()
        if writer:
            writer.close()
    if progress_file is not None and options.output is not None:
        summary = Summary(prices=options.prices)
        for r in latest_results(progress_file):
            summary.add(r)
        header = {"run_name": options.run_name, "evaluation_mode": config.evaluation_mode, "tasks": summary.total}
        export(latest_results(progress_file), options.output, header=header)
        if options.keep_results:
            results = list(latest_results(progress_file))
        progress_file.unlink()
    return RunOutcome(results=results, summary=summary, tasks=resumed + ran, resumed=resumed, output=options.output)


def seed_progress(output: Path, progress_file: Path) -> None:
    """Resuming a run that already finished: its export becomes the progress to resume from."""
    if not output.exists() or output.suffix.lower() not in (".json", ".jsonl"):
        return
    from verify.results.export import load_results

    try:
        previous = load_results(output)
    except (ValueError, KeyError):
        return  # not one of our exports; the run starts afresh
    writer = ResultWriter(progress_file, append=False)
    try:
        for result in previous:
            writer.write(result)
    finally:
        writer.close()


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


def run_verification(benchmark: Benchmark, config: VerificationConfig, **kwargs: Any) -> RunOutcome:
    """Run a verification and return its results; works inside a notebook's running event loop.

    Keyword arguments are :class:`RunOptions` fields (``output``, ``resume``, ``cache_dir``,
    ``answers``, ``question_ids``, ...).
    """
    options = RunOptions(**kwargs)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_in_new_loop(benchmark, config, options)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = _run_in_new_loop(benchmark, config, options)
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


class _Progress:
    """A rich progress bar: tasks done, failures, elapsed, ETA."""

    def __init__(self, total: int | None, resumed: int) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn("verifying"), BarColumn(), MofNCompleteColumn(),
            TextColumn("[red]{task.fields[failed]} failed"), TimeElapsedColumn(), TimeRemainingColumn(),
            transient=False,
        )
        self.task_id = self.progress.add_task("verify", total=total, completed=resumed, failed=0)
        self.failed = 0

    def start(self) -> None:
        self.progress.start()

    def stop(self) -> None:
        self.progress.stop()

    def advance(self, result: VerificationResult) -> None:
        self.failed += 0 if result.passed else 1
        self.progress.update(self.task_id, advance=1, failed=self.failed)
