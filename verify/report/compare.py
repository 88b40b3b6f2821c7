"""Two runs side by side: which tasks flipped, which traits changed, and how each figure moved.

Tasks are matched by ``verify.task_key`` (question, answering model, judge, replicate), so the same
task in both runs is compared whatever order the files list it in. A task *flips* when its status
(passed, failed, auto_failed, incomplete: the table's ``data-status``) differs between the runs; a
trait flips when its outcome differs (the score or label it got, or that it was unscored, auto-failed
or skipped). Tasks found in one run only are listed apart, never as flips.
"""

from __future__ import annotations

from typing import Any

from verify.report.figures import value_key
from verify.report.task_data import task_status
from verify.results.models import TraitOutcome, VerificationResult
from verify.results.verdict import unscored_category

__all__ = ["comparison", "outcome_text"]

_FIGURES = (
    ("tasks", "tasks", "count"), ("passed", "passed", "count"), ("judged_tasks", "judged (no pass rule)", "count"),
    ("failed", "failed", "count"),
    ("incomplete", "incomplete", "count"), ("with_errors", "with execution errors", "count"),
    ("pass_rate", "pass rate (of complete tasks)", "rate"), ("coverage", "coverage", "rate"),
    ("judged", "evaluations judged", "count"), ("evaluations", "evaluations", "count"),
    ("model_calls", "live model calls", "count"), ("tokens", "tokens", "count"), ("cost_usd", "cost (USD)", "money"),
    ("duration", "wall-clock time (s)", "seconds"), ("task_time", "task time, summed (s)", "seconds"),
)
_DEEP = (("excerpts", "excerpts validated"), ("rejected", "quotes rejected"),
         ("without_evidence", "traits without valid evidence"), ("risky", "medium/high hallucination risk"))


def outcome_text(outcome: TraitOutcome | None) -> str:
    """A trait's outcome in a few words: its score or label, or why it has none."""
    if outcome is None:
        return "not evaluated"
    if outcome.status == "scored":
        return value_key(outcome.score, outcome.label)[1] if outcome.score is not None else "scored"
    if outcome.status == "unscored":
        return f"unscored ({unscored_category(outcome)})"
    return outcome.status.replace("_", "-")


def _figures(a: dict[str, Any], b: dict[str, Any]) -> list[list[Any]]:
    fa, fb = a["figures"], b["figures"]
    rows: list[list[Any]] = [[label, fa.get(key), fb.get(key), kind] for key, label, kind in _FIGURES]
    rows += [[f"deep judgment: {label}", fa["deep_judgment"][key], fb["deep_judgment"][key], "count"]
             for key, label in _DEEP]
    pairs_a = {p["pair"]: p for p in a["pairs"]}
    pairs_b = {p["pair"]: p for p in b["pairs"]}
    for pair in sorted(set(pairs_a) | set(pairs_b)):
        rows.append([f"pass rate: {pair}", (pairs_a.get(pair) or {}).get("pass_rate"),
                     (pairs_b.get(pair) or {}).get("pass_rate"), "rate"])
    traits_a = {t["name"]: t for t in a["traits"]}
    traits_b = {t["name"]: t for t in b["traits"]}
    for name in sorted(set(traits_a) | set(traits_b)):
        ta, tb = traits_a.get(name) or {}, traits_b.get(name) or {}
        rows.append([f"{name}: mean score", ta.get("mean"), tb.get("mean"), "score"])
        rows.append([f"{name}: unscored", ta.get("unscored"), tb.get("unscored"), "count"])
        rows.append([f"{name}: auto-failed", ta.get("auto_failed"), tb.get("auto_failed"), "count"])
    return rows


def _side(result: VerificationResult) -> dict[str, Any]:
    failure = result.metadata.failure
    return {"status": task_status(result), "category": failure.category if failure else None,
            "reason": failure.reason if failure else None}


def _identity(tid: str, result: VerificationResult) -> dict[str, Any]:
    meta = result.metadata
    return {"id": tid, "question": meta.question_id, "replicate": meta.replicate,
            "answering": meta.answering.display, "judge": meta.parsing.display}


def comparison(
    before: dict[str, tuple[str, VerificationResult]], after: dict[str, tuple[str, VerificationResult]],
    figures_before: dict[str, Any], figures_after: dict[str, Any],
) -> dict[str, Any]:
    """``before``/``after``: task key -> (task id, result) of each run; ``figures_*``: their run figures."""
    flips: list[dict[str, Any]] = []
    trait_flips: list[dict[str, Any]] = []
    by_trait: dict[str, int] = {}
    for key, (tid, new) in after.items():
        if key not in before:
            continue
        old = before[key][1]
        a, b = _side(old), _side(new)
        if a["status"] != b["status"]:
            flips.append({**_identity(tid, new), "before": a, "after": b})
        status_a = old.rubric.trait_status if old.rubric else {}
        status_b = new.rubric.trait_status if new.rubric else {}
        for trait in [*status_a, *(t for t in status_b if t not in status_a)]:
            was, now = outcome_text(status_a.get(trait)), outcome_text(status_b.get(trait))
            if was != now:
                trait_flips.append({**_identity(tid, new), "trait": trait, "before": was, "after": now})
                by_trait[trait] = by_trait.get(trait, 0) + 1
    only = {
        "before": [{**_identity(tid, r), **_side(r)} for key, (tid, r) in before.items() if key not in after],
        "after": [{**_identity(tid, r), **_side(r)} for key, (tid, r) in after.items() if key not in before],
    }
    return {"figures": _figures(figures_before, figures_after), "flips": flips, "trait_flips": trait_flips,
            "trait_flip_counts": dict(sorted(by_trait.items())), "only": only,
            "matched": sum(1 for key in after if key in before)}
