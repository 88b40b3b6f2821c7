"""The end of a run that saves its progress: one pass over the progress file writes the export,
completes the summary and (on request) gives the results back.

The file is read once, line by line, so memory stays flat however many tasks the run has. The
export keeps the last line of each task, in the order tasks were first finished:

* a line this process appended is its task's last (the run saves each task once);
* a line that was in the file when the run started is kept when it was its task's last then
  (:class:`~verify.results.store.SavedState`) and this process did not run the task again.

This process's lines are already counted in the live summary (counted once durable, see
:mod:`verify.results.writer`) and are in karenina's form, so the export copies their text: no
result is built again. Only the earlier run's kept lines are read into results, once each, to be
counted as earlier work.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.results.export import ExportLine, export_lines
from verify.results.karenina_form import OWN_SECTION, from_export
from verify.results.models import VerificationResult
from verify.results.store import SavedState, task_key, valid_lines
from verify.results.summary import Summary
from verify.results.writer import HEADER_KEY
from verify.run.output import check_nothing_lost

__all__ = ["Finish", "finish_run"]


@dataclass
class Finish:
    """What the run knows at its end: the files, what the progress file held when it started, the
    tasks this process saved (with their results when they are kept), and the live summary."""

    progress: Path
    output: Path
    before: SavedState
    ran: set[str]
    summary: Summary
    header: Callable[[Summary], dict[str, Any]]
    """The export's run header, made once the summary is complete."""
    finished: int
    """Tasks the run counts as finished (resumed + this process's): the export holds at least these."""
    kept: dict[str, VerificationResult] | None = None
    """This process's results by task key, when the caller keeps results (``keep_results``)."""


def finish_run(end: Finish) -> list[VerificationResult]:
    """Write the export of ``end.progress`` to ``end.output`` and complete ``end.summary``; returns
    the results in file order when ``end.kept`` is given (else an empty list).

    Raises :class:`~verify.errors.RunStopped` (nothing written) when the file holds fewer results
    than the run finished, and ``OSError`` when the export cannot be written.
    """

    def header(count: int) -> dict[str, Any]:
        check_nothing_lost(end.progress, end.output, saved=count, finished=end.finished)
        return end.header(end.summary)

    results: list[VerificationResult] = []
    export_lines(_kept_lines(end, results), end.output, header=header)
    return results


def _kept_lines(end: Finish, results: list[VerificationResult]) -> Iterator[ExportLine]:
    for line in valid_lines(end.progress):
        if HEADER_KEY in line.data:
            continue
        key = task_key(line.data)
        ours = key in end.ran
        if line.number <= end.before.lines and (ours or end.before.last_line.get(key) != line.number):
            continue  # a later line holds this task's result
        result = None
        if not ours:
            result = from_export(line.data)
            end.summary.add(result, earlier=True)
        if OWN_SECTION in line.data:  # karenina's form, masked: the export's line as it is
            item = ExportLine(line.data, line.text)
        else:  # a line of an older verify, in verify's own form
            result = result or from_export(line.data)
            item = ExportLine.of(result)
        if end.kept is not None:
            mine = end.kept.get(key)
            results.append(mine if mine is not None else result or from_export(line.data))
        yield item
