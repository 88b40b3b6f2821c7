"""A task's verdict and coverage: passed only when everything the task needed was judged.

A green result must mean "judged and true". So every evaluation a task plans (each rubric trait
that is not skipped, and the template verification when the template stages run) is either
judged (a score, a verdict, an auto-fail) or listed in ``Coverage.unscored`` with why. A task
with a gap is ``incomplete``, never ``passed``; a failure that *was* judged (wrong content,
evidence that could not be proven, an abstention) still makes it ``failed``.
"""

from __future__ import annotations

from collections.abc import Iterable

from verify.errors import fixable_reason
from verify.results.models import Coverage, Failure, RubricSection, TemplateSection, TraitOutcome, Verdict

__all__ = ["JUDGED_FAILURE_GROUPS", "coverage_of", "unscored_category", "verdict_of"]

JUDGED_FAILURE_GROUPS = frozenset({"content", "autofail", "abstained"})
"""Failure groups that are verdicts about the answer; the others (system, retry) mean it was not judged."""

_TEMPLATE_FAILURES = {"parsing": "unparseable", "template_validation": "code", "field_verification_error": "code"}


def unscored_category(outcome: TraitOutcome) -> str:
    """Why an unscored trait was not judged: the model error's category (a 401: ``authentication``, as the
    task's failure and ``--resume`` say), else the recorded one."""
    fixable = fixable_reason(outcome.error_category, outcome.reason) if outcome.error_category else None
    return fixable or outcome.error_category or outcome.unscored_category or "unparseable"


def _template_gap(template: TemplateSection | None, failure: Failure | None, answered: bool) -> str | None:
    """Why the template verification was not judged, or None when it was."""
    if template is not None and template.template_verification_performed:
        return None
    if failure is not None and failure.group in JUDGED_FAILURE_GROUPS:
        return None  # an abstention or an auto-fail is the template's verdict
    if failure is not None and failure.category in _TEMPLATE_FAILURES:
        return _TEMPLATE_FAILURES[failure.category]
    if not answered:
        return "no_answer"
    return failure.category if failure is not None else "not_run"


def coverage_of(
    *,
    planned_traits: Iterable[str],
    by_code: Iterable[str] = (),
    rubric: RubricSection | None,
    template_planned: bool,
    template: TemplateSection | None,
    failure: Failure | None,
    answered: bool,
) -> Coverage:
    """Count the task's judged evaluations. ``planned_traits`` are the rubric traits the task
    evaluates (skipped kinds left out; empty when the rubric stages are off), ``by_code`` those of
    them that code decides (regex, callable) rather than the judge. A trait skipped for a reason
    that is the run's choice, not the trait's kind (a pickled callable the run does not trust),
    stays a gap: ``unscored`` names it with that reason."""
    coverage = Coverage()
    status = rubric.trait_status if rubric is not None else {}
    code = set(by_code)
    for name in planned_traits:
        outcome = status.get(name)
        if outcome is not None and outcome.status == "skipped" and outcome.unscored_category is None:
            continue  # a kind not evaluated at all; a skip with a category (untrusted code) is a gap
        coverage.total += 1
        coverage.by_code_total += name in code
        if outcome is not None and outcome.status in ("scored", "auto_failed"):
            coverage.judged += 1
            coverage.by_code_judged += name in code
        elif outcome is not None:
            coverage.unscored[name] = unscored_category(outcome)
        else:
            coverage.unscored[name] = "no_answer" if not answered else "not_run"
    if template_planned:
        coverage.total += 1
        gap = _template_gap(template, failure, answered)
        if gap is None:
            coverage.judged += 1
        else:
            coverage.unscored["template"] = gap
    if coverage.total == 0:
        coverage.unscored["rubric"] = "nothing_to_evaluate"
    return coverage


def verdict_of(failure: Failure | None, coverage: Coverage) -> Verdict:
    if failure is not None and failure.group in JUDGED_FAILURE_GROUPS:
        return "failed"
    if failure is not None or not coverage.complete:
        return "incomplete"
    return "passed"
