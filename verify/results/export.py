"""Exports (JSON, JSONL, CSV) of a run's results, and reading them back.

Exports stream from an iterator of results, so a 10k-task run never holds every result in memory.
Files are written to a temporary name and moved into place, so a crash never leaves half a file.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from verify.files import atomic_writer
from verify.results.models import SCHEMA_VERSION, VerificationResult
from verify.secrets import scrub

FORMATS = {".json": "json", ".jsonl": "jsonl", ".csv": "csv"}


def csv_row(r: VerificationResult) -> dict[str, Any]:
    m = r.metadata
    row: dict[str, Any] = {
        "question_id": m.question_id,
        "success": r.passed,
        "verdict": r.verdict,
        "judged": f"{m.coverage.judged}/{m.coverage.total}" if m.coverage else "",
        "unscored": json.dumps(m.coverage.unscored) if m.coverage and m.coverage.unscored else "",
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


FORMAT_VERSION = "verify-1"
_JSON_START = '{"format_version": "verify-1"'
_CSV_START = "question_id,success,verdict"


def export(results: Iterable[VerificationResult], path: Path, *, header: dict[str, Any] | None = None) -> int:
    """Write results to ``path`` in the format its suffix names; returns how many were written."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise ValueError(f"unknown output format {path.suffix!r}; use .json, .jsonl or .csv")
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_writer(path) as handle:
        count = _write(results, handle, fmt, header)
    return count


def _write(results: Iterable[VerificationResult], handle: IO[str], fmt: str, header: dict[str, Any] | None) -> int:
    count = 0
    if fmt == "jsonl":  # one result per line, nothing else, so any JSONL reader can take it
        for r in results:
            handle.write(scrub(r.model_dump_json()) + "\n")
            count += 1
    elif fmt == "json":
        meta = {"schema_version": SCHEMA_VERSION, "export_timestamp": datetime.now(UTC).isoformat(), **(header or {})}
        handle.write(_JSON_START + ', "metadata": ' + scrub(json.dumps(meta)) + ', "results": [\n')
        for r in results:
            handle.write(("," if count else "") + scrub(r.model_dump_json()) + "\n")
            count += 1
        handle.write("]}\n")
    else:
        # CSV needs every column up front; cells are scrubbed before quoting doubles their quotes
        rows = [{k: scrub(v) if isinstance(v, str) else v for k, v in csv_row(r).items()} for r in results]
        columns: list[str] = []
        for row in rows:
            columns += [c for c in row if c not in columns]
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
        count = len(rows)
    return count


def load_results(path: Path) -> list[VerificationResult]:
    """Read a JSON or JSONL export back."""
    if path.suffix == ".jsonl":
        lines = path.read_text(encoding="utf-8").splitlines()
        return [VerificationResult.model_validate_json(line) for line in lines if line]
    data = json.loads(path.read_text(encoding="utf-8"))
    return [VerificationResult.model_validate(r) for r in data["results"]]


def is_export(path: Path) -> bool:
    """Whether ``path`` starts the way verify's exports start (JSON, JSONL or CSV)."""
    try:
        with path.open("r", encoding="utf-8") as handle:
            start = handle.read(200)
    except (OSError, UnicodeDecodeError):
        return False
    if start.startswith((_JSON_START, _CSV_START)):
        return True
    return path.suffix.lower() == ".jsonl" and start.startswith('{"schema_version":')  # a result per line


def read_export_header(path: Path) -> dict[str, Any] | None:
    """The ``metadata`` header of a JSON export (``None`` if it has none, or for JSONL and CSV)."""
    if path.suffix.lower() != ".json":
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    meta = data.get("metadata") if isinstance(data, dict) and data.get("format_version") == FORMAT_VERSION else None
    return meta if isinstance(meta, dict) else None
