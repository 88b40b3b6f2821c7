"""Crash-safe result storage: one JSON line per finished task, flushed and fsynced.

A run writes ``<output>.progress.jsonl`` as tasks finish. ``--resume`` reads it back (a torn last
line from a killed process is ignored) and skips tasks already done; tasks that ended with a
transient failure (rate limit, timeout, connection, server error) are run again, not counted as
done. When the run completes, the final export is written from this file, keeping the last line per
task, so nothing is lost or duplicated.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from verify.errors import TRANSIENT_CATEGORIES
from verify.results.models import VerificationResult


def progress_path(output: Path) -> Path:
    return output.with_name(output.name + ".progress.jsonl")


def read_lines(path: Path) -> Iterator[dict[str, object]]:
    """Every complete JSON line of a progress file; a torn or corrupt line is skipped."""
    if not path.exists():
        return
    with path.open("r", encoding="utf-8") as handle:
        for line in handle:
            if not line.endswith("\n"):
                break  # torn final write of a killed run
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict):
                yield data


def done_keys(path: Path) -> set[str]:
    """Task keys whose latest result is final: no transient failure and no transient stage error.

    A task can fail on content and *also* lose rubric traits to a rate limit; it still runs again.
    """
    latest: dict[str, bool] = {}
    for data in read_lines(path):
        meta = data.get("metadata")
        if not isinstance(meta, dict):
            continue
        failure = meta.get("failure")
        errors = meta.get("errors") or []
        transient = (isinstance(failure, dict) and failure.get("category") in TRANSIENT_CATEGORIES) or any(
            isinstance(e, dict) and e.get("category") in TRANSIENT_CATEGORIES for e in errors
        )
        latest[str(meta.get("task_key"))] = not transient
    return {key for key, final in latest.items() if final}


class ResultWriter:
    """Appends results to the progress file; each line is flushed and fsynced before returning."""

    def __init__(self, path: Path, *, append: bool) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if append and path.exists():
            _drop_torn_tail(path)
        self.path = path
        self._handle: IO[str] = path.open("a" if append else "w", encoding="utf-8")

    def write(self, result: VerificationResult) -> None:
        self._handle.write(result.model_dump_json() + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()


def _drop_torn_tail(path: Path) -> None:
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        with path.open("r+b") as handle:
            handle.truncate(cut)


def latest_results(path: Path) -> Iterator[VerificationResult]:
    """The last result per task key, in the order tasks were first finished."""
    last: dict[str, int] = {}
    for index, data in enumerate(read_lines(path)):
        meta = data.get("metadata")
        if isinstance(meta, dict):
            last[str(meta.get("task_key"))] = index
    keep = set(last.values())
    for index, data in enumerate(read_lines(path)):
        if index in keep:
            yield VerificationResult.model_validate(data)
