"""A run's figures for the page: the header (benchmark, models, config, plan, gates, warnings) and the
overview (coverage, pass rate, verdict counts, cost, tokens, time, per model pair, per trait).

Counts come from :class:`verify.results.summary.Summary`, the terminal summary's aggregator, so the
page and the terminal never disagree about coverage or the pass rate (passed over complete tasks).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from verify.report.revision_data import revision_figures
from verify.report.runs import Run
from verify.report.task_data import trait_kind
from verify.results.models import VerificationResult
from verify.results.summary import Summary
from verify.results.verdict import outcome_of

__all__ = ["run_figures", "value_key"]

_HEADER_KEYS = ("benchmark", "run_name", "verify_version", "evaluation_mode", "plan", "export_timestamp",
                "structured_output", "job_summary", "exported_by", "karenina_version", "tasks")
_MAX_VALUES = 12  # distinct numeric scores a trait's chart shows one by one; more are put in bins
_MAX_MESSAGES = 30


def value_key(score: Any, label: str | None) -> tuple[float, str]:
    """How a trait's result is counted in its distribution: (sort order, text shown)."""
    if label is not None:
        return (float(score) if isinstance(score, int | float) else 0.0, label)
    if isinstance(score, bool):
        return (float(score), "true" if score else "false")
    if isinstance(score, int | float):
        return (float(score), f"{score:g}")
    return (0.0, str(score))


def _binned(values: Counter[tuple[float, str]], numeric: bool) -> list[list[Any]]:
    """[[value shown, count], ...] in order; many distinct numbers become 10 equal bins."""
    if not numeric or len(values) <= _MAX_VALUES:
        return [[text, n] for (_, text), n in sorted(values.items())]
    lo, hi = min(v for v, _ in values), max(v for v, _ in values)
    width = (hi - lo) / 10 or 1.0
    bins = [0] * 10
    for (v, _), n in values.items():
        bins[min(int((v - lo) / width), 9)] += n
    return [[f"{lo + i * width:.3g}–{lo + (i + 1) * width:.3g}", n] for i, n in enumerate(bins)]


class _Traits:
    """Per trait: kind, status counts and the distribution of what was scored."""

    def __init__(self) -> None:
        self.kinds: dict[str, str] = {}
        self.status: dict[str, Counter[str]] = defaultdict(Counter)
        self.values: dict[str, Counter[tuple[float, str]]] = defaultdict(Counter)
        self.numeric: dict[str, bool] = {}

    def add(self, result: VerificationResult) -> None:
        rubric = result.rubric
        if rubric is None:
            return
        for name, outcome in rubric.trait_status.items():
            kind = self.kinds.setdefault(name, trait_kind(name, rubric, outcome))
            self.status[name][outcome.status] += 1
            if outcome.status != "scored" or outcome.score is None:
                continue
            self.values[name][value_key(outcome.score, outcome.label)] += 1
            self.numeric[name] = kind not in ("literal", "boolean") and not isinstance(outcome.score, bool)

    def records(self, summary: Summary) -> list[dict[str, Any]]:
        out = []
        for name in sorted(self.kinds):
            status = self.status[name]
            tally = summary.by_trait.get(name)
            out.append({
                "name": name, "kind": self.kinds[name], "scored": status["scored"], "unscored": status["unscored"],
                "auto_failed": status["auto_failed"], "skipped": status["skipped"],
                "mean": tally.mean if tally is not None else None,
                "values": _binned(self.values[name], self.numeric.get(name, False)),
            })
        return out


def _header(header: dict[str, Any]) -> dict[str, Any]:
    out = {k: header[k] for k in _HEADER_KEYS if k in header}
    config = header.get("config") if isinstance(header.get("config"), dict) else {}
    out["config"] = config
    out["warnings"] = list(header.get("config_warnings") or [])
    gates = header.get("gates", config.get("gates") if config else None)
    if gates:
        out["gates"] = gates
    identity = header.get("identity")
    if isinstance(identity, dict):
        out["identity"] = {k: v for k, v in identity.items() if k in ("benchmark", "config", "verify_version")}
    return out


def _duration(header: dict[str, Any]) -> float | None:
    """The run's wall-clock time as its export recorded it (a JSONL export records none)."""
    job = header.get("job_summary")
    if isinstance(job, dict) and isinstance(job.get("total_duration"), int | float):
        return float(job["total_duration"])
    return None


def run_figures(run: Run) -> dict[str, Any]:
    """Everything the header and overview of one run show."""
    prices = run.header.get("prices")
    summary = Summary(prices=prices if isinstance(prices, dict) else None)
    traits = _Traits()
    pairs: dict[str, Counter[str]] = defaultdict(Counter)
    warnings: Counter[str] = Counter()
    for result in run.results:
        summary.add(result)
        traits.add(result)
        meta = result.metadata
        pair = pairs[f"{meta.answering.display} / {meta.parsing.display}"]
        pair[outcome_of(result)] += 1
        warnings.update(meta.warnings)
    header = _header(run.header)
    figures = {
        "tasks": summary.total, "passed": summary.passed, "failed": summary.failed,
        "incomplete": summary.incomplete, "with_errors": summary.errors, "judged_tasks": summary.judged_tasks,
        "pass_rule": summary.has_pass_rule, "pass_rate": summary.pass_rate if summary.has_pass_rule else None,
        "coverage": summary.coverage, "coverage_line": summary.coverage_line(), "judged": summary.judged,
        "evaluations": summary.evaluations, "unscored": dict(summary.unscored),
        "failure_categories": dict(summary.failure_categories), "model_calls": summary.model_calls,
        "cached_calls": summary.cached_calls, "http_attempts": summary.http_attempts, "tokens": summary.tokens,
        "cost_usd": summary.cost_usd if summary.prices is not None else None,
        "unpriced_models": sorted(summary.unpriced_models) if summary.prices is not None else [],
        "duration": _duration(run.header),
        "task_time": sum(r.metadata.execution_time for r in run.results),
        "deep_judgment": {"traits": summary.dj_traits, "excerpts": summary.dj_excerpts,
                          "rejected": summary.dj_rejected, "retries": summary.dj_retries,
                          "without_evidence": summary.dj_without_evidence, "risky": summary.dj_high_risk},
    }
    untrusted = summary.untrusted_line()
    notes = [*header["warnings"], *([untrusted] if untrusted else [])]
    return {
        "label": run.label, "path": str(run.path), "header": header, "figures": figures,
        "pairs": [{"pair": name, "passed": c["passed"], "judged": c["judged"], "failed": c["failed"],
                   "incomplete": c["incomplete"],
                   "pass_rate": c["passed"] / (c["passed"] + c["failed"]) if c["passed"] + c["failed"] else None}
                  for name, c in sorted(pairs.items())],
        "traits": traits.records(summary),
        "revision": revision_figures(run.results),
        "notes": notes,
        "task_warnings": [[m, n] for m, n in warnings.most_common(_MAX_MESSAGES)],
        "errors": [[m, n] for m, n in summary.error_messages.items()],
    }
