"""Exports (JSON, JSONL, CSV) and the run summary (per model and per trait).

Exports stream from an iterator of results, so a 10k-task run never holds every result in memory.
Files are written to a temporary name and moved into place, so a crash never leaves half a file.
"""

from __future__ import annotations

import csv
import json
import os
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from verify.results.models import SCHEMA_VERSION, VerificationResult

FORMATS = {".json": "json", ".jsonl": "jsonl", ".csv": "csv"}


@dataclass
class TraitTally:
    scored: int = 0
    unscored: int = 0
    auto_failed: int = 0
    total: float = 0.0
    normalised_total: float = 0.0

    @property
    def mean(self) -> float | None:
        return self.total / self.scored if self.scored else None


@dataclass
class Summary:
    """Aggregates updated one result at a time."""

    total: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    by_model: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    by_trait: dict[str, TraitTally] = field(default_factory=lambda: defaultdict(TraitTally))
    failure_categories: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    model_calls: int = 0
    cached_calls: int = 0
    tokens: int = 0
    dj_traits: int = 0
    dj_excerpts: int = 0
    dj_rejected: int = 0
    dj_retries: int = 0
    dj_without_evidence: int = 0
    dj_high_risk: int = 0
    prices: dict[str, dict[str, float]] | None = None
    cost_usd: float = 0.0
    unpriced_models: set[str] = field(default_factory=set)

    def _cost(self, model: str, input_tokens: int, output_tokens: int) -> float:
        price = (self.prices or {}).get(model)
        if price is None:
            self.unpriced_models.add(model)
            return 0.0
        per_in, per_out = price.get("input_per_million", 0.0), price.get("output_per_million", 0.0)
        return (input_tokens * per_in + output_tokens * per_out) / 1e6

    def add(self, result: VerificationResult) -> None:
        self.total += 1
        meta = result.metadata
        key = f"{meta.answering.display} / {meta.parsing.display}"
        self.by_model[key][1] += 1
        if result.passed:
            self.passed += 1
            self.by_model[key][0] += 1
        else:
            self.failed += 1
        if meta.errors:
            self.errors += 1
        if meta.failure:
            self.failure_categories[meta.failure.category] += 1
        if result.template and "total" in result.template.usage_metadata:
            usage = result.template.usage_metadata["total"]
            self.model_calls += usage.calls - usage.cached_calls
            self.cached_calls += usage.cached_calls
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
            for name, outcome in result.rubric.trait_status.items():
                tally = self.by_trait[name]
                if outcome.status == "scored":
                    if outcome.score is not None:
                        tally.scored += 1
                        tally.total += float(outcome.score)
                elif outcome.status == "auto_failed":
                    tally.auto_failed += 1
                elif outcome.status == "unscored":
                    tally.unscored += 1

    @property
    def pass_rate(self) -> float:
        return self.passed / self.total if self.total else 0.0


def _atomic_writer(path: Path) -> tuple[Path, Any]:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.partial")
    return tmp, tmp.open("w", encoding="utf-8", newline="")


def _finish(tmp: Path, path: Path, handle: Any) -> None:
    handle.flush()
    os.fsync(handle.fileno())
    handle.close()
    os.replace(tmp, path)


def csv_row(r: VerificationResult) -> dict[str, Any]:
    m = r.metadata
    row: dict[str, Any] = {
        "question_id": m.question_id,
        "success": r.passed,
        "error": m.failure.reason if m.failure else "",
        "failure_category": m.failure.category if m.failure else "",
        "question_text": m.question_text,
        "raw_llm_response": r.template.raw_llm_response if r.template else "",
        "answering_model": m.answering.display,
        "parsing_model": m.parsing.display,
        "replicate": m.replicate if m.replicate is not None else "",
        "evaluation_mode": m.evaluation_mode,
        "execution_time": m.execution_time,
        "timestamp": m.timestamp,
    }
    t = r.template
    if t and (t.template_verification_performed or t.parsed_llm_response is not None):
        row["parsed_gt_response"] = json.dumps(t.parsed_gt_response)
        row["parsed_llm_response"] = json.dumps(t.parsed_llm_response)
        row["template_verification_performed"] = t.template_verification_performed
        row["verify_result"] = "" if t.verify_result is None else t.verify_result
        row["verify_granular_result"] = "" if t.verify_granular_result is None else t.verify_granular_result
    if r.rubric:
        for name, outcome in sorted(r.rubric.trait_status.items()):
            row[f"rubric_{name}"] = outcome.score if outcome.status == "scored" else f"<{outcome.status}>"
        if r.rubric.metric_trait_scores:
            row["metric_trait_metrics"] = json.dumps(r.rubric.metric_trait_scores)
    if r.deep_judgment_rubric:
        dj = r.deep_judgment_rubric
        row["traits_without_valid_excerpts"] = json.dumps(dj.traits_without_valid_excerpts)
        row["deep_judgment_rubric_scores"] = json.dumps(dj.deep_judgment_rubric_scores)
        row["total_deep_judgment_model_calls"] = dj.total_deep_judgment_model_calls
    if r.template:
        row["usage_metadata"] = json.dumps({k: v.model_dump() for k, v in r.template.usage_metadata.items()})
    return row


def export(results: Iterable[VerificationResult], path: Path, *, header: dict[str, Any] | None = None) -> int:
    """Write results to ``path`` in the format its suffix names; returns how many were written."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise ValueError(f"unknown output format {path.suffix!r}; use .json, .jsonl or .csv")
    tmp, handle = _atomic_writer(path)
    count = 0
    if fmt == "jsonl":
        for r in results:
            handle.write(r.model_dump_json() + "\n")
            count += 1
    elif fmt == "json":
        meta = {"schema_version": SCHEMA_VERSION, "export_timestamp": datetime.now(UTC).isoformat(), **(header or {})}
        handle.write('{"format_version": "verify-1", "metadata": ' + json.dumps(meta) + ', "results": [\n')
        for r in results:
            handle.write(("," if count else "") + r.model_dump_json() + "\n")
            count += 1
        handle.write("]}\n")
    else:
        rows = [csv_row(r) for r in results]  # CSV needs every column up front
        columns: list[str] = []
        for row in rows:
            columns += [c for c in row if c not in columns]
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
        count = len(rows)
    _finish(tmp, path, handle)
    return count


def load_results(path: Path) -> list[VerificationResult]:
    """Read a JSON or JSONL export back."""
    if path.suffix == ".jsonl":
        return [VerificationResult.model_validate_json(line) for line in path.read_text().splitlines() if line]
    data = json.loads(path.read_text())
    return [VerificationResult.model_validate(r) for r in data["results"]]
