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

from verify.errors import ConfigError
from verify.results.export import FORMATS, is_export, load_results, read_export_header
from verify.results.identity import differences
from verify.results.karenina_form import verify_metadata
from verify.results.lock import lock_path
from verify.results.store import ResultWriter, progress_path, read_header, read_lines

__all__ = ["OutputPlan", "check_output", "prepare_output"]

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
    if saved is None:
        _check_task_keys(where, task_keys())
        warnings.append(f"--resume: {where} carries no run identity (a .jsonl export or an older verify); "
                        "its tasks belong to this benchmark and these models, but its judging settings are not checked")
    else:
        diffs = differences(saved, identity)
        if diffs:
            raise ConfigError(
                f"--resume: {where} belongs to another run: " + "; ".join(diffs),
                "resume with the same checkpoint and judging settings, or write to another --output",
            )
        if saved.get("verify_version") != identity.get("verify_version"):
            warnings.append(f"--resume: {where} was written by verify {saved.get('verify_version')}, "
                            f"this is {identity.get('verify_version')}")
    if where == output:
        _seed_progress(output, progress, header or {})
    return OutputPlan(progress, append=True, warnings=warnings)


def _check_task_keys(where: Path, known: set[str]) -> None:
    if where.name.endswith(".progress.jsonl"):
        keys = [str((verify_metadata(d) or {}).get("task_key")) for d in read_lines(where)]
    else:  # an export: its results are in karenina's form, the task key in verify's own section
        try:
            keys = [r.metadata.task_key for r in load_results(where)]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"--resume: cannot read the results in {where}: {exc}",
                              "start again with --overwrite") from None
    foreign = sorted({k for k in keys if k not in known})
    if foreign:
        shown = ", ".join(k.replace("\t", " / ") for k in foreign[:3])
        raise ConfigError(
            f"--resume: {where} belongs to another run: {len(foreign)} of its task(s) are not tasks of this "
            f"benchmark and these models (e.g. {shown})",
            "resume with the same checkpoint and models, or write to another --output",
        )


def _refuse_existing(output: Path, progress: Path) -> None:
    if progress.exists():
        done = sum(1 for _ in read_lines(progress))
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
