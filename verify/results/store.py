"""Crash-safe result storage: one JSON line per finished task, fsynced before the task counts
(written by :mod:`verify.results.writer`), read back here.

A run writes ``<output>.progress.jsonl`` as tasks finish; its first line is a header holding the
run's identity (:mod:`verify.results.identity`), so ``--resume`` can refuse another run's progress.
``--resume`` reads it back and skips tasks already done; tasks that ended with a transient failure
(rate limit, timeout, connection, server error) or one the user fixes outside the run
(authentication, permission, model not found, missing package) are run again, not counted as done.
When the run completes, the final export is written from this file, keeping the last line per
task, so nothing is lost or duplicated.

The file is read strictly, because a line skipped is a result lost (and a run that looks complete):

* Only a torn *last* line may be skipped: a line without its newline, which is what a killed
  process leaves (every line is written with its newline in one write). Any other line that is
  not a JSON object with a task key, or a header anywhere but line 1, is an error naming the line.
* A task key appears more than once only when verify wrote it again: ``--resume`` runs a task again
  only when its latest line has a :func:`rerun_reason`, so a key may repeat only after such a line.
  A key repeated after a line that finished the task is another copy of the run appended to this
  one, and refused (see :mod:`verify.run.output`, which also refuses keys that are not tasks of
  this run).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from verify.errors import ConfigError, UserError, fixable_reason
from verify.files import JsonProblem, check_input_file
from verify.results.karenina_form import from_export, verify_metadata
from verify.results.models import VerificationResult
from verify.results.writer import HEADER_KEY


def progress_path(output: Path) -> Path:
    return output.with_name(output.name + ".progress.jsonl")


def read_header(path: Path) -> dict[str, Any] | None:
    """The header line of a progress file (``None`` for files written before headers existed)."""
    for data in read_lines(path, results_only=False):
        return data if HEADER_KEY in data else None
    return None


@dataclass(frozen=True)
class SavedLine:
    """One complete line of a progress file: its JSON object, or why it is not a valid line."""

    number: int
    data: dict[str, Any] | None
    problem: str | None = None
    text: str = field(default="", repr=False)
    """The line as written, without its newline (empty for a line that is not UTF-8)."""


def scan(path: Path) -> Iterator[SavedLine]:
    """Every complete line of a progress file, each checked (the torn last line is not one)."""
    if not path.exists():
        return
    _check_regular(path)
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.endswith(b"\n"):
                return  # torn final write of a killed run
            yield check_line(number, raw)


def check_line(number: int, raw: bytes) -> SavedLine:
    """Line ``number`` (its bytes) as a :class:`SavedLine`."""
    try:
        text = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        return SavedLine(number, None, "not UTF-8 text")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return SavedLine(number, None, f"not valid JSON ({str(exc).split(':')[0]})")
    if not isinstance(data, dict):
        return SavedLine(number, None, f"a JSON {type(data).__name__}, not a result")
    if HEADER_KEY in data:
        return SavedLine(number, data, None if number == 1 else "a second header (another progress file appended)",
                         text)
    meta = verify_metadata(data)
    if meta is None or not isinstance(meta.get("task_key"), str):
        return SavedLine(number, None, "not a verify result (no task key)")
    return SavedLine(number, data, text=text)


def torn_tail(path: Path) -> bool:
    """Whether the file ends with a line cut off by a killed write (skipped by every reader)."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() == 0:
                return False
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) != b"\n"
    except OSError:
        return False


def read_lines(path: Path, *, results_only: bool = True) -> Iterator[dict[str, Any]]:
    """Every line of a progress file as JSON (the torn last line skipped); an invalid line is an
    error naming the file and line: it is never skipped, since its result would be lost."""
    for line in valid_lines(path):
        if not (results_only and HEADER_KEY in line.data):
            yield line.data


@dataclass(frozen=True)
class ValidLine:
    """A line of a progress file that passed :func:`check_line`."""

    number: int
    data: dict[str, Any]
    text: str


def valid_lines(path: Path) -> Iterator[ValidLine]:
    """:func:`scan`, where a line that is not valid is an error naming the file and the line."""
    for line in scan(path):
        if line.problem is not None or line.data is None:
            raise ConfigError(f"{path} line {line.number}: {line.problem}",
                              "a progress file holds only the lines verify wrote; remove that line, "
                              "or start again with --overwrite")
        yield ValidLine(line.number, line.data, line.text)


def task_key(data: dict[str, Any]) -> str:
    """The task key of a valid result line (see :func:`check_line`)."""
    meta = verify_metadata(data)
    return str(meta.get("task_key")) if meta is not None else ""


def _check_regular(path: Path) -> None:
    """A progress file is read line by line (no size limit), but must be a regular file: a pipe would block."""
    try:
        check_input_file(path, limit=sys.maxsize)
    except JsonProblem as exc:
        raise UserError(f"progress file {path} {exc.problem}", exc.hint) from None


def rerun_reason(meta: dict[str, Any]) -> str | None:
    """Why ``--resume`` runs a saved task again (its failure or a stage error is transient or
    fixable outside the run), or ``None`` when the task is done.

    A task can fail on content and *also* lose rubric traits to a rate limit; it still runs again.
    """
    failure = meta.get("failure")
    found = [failure] if isinstance(failure, dict) else []
    found += [e for e in meta.get("errors") or [] if isinstance(e, dict)]
    for item in found:
        reason = fixable_reason(item.get("category"), item.get("reason") or item.get("message"))
        if reason:
            return reason
    return None


@dataclass(frozen=True)
class SavedState:
    """What a progress file holds when a run starts: each task's latest line (its number, and its
    rerun reason, ``None`` when the task is done) and how many complete lines there are."""

    last_line: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, str | None] = field(default_factory=dict)
    lines: int = 0

    @cached_property
    def done(self) -> set[str]:
        """Task keys whose latest result is final (see :func:`rerun_reason`)."""
        return {key for key, reason in self.reasons.items() if reason is None}


def saved_state(path: Path) -> SavedState:
    """Read a progress file once for ``--resume``: see :class:`SavedState`."""
    last_line: dict[str, int] = {}
    reasons: dict[str, str | None] = {}
    lines = 0
    for line in valid_lines(path):
        lines = line.number
        meta = verify_metadata(line.data)  # a line may be an export's (karenina's form), not only verify's
        if HEADER_KEY not in line.data and meta is not None:
            key = str(meta.get("task_key"))
            last_line[key] = line.number
            reasons[key] = rerun_reason(meta)
    return SavedState(last_line, reasons, lines)


def saved_tasks(path: Path) -> dict[str, str | None]:
    """Every saved task key with its latest result's rerun reason (``None``: done)."""
    return saved_state(path).reasons


def done_keys(path: Path) -> set[str]:
    """Task keys whose latest result is final (see :func:`rerun_reason`)."""
    return saved_state(path).done


def latest_results(path: Path) -> Iterator[VerificationResult]:
    """The last result per task key, in the order tasks were first finished."""
    last: dict[str, int] = {}
    for index, data in enumerate(read_lines(path)):
        meta = verify_metadata(data)
        if meta is not None:
            last[str(meta.get("task_key"))] = index
    keep = set(last.values())
    for index, data in enumerate(read_lines(path)):
        if index in keep:
            yield from_export(data)
