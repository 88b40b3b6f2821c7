"""What the audit trail (``--log-calls``) costs: one offline run of N tasks with and without it.

    python benchmarks/bench_call_log.py [TASKS]

Prints ``name: value`` lines: the CPU time of each run (with its wall time and the load, via
:class:`machine.Measured`), and their ratio, measured in one process so a busy machine weighs on both.
Each run is made twice, alternating, and the faster of the two is kept.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from machine import Measured

from verify.benchmark.jsonld import Benchmark
from verify.benchmark.question import Question
from verify.benchmark.traits import LLMTrait, Rubric
from verify.config.verification import VerificationConfig
from verify.run.runner import run_verification

SIM = {"model_provider": "simulated", "interface": "simulated"}


def bench(tasks: int) -> Benchmark:
    traits = [LLMTrait(name="correct", kind="boolean", description="The response is correct"),
              LLMTrait(name="clarity", kind="score", min_score=1, max_score=5, description="How clear it is")]
    questions = [Question(id=f"q{i}", text=f"What is the capital of country {i}?", raw_answer="Paris", finished=True)
                 for i in range(tasks)]
    return Benchmark(name="call-log", global_rubric=Rubric(traits=traits), questions=questions)


def main() -> None:
    tasks = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    config = VerificationConfig(answering_models=[{**SIM, "id": "a", "model_name": "answerer"}],
                                parsing_models=[{**SIM, "id": "j", "model_name": "judge"}],
                                evaluation_mode="rubric_only")
    benchmark = bench(tasks)
    best: dict[str, Measured] = {}
    with tempfile.TemporaryDirectory() as folder:
        for round_ in range(2):
            for name in ("unlogged", "logged"):
                log = Path(folder) / f"calls-{round_}.jsonl" if name == "logged" else None
                with Measured(f"call_log_{name}_{tasks}") as m:
                    run_verification(benchmark, config, log_calls=log, keep_results=False)
                if name not in best or m.cpu_s < best[name].cpu_s:
                    best[name] = m
        lines = sum(1 for _ in (Path(folder) / "calls-0.jsonl").open())
    for m in best.values():
        for line in m.lines():
            print(line)
    print(f"call_log_lines: {lines}")
    print(f"call_log_cpu_ratio: {best['logged'].cpu_s / best['unlogged'].cpu_s:.2f}")


if __name__ == "__main__":
    main()
