"""The ``verify`` command: parse flags -> config -> run -> render. No verification logic here.

Precedence is defaults < preset < flags, and a flag the user did not give is ``None`` and never
overrides the preset (karenina's CLI resets preset values with its flag defaults; we do not).

Exit codes: 0 run completed with no task errors; 1 user or setup error; 2 usage error;
3 run completed but some tasks ended with execution errors; 4 pass rate below ``--fail-under``;
5 coverage (judged evaluations / all evaluations) below ``--min-coverage`` (default 1.0);
130 / 143 stopped by Ctrl-C / SIGTERM (what finished is saved; ``--resume`` goes on).
"""

# No ``from __future__ import annotations`` here: typer reads the run command's ~70 annotations, and
# as strings they would be evaluated (twice) on every start, a third of the time ``--help`` takes.
import json
import signal
from pathlib import Path
from typing import Annotated, Any

import typer
import typer.core

from verify.cli.command_types import RunByDefault
from verify.cli.init_cmd import init
from verify.cli.inputs import (
    build_config,
    check_call_log,
    default_output,
    parse_duration,
    parse_indices,
    read_answers,
    read_json,
    read_prices,
    run_inputs,
)
from verify.cli.interactive import build_config_interactively
from verify.cli.karenina import (
    ResumeAwareCommand,
    RunDirectory,
    inert_option_warnings,
    read_replay,
    resolve_resume,
)
from verify.cli.log_filter import install_log_filter, warn_once
from verify.cli.suite_cmd import check_ci_files, convert, write_ci_files
from verify.errors import RunInterrupted, UserError
from verify.files import DEFAULT_MAX_INPUT_MB, input_limit, refuse_clobber

app = typer.Typer(
    # click's plain layout for help (see verify.cli.command_types): long flag names are never cut at 80
    # columns, and --help does not load rich.
    cls=RunByDefault, add_completion=False, pretty_exceptions_show_locals=False, no_args_is_help=True,
    rich_markup_mode=None,
    help="Verify LLM answers against a karenina-style benchmark: rubrics, deep judgment, templates. "
    "`verify FILE ...` runs (see `verify run --help`; FILE may be a suite.yaml); `verify report RESULTS` makes the "
    "evidence page; `verify convert` turns a suite into a checkpoint and back; `verify init DIR` writes a small project to start from.",
)

Opt = typer.Option
DJ = "Deep judgment (rubrics)"
MODELS = "Models"
RUN = "Run"


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"verify {version('verify-judge')}")
        raise typer.Exit()


@app.command("run", cls=ResumeAwareCommand)
def verify(  # noqa: PLR0913 - one flag per karenina option, by design
    benchmark: Annotated[Path | None, typer.Argument(help="karenina checkpoint (.jsonld) or test suite (.yaml/.yml/.json); not needed with --resume PATH")] = None,
    preset: Annotated[str | None, Opt(help="preset file, or a name in ./presets", rich_help_panel=RUN)] = None,
    output: Annotated[Path | None, Opt(help="results file: .json, .jsonl or .csv", rich_help_panel=RUN)] = None,
    answers: Annotated[Path | None, Opt(help="recorded answers JSON {model id: {question id: answer}}", rich_help_panel=RUN)] = None,
    manual_traces: Annotated[Path | None, Opt(help="karenina manual traces JSON {md5(question): answer}", rich_help_panel=RUN)] = None,
    resume: Annotated[bool, Opt(help="continue the run saved in --output (same checkpoint and judging settings); "
                                "or --resume PATH: continue the run PATH (results, .progress.jsonl or .state file) belongs to", rich_help_panel=RUN)] = False,
    resume_from: Annotated[Path | None, Opt(hidden=True)] = None,
    interactive: Annotated[bool, Opt("--interactive", help="build the config by answering questions", rich_help_panel=RUN)] = False,
    mode: Annotated[str | None, Opt("--mode", help="with --interactive: basic | advanced", rich_help_panel=RUN)] = None,
    run_root: Annotated[Path | None, Opt(help="write results.json and run_manifest.json into a new timestamped directory below this path", rich_help_panel=RUN)] = None,
    run_label: Annotated[str, Opt(help="name of the --run-root directory (and the default run name)", rich_help_panel=RUN)] = "verification",
    replay: Annotated[Path | None, Opt(help="karenina replay store: its traces answer the pairs it holds, the rest are answered live", rich_help_panel=RUN)] = None,
    revise_until_satisfied: Annotated[int | None, Opt(min=1, max=20, help="revise each answer until its rubric is satisfied: up to N answer-and-grade passes (bare flag: 3)", rich_help_panel=RUN)] = None,
    trust_checkpoint_code: Annotated[bool, Opt("--trust-checkpoint-code", help="run callable traits stored as cloudpickle and judges' command runners (code from the checkpoint)", rich_help_panel=RUN)] = False,
    workspace_output_mode: Annotated[str | None, Opt(help="karenina agent workspaces (none/full/produced); no effect yet", rich_help_panel=RUN)] = None,
    workspace_output_dir: Annotated[Path | None, Opt(help="karenina agent workspaces; no effect yet", rich_help_panel=RUN)] = None,
    workspace_output_exclude: Annotated[list[str] | None, Opt("--workspace-output-exclude", help="karenina agent workspaces; no effect yet", rich_help_panel=RUN)] = None,
    overwrite: Annotated[bool, Opt(help="replace an existing --output (and discard its unfinished progress)", rich_help_panel=RUN)] = False,
    generate_missing_answers: Annotated[bool, Opt(help="with --answers or manual traces, let the answering model answer what they miss", rich_help_panel=RUN)] = False,
    deadline: Annotated[str | None, Opt(help="stop the whole run after this long (90, 30m, 2h); what finished is saved", rich_help_panel=RUN)] = None,
    allow_outside_paths: Annotated[bool, Opt("--allow-outside-paths", help="let a suite's prompt_path name a file outside the suite's folder", rich_help_panel=RUN)] = False,
    max_input_mb: Annotated[float, Opt(min=0.001, help="largest input file (checkpoint, suite, answers, results) read, in MB", rich_help_panel=RUN)] = DEFAULT_MAX_INPUT_MB,
    code_time_limit: Annotated[float, Opt(min=0.01, help="seconds per call into checkpoint code (regexes, callables, templates)", rich_help_panel=RUN)] = 10.0,
    progressive_save: Annotated[bool, Opt(help="accepted for karenina compatibility; results are always saved as they finish", rich_help_panel=RUN, hidden=True)] = False,
    questions: Annotated[str | None, Opt(help="indices into the selected questions, e.g. 0,1,5-10", rich_help_panel=RUN)] = None,
    question_ids: Annotated[str | None, Opt(help="comma-separated question ids", rich_help_panel=RUN)] = None,
    include_unfinished: Annotated[bool, Opt(help="also verify questions not marked finished", rich_help_panel=RUN)] = False,
    no_cache: Annotated[bool, Opt("--no-cache", help="do not read or write the response cache", rich_help_panel=RUN)] = False,
    cache_dir: Annotated[Path, Opt(help="response cache directory", rich_help_panel=RUN)] = Path(".verify-cache"),
    report_path: Annotated[Path | None, Opt("--report", help="also write the evidence page (HTML) of this run", rich_help_panel=RUN)] = None,
    junit: Annotated[Path | None, Opt("--junit", help="also write a JUnit XML file for CI: a test case per task, failures with their traits and evidence, incomplete tasks as errors", rich_help_panel=RUN)] = None,
    summary_md: Annotated[Path | None, Opt("--summary-md", help="also write a markdown summary for CI pages (e.g. $GITHUB_STEP_SUMMARY): pass rate, coverage, gates, failing tasks", rich_help_panel=RUN)] = None,
    columns: Annotated[str | None, Opt(help="a CSV/JSONL dataset's column names, e.g. id=qid,question=prompt (names: id, question, expected_answer, answer, answering_model, assert)", rich_help_panel=RUN)] = None,
    gate: Annotated[list[str] | None, Opt("--gate", help='exit 4 unless EXPR holds, e.g. "pass_rate >= 0.9", "mean(clarity) >= 4" (repeatable)', rich_help_panel=RUN)] = None,
    fail_under: Annotated[float | None, Opt(min=0.0, max=1.0, help="exit 4 when the pass rate (of complete tasks) is below RATE (0-1): the gate 'pass_rate >= RATE'", rich_help_panel=RUN)] = None,
    min_coverage: Annotated[float, Opt(min=0.0, max=1.0, help="exit 5 when the share of evaluations judged is below RATE (0-1)", rich_help_panel=RUN)] = 1.0,
    run_name: Annotated[str | None, Opt(help="name stored in every result", rich_help_panel=RUN)] = None,
    log_calls: Annotated[Path | None, Opt(help="audit trail: one JSON line per model call (request, raw reply, timing, usage; secrets masked) in FILE.jsonl", rich_help_panel=RUN)] = None,
    seed: Annotated[int | None, Opt(min=0, help="seed of verify's own randomness (simulated judge, retry jitter); recorded in the results", rich_help_panel=RUN)] = None,
    prices: Annotated[Path | None, Opt(help='price table JSON {model: {"input_per_million": $, "output_per_million": $}}', rich_help_panel=RUN)] = None,
    show_config: Annotated[bool, Opt(help="print the effective config as JSON and exit", rich_help_panel=RUN)] = False,
    show_plan: Annotated[bool, Opt(help="print the stages and per-trait deep-judgment settings and exit", rich_help_panel=RUN)] = False,
    verbose: Annotated[bool, Opt(help="show a progress bar", rich_help_panel=RUN)] = False,
    debug: Annotated[bool, Opt(help="show tracebacks", rich_help_panel=RUN)] = False,
    set_: Annotated[list[str] | None, Opt("--set", help="any config field: --set async_max_workers=4 (JSON values)", rich_help_panel=RUN)] = None,
    answering_model: Annotated[str | None, Opt(help="answering model name, e.g. gpt-4.1-mini (set on every answering model)", rich_help_panel=MODELS)] = None,
    answering_provider: Annotated[str | None, Opt(help="answering model provider, e.g. openai (set on every answering model)", rich_help_panel=MODELS)] = None,
    answering_id: Annotated[str | None, Opt(help="answering model id used in results", rich_help_panel=MODELS)] = None,
    parsing_model: Annotated[str | None, Opt(help="judge (parsing) model name (set on every judge model)", rich_help_panel=MODELS)] = None,
    parsing_provider: Annotated[str | None, Opt(help="judge model provider, e.g. anthropic (set on every judge model); the offline judge is --interface simulated instead", rich_help_panel=MODELS)] = None,
    parsing_id: Annotated[str | None, Opt(help="judge model id used in results", rich_help_panel=MODELS)] = None,
    temperature: Annotated[float | None, Opt(help="temperature of every answering and judge model", rich_help_panel=MODELS)] = None,
    interface: Annotated[str | None, Opt(help="interface for both roles (manual: answering only)", rich_help_panel=MODELS)] = None,
    evaluation_mode: Annotated[str | None, Opt(help="template_only | template_and_rubric | rubric_only")] = None,
    rubric_evaluation_strategy: Annotated[str | None, Opt(help="batch | sequential")] = None,
    replicate_count: Annotated[int | None, Opt(help="runs per question and answering model")] = None,
    abstention: Annotated[bool | None, Opt("--abstention/--no-abstention", help="ask the judge whether the answer abstains (fails the task if so)")] = None,
    sufficiency: Annotated[bool | None, Opt("--sufficiency/--no-sufficiency", help="ask the judge whether the answer can fill the template")] = None,
    embedding_check: Annotated[bool | None, Opt("--embedding-check/--no-embedding-check", help="second chance by embedding similarity when template verification fails")] = None,
    embedding_threshold: Annotated[float | None, Opt(help="cosine similarity for the embedding check (0-1)")] = None,
    embedding_model: Annotated[str | None, Opt(help="sentence-embedding model of the embedding check")] = None,
    deep_judgment: Annotated[bool | None, Opt("--deep-judgment/--no-deep-judgment", help="template deep judgment full/disabled")] = None,
    deep_judgment_rubric_mode: Annotated[str | None, Opt(help="disabled | enable_all | use_checkpoint | custom", rich_help_panel=DJ)] = None,
    deep_judgment_rubric_config: Annotated[Path | None, Opt(help="JSON {global: {...}, question_specific: {...}} for custom mode", rich_help_panel=DJ)] = None,
    deep_judgment_rubric_excerpts: Annotated[bool | None, Opt("--deep-judgment-rubric-excerpts/--no-deep-judgment-rubric-excerpts", help="enable_all: quote the answer (else reasoning only)", rich_help_panel=DJ)] = None,
    deep_judgment_rubric_max_excerpts: Annotated[int | None, Opt(help="quotes kept per trait where the trait sets none", rich_help_panel=DJ)] = None,
    deep_judgment_rubric_fuzzy_threshold: Annotated[float | None, Opt(help="similarity (0-1) a quote needs to count as in the answer", rich_help_panel=DJ)] = None,
    deep_judgment_rubric_retry_attempts: Annotated[int | None, Opt(help="times the judge is asked again when quotes are not in the answer", rich_help_panel=DJ)] = None,
    deep_judgment_rubric_search: Annotated[bool | None, Opt("--deep-judgment-rubric-search/--no-deep-judgment-rubric-search", help="check valid quotes with web search", rich_help_panel=DJ)] = None,
    deep_judgment_rubric_search_tool: Annotated[str | None, Opt(help="tavily | simulated", rich_help_panel=DJ)] = None,
    deep_judgment_rubric_strategy: Annotated[str | None, Opt(help="per_trait | batched (all traits of a task share 2-3 calls when replies are usable)", rich_help_panel=DJ)] = None,
    use_full_trace_for_template: Annotated[bool | None, Opt("--use-full-trace-for-template/--use-final-message-for-template", help="transcripts: the template judge reads the whole run or only its submission")] = None,
    use_full_trace_for_rubric: Annotated[bool | None, Opt("--use-full-trace-for-rubric/--use-final-message-for-rubric", help="transcripts: rubric judges read the whole run or only its submission")] = None,
    transcript_extractor: Annotated[str | None, Opt(help="a transcript's submission: last_assistant | all_assistant | tool_output:<tool>")] = None,
    no_async: Annotated[bool, Opt("--no-async", help="run one task at a time")] = False,
    async_workers: Annotated[int | None, Opt(help="questions worked on at once (unset: verify adapts per server)")] = None,
    max_concurrent_requests: Annotated[int | None, Opt(help="global cap on concurrent model calls")] = None,
    version: Annotated[bool, Opt("--version", help="print the version and exit", callback=_version, is_eager=True)] = False,
) -> None:
    """Run (or plan) a verification of BENCHMARK."""
    flags = dict(locals())
    # Loaded when a command runs, not for --help: asyncio, and the secret patterns' regexes.
    from verify.run.signals import Terminated, raise_terminated
    from verify.secrets import register_env_secrets, scrub

    signal.signal(signal.SIGTERM, raise_terminated)  # start-up; the run itself handles SIGTERM on its event loop
    install_log_filter()
    register_env_secrets()
    repeats = warn_once()
    try:
        with input_limit(max_input_mb):
            code = _main(flags)
    except RunInterrupted as exc:
        typer.secho(f"interrupted: {scrub(exc.message)}", err=True, fg="yellow")
        typer.echo(f"hint: {exc.hint}", err=True)
        raise typer.Exit(143 if exc.signal_name == "SIGTERM" else 130) from None
    except KeyboardInterrupt as exc:
        typer.secho("interrupted before the run started: nothing was written", err=True, fg="yellow")
        raise typer.Exit(143 if isinstance(exc, Terminated) else 130) from None
    except UserError as exc:
        if debug:
            _print_traceback()
        message = " ".join(line.strip() for line in exc.message.splitlines())
        typer.secho(f"error: {scrub(message)}", err=True, fg="red")
        if exc.hint:
            typer.echo(f"hint: {scrub(exc.hint)}", err=True)
        raise typer.Exit(1) from None
    except Exception as exc:  # a bug in verify: still one line (and no secret), the traceback on request
        if debug:
            _print_traceback()
        message = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        typer.secho(f"error: internal error: {scrub(message)}", err=True, fg="red")
        typer.echo("hint: this is a bug in verify; rerun with --debug for the traceback and report it", err=True)
        raise typer.Exit(1) from None
    finally:
        for message, count in repeats.counts.items():
            if count > 1:
                typer.secho(f"warning: {count - 1} more like: {message[:120]}", err=True, fg="yellow")
    raise typer.Exit(code)


def _print_traceback() -> None:
    import traceback

    from verify.secrets import scrub

    typer.echo(scrub(traceback.format_exc()), err=True)


def _main(flags: dict[str, Any]) -> int:
    from verify.cli.suite_cmd import open_suite, read_benchmark, run_answers, suite_config
    from verify.config.report import config_to_dict, config_warnings
    from verify.run.runner import RunOptions, run_verification
    from verify.run.tasks import select_questions
    from verify.secrets import mask_data, register_config_secrets, scrub

    for line in inert_option_warnings(flags):
        typer.secho(f"warning: {line}", err=True, fg="yellow")
    saved = resolve_resume(flags)
    suite = open_suite(flags)  # a test-suite file (suite.yaml) instead of a checkpoint, or None
    picked: list[str] | None = None
    if flags["interactive"]:
        if flags["benchmark"] is None:
            raise UserError("--interactive needs the BENCHMARK file", "verify BENCHMARK.jsonld --interactive")
        traces = read_json(flags["manual_traces"], "manual traces") if flags["manual_traces"] else None
        config, picked = build_config_interactively(read_benchmark(flags["benchmark"], suite), flags["mode"] or "basic", traces)
    else:
        config = build_config(flags, saved)
    if suite is not None:
        config = suite_config(suite, config, flags)
    register_config_secrets(config)
    for line in config_warnings(config):
        typer.secho(f"warning: {scrub(line)}", err=True, fg="yellow")
    if flags["show_config"]:
        typer.echo(json.dumps(mask_data(config_to_dict(config)), indent=2, default=str))
        return 0
    if flags["benchmark"] is None:
        raise UserError("missing the BENCHMARK file", "verify BENCHMARK.jsonld --preset PRESET (only --resume PATH may leave it out)")
    bench = read_benchmark(flags["benchmark"], suite)
    answers, answers_source = run_answers(suite, flags, read_answers)
    for line in bench.warnings:
        typer.secho(f"warning: {scrub(line)}", err=True, fg="yellow")
    options = RunOptions(
        output=flags["output"], resume=flags["resume"], include_unfinished=flags["include_unfinished"],
        cache_dir=None if flags["no_cache"] else flags["cache_dir"],
        answers=answers,
        run_name=flags["run_name"], progress=flags["verbose"],
        prices=read_prices(flags["prices"]) if flags["prices"] else None,
        question_ids=[q.strip() for q in flags["question_ids"].split(",") if q.strip()] if flags["question_ids"] else None,
        overwrite=flags["overwrite"], inputs=run_inputs(flags), generate_missing_answers=flags["generate_missing_answers"],
        answers_source=answers_source,
        deadline=parse_duration(flags["deadline"]) if flags["deadline"] else None,
        code_time_limit=flags["code_time_limit"], log_calls=flags["log_calls"],
        # the summary, gates, export and page never need every result in memory; --junit/--summary-md list them
        keep_results=flags.get("junit") is not None or flags.get("summary_md") is not None,
    )
    if picked is not None:
        options.question_ids = picked
    if flags["replay"]:
        if flags["answers"]:
            raise UserError("--replay and --answers both give recorded answers", "give only one of them")
        options.answers, strict = read_replay(flags["replay"])
        options.generate_missing_answers = options.generate_missing_answers or not strict
        options.answers_source = f"replay store {flags['replay']}"
    if flags["questions"]:
        selected = select_questions(bench, options.question_ids, options.include_unfinished)
        options.question_ids = [selected[i].id for i in parse_indices(flags["questions"], len(selected))]
    if flags["resume"] and not flags["output"]:
        raise UserError("--resume needs --output (the run's results file)", "pass the same --output as the interrupted run")
    if flags["show_plan"]:
        from verify.results.report import render_plan

        render_plan(bench, config, select_questions(bench, options.question_ids, options.include_unfinished),
                    code_time_limit=flags["code_time_limit"], answers=options.answers)
        return 0
    directory: RunDirectory | None = None
    if flags["run_root"] is not None:
        selected = select_questions(bench, options.question_ids, options.include_unfinished)
        directory = RunDirectory.create(flags["run_root"], flags["run_label"], benchmark_path=str(flags["benchmark"]),
                                        config=config, questions=len(selected))
        options.output, options.run_name = directory.results_path, options.run_name or flags["run_label"]
        typer.echo(f"run directory: {directory.path}", err=True)
    if options.output is None:
        options.output = default_output(Path(flags["benchmark"]))
    if flags["report_path"] is not None and options.output.suffix.lower() not in (".json", ".jsonl"):
        raise UserError(f"--report needs a .json or .jsonl --output, not {options.output.name}",
                        "write the results as .json (a CSV holds no evidence to show)")
    if flags["report_path"] is not None and Path(flags["report_path"]).resolve() in {
            p.resolve() for p in [options.output, *run_inputs(flags)]}:
        raise UserError(f"--report {flags['report_path']} names the results file or an input of the run",
                        "give the page its own name, e.g. --report report.html")
    check_call_log(flags, options.output)
    check_ci_files(flags, options.output, run_inputs(flags))
    if flags["report_path"] is not None:  # before any call: a finished run must not fail on its page
        from verify.report import is_report_page

        refuse_clobber(Path(flags["report_path"]), "--report", overwrite=flags["overwrite"], ours=is_report_page)
    try:
        outcome = run_verification(bench, config, **vars(options))
    except KeyboardInterrupt as exc:  # a second Ctrl-C (or SIGTERM before the run loop): the hard way out
        if directory is not None:
            directory.finish("interrupted")
        typer.secho(f"interrupted: finished tasks are saved in {options.output}.progress.jsonl", err=True, fg="yellow")
        typer.echo(f"hint: rerun with --resume and --output {options.output} to finish the others", err=True)
        from verify.run.signals import Terminated

        return 143 if isinstance(exc, Terminated) else 130
    except BaseException as exc:
        if directory is not None:
            directory.finish("interrupted" if isinstance(exc, RunInterrupted) else "failed", exc)
        raise
    # The results are written: a Ctrl-C or SIGTERM now has nothing left to stop, and must not turn a
    # finished run into "interrupted before the run started" or a death by signal while it exits.
    if _PROCESS["own"]:  # not when a test or a notebook runs the command inside its own process
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if directory is not None:
        directory.finish("completed")
    from verify.results.report import render_summary
    render_summary(outcome)
    write_ci_files(flags, outcome)  # before the exit code's checks: CI reads them most when a run fails
    if flags["report_path"] is not None and outcome.output is not None:
        typer.echo(f"report: {write_page([outcome.output], flags['report_path'], overwrite=flags['overwrite'])}")
    elif outcome.output is not None and outcome.output.suffix.lower() in (".json", ".jsonl"):
        page = outcome.output.with_suffix(".html")
        typer.echo(f"evidence page (every score with the quotes it rests on): verify report {outcome.output} -o {page}")
    if outcome.summary.errors:
        for message, count in sorted(outcome.summary.error_messages.items(), key=lambda kv: -kv[1])[:3]:
            typer.secho(f"error ({count} task(s)): {scrub(message)}", err=True, fg="red")
        typer.secho(f"{outcome.summary.errors} task(s) ended with execution errors (see each result's verify.errors); "
                    + _resume_advice(outcome.summary.rerun_reasons), err=True, fg="yellow")
        return 3
    if outcome.summary.coverage < flags["min_coverage"]:
        typer.secho(
            f"coverage {outcome.summary.coverage:.3f} is below --min-coverage {flags['min_coverage']}: "
            f"{outcome.summary.coverage_line()}; unscored traits and why are in each result's rubric.trait_status",
            err=True, fg="red",
        )
        return 5
    from verify.results.gates import failed_gates

    failed = failed_gates(outcome.summary)
    for gate in failed:
        typer.secho(gate.line(), err=True, fg="red")
    if failed:
        return 4
    return 0


def _resume_advice(reasons: dict[str, int]) -> str:
    """Which tasks ``--resume`` would run again, and why (transient, or fixed outside the run)."""
    if not reasons:
        return "--resume would not change them (fix the cause and rerun with --overwrite)"
    parts = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]))
    return f"rerun with --resume to run {sum(reasons.values())} of them again ({parts})"


@app.command("report")
def report(
    results: Annotated[list[Path], typer.Argument(help="results file (.json or .jsonl); two to compare runs")],
    output: Annotated[Path, Opt("--output", "-o", help="the HTML file to write")] = Path("report.html"),
    title: Annotated[str | None, Opt(help="page title")] = None,
    overwrite: Annotated[bool, Opt(help="replace an existing output file that is not a verify page")] = False,
    max_input_mb: Annotated[float, Opt(min=0.001, help="largest results file read, in MB")] = DEFAULT_MAX_INPUT_MB,
) -> None:
    """Write one self-contained HTML page: every score with the quotes it rests on, highlighted in the answer."""
    from verify.secrets import scrub

    install_log_filter()
    try:
        if not 1 <= len(results) <= 2:
            raise UserError(f"verify report takes one or two results files, got {len(results)}",
                            "verify report RUN.json [OTHER_RUN.json] -o report.html")
        for path in results:
            if not path.is_file():
                raise UserError(f"results file {path} does not exist", "give the --output of a verify run")
        with input_limit(max_input_mb):
            written = write_page(results, output, title, overwrite=overwrite)
    except UserError as exc:
        typer.secho(f"error: {scrub(exc.message)}", err=True, fg="red")
        if exc.hint:
            typer.echo(f"hint: {scrub(exc.hint)}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"report: {written}")


def write_page(results: list[Path], output: Path, title: str | None = None, *, overwrite: bool = False) -> Path:
    from verify.report import write_report

    return write_report(results, output, title=title, overwrite=overwrite)


app.command("convert")(convert)  # verify convert suite.yaml -o benchmark.jsonld (and back)
app.command("init")(init)  # verify init [DIR]: a small project that runs offline as written

_PROCESS = {"own": False}


def main() -> None:
    """Console-script entry point: the process is verify's own."""
    _PROCESS["own"] = True
    app(prog_name="verify")


if __name__ == "__main__":
    main()
