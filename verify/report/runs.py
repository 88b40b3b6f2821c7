"""A results file read for the report: its results (verify's models) and its run header.

A ``.json`` export is read once: its ``metadata`` is verify's run header (config, plan, identity,
warnings, ...) and each result goes through verify's reader (:func:`from_export`), so the page shows
exactly what ``load_results`` would give. A ``.jsonl`` export has no header; the page then shows
what the results alone say. A CSV holds too little (no excerpts, no reasoning) and is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from verify.errors import UserError
from verify.files import JsonProblem, parse_json, read_text
from verify.results.export import load_results
from verify.results.karenina_form import from_export
from verify.results.models import VerificationResult

__all__ = ["Run", "read_run"]


@dataclass
class Run:
    path: Path
    results: list[VerificationResult]
    header: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.path.name


def _problem(path: Path, what: str) -> UserError:
    return UserError(f"cannot read results file {path}: {what}",
                     "pass a .json or .jsonl results file written by verify")


def read_run(path: Path) -> Run:
    """Read a verify results file (.json or .jsonl); raises :class:`UserError` naming the file."""
    suffix = path.suffix.lower()
    if suffix not in (".json", ".jsonl"):
        raise _problem(path, f"{suffix or 'no suffix'} is not a results format the report reads")
    try:
        if suffix == ".jsonl":
            if not path.is_file():
                raise JsonProblem("file not found", "check the path")
            return Run(path, load_results(path))
        data = parse_json(read_text(path), max_depth=None)  # pydantic checks the shape; the depth walk costs seconds on big files
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            raise _problem(path, "no 'results' list: not a results export")
        header = data.get("metadata")
        results = [from_export(r) for r in data["results"]]
    except JsonProblem as exc:
        raise _problem(path, exc.problem) from None
    except ValidationError as exc:
        raise _problem(path, f"a result does not match verify's result model ({exc.error_count()} problem(s))") from None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise _problem(path, f"{type(exc).__name__}: {exc}") from None
    return Run(path, results, header if isinstance(header, dict) else {})
