"""Shared fixtures: the offline demo benchmark and its recorded answers, and a simulated judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import simulated_judge

from verify.benchmark.jsonld import Benchmark, load_benchmark
from verify.llm.simulated.model import SimulatedModel

DEMO = Path(__file__).resolve().parent.parent / "verify" / "examples" / "demo"


@pytest.fixture
def demo_benchmark() -> Benchmark:
    return load_benchmark(DEMO / "demo.jsonld")


@pytest.fixture
def demo_answers() -> dict[str, dict[str, str]]:
    data: dict[str, dict[str, str]] = json.loads((DEMO / "answers.json").read_text())
    return data


@pytest.fixture
def sim_judge() -> SimulatedModel:
    return simulated_judge()
