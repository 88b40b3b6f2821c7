"""The run summary: coverage, pass rate, failures, calls, tokens and cost per model and per trait.

Coverage leads: how many of the run's evaluations were judged, and why the rest were not. The
pass rate counts complete tasks only (passed / (passed + failed)); an incomplete task is neither,
so a gap shows as coverage below 1 and incomplete tasks, never as a better pass rate. Pickled
callable traits the run did not trust are named on a line of their own, with the fix. The rubric
line gives the mean weighted rubric score and the rubric verdicts that counted; each trait, how often
it passed its bar; and the run's gates are measured from :class:`GateTallies` (whole run, per pair).

Aggregated one result at a time, so a long run never holds every result for it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from verify.results.gates import GateResult, GateTallies, evaluate_gates
from verify.results.models import VerificationResult
from verify.results.revisions import RevisionTally
from verify.results.store import rerun_reason
from verify.results.verdict import NO_PASS_RULE, coverage_of, has_pass_rule, outcome_of

__all__ = ["Summary", "TraitTally"]


@dataclass
class TraitTally:
    scored: int = 0
    unscored: int = 0
    auto_failed: int = 0
    total: float = 0.0
    normalised_total: float = 0.0
    numeric: int = 0  # scored with a number (a template-kind trait is scored with fields instead)
    passed: int = 0  # judged and at or above its pass bar, in tasks a rubric verdict was given for
    weighed: int = 0  # judged and weighed in a rubric verdict that was given

    @property
    def mean(self) -> float | None:
        return self.total / self.numeric if self.numeric else None


@dataclass
class Summary:
    """Aggregates updated one result at a time."""

    total: int = 0
    passed: int = 0
    failed: int = 0
    incomplete: int = 0
    judged_tasks: int = 0
    """Complete tasks that no rule decided (verdict ``judged``): neither passed nor failed."""
    ruled: int = 0
    """Tasks a pass rule decided (template verification or a rubric verdict); none: no pass rate."""
    errors: int = 0
    judged: int = 0
    evaluations: int = 0
    by_code_judged: int = 0
    by_code: int = 0
    unscored: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    error_messages: dict[str, int] = field(default_factory=dict)
    """The distinct execution-error messages (at most 20), and how many tasks ended with each."""
    by_model: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    by_trait: dict[str, TraitTally] = field(default_factory=lambda: defaultdict(TraitTally))
    failure_categories: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    model_calls: int = 0
    cached_calls: int = 0
    http_attempts: int = 0
    tokens: int = 0
    earlier_calls: int = 0
    earlier_tokens: int = 0
    """Calls and tokens of results loaded from an earlier run (``--resume``): not this process's, so not live."""
    dj_traits: int = 0
    dj_excerpts: int = 0
    dj_rejected: int = 0
    dj_retries: int = 0
    dj_without_evidence: int = 0
    dj_high_risk: int = 0
    prices: dict[str, dict[str, float]] | None = None
    cost_usd: float = 0.0
    unpriced_models: set[str] = field(default_factory=set)
    untrusted: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    """Pickled callable traits skipped because the run does not trust the checkpoint, and in how many tasks."""
    gates: list[str] = field(default_factory=list)
    """The run's gates (``config.gates``), evaluated by :meth:`gate_results`."""
    tallies: GateTallies = field(default_factory=GateTallies)
    """What gates measure, for the whole run and per model pair (also the rubric score and verdicts)."""
    revision: RevisionTally = field(default_factory=RevisionTally)
    """Revise until satisfied: iterations used, final statuses, first -> last answer's grading."""
    rerun_reasons: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    """Why ``--resume`` would run tasks again (:func:`~verify.results.store.rerun_reason`), and how many."""

    def _cost(self, model: str, input_tokens: int, output_tokens: int) -> float:
        price = (self.prices or {}).get(model)
        if price is None:
            self.unpriced_models.add(model)
            return 0.0
        per_in, per_out = price.get("input_per_million", 0.0), price.get("output_per_million", 0.0)
        return (input_tokens * per_in + output_tokens * per_out) / 1e6

    def add(self, result: VerificationResult, *, earlier: bool = False) -> None:
        """Count ``result``; ``earlier``: it was loaded from an earlier run, so its calls are not live."""
        self.total += 1
        meta = result.metadata
        key = f"{meta.answering.display} / {meta.parsing.display}"
        verdict = outcome_of(result)
        self.ruled += has_pass_rule(result)
        counts = self.by_model[key]  # every pair gets a row, with or without complete tasks
        if verdict == "passed":
            self.passed += 1
            counts[0] += 1
        elif verdict == "failed":
            self.failed += 1
        elif verdict == "judged":
            self.judged_tasks += 1
        else:
            self.incomplete += 1
        if verdict in ("passed", "failed"):
            counts[1] += 1
        coverage = meta.coverage or coverage_of(
            planned_traits=result.rubric.trait_status if result.rubric else [], rubric=result.rubric,
            template_planned=False, template=result.template, failure=meta.failure, answered=True,
        )  # a result written before coverage existed: its rubric only
        self.judged += coverage.judged
        self.evaluations += coverage.total
        self.by_code_judged += coverage.by_code_judged
        self.by_code += coverage.by_code_total
        for why in coverage.unscored.values():
            self.unscored[why] += 1
        self.tallies.add(key, result, coverage)
        self.revision.add(result)
        if meta.failure or meta.errors:
            reason = rerun_reason(meta.model_dump(include={"failure", "errors"}))
            if reason:
                self.rerun_reasons[reason] += 1
        if meta.errors:
            self.errors += 1
            message = meta.errors[-1].message
            if message in self.error_messages or len(self.error_messages) < 20:
                self.error_messages[message] = self.error_messages.get(message, 0) + 1
        if meta.failure:
            self.failure_categories[meta.failure.category] += 1
        if earlier and result.template and "total" in result.template.usage_metadata:
            usage = result.template.usage_metadata["total"]
            self.earlier_calls += usage.calls - usage.cached_calls
            self.earlier_tokens += usage.total_tokens
        elif result.template and "total" in result.template.usage_metadata:
            usage = result.template.usage_metadata["total"]
            self.model_calls += usage.calls - usage.cached_calls
            self.cached_calls += usage.cached_calls
            self.http_attempts += usage.http_attempts
            self.tokens += usage.total_tokens
            if self.prices is not None:
                # Cached calls cost nothing; answer tokens are priced as the answering model's.
                for stage, u in result.template.usage_metadata.items():
                    if stage == "total" or u.calls == u.cached_calls:
                        continue
                    live = (u.calls - u.cached_calls) / u.calls
                    model = meta.answering.model_name if stage == "answer_generation" else meta.parsing.model_name
                    self.cost_usd += live * self._cost(model, u.input_tokens, u.output_tokens)
        dj = result.deep_judgment_rubric
        if dj is not None:
            self.dj_traits += dj.total_traits_evaluated
            self.dj_excerpts += sum(len(v) for v in dj.extracted_rubric_excerpts.values())
            self.dj_rejected += sum(len(m.rejected_excerpts) for m in dj.trait_metadata.values())
            self.dj_retries += dj.total_excerpt_retries
            self.dj_without_evidence += len(dj.traits_without_valid_excerpts)
            risks = dj.rubric_hallucination_risk_assessment or {}
            self.dj_high_risk += sum(1 for r in risks.values() if r.overall_risk in ("medium", "high"))
        if result.rubric:
            rubric_verdict = result.rubric.rubric_verdict
            # A trait's pass bar means something only where a rubric verdict was asked for: without one
            # (scores only, karenina's default) the run passes no task on it, so "0/8 passed" would read
            # as a failure of traits that no rule weighed.
            weighed = rubric_verdict.traits if rubric_verdict is not None and rubric_verdict.verdict is not None else {}
            for name, outcome in result.rubric.trait_status.items():
                tally = self.by_trait[name]
                if name in weighed and weighed[name].passed is not None:
                    tally.weighed += 1
                    tally.passed += bool(weighed[name].passed)
                if outcome.status == "scored":
                    tally.scored += 1
                    if outcome.score is not None:
                        tally.numeric += 1
                        tally.total += float(outcome.score)
                elif outcome.status == "auto_failed":
                    tally.auto_failed += 1
                elif outcome.status == "unscored":
                    tally.unscored += 1
                elif outcome.unscored_category == "untrusted":  # skipped, but a gap all the same
                    tally.unscored += 1
                    self.untrusted[name] += 1

    def untrusted_line(self) -> str | None:
        """The pickled callables left unrun, named, with the fix; None when there are none."""
        if not self.untrusted:
            return None
        names = ", ".join(repr(n) for n in sorted(self.untrusted))
        return (f"not run (untrusted code): {len(self.untrusted)} callable trait(s) stored as cloudpickle, "
                f"{sum(self.untrusted.values())} evaluation(s) left unjudged: {names}; rerun with "
                "--trust-checkpoint-code if you trust this checkpoint")

    def gate_results(self) -> list[GateResult]:
        return evaluate_gates(self.gates, self.tallies)

    def rubric_line(self) -> str | None:
        """"rubric: mean weighted score 0.812 over 40 task(s); verdict given for 40: passed 30, ..."; None
        when no rubric was weighed."""
        overall = self.tallies.overall
        score = overall.rubric_score
        if score is None and not overall.rubric_verdicts:
            return None
        line = f"rubric: mean weighted score {score:.3f} over {overall.rubric_scored} task(s)" if score is not None \
            else "rubric: no task's rubric was fully judged"
        given = sum(overall.rubric_verdicts.values())
        if given:
            counts = ", ".join(f"{v} {overall.rubric_verdicts.get(v, 0)}" for v in ("passed", "failed", "incomplete"))
            return f"{line}; rubric verdict given for {given} task(s): {counts}"
        return f"{line}; no rubric verdict (none asked for: scores only, as in karenina)"

    @property
    def pass_rate(self) -> float | None:
        """Passed over complete tasks; ``None`` when no task is complete (no pass rule, or none fully judged)."""
        complete = self.passed + self.failed
        return self.passed / complete if complete else None

    @property
    def verdict_counts(self) -> dict[str, int]:
        """How many tasks got each verdict: ``{"passed", "failed", "judged", "incomplete"}``."""
        return {"passed": self.passed, "failed": self.failed, "judged": self.judged_tasks,
                "incomplete": self.incomplete}

    @property
    def has_pass_rule(self) -> bool:
        """Whether any task had a rule to pass (else there is no pass rate, only scores)."""
        return self.ruled > 0

    def pass_rate_text(self) -> str:
        """The pass rate as the terminal shows it: ``0.875``, ``n/a (...)`` or ``no pass rule (...)``."""
        if not self.has_pass_rule and self.total:
            return f"{NO_PASS_RULE} (scores only; see --show-plan for the options that set one)"
        rate = self.pass_rate
        return f"{rate:.3f}" if rate is not None else "n/a (no task was fully judged)"

    @property
    def coverage(self) -> float:
        """Judged evaluations over all evaluations (1.0 for a run with none)."""
        return self.judged / self.evaluations if self.evaluations else 1.0

    def coverage_line(self) -> str:
        """"judged 9,870 of 10,000 evaluations (98.7%); 130 unscored: 90 unparseable, 40 timeout".

        When some evaluations are decided by code (regex, callable traits), the judge's share is
        shown apart: a run whose judge judged nothing must say so, whatever the regexes did.
        """
        split = ""
        if self.by_code:
            by_judge = self.evaluations - self.by_code
            split = (f"; by the judge {self.judged - self.by_code_judged:,} of {by_judge:,}, "
                     f"by code {self.by_code_judged:,} of {self.by_code:,}")
        line = f"judged {self.judged:,} of {self.evaluations:,} evaluations ({self.coverage:.1%}{split})"
        missing = self.evaluations - self.judged
        if missing or self.unscored:
            reasons = ", ".join(f"{n:,} {why}" for why, n in sorted(self.unscored.items(), key=lambda kv: -kv[1]))
            line += f"; {missing:,} unscored: {reasons}"
        return line
