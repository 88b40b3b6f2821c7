"""The rubric verdict: a task's weighted rubric score (AgentV's formulas) and, when asked for, its verdict.

Every weighed trait is normalised to 0-1 (1 best; ``higher_is_better: false`` turns it round, 1 - x):

* boolean traits (LLM, callable) and regex traits: true 1, false 0 (after ``invert_result``);
* score traits (LLM, callable): ``(s - min) / (max - min)`` (1 when min == max); with ``score_ranges``
  the scale is 0-10, so ``s / 10``, AgentV's analytic score;
* literal traits: the class's index over the last index (``i / (classes - 1)``, classes in order);
* metric traits: the headline value (``f1`` when the trait asks for it, else its first metric);
* a deep-judgment trait auto-failed for unprovable evidence: 0.

Not weighed (no single 0-1 value): template-kind and agentic traits, and a callable score trait
without both bounds (a verdict that needs one is refused before the run, naming it).

``score = sum(normalised x weight) / sum(weight)``: AgentV's checklist formula (a satisfied boolean is 1)
and its analytic one (``score / 10 x weight``) at once. A trait passes when its normalised score
reaches its ``pass_threshold``, else the rubric's threshold (``rubric_pass_threshold``, 0.8).

**When it counts.** karenina has no rubric verdict: there, rubric scores never decide a task. So the
verdict is given (and can fail the task) only when the task's rubric asks for it, with a trait that
sets ``weight``, ``required``, ``pass_threshold`` or ``score_ranges``, or when the config sets
``rubric_pass_threshold``. Otherwise the score and each trait's pass are recorded, and nothing else
changes. The verdict is ``failed`` when a required trait failed, or when the score is under the
threshold (also when traits were not judged but full marks for them could not reach it);
``incomplete`` when a trait it needs was not judged (never a pass); ``passed`` otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from verify.benchmark.traits import CallableTrait, LLMTrait, MetricTrait, RegexTrait, Rubric, SchemaJudgeTrait
from verify.benchmark.weighting import uses_weighting
from verify.errors import ConfigError
from verify.judging.schema_verdict import judge_position, judge_weighable
from verify.results.models import RubricSection, RubricVerdict, TraitOutcome, TraitWeighing

if TYPE_CHECKING:
    from verify.benchmark.question import Question
    from verify.config.verification import VerificationConfig

__all__ = [
    "DEFAULT_THRESHOLD", "REQUIRED_TRAIT", "RUBRIC_THRESHOLD", "asks_for_verdict", "check_weighable", "gives_verdict",
    "normalise",
    "normalisation", "threshold_of", "verdict_failure", "weigh", "weighable",
]

DEFAULT_THRESHOLD = 0.8
"""AgentV's bar, used when the config sets no ``rubric_pass_threshold``."""
REQUIRED_TRAIT = "required_trait"
RUBRIC_THRESHOLD = "rubric_threshold"
"""The failure categories of a failed rubric verdict (group ``content``: a judgment about the answer)."""
_EPSILON = 1e-9  # 0.1 + 0.7 must reach 0.8


def threshold_of(config: VerificationConfig) -> float:
    return config.rubric_pass_threshold if config.rubric_pass_threshold is not None else DEFAULT_THRESHOLD


def asks_for_verdict(rubric: Rubric, config: VerificationConfig) -> bool:
    """Whether the task's rubric verdict counts: the config sets a threshold, or a trait weighs itself."""
    return config.rubric_pass_threshold is not None or any(uses_weighting(t) for t in rubric.traits)


def gives_verdict(rubric: Rubric, config: VerificationConfig) -> bool:
    """Whether the task gets a rubric verdict: one is asked for and some trait can be weighed
    (:func:`weigh` gives none otherwise). With the template stages off, its only pass rule."""
    return asks_for_verdict(rubric, config) and any(weighable(t) for t in rubric.traits)


def weighable(trait: Any) -> bool:
    """Whether the trait has a single 0-1 value to weigh."""
    if isinstance(trait, LLMTrait | CallableTrait):
        bounded = trait.min_score is not None and trait.max_score is not None
        return trait.kind != "template" and (trait.kind != "score" or bounded)
    if isinstance(trait, SchemaJudgeTrait):
        return judge_weighable(trait.judge)
    return isinstance(trait, RegexTrait | MetricTrait)


def _position(trait: Any, score: float) -> float:
    if isinstance(trait, MetricTrait):
        return score
    if isinstance(trait, SchemaJudgeTrait):
        return judge_position(trait.judge, score)
    kind = getattr(trait, "kind", "boolean")
    if isinstance(trait, RegexTrait) or kind == "boolean":
        return 1.0 if score else 0.0
    if kind == "literal":
        last = len(trait.classes or {}) - 1
        return score / last if last > 0 else 1.0
    lo, hi = float(trait.min_score), float(trait.max_score)
    return (score - lo) / (hi - lo) if hi > lo else 1.0


def normalise(trait: Any, outcome: TraitOutcome | None) -> float | None:
    """The trait's outcome on 0-1 (1 best), or None when it was not judged."""
    if outcome is not None and outcome.status == "auto_failed":
        return 0.0
    if outcome is None or outcome.status != "scored" or outcome.score is None:
        return None
    value = min(1.0, max(0.0, _position(trait, float(outcome.score))))
    return 1.0 - value if trait.higher_is_better is False else value


def normalisation(trait: Any) -> str:
    """How :func:`normalise` reads the trait, for ``--show-plan``."""
    if not weighable(trait):
        return "not weighed"
    kind = getattr(trait, "kind", "boolean")
    if isinstance(trait, SchemaJudgeTrait):
        text: str = f"verdict_field {trait.judge.verdict_field!r}"
    elif isinstance(trait, MetricTrait):
        text = "f1" if "f1" in trait.metrics else trait.metrics[0]
    elif isinstance(trait, RegexTrait) or kind == "boolean":
        text = "true=1, false=0"
    elif kind == "literal":
        text = f"class index / {max(len(trait.classes or {}) - 1, 1)}"
    else:
        text = f"(s-{trait.min_score})/{trait.max_score - trait.min_score}" if trait.min_score else f"s/{trait.max_score}"
    return f"1 - ({text})" if trait.higher_is_better is False else text


def weigh(rubric: Rubric, section: RubricSection, config: VerificationConfig) -> RubricVerdict | None:
    """The task's weighted score, each weighed trait's pass, and the verdict when one is asked for;
    None when no trait can be weighed."""
    bar = threshold_of(config)
    traits = [t for t in rubric.traits if weighable(t)]
    if not traits:
        return None
    out = RubricVerdict(threshold=bar)
    for t in traits:
        value = normalise(t, section.trait_status.get(t.name))
        pass_at = t.pass_threshold if t.pass_threshold is not None else bar
        out.traits[t.name] = TraitWeighing(normalised=value, weight=t.weight, required=t.required, pass_at=pass_at,
                                           passed=None if value is None else value + _EPSILON >= pass_at)
    total = sum(w.weight for w in out.traits.values())
    judged = sum(w.normalised * w.weight for w in out.traits.values() if w.normalised is not None)
    missing = [n for n, w in out.traits.items() if w.normalised is None]
    if not missing:
        out.score = round(judged / total, 6)
    if not asks_for_verdict(rubric, config):
        return out
    out.failed_required = [n for n, w in out.traits.items() if w.required and w.passed is False]
    unmet = [f"{n} ({out.traits[n].normalised:.2f} < {out.traits[n].pass_at:.2f})" for n in out.failed_required]
    best = (judged + sum(out.traits[n].weight for n in missing)) / total  # every unjudged trait at full marks
    if unmet:
        out.verdict, out.reason = "failed", "required trait(s) not met: " + ", ".join(unmet)
    elif best + _EPSILON < bar:
        at_most = f"at most {best:.2f} (with full marks for the traits not judged)" if missing else f"{best:.2f}"
        out.verdict, out.reason = "failed", f"rubric score {at_most} < {bar:.2f}"
    elif missing:
        out.verdict, out.reason = "incomplete", "not judged: " + ", ".join(missing)
    else:
        out.verdict = "passed"
    return out


def verdict_failure(verdict: RubricVerdict | None) -> tuple[str, str] | None:
    """(category, reason) of a failed rubric verdict, for the task's failure; None otherwise. An
    incomplete verdict needs no failure: its unjudged traits already leave the task incomplete."""
    if verdict is None or verdict.verdict != "failed":
        return None
    return (REQUIRED_TRAIT if verdict.failed_required else RUBRIC_THRESHOLD), verdict.reason or ""


def check_weighable(config: VerificationConfig, questions: Sequence[Question], rubrics: Sequence[Rubric]) -> None:
    """Before any call: a rubric whose verdict counts must be able to weigh each trait it evaluates."""
    for question, rubric in zip(questions, rubrics, strict=True):
        if not asks_for_verdict(rubric, config):
            continue
        for t in rubric.traits:
            if isinstance(t, CallableTrait | LLMTrait) and t.kind == "score" and not weighable(t):
                raise ConfigError(
                    f"question {question.id!r}, trait {t.name!r}: a score trait needs min_score and "
                    "max_score to be weighed in the rubric verdict",
                    "add both bounds to the trait, or leave it out with rubric_trait_names",
                )
            if isinstance(t, SchemaJudgeTrait) and (t.required or t.pass_threshold is not None) and not weighable(t):
                raise ConfigError(
                    f"question {question.id!r}, trait {t.name!r}: a required schema judge (or one with a "
                    "pass_threshold) needs a verdict_field: a boolean, a label, or a number with minimum and maximum",
                    "set judge.verdict_field, or drop required/pass_threshold",
                )
