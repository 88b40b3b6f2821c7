"""Revise until satisfied on the page: each task's passes, and what revising did across the run.

A task's record holds every pass as the result keeps it (:class:`verify.results.revisions.Revision`)
plus its first and last pass side by side. The run's figures count the iterations used, the terminal
statuses, and how tasks moved from their first answer to their last: by pass result
(``needs_revision -> satisfied``) and by verdict (``failed -> passed``), the way the terminal
summary counts them (:class:`~verify.results.revisions.RevisionTally`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from verify.results.models import VerificationResult
from verify.results.revisions import Revision, RevisionEvaluation, RevisionTally

__all__ = ["revision_figures", "revision_record"]


def _brief(evaluation: RevisionEvaluation) -> dict[str, Any]:
    return {"iteration": evaluation.iteration, "result": evaluation.result, "verdict": evaluation.verdict,
            "score": evaluation.score}


def revision_record(revision: Revision) -> dict[str, Any]:
    """One task's revision record: status, limit, every pass, and the first and last pass."""
    passes = revision.evaluations
    return {
        "status": revision.status, "max_iterations": revision.max_iterations, "iterations": revision.iterations,
        "evaluations": [e.model_dump(mode="json") for e in passes],
        "first": _brief(passes[0]) if passes else None, "last": _brief(passes[-1]) if passes else None,
    }


def revision_figures(results: Iterable[VerificationResult]) -> dict[str, Any] | None:
    """What revising did in a run; None when no task has a revision record."""
    tally = RevisionTally()
    verdicts: Counter[str] = Counter()
    for result in results:
        revision = result.metadata.revision
        if revision is None or not revision.evaluations:
            continue
        tally.add(result)
        first, last = revision.evaluations[0], revision.evaluations[-1]
        verdicts[f"{first.verdict or 'none'} -> {last.verdict or 'none'}"] += 1
    if not tally.tasks:
        return None
    n = len(tally.scores)
    return {
        "tasks": tally.tasks, "iterations": tally.iterations, "statuses": dict(sorted(tally.statuses.items())),
        "satisfied_after": {str(k): v for k, v in sorted(tally.satisfied_after.items())},
        "changes": dict(sorted(tally.changes.items())), "verdict_changes": dict(sorted(verdicts.items())),
        "score_first": sum(f for f, _ in tally.scores) / n if n else None,
        "score_last": sum(last for _, last in tally.scores) / n if n else None,
        "line": tally.line(),
    }
