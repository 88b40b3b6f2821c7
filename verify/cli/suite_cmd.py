"""Test-suite files on the command line: ``verify suite.yaml`` runs one, ``verify convert`` turns a
suite into a karenina checkpoint and back.

A run of a suite is a run of its benchmark: the suite only adds what a checkpoint cannot hold, as if
given by flags, and never over a flag or preset that says otherwise: its recorded outputs are the
answers (unless ``--answers``), its gates are added to the config's, its graders' model is the judge
when neither a preset nor ``--parsing-model`` names one, and the evaluation is ``rubric_only`` (a
suite has no answer templates) unless ``--evaluation-mode`` says otherwise. When the suite's shared
``output`` answers every test, only the first answering model runs (with a warning): more models
would each be handed the same answer.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from verify.cli.log_filter import install_log_filter
from verify.errors import UserError
from verify.files import DEFAULT_MAX_INPUT_MB, input_limit, refuse_clobber, refuse_same_outputs

if TYPE_CHECKING:  # the models load when a command runs, not for --help
    from verify.benchmark.jsonld import Benchmark
    from verify.benchmark.suite import Suite

__all__ = ["check_ci_files", "convert", "open_suite", "suite_config", "write_ci_files"]


def open_suite(flags: dict[str, Any]) -> Suite | None:
    """The suite named by BENCHMARK, or None when it is a checkpoint (or absent)."""
    from verify.benchmark.suite import is_suite_file, load_suite

    path = flags.get("benchmark")
    if path is not None and flags.get("columns") and Path(path).suffix.lower() not in (".csv", ".jsonl"):
        raise UserError(f"--columns names the columns of a CSV or JSONL dataset, not of {Path(path).name}",
                        "leave --columns out")
    if path is None or not is_suite_file(Path(path)):
        return None
    from verify.benchmark.tabular import parse_columns

    columns = parse_columns(flags.get("columns"))
    return load_suite(path, allow_outside_paths=bool(flags.get("allow_outside_paths")), columns=columns)


def check_ci_files(flags: dict[str, Any], output: Path, inputs: list[Path]) -> None:
    """Before the run: ``--junit`` and ``--summary-md`` name neither an input nor another output (the
    results file and the page check their own clashes, with their own messages)."""
    from verify.results.lock import lock_path
    from verify.results.store import progress_path

    named = [*(("input", i) for i in inputs), ("--output", output), ("the run's progress file", progress_path(output)),
             ("the run's lock", lock_path(output)), ("--report", flags.get("report_path")),
             ("--log-calls", flags.get("log_calls"))]
    taken = {Path(p).resolve(): f"{option} {p}" for option, p in named if p is not None}
    for option in ("junit", "summary_md"):
        path = flags.get(option)
        if path is None:
            continue
        name = f"--{option.replace('_', '-')}"
        if Path(path).resolve() in taken:
            raise UserError(f"{name} {path} is the same file as {taken[Path(path).resolve()]}",
                            "give each output its own file name")
        taken[Path(path).resolve()] = f"{name} {path}"
        try:  # the folder now, not after the run: a finished run must not fail on its CI file
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"{name} {path}: cannot create its folder ({exc.strerror or exc})",
                            "give a path in a folder you can write to") from None


def write_ci_files(flags: dict[str, Any], outcome: Any) -> None:
    """``--junit`` and ``--summary-md``: written after every run, replacing an earlier run's (CI reruns)."""
    name = flags.get("run_name") or (Path(flags["benchmark"]).stem if flags.get("benchmark") else "verify")
    try:
        if flags.get("junit") is not None:
            from verify.results.junit import write_junit

            typer.echo(f"junit: {write_junit(flags['junit'], outcome.results, outcome.summary, name)}")
        if flags.get("summary_md") is not None:
            from verify.results.markdown import write_summary_markdown

            typer.echo(f"summary: {write_summary_markdown(flags['summary_md'], outcome.results, outcome.summary, name)}")
    except OSError as exc:
        raise UserError(f"cannot write {exc.filename or 'a CI file'}: {exc.strerror or exc}; the results are in "
                        f"{outcome.output}", "fix the path or free space, then rerun with the same flags") from None


def suite_config(suite: Suite, config: Any, flags: dict[str, Any]) -> Any:
    """The config with what the suite adds (see the module docstring)."""
    from verify.config.verification import VerificationConfig

    overrides: dict[str, Any] = {}
    new_gates = [g for g in suite.gates if g not in config.gates]  # a resumed run saved them already
    if new_gates:
        overrides["gates"] = [*config.gates, *new_gates]
    if flags.get("evaluation_mode") is None and config.evaluation_mode != "rubric_only":
        overrides["evaluation_mode"] = "rubric_only"
    if suite.judge_model and not flags.get("preset") and flags.get("parsing_model") is None \
            and not flags.get("resume_from") and not flags.get("resume"):
        update: dict[str, Any] = {"model_name": suite.judge_model}
        if flags.get("temperature") is None and suite.judge_temperature is not None:
            update["temperature"] = suite.judge_temperature
        overrides["parsing_models"] = [{**m.model_dump(), **update} for m in config.parsing_models]
    if _one_answer_per_test(suite, flags) and len(config.answering_models) > 1:
        # Every answering model would be handed the same recorded output: N models would judge each
        # test N times over one answer. The first model stands for the recorded outputs.
        kept, *dropped = config.answering_models
        logging.getLogger("verify").warning(
            "the suite's recorded outputs are the answers of every answering model, so only the first "
            f"({kept.id!r}) is run; dropped {', '.join(repr(m.id) for m in dropped)} (give per-model "
            "outputs: {model id: text} in the suite to compare models)")
        overrides["answering_models"] = [kept.model_dump()]
    return VerificationConfig.from_overrides(config, **overrides) if overrides else config


def _one_answer_per_test(suite: Suite, flags: dict[str, Any]) -> bool:
    """The suite's outputs answer every test, one shared ``output`` each, and are this run's answers."""
    shared = suite.answers.get("*", {})
    return (not flags.get("answers") and not flags.get("replay") and not flags.get("generate_missing_answers")
            and set(suite.answers) == {"*"} and len(shared) == len(suite.benchmark.questions))


def run_answers(suite: Suite | None, flags: dict[str, Any], read: Any) -> tuple[dict[str, dict[str, Any]], str | None]:
    """The recorded answers of a run and where they come from: ``--answers``, else the suite's outputs."""
    if flags["answers"]:
        return read(flags["answers"]), str(flags["answers"])
    if suite is not None and suite.answers:
        return suite.answers, f"the outputs in {flags['benchmark']}"
    return {}, None


def read_benchmark(path: Path, suite: Suite | None) -> Benchmark:
    from verify.benchmark.jsonld import load_benchmark

    return suite.benchmark if suite is not None else load_benchmark(path)


def convert(
    source: Annotated[Path, typer.Argument(help="a test suite (.yaml/.yml/.json) or a karenina checkpoint (.jsonld)")],
    output: Annotated[Path, typer.Option("--output", "-o", help="the file to write: a checkpoint for a suite, "
                                         "a suite (.yaml or .json) for a checkpoint")],
    answers: Annotated[Path | None, typer.Option(help="with a suite: also write its recorded outputs as an "
                                                 "--answers file")] = None,
    overwrite: Annotated[bool, typer.Option(help="replace an existing output file")] = False,
    allow_outside_paths: Annotated[bool, typer.Option("--allow-outside-paths", help="let a suite's prompt_path "
                                                      "name a file outside the suite's folder")] = False,
    max_input_mb: Annotated[float, typer.Option(min=0.001, help="largest input file read, in MB")] = DEFAULT_MAX_INPUT_MB,
) -> None:
    """Convert a test suite into a karenina checkpoint, or a checkpoint into a suite (what a suite can hold)."""
    from verify.secrets import scrub

    install_log_filter()
    try:
        with input_limit(max_input_mb):
            notes = _convert(source, output, answers, overwrite=overwrite, allow_outside_paths=allow_outside_paths)
        for line in notes:
            typer.secho(f"warning: {scrub(line)}", err=True, fg="yellow")
    except UserError as exc:
        message = " ".join(line.strip() for line in exc.message.splitlines())
        typer.secho(f"error: {scrub(message)}", err=True, fg="red")
        if exc.hint:
            typer.echo(f"hint: {scrub(exc.hint)}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"wrote {output}")


def _convert(source: Path, output: Path, answers: Path | None, *, overwrite: bool, allow_outside_paths: bool) -> list[str]:
    from verify.benchmark.jsonld import load_benchmark, save_benchmark
    from verify.benchmark.suite import is_suite_file, load_suite, write_suite

    if not source.is_file():
        raise UserError(f"{source} does not exist", "give a suite (.yaml, .yml, .json) or a checkpoint (.jsonld)")
    refuse_same_outputs([("source", source), ("--output", output), ("--answers", answers)])
    for option, target in (("--output", output), ("--answers", answers)):
        if target is not None:
            refuse_clobber(target, option, overwrite=overwrite)
    if not is_suite_file(source):
        if answers is not None:
            raise UserError("--answers is for converting a suite (a checkpoint holds no recorded outputs)",
                            "leave --answers out")
        return write_suite(load_benchmark(source), output)
    suite = load_suite(source, allow_outside_paths=allow_outside_paths)
    save_benchmark(suite.benchmark, output)
    notes = []
    if suite.gates:
        flags = " ".join(f'--gate "{g}"' for g in suite.gates)
        notes.append(f"a checkpoint holds no gates: run it with {flags}")
    if suite.answers and answers is None:
        notes.append("the suite's recorded outputs are not in the checkpoint: add --answers FILE to keep them")
    if answers is not None:
        from verify.files import write_atomic

        write_atomic(answers, json.dumps(suite.answers, indent=2, ensure_ascii=False) + "\n")
    return notes
