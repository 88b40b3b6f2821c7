"""What plain datasets and assertions cost: loading a CSV against the same questions as a suite (JSON),
and evaluating assertions against karenina regex traits (both decided by code, no model call).

Prints ``name: value`` lines; every timed figure with its CPU time and load (benchmarks/machine.py), and
the comparisons as ratios measured in this one run: ``csv_over_json`` (10,000 questions) and
``assertion_over_regex`` / ``is_json_over_regex`` (20,000 evaluations each), by wall and by CPU time.
Run: ``python benchmarks/bench_datasets.py``.
"""

from __future__ import annotations

import csv
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import Measured  # noqa: E402

from verify.benchmark.suite import load_suite, parse_assertions  # noqa: E402
from verify.benchmark.traits import RegexTrait  # noqa: E402
from verify.judging.deterministic import eval_regex  # noqa: E402

ROWS = 10_000
EVALUATIONS = 20_000


def write_inputs(folder: Path) -> tuple[Path, Path]:
    rows = [{"id": f"q{i}", "question": f"What is the capital of country number {i}?", "expected_answer": f"City {i}",
             "answer": f"The capital is City {i}, an old and busy place.", "assert": f"contains:City {i}; regex:\\b{i}\\b"}
            for i in range(ROWS)]
    as_csv, as_json = folder / "data.csv", folder / "suite.json"
    with as_csv.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    tests = [{"id": r["id"], "input": r["question"], "expected_output": r["expected_answer"], "output": r["answer"],
              "assertions": [{"type": "contains", "value": f"City {i}"}, {"type": "regex", "value": f"\\b{i}\\b"}]}
             for i, r in enumerate(rows)]
    as_json.write_text(json.dumps({"name": "big", "tests": tests}), encoding="utf-8")
    return as_csv, as_json


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        as_csv, as_json = write_inputs(Path(folder))
        with Measured("load_csv") as csv_m:
            load_suite(as_csv)
        with Measured("load_json_suite") as json_m:
            load_suite(as_json)
    answer = "The capital is City 42, an old and busy place. " * 20
    contains, is_json = parse_assertions([{"type": "contains", "value": "busy"}, {"type": "is-json"}])
    regex = RegexTrait(name="busy", pattern="busy")
    timings = {}
    for name, trait in (("regex", regex), ("assertion", contains), ("is_json", is_json)):
        with Measured(f"eval_{name}") as m:
            for _ in range(EVALUATIONS):
                eval_regex(trait, answer)
        timings[name] = m
    print(f"rows: {ROWS}")
    print(f"evaluations: {EVALUATIONS}")
    for m in (csv_m, json_m, *timings.values()):
        for line in m.lines():
            print(line)
    # CPU ratios beside the wall ones: on a loaded machine the wall time mostly measures the wait for a core
    for name, a, b in (("csv_over_json", csv_m, json_m), ("assertion_over_regex", timings["assertion"], timings["regex"]),
                       ("is_json_over_regex", timings["is_json"], timings["regex"])):
        print(f"{name}: {a.wall_s / b.wall_s:.2f}")
        print(f"{name}_cpu: {a.cpu_s / b.cpu_s:.2f}")


if __name__ == "__main__":
    main()
