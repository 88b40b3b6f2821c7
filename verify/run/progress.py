"""The terminal progress bar of a run: tasks done, failures, elapsed time and ETA."""

from __future__ import annotations

from verify.results.models import VerificationResult

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
            TextColumn("[red]{task.fields[failed]} failed"), TimeElapsedColumn(), TimeRemainingColumn(),
            transient=False,
        )
        self.task_id = self.progress.add_task("verify", total=total, completed=resumed, failed=0)
        self.failed = 0

    def start(self) -> None:
        self.progress.start()

    def stop(self) -> None:
        self.progress.stop()

    def advance(self, result: VerificationResult) -> None:
        self.failed += 0 if result.passed else 1
        self.progress.update(self.task_id, advance=1, failed=self.failed)
