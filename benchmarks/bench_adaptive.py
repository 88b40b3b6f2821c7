"""Default (adaptive) concurrency against fixed worker counts, with a jittery judge, on a quiet and on a
busy core (issue 30, item 5).

A simulated OpenAI-compatible judge runs in its own process (``python -m verify.llm.simulated serve``)
with a log-normal latency (median ``--latency-ms``, coefficient of variation ``--cv``) and a capacity
beyond which requests queue (so a best fixed worker count exists). verify's real model chain for an
``openai_endpoint`` judge (``Services.model``: HTTP adapter, retries, and the adaptive limit when
``async_max_workers`` is unset) answers ``--calls`` calls per setting:

* ``fixed_N``: ``async_max_workers=N`` (no adaptive layer), N callers at a time;
* ``adaptive``: the default, with more callers than any limit it could reach (as a run with every task
  started), so the limit alone decides the calls in flight.

Each setting runs once on a quiet core and once beside a CPU-bound process (``python -c "while True:
pass"``, killed after). Prints ``name: value`` lines: calls per second, wall/CPU/load of each setting
(benchmarks/machine.py), the adaptive limit's path, and ``adaptive_over_best_fixed`` per condition
(target >= 0.8). Compare ratios from one run, never absolute figures across runs.

    python benchmarks/bench_adaptive.py [--calls 1500] [--latency-ms 100] [--cv 0.5] [--capacity 64]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    sys.path.insert(0, str(HERE))

from machine import Measured  # noqa: E402

from verify.config.verification import VerificationConfig  # noqa: E402
from verify.llm.ports import ChatModel, ChatRequest, Message, Purpose  # noqa: E402
from verify.run.services import Services  # noqa: E402

FIXED = (8, 16, 32, 64, 128)
ADAPTIVE_CALLERS = 256  # more than any limit the default could reach below its ceiling
REQUEST = ChatRequest((Message("user", "Is the sky blue? Answer in one word."),), purpose=Purpose.ANSWER)


@contextmanager
def judge(latency_ms: float, cv: float, capacity: int) -> Iterator[str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "verify.llm.simulated", "serve", "--port", "0", "--latency-ms", str(latency_ms),
         "--latency-cv", str(cv), "--capacity", str(capacity)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        yield server.stdout.readline().strip()
    finally:
        server.terminate()
        server.wait(timeout=10)


@contextmanager
def busy_core(on: bool) -> Iterator[None]:
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if on else None
    try:
        yield
    finally:
        if hog is not None:
            hog.kill()
            hog.wait(timeout=10)


def services(url: str, workers: int | None) -> Services:
    judge_model = {"id": "judge", "model_name": "simulated-judge", "interface": "openai_endpoint",
                   "endpoint_base_url": url, "endpoint_api_key": "sk-bench"}  # fmt: skip
    config = VerificationConfig.model_validate(
        {"answering_models": [judge_model], "parsing_models": [judge_model], "async_max_workers": workers}
    )
    return Services(config, None, None)


async def drive(model: ChatModel, callers: int, calls: int) -> None:
    left = [calls]

    async def caller() -> None:
        while left[0] > 0:
            left[0] -= 1
            await model.complete(REQUEST)

    await asyncio.gather(*(caller() for _ in range(callers)))


def measure(url: str, label: str, workers: int | None, calls: int) -> tuple[float, list[str]]:
    made = services(url, workers)
    model = made.model(made.config.parsing_models[0])
    assert model is not None
    asyncio.run(drive(model, workers or ADAPTIVE_CALLERS, 20))  # warm up: connections, imports
    with Measured(label) as m:
        asyncio.run(drive(model, workers or ADAPTIVE_CALLERS, calls))
    rate = calls / m.wall_s
    lines = [f"{label}_calls_per_s: {rate:.1f}", *m.lines()]
    for limit in (made.adaptive or {}).values():
        path = ",".join(str(v) for v in limit.history[:12])
        lines += [f"{label}_limit_final: {limit.limit}", f"{label}_limit_path: {path}",
                  f"{label}_peak_in_flight: {limit.peak_in_flight}"]  # fmt: skip
    return rate, lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1500, help="calls per setting")
    parser.add_argument("--latency-ms", type=float, default=100.0, help="the judge's median latency")
    parser.add_argument("--cv", type=float, default=0.5, help="the latency's coefficient of variation")
    parser.add_argument("--capacity", type=int, default=64, help="requests the judge serves at once")
    args = parser.parse_args()
    print(f"judge_latency_ms: {args.latency_ms}\njudge_latency_cv: {args.cv}\njudge_capacity: {args.capacity}")
    with judge(args.latency_ms, args.cv, args.capacity) as url:
        for condition, hog in (("quiet", False), ("busy_core", True)):
            with busy_core(hog):
                fixed = {n: measure(url, f"{condition}_fixed_{n}", n, args.calls) for n in FIXED}
                adaptive, lines = measure(url, f"{condition}_adaptive", None, args.calls)
            for _, more in fixed.values():
                print("\n".join(more))
            print("\n".join(lines))
            best = max(fixed, key=lambda n: fixed[n][0])
            print(f"{condition}_best_fixed_workers: {best}")
            print(f"{condition}_adaptive_over_best_fixed: {adaptive / fixed[best][0]:.3f}", flush=True)


if __name__ == "__main__":
    main()
