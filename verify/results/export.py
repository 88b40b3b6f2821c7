"""Exports (JSON, JSONL, CSV) of a run's results, and reading them back.

Every export is one karenina's readers take: each result is in its karenina form
(:mod:`verify.results.karenina_form`), the JSON envelope is karenina's (``format_version``,
``metadata`` with ``verification_config`` and ``job_summary``, ``shared_data.rubric_definition``,
``results``) and the CSV has karenina's columns first (:mod:`verify.results.export_csv`). verify's
own header (versions, config, plan, run identity) sits in ``metadata`` next to karenina's keys, which
karenina keeps as free-form run metadata.

Exports stream from an iterator of :class:`ExportLine` (a result in karenina's form and its masked
JSON text), so a 50k-task run never holds every result in memory: the JSON's header counts them and
a CSV needs every column first, so lines go to a temporary file first. A run's progress lines are
already in this form (:mod:`verify.results.writer`), so its export copies them without building a
result again. Files are written to a temporary name and moved into place, so a crash (or a header
that refuses the export) never leaves half a file.
"""

from __future__ import annotations

import csv
import json
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from verify.errors import UserError
from verify.files import JsonProblem, atomic_writer, check_input_file, read_text
from verify.results.export_csv import CsvColumns, csv_row
from verify.results.karenina_form import OWN_SECTION, from_export, to_karenina
from verify.results.models import SCHEMA_VERSION, VerificationResult
from verify.secrets import mask_json

__all__ = ["FORMATS", "FORMAT_VERSION", "ExportLine", "export", "export_lines", "is_export", "load_results",
           "read_export_header"]

FORMATS = {".json": "json", ".jsonl": "jsonl", ".csv": "csv"}

FORMAT_VERSION = "2.2"  # karenina's results format; karenina's database import accepts only 2.x
#: How verify's JSON exports start (the first key of ``metadata`` says who wrote it), today and before.
_JSON_STARTS = ('{"format_version": "2.2", "metadata": {"exported_by": "verify"', '{"format_version": "verify-1"')
_CSV_HEAD = ("question_id,success,error,question_text,", "question_id,success,verdict")


@dataclass(frozen=True)
class ExportLine:
    """One result as an export holds it: karenina's form (``data``) and its JSON, masked (``text``)."""

    data: dict[str, Any]
    text: str

    @classmethod
    def of(cls, result: VerificationResult) -> ExportLine:
        data = to_karenina(result)
        return cls(data, mask_json(json.dumps(data)))


def export(results: Iterable[VerificationResult], path: Path, *, header: dict[str, Any] | None = None) -> int:
    """Write results to ``path`` in the format its suffix names; returns how many were written.

    ``header``: verify's run header (:func:`verify.run.runner.run_header`); a ``rubric_definition``
    key in it becomes karenina's ``shared_data.rubric_definition``.
    """
    return export_lines((ExportLine.of(r) for r in results), path, header=lambda _count: header or {})


def export_lines(lines: Iterable[ExportLine], path: Path, *, header: Callable[[int], dict[str, Any]]) -> int:
    """:func:`export` of lines already in karenina's form. ``header`` is called with the count once
    every line is read, before the file is moved into place: it may refuse the export by raising."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise ValueError(f"unknown output format {path.suffix!r}; use .json, .jsonl or .csv")
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_writer(path) as handle:
        if fmt == "jsonl":  # one result per line, nothing else, so any JSONL reader can take it
            count = sum(handle.write(line.text + "\n") >= 0 for line in lines)
            header(count)
        elif fmt == "json":
            count = _write_json(lines, handle, path.parent, header)
        else:
            count = _write_csv(lines, handle, path.parent, header)
    return count


class _Tally:
    """What karenina's header says about the results: counts, times and the global traits."""

    def __init__(self) -> None:
        self.total = self.successful = 0
        self.start: float | None = None
        self.end: float | None = None
        self.global_traits: set[str] = set()

    def add(self, k: dict[str, Any]) -> None:
        meta = k["metadata"]
        self.total += 1
        self.successful += meta["failure"] is None
        try:
            ended = time.mktime(datetime.strptime(meta["timestamp"], "%Y-%m-%d %H:%M:%S").timetuple())
        except (TypeError, ValueError):
            ended = None
        if ended is not None:
            begun = ended - float(meta.get("execution_time") or 0.0)
            self.start = begun if self.start is None else min(self.start, begun)
            self.end = ended if self.end is None else max(self.end, ended)
        provenance = (k.get("rubric") or {}).get("trait_provenance") or {}
        self.global_traits.update(n for n, where in provenance.items() if where == "global")


def _write_json(lines: Iterable[ExportLine], handle: IO[str], folder: Path,
                header_of: Callable[[int], dict[str, Any]]) -> int:
    tally = _Tally()
    with tempfile.TemporaryFile("w+", encoding="utf-8", dir=folder) as spool:
        for line in lines:
            tally.add(line.data)
            spool.write(("," if tally.total > 1 else "") + line.text + "\n")
        header = header_of(tally.total)
        envelope = {"format_version": FORMAT_VERSION, "metadata": _metadata(header, tally),
                    "shared_data": {"rubric_definition": _rubric_definition(header, tally)}}
        text = mask_json(json.dumps(envelope))
        handle.write(text[:-1] + ', "results": [\n')
        spool.seek(0)
        shutil.copyfileobj(spool, handle)
        handle.write("]}\n")
    return tally.total


def _metadata(header: dict[str, Any], tally: _Tally) -> dict[str, Any]:
    config = header.get("config")
    config = config if isinstance(config, dict) else {}
    duration = tally.end - tally.start if tally.start is not None and tally.end is not None else None
    return {
        "exported_by": "verify",
        "export_timestamp": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "karenina_version": None,  # written by verify, not by karenina
        "job_id": str(uuid.uuid4()),
        "verification_config": {role: [_model(m) for m in config.get(role) or [] if isinstance(m, dict)]
                                for role in ("answering_models", "parsing_models")},
        "job_summary": {
            "total_questions": tally.total, "successful_count": tally.successful,
            "failed_count": tally.total - tally.successful, "start_time": tally.start, "end_time": tally.end,
            "total_duration": duration, "is_complete": True,  # exports are written when a run has finished
        },
        "schema_version": SCHEMA_VERSION,
        **{k: v for k, v in header.items() if k != "rubric_definition"},
    }


def _model(model: dict[str, Any]) -> dict[str, Any]:
    return {"provider": model.get("model_provider"), "name": model.get("model_name"),
            "temperature": model.get("temperature"), "interface": model.get("interface")}


def _rubric_definition(header: dict[str, Any], tally: _Tally) -> Any:
    """The global rubric as the header gives it, else the global trait names (karenina's fallback form)."""
    if header.get("rubric_definition") is not None:
        return header["rubric_definition"]
    return {"trait_names": sorted(tally.global_traits)} if tally.global_traits else None


def _write_csv(lines: Iterable[ExportLine], handle: IO[str], folder: Path,
               header_of: Callable[[int], dict[str, Any]]) -> int:
    # CSV needs every column up front: a first pass finds them while the lines go to a spool file,
    # the second makes the rows. Cells are made of masked values (the lines' text), JSON cells too.
    columns = CsvColumns()
    count = 0
    with tempfile.TemporaryFile("w+", encoding="utf-8", dir=folder) as spool:
        for line in lines:
            columns.add(line.data)
            spool.write(line.text + "\n")
            count += 1
        header_of(count)
        job_id = str(uuid.uuid4())
        exported = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        writer = csv.DictWriter(handle, fieldnames=columns.names)
        writer.writeheader()
        spool.seek(0)
        for text in spool:
            k = json.loads(text)
            writer.writerow(csv_row(from_export(k), k, columns.global_traits, columns.specific,
                                    job_id=job_id, exported=exported))
    return count


def load_results(path: Path) -> list[VerificationResult]:
    """Read a JSON or JSONL export back (today's karenina form, or an older verify export)."""
    text = _read(path)
    if path.suffix.lower() == ".jsonl":
        return [from_export(json.loads(line)) for line in text.splitlines() if line.strip()]
    data = json.loads(text)
    return [from_export(r) for r in data["results"]]


def _read(path: Path) -> str:
    try:
        return read_text(path)
    except JsonProblem as exc:
        raise UserError(f"results file {path} {exc.problem}", exc.hint) from None


def is_export(path: Path) -> bool:
    """Whether ``path`` starts the way verify's exports start (JSON, JSONL or CSV)."""
    try:
        check_input_file(path, limit=sys.maxsize)  # only its first line is read here: the size is checked on loading
        with path.open("r", encoding="utf-8") as handle:
            first = handle.readline()
    except (OSError, UnicodeDecodeError, JsonProblem):
        return False
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return first.startswith(_CSV_HEAD) and ",verdict," in first
    if first.startswith(_JSON_STARTS):
        return True
    if suffix != ".jsonl":
        return False
    try:  # a result per line: verify's section (or, before it, verify's schema_version first)
        data = json.loads(first)
    except ValueError:
        return False
    return isinstance(data, dict) and (isinstance(data.get(OWN_SECTION), dict) or "schema_version" in data)


def read_export_header(path: Path) -> dict[str, Any] | None:
    """The ``metadata`` header of a verify JSON export (``None`` if it has none, or for JSONL and CSV)."""
    if path.suffix.lower() != ".json":
        return None
    try:
        data = json.loads(read_text(path))
    except (JsonProblem, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    meta = data.get("metadata")
    ours = data.get("format_version") == "verify-1" or (isinstance(meta, dict) and meta.get("exported_by") == "verify")
    return meta if ours and isinstance(meta, dict) else None
