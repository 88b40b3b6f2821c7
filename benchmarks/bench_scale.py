"""Memory and CPU per task as a run grows: 1k and 10k tasks (and 50k with ``--full``).

Usage::

    python benchmarks/bench_scale.py              # 1k and 10k tasks, over HTTP
    python benchmarks/bench_scale.py --full       # and 50k tasks
    python benchmarks/bench_scale.py --in-process # the simulated judge in the run's own process
    python benchmarks/bench_scale.py --profile 2000   # pydantic validations per task (cProfile)

Each size runs in a fresh process, as the CLI does: the generated benchmark (5 LLM traits, one
standard rubric call per task), recorded answers, the simulated judge at 0 ms served over HTTP by
its own process (so its CPU is not the client's), results streamed to a JSON export with
``keep_results=False``. Prints ``name: value`` lines: peak RSS (VmHWM) and CPU per task, each run's
wall, CPU and load (:mod:`machine`), and the CPU-per-task ratio of each size to the 1k run.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import subprocess
import sys
import tempfile
from contextlib import nullcontext
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if __package__ in (None, ""):
    sys.path.insert(0, str(HERE.parent))
    sys.path.insert(0, str(HERE))

from benchgen import endpoint, generated_benchmark, make_config, server_process, simulated  # noqa: E402
from machine import Measured, memory_mb  # noqa: E402

from verify.run.runner import run_verification  # noqa: E402

#: pydantic-core entry points: every call is one validation (or one assignment validated)
VALIDATORS = ("validate_python", "validate_json", "validate_strings", "validate_assignment")


def child(tasks: int, url: str | None, keep: bool) -> None:
    """Run ``tasks`` tasks in this process; print what was measured as one JSON line."""
    bench, answers = generated_benchmark(tasks)
    judge = endpoint(url) if url else simulated("judge")
    config = make_config(judge, mode="standard", workers=64)
    before = memory_mb("VmHWM")
    with tempfile.TemporaryDirectory() as tmp, Measured("run") as m:
        outcome = run_verification(bench, config, answers=answers, output=Path(tmp) / "results.json",
                                   keep_results=keep)
    print(json.dumps({"tasks": outcome.summary.total, "peak_mb": memory_mb("VmHWM"), "before_run_mb": before,
                      "wall_s": m.wall_s, "cpu_s": m.cpu_s, "load": m.load, "busy": m.busy}))


def measure(tasks: int, url: str | None, keep: bool) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(tasks), *(["--url", url] if url else []),
           *(["--keep-results"] if keep else [])]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the {tasks}-task run failed: {done.stderr.strip()[-500:]}")
    data: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if data["tasks"] != tasks:
        raise RuntimeError(f"the {tasks}-task run saved {data['tasks']} results")
    return data


def profile(tasks: int) -> None:
    """pydantic validations and ``BaseModel.__setattr__`` calls per task, in-process judge."""
    bench, answers = generated_benchmark(tasks)
    config = make_config(simulated("judge"), mode="standard", workers=64)
    profiler = cProfile.Profile()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.json"
        profiler.enable()
        run_verification(bench, config, answers=answers, output=out, keep_results=False)
        profiler.disable()
    stats: dict[Any, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    validations = sum(v[1] for (_, _, name), v in stats.items() if any(w in name for w in VALIDATORS))
    setattrs = sum(v[1] for (path, _, name), v in stats.items() if name == "__setattr__" and "pydantic" in path)
    print(f"profile_tasks: {tasks}")
    print(f"pydantic_validations_per_task: {validations / tasks:.2f}")
    print(f"basemodel_setattr_per_task: {setattrs / tasks:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="also run 50,000 tasks")
    parser.add_argument("--in-process", action="store_true", help="the simulated judge in the run's process")
    parser.add_argument("--sizes", help="comma-separated task counts (default 1000,10000)")
    parser.add_argument("--profile", type=int, metavar="TASKS", help="count pydantic validations per task")
    parser.add_argument("--keep-results", action="store_true", help="keep every result, as a notebook run does")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.url, args.keep_results)
        return 0
    if args.profile:
        profile(args.profile)
        return 0
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else [1000, 10000]
    if args.full:
        sizes.append(50000)
    print(f"transport: {'in-process' if args.in_process else 'http'}")
    print(f"keep_results: {int(args.keep_results)}")
    base: float | None = None
    with nullcontext(None) if args.in_process else server_process() as url:
        for tasks in sizes:
            data = measure(tasks, url, args.keep_results)
            per_task_ms = data["cpu_s"] / tasks * 1000
            base = per_task_ms if base is None else base
            name = f"scale_{tasks // 1000}k"
            print(f"{name}_peak_rss_mb: {data['peak_mb']:.1f}")
            print(f"{name}_rss_before_run_mb: {data['before_run_mb']:.1f}")
            print(f"{name}_cpu_ms_per_task: {per_task_ms:.3f}")
            print(f"{name}_cpu_per_task_vs_first: {per_task_ms / base:.3f}")
            print(f"{name}_wall_s: {data['wall_s']:.3f}")
            print(f"{name}_cpu_s: {data['cpu_s']:.3f}")
            print(f"{name}_load: {data['load']:.2f}")
            if data["busy"]:
                print(f"{name}_busy: 1")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
