"""What a run returns to Python, and the same object read back from an export.

:class:`RunOutcome` is what :func:`verify.run_verification` returns and :func:`read_results` loads:
the results (one :class:`~verify.results.models.VerificationResult` per task), the run's
:class:`~verify.results.summary.Summary` (coverage, pass rate, verdict counts), its gates
(:attr:`RunOutcome.gate_results`, or any others with :meth:`RunOutcome.gates`) and a pandas table
(:meth:`RunOutcome.to_dataframe`, with the ``[export]`` extra). A notebook analyses a finished run
the same way it analyses one it just ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from verify.errors import ConfigError, UserError
from verify.results.export import load_results, read_export_header
from verify.results.export_csv import CsvColumns, csv_row, trait_scores
from verify.results.gates import GateResult, evaluate_gates
from verify.results.karenina_form import to_karenina
from verify.results.models import VerificationResult
from verify.results.summary import Summary
from verify.secrets import mask_data

if TYPE_CHECKING:
    import pandas

__all__ = ["RunOutcome", "read_results"]


@dataclass
class RunOutcome:
    """A run's results and what they add up to.

    ``results``: one result per task (empty when the run was asked not to keep them); ``summary``:
    coverage, pass rate, verdict counts, calls and tokens; ``tasks``: tasks in the run, ``resumed``
    of them from an earlier one; ``output``: the export written (or read); ``seed``: the run's seed
    (``None`` for an export that does not record one).
    """

    results: list[VerificationResult]
    summary: Summary
    tasks: int
    resumed: int
    output: Path | None
    config_warnings: list[str] = field(default_factory=list)
    seed: int | None = None

    @property
    def gate_results(self) -> list[GateResult]:
        """The run's own gates (``config.gates``, ``--gate``), each with its value and whether it was met."""
        return self.summary.gate_results()

    def gates(self, specs: Sequence[str]) -> list[GateResult]:
        """Evaluate gates of your own on this run, e.g. ``outcome.gates(["pass_rate >= 0.9"])``.

        A gate whose metric has nothing to measure is not met; a gate that does not parse raises
        :class:`~verify.errors.ConfigError` naming it.
        """
        if isinstance(specs, str):
            specs = [specs]
        try:
            return evaluate_gates(specs, self.summary.tallies)
        except ValueError as exc:
            raise ConfigError(str(exc), "see the gate grammar in docs/python-api.md") from None

    @property
    def verdicts(self) -> dict[str, str]:
        """Each task's verdict (``passed``, ``failed``, ``judged`` or ``incomplete``), by task key."""
        return {r.metadata.task_key: r.verdict for r in self.results}

    def to_dataframe(self) -> pandas.DataFrame:
        """One row per task: karenina's CSV columns (where they exist), each rubric trait's score as
        a ``rubric_<trait>`` column, then verify's own columns (verdict, coverage, failure...).

        Needs pandas: ``pip install 'verify-judge[export]'``.
        """
        try:
            import pandas
        except ImportError:
            raise UserError("to_dataframe() needs pandas, which is not installed",
                            "pip install 'verify-judge[export]'") from None
        columns, rows = table(self.results)
        return pandas.DataFrame(rows, columns=columns)


def table(results: Sequence[VerificationResult]) -> tuple[list[str], list[dict[str, Any]]]:
    """The rows :meth:`RunOutcome.to_dataframe` shows: the CSV export's cells (masked like it), with
    every trait's raw score in a ``rubric_<trait>`` column (the CSV gives only global traits one)."""
    pairs = [(r, mask_data(to_karenina(r))) for r in results]
    found = CsvColumns()
    for _, k in pairs:
        found.add(k)
    columns, global_traits, specific = found.names, found.global_traits, found.specific
    at = columns.index("keywords") + 1 + len(global_traits)
    columns[at:at] = [f"rubric_{name}" for name in specific]
    rows = []
    for r, k in pairs:
        row = csv_row(r, k, global_traits, specific)
        scores = trait_scores(k.get("rubric"))
        row.update((f"rubric_{name}", scores.get(name)) for name in [*global_traits, *specific])
        rows.append(row)
    return columns, rows


def read_results(path: Path | str) -> RunOutcome:
    """Load an export (verify's or karenina's ``.json``, or a ``.jsonl``) into a :class:`RunOutcome`.

    The summary is added up again from the results; the run's gates and seed come from verify's
    header when the file has one. A CSV export cannot be read back (it flattens the results).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".json", ".jsonl"):
        raise UserError(f"results file {path}: only .json and .jsonl exports can be read back, not {suffix or 'no suffix'!r}",
                        "read the run's .json (or .jsonl) export; a CSV holds flattened cells, not results")
    if not path.is_file():
        raise UserError(f"results file {path} not found", "pass the --output file of a finished run")
    try:
        results = load_results(path)
    except (ValueError, KeyError, TypeError, ValidationError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(f"results file {path} is not a verify or karenina export: {detail[:200]}",
                        "pass a .json or .jsonl file written by verify (--output) or by karenina") from None
    header = read_export_header(path) or {}
    config: dict[str, Any] = header["config"] if isinstance(header.get("config"), dict) else {}
    summary = Summary(gates=[str(g) for g in config.get("gates") or []])
    for result in results:
        summary.add(result)
    seed = header.get("seed", config.get("seed"))
    return RunOutcome(results=results, summary=summary, tasks=len(results), resumed=0, output=path,
                      config_warnings=list(header.get("config_warnings") or []),
                      seed=seed if isinstance(seed, int) else None)
