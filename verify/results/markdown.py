"""A run's summary in markdown (``verify ... --summary-md FILE``) for CI pages, e.g. appended to
``$GITHUB_STEP_SUMMARY``: the outcome counts, the pass rate and the rule it counts by, the coverage,
the gates, and a table of the tasks that did not pass with their reasons (from
:mod:`verify.results.findings`, as the JUnit file gives them).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from verify.files import write_atomic
from verify.results.findings import findings_of
from verify.results.models import VerificationResult
from verify.results.summary import Summary

__all__ = ["summary_markdown", "write_summary_markdown"]

ROWS_SHOWN = 50
PASS_RULE = ("pass rate = passed / (passed + failed): a task passes when its rule holds (the template's "
             "verification, or the rubric verdict: every required trait passes and the weighted score "
             "reaches the threshold); incomplete tasks (something not judged) are not counted")


def _cell(text: str, limit: int = 300) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[:limit] + "..."


def summary_markdown(results: Sequence[VerificationResult], summary: Summary, name: str) -> str:
    s = summary
    lines = [f"## verify: {name}", ""]
    clean = s.failed == 0 and s.incomplete == 0 and s.errors == 0 and all(g.passed for g in s.gate_results())
    # "passed" only when a rule said so for every task and every gate held: nothing passes without a rule
    verdict = ("nothing ran" if s.total == 0 else "no pass rule" if not s.has_pass_rule
               else "passed" if clean and s.passed > 0 else "did not pass")
    lines.append(f"**{verdict}**: {s.total} task(s): {s.passed} passed, {s.failed} failed, "
                 f"{s.incomplete} incomplete, {s.judged_tasks} judged without a pass rule")
    lines += ["", f"- **pass rate**: {s.pass_rate_text()}", f"  ({PASS_RULE})", f"- **coverage**: {s.coverage_line()}"]
    if rubric := s.rubric_line():
        lines.append(f"- **{rubric.split(':', 1)[0]}**:{rubric.split(':', 1)[1]}")
    for gate in s.gate_results():
        lines.append(f"- {'✅' if gate.passed else '❌'} {gate.line()}")
    rows = []
    for result in results:
        found = findings_of(result)
        if found.outcome in ("failed", "incomplete"):
            reasons = "; ".join(line.strip() for f in found.items for line in f.lines())
            answering = result.metadata.answering
            rows.append(f"| {_cell(result.metadata.question_id, 80)} | {_cell(answering.config_id or answering.model_name, 60)} "
                        f"| {found.outcome} | {_cell(reasons or found.headline)} |")
    if rows:
        lines += ["", "### Tasks that did not pass", "", "| task | answering model | outcome | reasons |",
                  "| --- | --- | --- | --- |", *rows[:ROWS_SHOWN]]
        if len(rows) > ROWS_SHOWN:
            lines.append(f"\n... and {len(rows) - ROWS_SHOWN} more (see the results file or `verify report`)")
    return "\n".join(lines) + "\n"


def write_summary_markdown(path: Path, results: Sequence[VerificationResult], summary: Summary, name: str) -> Path:
    write_atomic(path, summary_markdown(results, summary, name))
    return path
