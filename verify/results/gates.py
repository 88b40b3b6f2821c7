"""Evaluating the run's gates (``config.gates``; grammar in :mod:`verify.config.gates`) at its end.

Each gate is measured over the whole run and per answering / judge model pair, and met when the
whole run's value meets it; the per-pair values say which pair is short. A metric with nothing to
measure (no complete task for ``pass_rate``, no fully judged rubric for ``rubric_score``, a trait
never scored) has no value, and its gate is not met: nothing unjudged ever passes a gate. The CLI
exits 4 when :func:`failed_gates` is not empty. Trait names are checked when the run starts
(:func:`check_gates`), so a typo fails before any paid call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from verify.config.gates import Gate, parse_gate
from verify.errors import ConfigError, did_you_mean
from verify.results.models import Coverage, VerificationResult
from verify.results.rubric_verdict import weighable
from verify.results.verdict import outcome_of

if TYPE_CHECKING:
    from verify.benchmark.traits import Rubric
    from verify.results.summary import Summary

__all__ = ["NO_RULE_HINT", "GateResult", "GateTallies", "ScopeTally", "check_gates", "evaluate_gates", "failed_gates"]


@dataclass
class ScopeTally:
    """What the gates measure, for the whole run or one model pair."""

    passed: int = 0
    failed: int = 0
    judged: int = 0
    evaluations: int = 0
    rubric_total: float = 0.0
    rubric_scored: int = 0
    rubric_verdicts: dict[str, int] = field(default_factory=dict)
    """Rubric verdicts given (those that counted), by verdict."""
    traits: dict[str, list[float]] = field(default_factory=dict)
    """trait -> [sum of its numeric scores, how many]."""

    def add(self, result: VerificationResult, coverage: Coverage) -> None:
        verdict = outcome_of(result)
        self.passed += verdict == "passed"
        self.failed += verdict == "failed"
        self.judged += coverage.judged
        self.evaluations += coverage.total
        rubric = result.rubric
        if rubric is None:
            return
        weighed = rubric.rubric_verdict
        if weighed is not None and weighed.score is not None:
            self.rubric_total += weighed.score
            self.rubric_scored += 1
        if weighed is not None and weighed.verdict is not None:
            self.rubric_verdicts[weighed.verdict] = self.rubric_verdicts.get(weighed.verdict, 0) + 1
        for name, outcome in rubric.trait_status.items():
            if outcome.status == "scored" and outcome.score is not None:
                tally = self.traits.setdefault(name, [0.0, 0])
                tally[0] += float(outcome.score)
                tally[1] += 1

    @property
    def rubric_score(self) -> float | None:
        return self.rubric_total / self.rubric_scored if self.rubric_scored else None

    def value(self, gate: Gate) -> float | None:
        if gate.metric == "pass_rate":
            complete = self.passed + self.failed
            return self.passed / complete if complete else None
        if gate.metric == "coverage":
            return self.judged / self.evaluations if self.evaluations else 1.0
        if gate.metric == "rubric_score":
            return self.rubric_score
        total, count = self.traits.get(gate.trait or "", (0.0, 0))
        return total / count if count else None


@dataclass
class GateTallies:
    overall: ScopeTally = field(default_factory=ScopeTally)
    by_model: dict[str, ScopeTally] = field(default_factory=dict)

    def add(self, pair: str, result: VerificationResult, coverage: Coverage) -> None:
        self.overall.add(result, coverage)
        self.by_model.setdefault(pair, ScopeTally()).add(result, coverage)


@dataclass(frozen=True)
class GateResult:
    gate: str
    value: float | None
    passed: bool
    by_model: dict[str, tuple[float | None, bool]]

    def as_dict(self) -> dict[str, Any]:
        """For the results header: ``{"gate", "value", "passed", "by_model": {pair: {"value", "passed"}}}``."""
        return {"gate": self.gate, "value": self.value, "passed": self.passed,
                "by_model": {pair: {"value": v, "passed": ok} for pair, (v, ok) in self.by_model.items()}}

    def line(self) -> str:
        """``gate 'pass_rate >= 0.9' not met: 0.850 (a / judge 0.800, b / judge 0.900)``."""
        pairs = ", ".join(f"{pair} {_shown(v)}" for pair, (v, _) in sorted(self.by_model.items()))
        state = "met" if self.passed else "not met"
        return f"gate {self.gate!r} {state}: {_shown(self.value)}" + (f" ({pairs})" if len(self.by_model) > 1 else "")


def _shown(value: float | None) -> str:
    return "n/a (nothing to measure)" if value is None else f"{value:.3f}"


def evaluate_gates(gates: Sequence[str], tallies: GateTallies) -> list[GateResult]:
    out = []
    for text in gates:
        gate = parse_gate(text)
        value = tallies.overall.value(gate)
        pairs = {pair: (t.value(gate), gate.met(t.value(gate))) for pair, t in tallies.by_model.items()}
        out.append(GateResult(gate.text, value, gate.met(value), pairs))
    return out


def failed_gates(summary: Summary, gates: Sequence[str] | None = None) -> list[GateResult]:
    """The gates the run did not meet (default: the run's own, ``summary.gates`` from ``config.gates``);
    the CLI exits 4 when there is any, printing each one's :meth:`GateResult.line`."""
    return [g for g in evaluate_gates(summary.gates if gates is None else gates, summary.tallies) if not g.passed]


NO_RULE_HINT = ("define one: --set rubric_pass_threshold=0.8 (or rubric_pass_threshold in the preset), give rubric "
                "traits weight, required, pass_threshold or score_ranges, or use --evaluation-mode "
                "template_and_rubric (template verification); or gate on coverage, rubric_score or mean(<trait>)")
"""The options that give a task a pass rule, for a ``pass_rate`` gate on a run without one."""


def check_gates(gates: Sequence[str], rubrics: Sequence[Rubric], *, pass_rule: bool = True) -> None:
    """Before any call: every trait a gate names is evaluated by some selected question, a
    ``rubric_score`` gate has a trait to weigh, and a ``pass_rate`` gate (``--fail-under`` too) has
    a task with a pass rule (``pass_rule``): else the gate could never be met."""
    names = {t.name for rubric in rubrics for t in rubric.traits}
    for text in gates:
        gate = parse_gate(text)
        if gate.metric == "pass_rate" and not pass_rule:
            raise ConfigError(f"gate {gate.text!r} (--gate or --fail-under): this run has no pass rule "
                              "(no template verification, no rubric verdict), so no task can pass", NO_RULE_HINT)
        if gate.metric == "mean" and gate.trait not in names:
            known = ", ".join(sorted(names)[:12]) or "none (no rubric is evaluated in this run)"
            raise ConfigError(f"gate {gate.text!r}: no trait {gate.trait!r} in the rubrics of the selected questions"
                              f"{did_you_mean(gate.trait or '', names)}", f"traits: {known}")
        if gate.metric == "rubric_score" and not any(weighable(t) for rubric in rubrics for t in rubric.traits):
            raise ConfigError(f"gate {gate.text!r}: no selected question has a rubric trait to weigh",
                              "use evaluation_mode template_and_rubric or rubric_only, with rubric traits")
