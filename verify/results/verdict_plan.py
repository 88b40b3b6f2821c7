"""What ``--show-plan`` says about the rubric verdict: where it counts, and how each trait is weighed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from verify.results.rubric_verdict import asks_for_verdict, normalisation, threshold_of, weighable
from verify.run.tasks import task_rubric

if TYPE_CHECKING:
    from verify.benchmark.jsonld import Benchmark
    from verify.benchmark.question import Question
    from verify.config.verification import VerificationConfig

__all__ = ["VerdictPlan", "verdict_plan"]

_FIELDS = "weight/required/pass_threshold/score_ranges"


@dataclass
class VerdictPlan:
    line: str
    rows: list[list[str]] = field(default_factory=list)
    """Per weighed trait where the verdict counts (once per global trait): name, scope, weight,
    required, pass at, normalised as."""


def verdict_plan(benchmark: Benchmark, config: VerificationConfig, questions: Sequence[Question]) -> VerdictPlan:
    bar = threshold_of(config)
    asking: list[tuple[Question, Any]] = []
    for q in questions:
        rubric, provenance = task_rubric(benchmark, config, q)
        if rubric.traits and asks_for_verdict(rubric, config):
            asking.append((q, [(t, provenance.get(t.name)) for t in rubric.traits]))
    with_traits = sum(1 for q in questions if task_rubric(benchmark, config, q)[0].traits)
    if config.rubric_pass_threshold is not None:
        line = (f"rubric verdict: on for every question with rubric traits ({with_traits}): a task fails when a "
                f"required trait fails or its weighted rubric score is under rubric_pass_threshold {bar:.2f}")
    elif asking:
        line = (f"rubric verdict: on for {len(asking)} of {with_traits} question(s) with rubric traits (their rubric "
                f"sets {_FIELDS}), threshold {bar:.2f}; set rubric_pass_threshold to give every rubric a verdict")
    else:
        ends = "" if config.template_enabled else "; no pass rule: complete tasks end 'judged', never 'passed'"
        return VerdictPlan(f"rubric verdict: off (scores only, as in karenina){ends}; set rubric_pass_threshold, "
                           f"or give traits {_FIELDS}")
    plan = VerdictPlan(line)
    seen: set[tuple[str, str]] = set()
    for q, traits in asking:
        for t, source in traits:
            scope = "global" if source == "global" else q.id
            if (t.name, scope) in seen or not weighable(t):
                continue
            seen.add((t.name, scope))
            pass_at = f"{t.pass_threshold:.2f}" if t.pass_threshold is not None else f"{bar:.2f} (rubric's)"
            plan.rows.append([t.name, scope, f"{t.weight:g}", "yes" if t.required else "no", pass_at, normalisation(t)])
    return plan
