"""verify against the imperfect simulated judge: what it recovers from, and that it never guesses.

The judge (``verify.llm.simulated.imperfect``) changes only the form of the perfect judge's
replies. So every verdict verify reaches under it must equal the perfect judge's; a reply it
cannot use may leave a task ``incomplete``, never passed or failed differently.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from verify.llm.simulated.imperfect import BEHAVIOURS
from verify.results.models import VerificationResult
from verify.run.runner import RunOutcome, run_verification

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import bench_imperfect  # noqa: E402 - the benchmark's generated questions and config, shared

QUESTIONS = 12
# Replies verify reads as they are, without asking again: at any rate they cost no coverage.
TOLERATED = ("placeholder_copy", "class_description", "prose_wrap", "elide")
# Quotes that are not in the answer, on every attempt: the evidence cannot be proven, and deep
# judgment auto-fails the trait by design (as it does a judge that fabricates quotes).
UNPROVABLE = ("quote_question", "insert_words")


def run(rate: float | None, behaviours: tuple[str, ...] = BEHAVIOURS, n: int = QUESTIONS) -> RunOutcome:
    bench, answers = bench_imperfect.benchmark(n)
    judge = bench_imperfect.judge(rate)
    if rate is not None:
        judge["extra_kwargs"]["imperfections"] = list(behaviours)
    return run_verification(bench, bench_imperfect.config(judge), answers=answers)


def by_task(outcome: RunOutcome) -> dict[str, VerificationResult]:
    return {r.metadata.task_key: r for r in outcome.results}


_PERFECT: dict[int, dict[str, VerificationResult]] = {}


def perfect(n: int = QUESTIONS) -> dict[str, VerificationResult]:
    if n not in _PERFECT:
        _PERFECT[n] = by_task(run(None, n=n))
    return _PERFECT[n]


def assert_never_guesses(imperfect: RunOutcome, n: int = QUESTIONS, *, unprovable: bool = False) -> None:
    """Every verdict reached equals the perfect judge's, and so does every trait scored under both.

    ``unprovable``: the judge never quoted the answer, so auto-fails for unproven evidence are expected.
    """
    reference = perfect(n)
    for key, result in by_task(imperfect).items():
        expected = reference[key]
        assert expected.verdict != "incomplete"  # the perfect judge judges everything
        failure = result.metadata.failure
        if unprovable and failure is not None and failure.group == "autofail":
            continue
        if result.verdict != "incomplete":
            assert result.verdict == expected.verdict, (key, failure, expected.metadata.failure)
        assert result.rubric is not None and expected.rubric is not None
        for name, outcome in result.rubric.trait_status.items():
            if outcome.status in ("scored", "auto_failed"):
                mine = (outcome.status, outcome.score, outcome.label)
                theirs = expected.rubric.trait_status[name]
                assert mine == (theirs.status, theirs.score, theirs.label), (key, name, outcome)


def test_the_perfect_judge_judges_everything() -> None:
    outcome = run(None)
    assert outcome.summary.coverage == 1.0 and outcome.summary.incomplete == 0
    assert outcome.summary.passed and outcome.summary.failed  # both kinds of verdict occur


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_one_imperfection_on_every_reply_never_changes_a_verdict(behaviour: str) -> None:
    outcome = run(1.0, (behaviour,))
    assert_never_guesses(outcome, unprovable=behaviour in UNPROVABLE)
    if behaviour in TOLERATED:
        assert outcome.summary.coverage == 1.0, outcome.summary.coverage_line()
        assert outcome.summary.incomplete == 0


def test_at_30_percent_imperfection_coverage_stays_and_verdicts_agree() -> None:
    n = 40
    outcome = run(0.3, n=n)
    assert outcome.summary.coverage >= 0.95, outcome.summary.coverage_line()
    assert_never_guesses(outcome, n)


def test_the_judge_is_asked_again_rather_than_believed() -> None:
    """At 50% every kind of imperfection occurs; retries recover most of it, nothing is guessed."""
    outcome = run(0.5)
    assert_never_guesses(outcome)
    assert outcome.summary.coverage >= 0.9, outcome.summary.coverage_line()
