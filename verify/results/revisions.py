"""Revise until satisfied: what one grading pass of an answer found, and the task's revision record.

Each pass reads the rubric verdict machinery (:mod:`verify.results.rubric_verdict`): every weighed
trait is a criterion, which passes when its normalised score reaches its bar. A failing criterion
gets a ``gap``: the concrete shortfall ("scored 2, needs 4.2 or more (range 1-5)", the pattern not
matched, the facts missing) plus the judge's own reason when it gave one, so the answering model
knows what to change. A pass's ``result`` is one of the seed's statuses (deepagents' RubricMiddleware):

* ``satisfied``: every criterion passed;
* ``needs_revision``: at least one criterion failed;
* ``failed``: the rubric cannot be evaluated against this answer (no criterion can be weighed, a
  criterion was left unjudged for a judged reason such as an unusable reply, or there is no answer);
* ``grader_error``: the judge itself failed (a model call failed for good, the stage raised); the
  explanation carries the error's category and message.

The task's terminal ``status`` is the last pass's result, or ``max_iterations_reached`` when the last
allowed pass still needed a revision. Only the final answer's sections are the result's; each pass
is kept in ``metadata.revision.evaluations`` (exported in verify's own section).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from verify.benchmark.traits import Rubric
    from verify.results.models import TraitOutcome, TraitWeighing, VerificationResult

__all__ = ["Criterion", "Revision", "RevisionEvaluation", "RevisionTally", "assess"]

PassResult = Literal["satisfied", "needs_revision", "failed", "grader_error"]
Status = Literal["satisfied", "max_iterations_reached", "failed", "grader_error"]
_GAP_LIMIT = 400


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Criterion(_Model):
    name: str
    passed: bool | None = Field(description="None: the trait was not judged")
    gap: str | None = Field(default=None, description="what the answer lacks (failing) or why it was not judged")


class RevisionEvaluation(_Model):
    """One grading pass (the seed's RubricEvaluation): ``iteration`` counts from 0 (the first answer)."""

    grading_run_id: str = Field(description="the task's result_id: shared by every pass of the task")
    iteration: int
    answer: str | None
    result: PassResult
    explanation: str
    criteria: list[Criterion] = Field(default_factory=list)
    verdict: str | None = Field(default=None, description="the task's verdict had this answer been the last")
    score: float | None = Field(default=None, description="the weighted rubric score of this answer")


class Revision(_Model):
    status: Status
    max_iterations: int
    evaluations: list[RevisionEvaluation] = Field(default_factory=list)

    @property
    def iterations(self) -> int:
        return len(self.evaluations)


def _num(value: float) -> str:
    return f"{value:g}" if isinstance(value, int | float) and not isinstance(value, bool) else str(value)


def shortfall(trait: Any, outcome: TraitOutcome | None, weighing: TraitWeighing, result: VerificationResult) -> str:
    """"scored X, needs Y" in the trait's own terms (and, for metric traits, what is missing)."""
    score = outcome.score if outcome is not None else None
    lower = getattr(trait, "higher_is_better", True) is False
    kind = getattr(trait, "kind", None)
    pattern = getattr(trait, "pattern", None)
    if outcome is not None and outcome.status == "auto_failed":
        return "its evidence could not be validated"
    if pattern is not None:  # a regex trait
        must = not (bool(getattr(trait, "invert_result", False)) ^ lower)
        return f"{'does not match' if must else 'matches'} the pattern /{pattern}/" + ("" if must else ", which it must not")
    if kind == "boolean":
        return f"judged {str(bool(score)).lower()}, needs {str(not bool(score)).lower()}"
    if kind == "literal":
        classes = list((getattr(trait, "classes", None) or {}).items())
        last = max(len(classes) - 1, 1)
        fits = [f"'{n}' ({d})" for i, (n, d) in enumerate(classes)
                if ((last - i) / last if lower else i / last) + 1e-9 >= weighing.pass_at]
        return f"labelled {outcome.label if outcome and outcome.label else score!r}, needs " + " or ".join(fits)
    if kind == "score" and getattr(trait, "min_score", None) is not None:
        lo, hi = float(trait.min_score), float(trait.max_score)
        bar = hi - weighing.pass_at * (hi - lo) if lower else lo + weighing.pass_at * (hi - lo)
        return f"scored {_num(score) if score is not None else '?'}, needs {_num(round(bar, 2))} or " \
               f"{'less' if lower else 'more'} (range {_num(lo)}-{_num(hi)})"
    lists = (result.rubric.metric_trait_confusion_lists or {}).get(trait.name) if result.rubric else None
    text = f"scored {_num(round(weighing.normalised or 0.0, 2))}, needs {_num(weighing.pass_at)}"
    if lists:
        missing, wrong = lists.get("fn") or [], lists.get("fp") or []
        text += "".join([f"; missing: {'; '.join(missing)}" if missing else "",
                         f"; should not say: {'; '.join(wrong)}" if wrong else ""])
    return text


def _judge_said(name: str, outcome: TraitOutcome | None, result: VerificationResult) -> str | None:
    reasoning = result.deep_judgment_rubric.rubric_trait_reasoning.get(name) if result.deep_judgment_rubric else None
    said = (outcome.rationale or outcome.reason) if outcome is not None else None
    return said or reasoning


def _criteria(result: VerificationResult, rubric: Rubric) -> list[Criterion]:
    section = result.rubric
    verdict = section.rubric_verdict if section else None
    if section is None or verdict is None:
        return []
    traits = {t.name: t for t in rubric.traits}
    out: list[Criterion] = []
    for name, weighing in verdict.traits.items():
        outcome = section.trait_status.get(name)
        if weighing.passed:
            out.append(Criterion(name=name, passed=True))
            continue
        if weighing.passed is None:
            why = (outcome.reason if outcome else None) or "not judged"
            out.append(Criterion(name=name, passed=None, gap=f"not judged: {why}"[:_GAP_LIMIT]))
            continue
        gap = shortfall(traits[name], outcome, weighing, result)
        said = _judge_said(name, outcome, result)
        out.append(Criterion(name=name, passed=False, gap=(f"{gap}; judge: {said}" if said else gap)[:_GAP_LIMIT]))
    return out


def _grader_error(result: VerificationResult) -> str | None:
    """The judge's own failure: a stage error of the rubric evaluation (a trait lost to an outage is one)."""
    for err in result.metadata.errors:
        if err.stage in ("rubric_evaluation", "deep_judgment_rubric_auto_fail"):
            return f"{err.category}: {err.message}"
    return None


def assess(result: VerificationResult, rubric: Rubric, iteration: int) -> RevisionEvaluation:
    """One grading pass over ``result`` (the task's result for this iteration's answer)."""
    meta = result.metadata
    answer = result.template.raw_llm_response if result.template else None
    verdict = result.rubric.rubric_verdict if result.rubric else None
    base: dict[str, Any] = {"grading_run_id": meta.result_id, "iteration": iteration, "answer": answer,
                            "verdict": meta.verdict, "score": verdict.score if verdict else None}
    error = _grader_error(result)
    if error is not None:
        return RevisionEvaluation(**base, result="grader_error", explanation=error[:_GAP_LIMIT])
    if answer is None:
        why = meta.errors[-1].message if meta.errors else "no answer was produced"
        return RevisionEvaluation(**base, result="failed", explanation=f"no answer to evaluate: {why}"[:_GAP_LIMIT])
    criteria = _criteria(result, rubric)
    failing = [c.name for c in criteria if c.passed is False]
    unjudged = [c.name for c in criteria if c.passed is None]
    outcome: PassResult
    if not criteria:
        outcome, explanation = "failed", "no rubric trait can be weighed against this answer (nothing to satisfy)"
    elif failing:
        outcome, explanation = "needs_revision", f"{len(failing)} of {len(criteria)} criteria not met: {', '.join(failing)}"
    elif unjudged:
        outcome, explanation = "failed", f"the judge could not evaluate: {', '.join(unjudged)}"
    else:
        outcome, explanation = "satisfied", f"all {len(criteria)} criteria met"
    return RevisionEvaluation(**base, result=outcome, explanation=explanation, criteria=criteria)


@dataclass
class RevisionTally:
    """What the summary says about revising: iterations used, final statuses, first -> last verdicts."""

    tasks: int = 0
    iterations: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    satisfied_after: Counter[int] = field(default_factory=Counter)
    changes: Counter[str] = field(default_factory=Counter)
    scores: list[tuple[float, float]] = field(default_factory=list)  # (first, last) weighted rubric scores

    def add(self, result: VerificationResult) -> None:
        revision = result.metadata.revision
        if revision is None or not revision.evaluations:
            return
        self.tasks += 1
        self.iterations += revision.iterations
        self.statuses[revision.status] += 1
        if revision.status == "satisfied":
            self.satisfied_after[revision.iterations] += 1
        first, last = revision.evaluations[0], revision.evaluations[-1]
        self.changes[f"{first.result} -> {last.result}"] += 1
        if first.score is not None and last.score is not None:
            self.scores.append((first.score, last.score))

    def line(self) -> str | None:
        """"revisions: 8 task(s), 15 iteration(s) (mean 1.9); satisfied 6 (after 2: 6), ...; first -> last: ..."."""
        if not self.tasks:
            return None
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(self.statuses.items()))
        after = ", ".join(f"{n} pass(es): {v}" for n, v in sorted(self.satisfied_after.items()))
        changes = ", ".join(f"{k} {v}" for k, v in sorted(self.changes.items()))
        if self.scores:
            n = len(self.scores)
            changes += (f"; mean rubric score {sum(f for f, _ in self.scores) / n:.3f} -> "
                        f"{sum(last for _, last in self.scores) / n:.3f}")
        return (f"revisions: {self.tasks} task(s), {self.iterations} iteration(s) "
                f"(mean {self.iterations / self.tasks:.2f}); {statuses}"
                + (f" (satisfied after {after})" if after else "") + f"; first -> last answer: {changes}")
