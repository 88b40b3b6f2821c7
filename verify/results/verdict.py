"""A task's verdict and coverage: passed only when everything the task needed was judged.

A green result must mean "judged and true". So every evaluation a task plans (each rubric trait
that is not skipped, and the template verification when the template stages run) is either
judged (a score, a verdict, an auto-fail) or listed in ``Coverage.unscored`` with why. A task
with a gap is ``incomplete``, never ``passed``; a failure that *was* judged (wrong content,
evidence that could not be proven, an abstention) still makes it ``failed``.

"Passed" needs a rule that was met: the template's verification (the template modes) or a rubric
verdict (a threshold, a weight, a required trait). A complete task that no rule decided, as in
``rubric_only`` with scores only, is ``judged``: its scores are recorded, and nothing passed.
"""

from __future__ import annotations

from collections.abc import Iterable

from verify.config.models import uses_template
from verify.errors import fixable_reason
from verify.results.models import (
    Coverage,
    Failure,
    RubricSection,
    TemplateSection,
    TraitOutcome,
    Verdict,
    VerificationResult,
)

__all__ = [
    "JUDGED_FAILURE_GROUPS", "NO_PASS_RULE", "OUTCOMES", "coverage_of", "has_pass_rule", "outcome_of", "pass_rule_of",
    "unscored_category", "verdict_of",
]

OUTCOMES: tuple[Verdict, ...] = ("passed", "judged", "failed", "incomplete")
"""Every outcome a task can have, in the order the summary and the progress bar show them."""
NO_PASS_RULE = "no pass rule"
"""What the summary, the page and the exports show instead of a pass rate when no task had a rule."""

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
    # counted in locals and built once: a pydantic model's __setattr__ costs more than the counting
    judged = total = by_code_judged = by_code_total = 0
    unscored: dict[str, str] = {}
    status = rubric.trait_status if rubric is not None else {}
    code = set(by_code)
    for name in planned_traits:
        outcome = status.get(name)
        if outcome is not None and outcome.status == "skipped" and outcome.unscored_category is None:
            continue  # a kind not evaluated at all; a skip with a category (untrusted code) is a gap
        total += 1
        by_code_total += name in code
        if outcome is not None and outcome.status in ("scored", "auto_failed"):
            judged += 1
            by_code_judged += name in code
        elif outcome is not None:
            unscored[name] = unscored_category(outcome)
        else:
            unscored[name] = "no_answer" if not answered else "not_run"
    if template_planned:
        total += 1
        gap = _template_gap(template, failure, answered)
        if gap is None:
            judged += 1
        else:
            unscored["template"] = gap
    if total == 0:
        unscored["rubric"] = "nothing_to_evaluate"
    return Coverage(judged=judged, total=total, by_code_judged=by_code_judged, by_code_total=by_code_total,
                    unscored=unscored)


def verdict_of(failure: Failure | None, coverage: Coverage, *, pass_rule: bool = True) -> Verdict:
    """``pass_rule``: whether a rule decides the task (see :func:`has_pass_rule`); without one a
    complete task is ``judged``, never ``passed``."""
    if failure is not None and failure.group in JUDGED_FAILURE_GROUPS:
        return "failed"
    if failure is not None or not coverage.complete:
        return "incomplete"
    return "passed" if pass_rule else "judged"


def pass_rule_of(template_planned: bool, rubric: RubricSection | None) -> bool:
    """Whether a rule decides the task: the template's verification (planned in the template modes),
    or a rubric verdict that was asked for (its ``verdict`` is None when none was)."""
    verdict = rubric.rubric_verdict if rubric is not None else None
    return template_planned or (verdict is not None and verdict.verdict is not None)


def has_pass_rule(result: VerificationResult) -> bool:
    """:func:`pass_rule_of` for a saved result."""
    return pass_rule_of(uses_template(result.metadata.evaluation_mode), result.rubric)


def outcome_of(result: VerificationResult) -> Verdict:
    """The one place that says which outcome a result counts as: the progress bar and the summary
    both count through it, so they never disagree (an incomplete task is not a failed one). A result
    saved as ``passed`` that no rule decided (an older verify export, or karenina's rubric-only run,
    where a task passes when nothing failed) counts as ``judged``."""
    verdict = result.verdict
    return "judged" if verdict == "passed" and not has_pass_rule(result) else verdict
