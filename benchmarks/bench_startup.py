"""Fixed and per-call cost: how long the CLI takes to be useful, and how many calls a second it makes.

Sections of ``bench.py`` (``--only startup,throughput``):

* ``help_s``, ``show_plan_s``: median wall time of ``verify --help`` and of ``verify <demo> --preset
  demo --show-plan``, each a fresh process (bytecode already compiled, as after any first run);
* ``first_request_s``: from spawning ``verify`` on the demo with its judge on an OpenAI-compatible
  server (the simulated server, in this process) to that server receiving the first request;
* ``calls_per_second_in_process``: judge calls per second of wall time, deep judgment with the
  simulated judge in-process at zero latency (verify's own per-call work, one core).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchgen import Counted, generated_benchmark, make_config, simulated

from verify.llm.simulated import brain
from verify.llm.simulated.server import start_server
from verify.run.runner import run_verification

if TYPE_CHECKING:
    from bench import Report, Settings

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "verify" / "examples" / "demo"
VERIFY = Path(sys.executable).parent / "verify"


def _say(message: str) -> None:
    print(f"# {message}", file=sys.stderr, flush=True)


def _wall(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def _median_wall(argv: list[str], repeats: int) -> float:
    _wall(argv)  # the first run compiles bytecode and warms the file cache
    return statistics.median(_wall(argv) for _ in range(repeats))


def first_request_seconds(repeats: int) -> float:
    """Median seconds from spawning the demo run (judge over HTTP) to its first request."""
    firsts: list[float] = []
    first: list[float] = []

    def reply(request: Any) -> str:
        if not first:
            first.append(time.perf_counter())
        return brain.respond(request)

    server = start_server(reply=reply, record=False)
    try:
        preset = json.loads((ROOT / "verify" / "config" / "presets" / "demo.json").read_text())
        preset["config"]["parsing_models"] = [{
            "id": "judge", "model_name": "simulated-judge", "interface": "openai_endpoint",
            "endpoint_base_url": server.url, "endpoint_api_key": "sk-bench", "temperature": 0.0,
        }]  # fmt: skip
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "preset.json"
            path.write_text(json.dumps(preset), encoding="utf-8")
            argv = [str(VERIFY), str(DEMO / "demo.jsonld"), "--preset", str(path), "--answers",
                    str(DEMO / "answers.json"), "--output", str(Path(tmp) / "out.json"), "--overwrite", "--no-cache"]  # fmt: skip
            for n in range(repeats + 1):
                first.clear()
                started = time.perf_counter()
                subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
                if n and first:  # run 0 warms bytecode and the file cache
                    firsts.append(first[0] - started)
    finally:
        server.stop()
    return statistics.median(firsts)


def section_startup(s: Settings, report: Report) -> None:
    repeats = 3 if s.quick else 7
    _say(f"startup: median of {repeats} fresh processes each")
    help_s = _median_wall([str(VERIFY), "--help"], repeats)
    report.add("help_s", help_s, "< 0.5", help_s < 0.5, "`verify --help`, whole process")
    plan = [str(VERIFY), str(DEMO / "demo.jsonld"), "--preset", "demo", "--show-plan"]
    plan_s = _median_wall(plan, repeats)
    report.add("show_plan_s", plan_s, "< 0.5", plan_s < 0.5, "`verify <demo> --preset demo --show-plan`, whole process")
    first = first_request_seconds(repeats)
    report.add(
        "first_request_s", first, "< 1", first < 1.0,
        "spawn of `verify <demo>` with an openai_endpoint judge to the server's first request",
    )  # fmt: skip


def section_throughput(s: Settings, report: Report) -> None:
    questions = 60 if s.quick else 200
    _say(f"throughput: {questions} deep-judgment tasks, simulated judge in-process at zero latency")
    bench, answers = generated_benchmark(questions)
    config = make_config(simulated("judge"), mode="deep_judgment", concurrency=64, workers=64)
    warm_bench, warm_answers = generated_benchmark(2)
    run_verification(warm_bench, config, answers=warm_answers)  # imports and first-use work are not per-call cost
    walls, rates = [], []
    for _ in range(1 if s.quick else 3):
        factory = Counted(config)
        started = time.perf_counter()
        run_verification(bench, config, answers=answers, adapter_factory=factory)
        wall = time.perf_counter() - started
        walls.append(wall)
        rates.append(factory.live_calls / wall)
    rate = statistics.median(rates)
    report.add(
        "calls_per_second_in_process", rate, ">= 500", rate >= 500,
        f"{factory.live_calls} judge calls in {statistics.median(walls):.2f} s (median); includes the simulated judge's own work",
    )  # fmt: skip
