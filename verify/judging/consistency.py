"""Is the judge consistent with itself? Absence criteria, verdicts against the judge's own evidence,
and reasoning replies that are not reasoning.

A judge that says nothing in the answer bears on a trait and then judges the trait as if something
did has contradicted itself: that is the judge's failure, not the answer's. Deep judgment (both
strategies) sends such a verdict back once with the evidence, and a verdict that still contradicts
it leaves the trait ``unscored`` (:data:`verify.results.reasons.CONTRADICTION`), never auto-failed.
"""

from __future__ import annotations

import json
import re

from verify.benchmark.traits import LLMTrait
from verify.judging.prompts import render_trait
from verify.llm.structured import strip_thinking
from verify.results.models import Excerpt, Score

__all__ = [
    "NO_EVIDENCE", "absence_cue", "contradiction_feedback", "criterion_text", "evidence_block", "is_absence_criterion",
    "not_reasoning", "opposed_verdict", "reasoning_feedback", "ungrounded_verdict",
]

NO_EVIDENCE = "No passage of the response bears on this trait."
"""What the verdict step is shown for a trait whose judge found nothing relevant."""

_ABSENCE = re.compile(
    r"\b(does not|doesn't|do not|don't|did not|never|avoids?|avoiding|without|free of|absence of|"
    r"refrains? from|no mention|not (?:mention|include|contain|recommend|use|suggest|claim))\b",
    re.IGNORECASE,
)


def criterion_text(name: str, description: str | None) -> str:
    """The text a criterion is read from: the trait's name (underscores as spaces), then its description."""
    return f"{name.replace('_', ' ')} {description or ''}"


def absence_cue(text: str) -> re.Match[str] | None:
    """The phrase that makes ``text`` an absence criterion ("does not", "never", "avoids", ...), or None.

    The one definition of an absence criterion: the evidence policy and the simulated judge
    (``verify.llm.simulated.brain``) both use it.
    """
    return _ABSENCE.search(text)


def is_absence_criterion(trait: LLMTrait) -> bool:
    """True when the trait asks for something to be absent ("does not recommend X")."""
    return absence_cue(criterion_text(trait.name, trait.description)) is not None


def ungrounded_verdict(trait: LLMTrait, score: Score) -> str | None:
    """How a verdict reached with nothing relevant found contradicts that finding, or None when it agrees."""
    absence = is_absence_criterion(trait)
    if trait.kind == "boolean":
        if absence and score is False:
            return ("you found no passage that bears on the trait, so nothing it forbids is in the response, "
                    "yet your verdict says the criterion is violated")
        if not absence and score is True:
            return ("you found no passage that bears on the trait, yet your verdict says the response meets it")
        return None
    if absence or trait.kind == "literal":
        return None  # a class label claims nothing is present in the response: any class agrees with no evidence
    if trait.kind == "score" and score == trait.min_score:
        return None  # the lowest score says the criterion is not met at all: consistent with no evidence
    return ("you found no passage that bears on the trait, yet your verdict is above the lowest level, "
            "which needs something in the response to support it")


def opposed_verdict(trait: LLMTrait, score: Score, excerpts: list[Excerpt]) -> str | None:
    """How a yes/no verdict goes against every proven quote's stance (the judge said each passage shows the
    response failing the trait, then judged it met, or the reverse), or None. Quotes without a stance, or
    with mixed stances, never make a contradiction: weighing them is the verdict's job."""
    if trait.kind != "boolean" or not excerpts or any(e.supports is None for e in excerpts):
        return None
    against = "fails" if score is True else "meets"
    if any(e.supports != against for e in excerpts):
        return None
    shown = "failing" if against == "fails" else "meeting"
    said = "meets" if score is True else "fails"
    return f"every passage you quoted shows the response {shown} the trait, yet your verdict says it {said} it"


def evidence_block(excerpts: list[Excerpt]) -> str:
    """The judge's own quotes with their stances, as the contradiction feedback shows them."""
    return "\n".join(f"[E{i}] {e.text} (you said: {e.supports})" for i, e in enumerate(excerpts, 1)) or NO_EVIDENCE


def contradiction_feedback(problem: str, evidence: str = NO_EVIDENCE) -> str:
    """The message that sends a contradicting verdict back, with the judge's own evidence."""
    return (f"Your verdict contradicts your own evidence: {problem}.\n<evidence>{evidence}</evidence>\n"
            "Give the verdict again so that it agrees with this evidence (or, if you now read the response "
            "differently, the verdict the response supports).")


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def not_reasoning(text: str, trait: LLMTrait) -> str | None:
    """Why a reasoning reply is not reasoning (empty, or the prompt's own data echoed), or None."""
    body = strip_thinking(text)
    if not body:
        return "the reply is empty"
    unfenced = re.sub(r"^```[\w-]*\s*|\s*```$", "", body.strip())
    if unfenced[:1] in "{[":
        try:
            json.loads(unfenced)
        except ValueError:
            pass
        else:
            return "the reply is JSON data, not reasoning"
    echoes = {_squash(trait.description or ""), _squash(render_trait(trait)), _squash(trait.name)}
    if _squash(body) in echoes:
        return "the reply repeats the trait's definition"
    return None


def reasoning_feedback(why: str) -> str:
    return (f"Your previous reply was not reasoning ({why}). Explain in prose, step by step, how well the "
            "response meets the trait, citing the evidence. Do not give the final score yet.")
