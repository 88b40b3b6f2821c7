"""The evidence report: one self-contained HTML page for a run's results, or comparing two runs.

:func:`write_report` reads verify's results files (``.json`` with the run header, or ``.jsonl``)
with verify's own reader and writes a page that opens from disk (inline CSS, script, SVG charts and
data; no network). It shows the run header (benchmark, models, effective config and plan, coverage,
pass rate, verdicts, gates, cost, tokens, time, warnings), an overview (pass rate per answering
model and judge, score distribution and unscored/auto-failed counts per trait), a sortable,
filterable task table, and a view of each task: the answer with every located excerpt highlighted
at its offsets, rejected quotes, the judge's reasoning with its ``[E1]`` references linked to the
highlights, scores, labels, search results, hallucination risk, unscored reasons with the raw reply,
and the template's parse and ``verify()`` outcome. With two files it also shows what flipped, per
task and per trait, and how each figure changed.

A transcript answer (an agent run) is shown as its blocks (role, tool calls with their arguments,
tool results) and then its submission (the final answer); each excerpt is marked in the text its
judge read, the full trace or the final answer (:mod:`verify.report.transcript_data` works out which).
A revised task (revise until satisfied) gets a panel with every pass, and the run header what
revising did (:mod:`verify.report.revision_data`).

The page's DOM, which tests and tools may rely on:

- ``document.body.dataset.ready === "1"`` once the script has drawn the page;
- ``<input id="search">``; ``<select id="status-filter">`` (``all``, ``passed``, ``failed``,
  ``incomplete``, ``auto_failed``), also ``#model-filter``, ``#trait-filter``, ``#category-filter``,
  and ``#revision-filter`` (shown when a task was revised, with a ``revision`` column);
- ``<table id="tasks">`` with ``<tr class="task" data-status=".." data-task="<task id>">`` rows; a
  row filtered out has the ``hidden`` attribute (a row on another page of a long table has the class
  ``off-page`` instead);
- clicking a row shows ``<section class="task-view" data-task="<task id>">`` in ``#view``;
- excerpts: ``<mark class="excerpt" data-trait=".." id="<task id>-E<n>">`` (later pieces of a split
  excerpt: ``data-cont="<task id>-E<n>"``); references ``<a class="ref" href="#<task id>-E<n>">``;
  a click on one adds the class ``active`` to its mark and scrolls to it; a mark in a transcript's
  block carries ``data-block="<n>"``;
- revisions and transcripts: see ``verify/report/assets/agent.js``;
- with two runs: ``<table id="flips">`` with one ``<tr class="flip" data-task="..">`` per task whose
  status changed, and ``<table id="trait-flips">`` with ``tr.trait-flip`` rows.

Task ids are ``t`` and 12 hex digits of the task key's SHA-256, the same in every run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verify.errors import UserError
from verify.files import JsonProblem, read_text, refuse_clobber, write_atomic
from verify.report.compare import comparison
from verify.report.figures import run_figures
from verify.report.page import render_page
from verify.report.runs import Run, read_run
from verify.report.task_data import question_record, task_id, task_record
from verify.results.models import VerificationResult

__all__ = ["write_report"]


def _keyed(run: Run) -> list[tuple[str, VerificationResult]]:
    """Each result with its task id; a task key seen twice in one file gets ``-2``, ``-3``, ..."""
    seen: dict[str, int] = {}
    out = []
    for result in run.results:
        base = task_id(result.metadata.task_key)
        seen[base] = seen.get(base, 0) + 1
        out.append((base if seen[base] == 1 else f"{base}-{seen[base]}", result))
    return out


def _title(runs: list[Run]) -> str:
    if len(runs) == 2:
        return f"verify: {runs[0].label} vs {runs[1].label}"
    benchmark = runs[0].header.get("benchmark")
    name = Path(benchmark).name if isinstance(benchmark, str) and benchmark else runs[0].label
    return f"verify report: {name}"


def report_data(runs: list[Run], title: str) -> dict[str, Any]:
    """What the page embeds: per run its figures and task records, the questions, the comparison."""
    questions: dict[str, dict[str, Any]] = {}
    records: list[dict[str, Any]] = []
    keyed: list[dict[str, tuple[str, VerificationResult]]] = []
    for run in runs:
        figures = run_figures(run)
        pairs = _keyed(run)
        config = run.header.get("config")
        figures["tasks"] = [task_record(result, tid, config if isinstance(config, dict) else None)
                            for tid, result in pairs]
        for _, result in pairs:
            questions.setdefault(result.metadata.question_id, question_record(result))
        keyed.append({r.metadata.task_key: (tid, r) for tid, r in pairs if "-" not in tid})
        records.append(figures)
    compare = comparison(keyed[0], keyed[1], records[0], records[1]) if len(runs) == 2 else None
    return {"title": title, "runs": records, "questions": questions, "compare": compare}


def is_report_page(path: Path) -> bool:
    """Whether ``path`` is an evidence page verify wrote (which a new page may replace)."""
    try:
        return 'id="report-data"' in read_text(path)
    except JsonProblem:
        return False


def write_report(paths: Sequence[Path], out: Path, *, title: str | None = None, overwrite: bool = False) -> Path:
    """Write the evidence page for one results file, or comparing two (earlier, later); returns ``out``.

    Raises :class:`~verify.errors.UserError` for a file that is not a verify results export, for
    anything but one or two files, and for ``out`` naming one of them.
    """
    if not 1 <= len(paths) <= 2:
        raise UserError(f"the report takes one results file, or two to compare; got {len(paths)}",
                        "pass RESULTS, or EARLIER LATER")
    inputs = [Path(p) for p in paths]
    target = Path(out)
    if any(target.resolve() == p.resolve() for p in inputs):
        raise UserError(f"the report {target} would overwrite its own input", "choose another output file")
    refuse_clobber(target, "report", overwrite=overwrite, ours=is_report_page)
    runs = [read_run(p) for p in inputs]
    title = title or _title(runs)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, render_page(report_data(runs, title), title))
    return target
