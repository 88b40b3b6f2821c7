"""How long a 10 MB test suite takes to load as YAML against the same suite as JSON (``load_suite``).

Prints ``name: value`` lines: ``suite_mb``, ``json_s``, ``yaml_s`` (best of 3) and ``yaml_over_json``.
Run: ``python benchmarks/bench_suite_load.py``.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from verify.benchmark.suite import load_suite


def suite_data(megabytes: float) -> dict[str, Any]:
    tests: list[dict[str, Any]] = []
    data = {"name": "big", "tests": tests}
    size = 0
    while size < megabytes * 1024 * 1024:
        i = len(tests)
        test = {"id": f"t{i}", "input": f"What is the capital of country number {i}? Explain briefly.",
                "expected_output": f"City {i}", "output": f"The capital is City {i}, an old and busy place. " * 6,
                "assertions": [f"Names City {i}", {"type": "rubrics", "criteria": [
                    {"id": "detail", "outcome": "Adds a detail about the city", "weight": 2}]}]}
        tests.append(test)
        size += len(json.dumps(test))
    return data


def best(path: Path) -> float:
    times = []
    for _ in range(3):
        started = time.perf_counter()
        load_suite(path)
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    data = suite_data(10)
    with tempfile.TemporaryDirectory() as folder:
        as_json, as_yaml = Path(folder) / "suite.json", Path(folder) / "suite.yaml"
        as_json.write_text(json.dumps(data, indent=2), encoding="utf-8")
        as_yaml.write_text(yaml.safe_dump(data, sort_keys=False, width=100), encoding="utf-8")
        json_s, yaml_s = best(as_json), best(as_yaml)
    print("suite_mb: 10")
    print(f"json_s: {json_s:.3f}")
    print(f"yaml_s: {yaml_s:.3f}")
    print(f"yaml_over_json: {yaml_s / json_s:.2f}")


if __name__ == "__main__":
    main()
