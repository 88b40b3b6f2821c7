"""Where a run's results go, checked before any model call: never clobber, never mix runs.

* ``--output`` naming one of the run's inputs (checkpoint, preset, answers, traces, configs) is refused.
* Without ``--resume``, an existing results file or progress file is refused unless ``--overwrite``:
  a rerun never silently deletes an earlier run's results or progress.
* With ``--resume``, the saved run's identity (:mod:`verify.results.identity`) must match this run's;
  a file that is not a verify export is refused, never overwritten.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.config.permissions import PERMISSION_FIELDS
from verify.errors import ConfigError, RunStopped
from verify.results.export import FORMATS, is_export, load_results, read_export_header
from verify.results.identity import differences
from verify.results.karenina_form import verify_metadata
from verify.results.lock import lock_path
from verify.results.store import (
    check_line,
    progress_path,
    read_header,
    rerun_reason,
    scan,
    torn_tail,
)
from verify.results.writer import HEADER_KEY, ResultWriter

__all__ = ["OutputPlan", "check_nothing_lost", "check_output", "prepare_output"]

log = logging.getLogger("verify")


@dataclass
class OutputPlan:
    """What the run does with its progress file: append to a resumed one, or start a new one."""

    progress: Path
    append: bool
    warnings: list[str]


def check_output(output: Path) -> None:
    """Fail before any model call when the results could not be written."""
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


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and a.samefile(b))
    except OSError:
        return False


def check_not_input(output: Path, inputs: Sequence[Path]) -> None:
    """``--output`` (or its progress or lock file) must not be a file the run reads."""
    ours = (output, progress_path(output), lock_path(output))
    for item in inputs:
        if any(_same(mine, item) for mine in ours):
            raise ConfigError(
                f"--output {output} would overwrite {item}, an input of this run",
                "write the results to another file, e.g. --output results.json",
            )


def prepare_output(
    output: Path, *, resume: bool, overwrite: bool, inputs: Sequence[Path], identity: dict[str, Any],
    task_keys: Callable[[], set[str]],
) -> OutputPlan:
    """Check ``output`` against the rules above; seed the progress file when resuming a finished export.

    ``task_keys`` gives every task key this run could have: a saved file without an identity (a
    JSONL export, or a file from an older verify) must hold only those. Call with the output's lock held.
    """
    check_not_input(output, inputs)
    progress = progress_path(output)
    warnings: list[str] = []
    if not resume:
        if not overwrite:
            _refuse_existing(output, progress)
        progress.unlink(missing_ok=True)  # only with --overwrite, or when it does not exist
        return OutputPlan(progress, append=False, warnings=warnings)
    if progress.exists():
        header = read_header(progress)
        saved = header.get("identity") if header else None
        where = progress
    elif output.exists():
        if output.suffix.lower() == ".csv" or not is_export(output):
            what = "a CSV export, which holds no run identity" if output.suffix.lower() == ".csv" else "not a verify results file"
            raise ConfigError(
                f"--resume: {output} is {what}, so there is nothing to resume",
                "resume from the run's .json or .jsonl results, or start again with --overwrite",
            )
        header = read_export_header(output)
        saved = header.get("identity") if header else None
        where = output
    else:
        warnings.append(f"--resume: neither {output} nor {progress} exists; starting a new run")
        return OutputPlan(progress, append=False, warnings=warnings)
    if saved is not None:
        _check_identity(where, saved, identity)
    if where == progress and torn_tail(progress):
        warnings.append(f"--resume: the last line of {progress} was cut off when the run stopped; it is "
                        "dropped and its task runs again")
    _check_saved(where, task_keys())
    if saved is None:
        warnings.append(f"--resume: {where} carries no run identity (a .jsonl export or an older verify); "
                        "its tasks belong to this benchmark and these models, but its judging settings are not checked")
    elif saved.get("verify_version") != identity.get("verify_version"):
        warnings.append(f"--resume: {where} was written by verify {saved.get('verify_version')}, "
                        f"this is {identity.get('verify_version')}")
    if where == output:
        _seed_progress(output, progress, header or {})
    return OutputPlan(progress, append=True, warnings=warnings)


def _check_identity(where: Path, saved: dict[str, Any], identity: dict[str, Any]) -> None:
    """The saved run must be this run. A permission it was given is not taken from the file: resumed
    without it, the run is refused saying which flag to pass again (not merely that the config differs)."""
    old, new = saved.get("judging_config"), identity.get("judging_config")
    old, new = (old if isinstance(old, dict) else {}), (new if isinstance(new, dict) else {})
    missing = sorted(name for name in PERMISSION_FIELDS if old.get(name) and not new.get(name))
    if missing:
        flags = ", ".join("--" + name.replace("_", "-") for name in missing)
        raise ConfigError(
            f"--resume: {where} was started with {flags}, and permissions are never taken from a saved run",
            f"pass {flags} again if you trust this checkpoint, or start a new run with another --output",
        )
    diffs = differences(saved, identity)
    if diffs:
        raise ConfigError(
            f"--resume: {where} belongs to another run: " + "; ".join(diffs),
            "resume with the same checkpoint and judging settings, or write to another --output",
        )


def _saved_entries(where: Path) -> list[tuple[str, dict[str, Any]]]:
    """``(location, verify metadata)`` of every result saved in ``where``; an unreadable line is an error."""
    if where.name.endswith(".progress.jsonl") or where.suffix.lower() == ".jsonl":
        if where.name.endswith(".progress.jsonl"):
            lines = list(scan(where))
        else:  # an export is complete: its last line is checked too
            lines = [check_line(n, raw) for n, raw in enumerate(where.read_bytes().splitlines(), 1) if raw.strip()]
        problems = [line for line in lines if line.problem is not None]
        if problems:
            first = problems[0]
            more = f" ({len(problems)} invalid lines in all)" if len(problems) > 1 else ""
            raise ConfigError(f"--resume: {where} line {first.number}: {first.problem}{more}",
                              "it holds lines verify did not write; remove them, or start again with --overwrite")
        found = [(f"line {line.number}", verify_metadata(line.data)) for line in lines
                 if line.data is not None and HEADER_KEY not in line.data]
        return [(location, meta) for location, meta in found if meta is not None]
    try:  # a JSON export: its results are in karenina's form, the task key in verify's own section
        return [(f"result {n}", r.metadata.model_dump()) for n, r in enumerate(load_results(where), 1)]
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise ConfigError(f"--resume: cannot read the results in {where}: {exc}",
                          "start again with --overwrite") from None


def _check_saved(where: Path, known: set[str]) -> None:
    """Every saved result is a task of this run, saved again only after a line that ``--resume`` runs
    again (see :mod:`verify.results.store`); otherwise one located line: where, how many, the first keys."""
    foreign: list[tuple[str, str]] = []
    repeated: list[tuple[str, str]] = []
    rerun: dict[str, bool] = {}  # task key -> whether its latest line is one --resume runs again
    for location, meta in _saved_entries(where):
        key = str(meta.get("task_key"))
        if key not in known:
            foreign.append((location, key))
        elif key in rerun and not rerun[key]:
            repeated.append((location, key))
        rerun[key] = rerun_reason(meta) is not None
    if foreign:
        raise ConfigError(
            f"--resume: {where} {foreign[0][0]}: {len(foreign)} of its task(s) are not tasks of this benchmark "
            f"x models x replicates (e.g. {_keys(foreign)})",
            "resume with the same checkpoint, models and replicate count; remove lines added from another run; "
            "or write to another --output",
        )
    if repeated:
        raise ConfigError(
            f"--resume: {where} {repeated[0][0]}: {len(repeated)} result(s) repeat a task that was already "
            f"finished (e.g. {_keys(repeated)}): lines of another copy of this run were added",
            "remove the repeated lines (verify saves a task again only when --resume runs it again), "
            "or start again with --overwrite",
        )


def _keys(found: list[tuple[str, str]]) -> str:
    return ", ".join(key.replace("\t", " / ") for _, key in found[:3])


def check_nothing_lost(progress: Path, output: Path, *, saved: int, finished: int) -> None:
    """Before the export: the progress file holds a result for every task the run finished, or the
    run stops (exit 1) rather than export fewer results as if the run were complete."""
    if saved < finished:
        raise RunStopped(f"{progress} holds {saved} result(s), but the run finished {finished}: the export {output} "
                         "was not written", "rerun with --resume; if it happens again, report it as a bug in verify")


def _refuse_existing(output: Path, progress: Path) -> None:
    if progress.exists():
        done = sum(1 for line in scan(progress) if line.data is not None and HEADER_KEY not in line.data)
        raise ConfigError(
            f"{progress} holds {done} finished task(s) of an earlier run on --output {output}",
            "add --resume to continue that run, or --overwrite to discard it and start again",
        )
    if output.exists():
        if is_export(output):
            raise ConfigError(
                f"{output} holds the results of an earlier run",
                "add --resume to add to them, --overwrite to replace them, or choose another --output",
            )
        raise ConfigError(
            f"{output} exists and is not a verify results file",
            "choose another --output, or pass --overwrite to replace it",
        )


def _seed_progress(output: Path, progress: Path, header: dict[str, Any]) -> None:
    """Resuming a run that already finished: its export becomes the progress to resume from."""
    try:
        previous = load_results(output)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"--resume: cannot read the results in {output}: {exc}", "start again with --overwrite") from None
    writer = ResultWriter(progress, append=False, header={"identity": header.get("identity")} if header else None)
    try:
        for result in previous:
            writer.write(result)
    finally:
        writer.close()
