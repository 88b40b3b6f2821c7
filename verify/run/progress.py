"""The terminal progress bar of a run: tasks done, failed and incomplete ones, elapsed time and ETA.

It counts outcomes with :func:`verify.results.verdict.outcome_of`, as the summary does, so the bar's
"2 failed" is the summary's "failed 2" (an incomplete task is never shown as a failed one).
"""

from __future__ import annotations

from collections import Counter

from verify.results.models import Verdict, VerificationResult
from verify.results.verdict import outcome_of

__all__ = ["ProgressBar"]


class ProgressBar:
    """A rich progress bar, advanced once per finished task."""

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
            TextColumn("[red]{task.fields[failed]} failed[/red], [yellow]{task.fields[incomplete]} incomplete"),
            TimeElapsedColumn(), TimeRemainingColumn(), transient=False,
        )
        self.task_id = self.progress.add_task("verify", total=total, completed=resumed, failed=0, incomplete=0)
        self.outcomes: Counter[Verdict] = Counter()

    def start(self) -> None:
        self.progress.start()

    def stop(self) -> None:
        self.progress.stop()

    def advance(self, result: VerificationResult) -> None:
        self.outcomes[outcome_of(result)] += 1
        self.progress.update(self.task_id, advance=1, failed=self.outcomes["failed"],
                             incomplete=self.outcomes["incomplete"])
