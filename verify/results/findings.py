"""Why a task did not pass, as CI output shows it: the JUnit file, the markdown summary and the pytest
helper all read a result through :func:`findings_of`, so they give the same reasons and quotes.

A finding is one trait that failed (a required trait, or one below its bar), one that was not judged
(and why), or the task's failure when no trait explains it; each with the evidence recorded for it:
the judge's reasoning or an assertion's match, and the quotes deep judgment found in the answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verify.results.models import VerificationResult
from verify.results.verdict import outcome_of

__all__ = ["Finding", "TaskFindings", "answer_of", "findings_of"]

QUOTES_SHOWN = 3
ANSWER_SHOWN = 600


@dataclass(frozen=True)
class Finding:
    name: str  # the trait, "template", or "task"
    status: str  # failed | unscored
    detail: str  # "score 0 (bar 1.0)", "unscored: timeout", the failure's reason
    reason: str | None = None
    quotes: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        head = f"{self.name}: {self.detail}" + (f" - {self.reason}" if self.reason else "")
        return [head, *(f'  quote: "{q}"' for q in self.quotes)]


@dataclass(frozen=True)
class TaskFindings:
    outcome: str  # passed | judged | failed | incomplete
    items: list[Finding] = field(default_factory=list)

    @property
    def headline(self) -> str:
        """One line: ``2 trait(s) failed: contains-paris, accurate`` (or the outcome)."""
        if not self.items:
            return self.outcome
        names = ", ".join(f.name for f in self.items[:5]) + (", ..." if len(self.items) > 5 else "")
        kind = "failed" if self.outcome == "failed" else "not judged"
        return f"{self.outcome}: {len(self.items)} {kind}: {names}"

    def text(self) -> str:
        return "\n".join(line for f in self.items for line in f.lines())


def answer_of(result: VerificationResult, limit: int = ANSWER_SHOWN) -> str:
    """The answer judged (cut to ``limit`` characters), or "" when there was none."""
    text = result.evaluation_input or (result.template.raw_llm_response if result.template else None) or ""
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def findings_of(result: VerificationResult) -> TaskFindings:
    outcome = outcome_of(result)
    if outcome in ("passed", "judged"):
        return TaskFindings(outcome)
    rubric, deep = result.rubric, result.deep_judgment_rubric
    status = rubric.trait_status if rubric else {}
    weighed = rubric.rubric_verdict.traits if rubric and rubric.rubric_verdict else {}
    items: list[Finding] = []
    for name, weighing in weighed.items():
        if weighing.passed is False:
            trait = status.get(name)
            score = trait.score if trait is not None else None
            reason = (trait.reason or trait.rationale) if trait is not None else None
            reason = reason or (deep.rubric_trait_reasoning.get(name) if deep else None)
            quotes = tuple(e.text for e in (deep.extracted_rubric_excerpts.get(name, []) if deep else [])[:QUOTES_SHOWN])
            shown = str(score).lower() if isinstance(score, bool) else f"score {score!r}, bar {weighing.pass_at:g}"
            detail = f"failed ({shown}{', required' if weighing.required else ''})"
            items.append(Finding(name, "failed", detail, reason, quotes))
    coverage = result.metadata.coverage
    for name, why in (coverage.unscored.items() if coverage else []):
        trait = status.get(name)
        items.append(Finding(name, "unscored", f"not judged ({why})", trait.reason if trait else None))
    failure = result.metadata.failure
    if failure is not None and not items:
        items.append(Finding("task", "failed", f"{failure.category} at {failure.stage}", failure.reason))
    for error in result.metadata.errors if not items else []:
        items.append(Finding("task", "unscored", f"error in {error.stage}", error.message))
    return TaskFindings(outcome, items)
