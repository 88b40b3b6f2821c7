"""``load_benchmark``: every input verify reads, as a :class:`Benchmark`.

A karenina checkpoint (``.jsonld``), a test suite (``.yaml``, ``.yml``, or ``.json`` with a ``tests``
list) or a CSV / JSONL dataset. A suite's or dataset's recorded answers are not part of the benchmark:
:func:`verify.benchmark.suite.load_suite` returns them too.
"""

from __future__ import annotations

from pathlib import Path

from verify.benchmark.jsonld import Benchmark
from verify.benchmark.jsonld import load_benchmark as load_checkpoint
from verify.benchmark.suite import is_suite_file, load_suite

__all__ = ["load_benchmark"]


def load_benchmark(path: str | Path) -> Benchmark:
    """Read a checkpoint, suite or dataset; all of its problems, located, in one BenchmarkError."""
    if is_suite_file(Path(path)):
        return load_suite(path).benchmark
    return load_checkpoint(path)
