"""Performance figures of verify against the simulated provider (in-process and over HTTP).

Usage::

    python benchmarks/bench.py            # full run, about 75 s on 2 cores; writes RESULTS.md
    python benchmarks/bench.py --quick    # under a minute; writes benchmarks/RESULTS-quick.md
    python benchmarks/bench.py --quick --write   # quick figures into RESULTS.md instead
    python benchmarks/bench.py --only efficiency,rss   # some sections; writes nothing

Prints one line per figure, ``name: value`` (floats with 3 decimals), on stdout; progress notes
go to stderr. What each figure means, and its target, is in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if __package__ in (None, ""):
    sys.path.insert(0, str(HERE.parent))
    sys.path.insert(0, str(HERE))

import benchgen as gen  # noqa: E402
from bench_startup import section_startup, section_throughput  # noqa: E402
from benchgen import Counted, generated_benchmark, make_config, server_process, simulated  # noqa: E402
from machine import memory_mb  # noqa: E402

from verify.results.models import VerificationResult  # noqa: E402
from verify.run.runner import run_verification  # noqa: E402

SECTIONS = ("efficiency", "calls", "overhead", "rss", "rerun", "excerpt", "dj_task", "startup", "throughput")


@dataclass
class Settings:
    quick: bool
    latency_ms: float = 200.0
    concurrency: int = 16
    workers: int = 16
    efficiency_questions: int = 50
    efficiency_http_questions: int = 50
    calls_questions: int = 20
    overhead_tasks_standard: int = 2000
    overhead_tasks_dj: int = 500
    rss_sizes: tuple[int, int] = (1_000, 10_000)
    rerun_questions: int = 10
    dj_task_repeats: int = 5
    overhead_repeats: int = 3

    @classmethod
    def for_mode(cls, quick: bool) -> Settings:
        if not quick:
            return cls(quick=False)
        return cls(
            quick=True,
            efficiency_questions=40,
            efficiency_http_questions=25,
            calls_questions=10,
            overhead_tasks_standard=500,
            overhead_tasks_dj=150,
            rss_sizes=(200, 2_000),
            rerun_questions=5,
            dj_task_repeats=3,
            overhead_repeats=1,
        )


@dataclass
class Figure:
    name: str
    value: float
    target: str = ""
    met: bool | None = None
    note: str = ""


@dataclass
class Report:
    figures: list[Figure] = field(default_factory=list)
    context: dict[str, str] = field(default_factory=dict)

    def add(self, name: str, value: float, target: str = "", met: bool | None = None, note: str = "") -> None:
        self.figures.append(Figure(name, value, target, met, note))
        print(f"{name}: {fmt(value)}", flush=True)


def fmt(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:.3f}"


def say(message: str) -> None:
    print(f"# {message}", file=sys.stderr, flush=True)


def _results(outcome: Any) -> list[VerificationResult]:
    return list(outcome.results)


def _chain_calls(results: list[VerificationResult]) -> int:
    """The longest dependency chain of one task, in calls: the answer call (if the model answered)
    plus the longest deep-judgment trait chain, or the standard rubric's one call."""
    longest = 0
    for r in results:
        usage = r.template.usage_metadata if r.template else {}
        answer = usage["answer_generation"].calls if "answer_generation" in usage else 0
        dj = r.deep_judgment_rubric
        trait = max((m.model_calls for m in dj.trait_metadata.values()), default=0) if dj else 0
        rubric = 1 if "rubric_evaluation" in usage else 0
        longest = max(longest, answer + max(trait, rubric))
    return longest


def _check_clean(results: list[VerificationResult], where: str) -> None:
    errors = [e.message for r in results for e in r.metadata.errors]
    unscored = [
        f"{name}: {o.reason}"
        for r in results
        if r.rubric
        for name, o in r.rubric.trait_status.items()
        if o.status != "scored"
    ]
    if errors or unscored:
        say(
            f"WARNING {where}: {len(errors)} stage errors, {len(unscored)} traits not scored; "
            f"first: {(errors or unscored)[0][:200]}"
        )


# ----------------------------------------------------------------------------------- efficiency


def _efficiency_run(s: Settings, judge: dict[str, Any], questions: int) -> tuple[float, float, int, int]:
    """(measured wall, ideal wall, calls at the port, longest chain in calls)."""
    bench, answers = generated_benchmark(questions)
    config = make_config(judge, mode="deep_judgment", concurrency=s.concurrency, workers=s.workers)
    factory = Counted(config)
    started = time.perf_counter()
    outcome = run_verification(bench, config, answers=answers, adapter_factory=factory)
    wall = time.perf_counter() - started
    results = _results(outcome)
    _check_clean(results, "efficiency")
    calls = factory.live_calls
    chain = _chain_calls(results)
    latency = s.latency_ms / 1000
    ideal = max(calls * latency / s.concurrency, chain * latency)
    return wall, ideal, calls, chain


def _warm_up(judge: dict[str, Any]) -> None:
    """One small run first: imports (langchain takes seconds) and first connections are not part
    of a run's steady state."""
    bench, answers = generated_benchmark(1)
    run_verification(bench, make_config(judge, mode="deep_judgment"), answers=answers)


def section_efficiency(s: Settings, report: Report) -> None:
    say(
        f"efficiency: {s.efficiency_questions} questions x 5 traits, deep judgment with excerpts, "
        f"latency {s.latency_ms:.0f} ms, max_concurrent_requests {s.concurrency}, workers {s.workers}"
    )
    judge = simulated("judge", s.latency_ms)
    _warm_up(simulated("judge"))
    wall, ideal, calls, chain = _efficiency_run(s, judge, s.efficiency_questions)
    report.add(
        "efficiency",
        ideal / wall,
        ">= 0.85",
        ideal / wall >= 0.85,
        f"in-process; {calls} calls, chain {chain}, ideal {ideal:.2f} s, wall {wall:.2f} s",
    )
    report.add("efficiency_wall_s", wall, note="measured wall time of the in-process run")
    report.add("efficiency_ideal_s", ideal, note="max(calls x latency / concurrency, chain x latency)")

    say(f"efficiency_http: {s.efficiency_http_questions} questions over HTTP (server in its own process)")
    with server_process("--latency-ms", s.latency_ms) as url:
        judge = gen.endpoint(url)
        _warm_up(judge)
        cpu = time.process_time()
        wall, ideal, calls, chain = _efficiency_run(s, judge, s.efficiency_http_questions)
        cpu = time.process_time() - cpu
    report.add(
        "efficiency_http",
        ideal / wall,
        ">= 0.85",
        ideal / wall >= 0.85,
        f"openai_endpoint client -> simulated server; {calls} calls, ideal {ideal:.2f} s, wall {wall:.2f} s",
    )
    per_call = cpu * 1000 / calls
    report.add(
        "http_client_cpu_ms_per_call", per_call, "<= 3", per_call <= 3,
        note="client process CPU per call over HTTP (verify's pipeline + its OpenAI-compatible client + httpx)",
    )


# ----------------------------------------------------------------------------------- calls, tokens

EXPECTED_CALLS = {"standard": 2, "deep_judgment": 15, "deep_judgment_search": 20}


def section_calls(s: Settings, report: Report) -> None:
    say(f"calls and tokens per task: {s.calls_questions} tasks per mode, zero latency, in-process")
    for mode, expected in EXPECTED_CALLS.items():
        bench, answers = generated_benchmark(s.calls_questions)
        config = make_config(simulated("judge"), mode=mode)
        factory = Counted(config)
        results = _results(run_verification(bench, config, answers=answers, adapter_factory=factory))
        _check_clean(results, mode)
        tasks = len(results)
        totals = [r.template.usage_metadata["total"] for r in results if r.template]
        recorded = sum(u.calls for u in totals)
        if recorded != factory.calls:
            say(f"WARNING {mode}: results record {recorded} calls, the port counted {factory.calls}")
        per_task = factory.calls / tasks
        report.add(
            f"calls_per_task_{mode}",
            per_task,
            f"= {expected}",
            abs(per_task - expected) < 1e-9,
            "5 LLM traits (3 boolean, 1 score, 1 literal), recorded answers",
        )
        report.add(
            f"prompt_tokens_per_task_{mode}",
            sum(u.input_tokens for u in totals) / tasks,
            note="from usage_metadata; simulated tokens = characters / 4",
        )
        report.add(f"completion_tokens_per_task_{mode}", sum(u.output_tokens for u in totals) / tasks)


# ----------------------------------------------------------------------------------- overhead


def _overhead(mode: str, tasks: int, repeats: int) -> tuple[float, float]:
    """(wall ms per trait evaluation, of which the simulated model's own ms per trait), from the
    run with the median wall time of ``repeats`` runs."""
    bench, answers = generated_benchmark(tasks)
    config = make_config(simulated("judge"), mode=mode, workers=16)
    small, small_answers = generated_benchmark(5)
    run_verification(small, config, answers=small_answers)  # warm: imports, first-use caches
    evaluations = tasks * len(gen.TRAITS)
    runs = []
    for _ in range(repeats):
        factory = Counted(config)
        started = time.perf_counter()
        outcome = run_verification(bench, config, answers=answers, adapter_factory=factory)
        wall = time.perf_counter() - started
        _check_clean(_results(outcome), f"overhead {mode}")
        model_s = sum(m.latency_s for m in factory.models)  # SimulatedModel's time per reply (its "brain")
        runs.append((wall * 1000 / evaluations, model_s * 1000 / evaluations))
    return sorted(runs)[len(runs) // 2]


def section_overhead(s: Settings, report: Report) -> None:
    say(
        f"overhead: zero-latency in-process judge; standard {s.overhead_tasks_standard} tasks, "
        f"deep judgment {s.overhead_tasks_dj} tasks (5 traits each); median of {s.overhead_repeats} run(s)"
    )
    per_trait, model = _overhead("standard", s.overhead_tasks_standard, s.overhead_repeats)
    report.add(
        "overhead_ms_per_trait",
        per_trait,
        "< 1",
        per_trait < 1.0,
        f"standard (batch) rubric; includes {model:.3f} ms of simulated-model work",
    )
    per_trait, model = _overhead("deep_judgment", s.overhead_tasks_dj, s.overhead_repeats)
    report.add(
        "overhead_ms_per_trait_deep_judgment",
        per_trait,
        "< 1",
        per_trait < 1.0,
        f"3 calls per trait; includes {model:.3f} ms of simulated-model work",
    )
    report.add(
        "model_ms_per_trait_deep_judgment",
        model,
        note="the simulated model's own time inside the figure above (not subtracted)",
    )


# ----------------------------------------------------------------------------------- memory


def rss_child(tasks: int) -> None:
    """Run ``tasks`` tasks with results streamed to disk; print peak and pre-run RSS as JSON."""
    bench, _ = generated_benchmark(tasks, gen.SMALL_TRAITS)
    config = make_config(simulated("judge"), mode="standard", workers=16)
    before = memory_mb("VmHWM")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.jsonl"
        started = time.perf_counter()
        outcome = run_verification(bench, config, output=out, keep_results=False)
        wall = time.perf_counter() - started
        size = out.stat().st_size
    print(
        json.dumps(
            {
                "tasks": outcome.tasks,
                "peak_mb": memory_mb("VmHWM"),
                "before_run_mb": before,
                "wall_s": wall,
                "output_mb": size / 1e6,
            }
        )
    )


def section_rss(s: Settings, report: Report) -> None:
    small, large = s.rss_sizes
    say(
        f"rss: {small} and {large} tasks in fresh processes (1 LLM + 1 regex trait, answers generated "
        "by a zero-latency simulated model, results streamed to JSONL)"
    )
    data = {}
    for tasks in (small, large):
        proc = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--rss-child", str(tasks)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"rss child ({tasks} tasks) failed:\n{proc.stderr[-2000:]}")
        data[tasks] = json.loads(proc.stdout.strip().splitlines()[-1])
        say(f"  {tasks} tasks: {data[tasks]}")
    a, b = data[small], data[large]
    ratio = b["peak_mb"] / a["peak_mb"]
    # The names stay rss_mb_1k / rss_mb_10k in --quick mode, where the sizes are smaller (see the note).
    report.add("rss_mb_1k", a["peak_mb"], note=f"{small} tasks, peak RSS (VmHWM) of the process")
    report.add(
        "rss_mb_10k",
        b["peak_mb"],
        "< 2 x rss_mb_1k",
        ratio < 2.0,
        f"{large} tasks; {ratio:.2f}x the memory for {large // small}x the tasks",
    )
    run_growth = ((b["peak_mb"] - b["before_run_mb"]) - (a["peak_mb"] - a["before_run_mb"])) / (large - small)
    report.add(
        "rss_run_kb_per_task",
        run_growth * 1024,
        note="extra peak RSS per task, from the run itself (benchmark input excluded)",
    )
    report.add(
        "rss_input_kb_per_task",
        (b["before_run_mb"] - a["before_run_mb"]) / (large - small) * 1024,
        note="the generated benchmark held in memory, per question",
    )


# ----------------------------------------------------------------------------------- cache rerun


def section_rerun(s: Settings, report: Report) -> None:
    from verify.llm.simulated.server import start_server

    say(
        f"rerun: {s.rerun_questions} deep-judgment+search tasks twice with the cache on, over HTTP "
        "(the runner builds its own models; calls are counted by the server)"
    )
    bench, answers = generated_benchmark(s.rerun_questions)
    with tempfile.TemporaryDirectory() as tmp, start_server(record=False) as server:
        config = make_config(gen.endpoint(server.url), mode="deep_judgment_search", concurrency=s.concurrency)
        counts = []
        for _ in range(2):
            before = server.request_count
            outcome = run_verification(bench, config, answers=answers, cache_dir=Path(tmp) / "cache")
            _check_clean(_results(outcome), "rerun")
            counts.append(server.request_count - before)
    say(f"  first run {counts[0]} calls, second run {counts[1]} calls")
    report.add("rerun_calls", counts[1], "0", counts[1] == 0, f"first run made {counts[0]} calls")


# ----------------------------------------------------------------------------------- excerpts


def section_excerpt(s: Settings, report: Report) -> None:
    import bench_match

    say("excerpt matching: verify.judging.excerpts.match.match_excerpt vs difflib (benchmarks/bench_match.py)")
    figures = bench_match.run(quick=s.quick)
    report.add(
        "excerpt_match_speedup",
        figures["excerpt_match_speedup"],
        "> 1",
        figures["excerpt_match_speedup"] > 1,
        "geometric mean over 2k, 20k and 100k answers",
    )
    for size in ("2k", "20k", "100k"):
        report.add(
            f"excerpt_match_speedup_{size}",
            figures[f"excerpt_match_speedup_{size}"],
            note=f"difflib {figures[f'difflib_match_ms_{size}']:.3f} ms vs "
            f"{figures[f'excerpt_match_ms_{size}']:.3f} ms per excerpt",
        )


# ----------------------------------------------------------------------------------- one DJ task


def section_dj_task(s: Settings, report: Report) -> None:
    say(
        f"dj_task: one task, 5 deep-judgment traits, server latency {s.latency_ms:.0f} ms, "
        f"median of {s.dj_task_repeats} runs"
    )
    bench, answers = generated_benchmark(1)
    with server_process("--latency-ms", s.latency_ms) as url:
        # pinned: an unpinned judge's first structured call of a run probes the method alone (one
        # more round trip per model and run), which is not what this figure is about
        judge = {**gen.endpoint(url), "extra_kwargs": {"structured_output_method": "json_schema"}}
        config = make_config(judge, mode="deep_judgment", concurrency=s.concurrency, workers=1)
        _warm_up(judge)
        walls, runs, chains, sums = [], [], [], []
        for _ in range(s.dj_task_repeats):
            started = time.perf_counter()
            results = _results(run_verification(bench, config, answers=answers))
            runs.append(time.perf_counter() - started)
            walls.append(results[0].metadata.execution_time)  # the task's own wall time
            _check_clean(results, "dj_task")
            chains.append(_chain_calls(results))
            sums.append(sum(r.template.usage_metadata["total"].calls for r in results if r.template))
    wall, chain, total = statistics.median(walls), max(chains), max(sums)
    latency = s.latency_ms / 1000
    over_chain = wall / (chain * latency)
    report.add(
        "dj_task_wall_over_chain",
        over_chain,
        "<= 1.25",
        over_chain <= 1.25,
        f"task wall {wall:.3f} s (whole run_verification call {statistics.median(runs):.3f} s); "
        f"chain {chain} calls x {s.latency_ms:.0f} ms; structured_output_method pinned (unpinned, the run's first "
        "structured call probes alone: one more round trip per model and run)",
    )
    report.add(
        "dj_task_wall_over_sum",
        wall / (total * latency),
        "<= 0.3 (ideal 1/5)",
        wall / (total * latency) <= 0.3,
        f"{total} calls in the task",
    )


# ----------------------------------------------------------------------------------- output

RUNNERS: dict[str, Callable[[Settings, Report], None]] = {
    "efficiency": section_efficiency,
    "calls": section_calls,
    "overhead": section_overhead,
    "rss": section_rss,
    "rerun": section_rerun,
    "excerpt": section_excerpt,
    "dj_task": section_dj_task,
    "startup": section_startup,
    "throughput": section_throughput,
}


def machine() -> dict[str, str]:
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    return {
        "load": load,
        "cpu": f"{cpu}, {os.cpu_count()} cores",
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def write_markdown(path: Path, report: Report, s: Settings, elapsed: float, load_before: str) -> None:
    lines = [
        f"# Benchmark results ({'quick' if s.quick else 'full'} run)",
        "",
        f"Generated by `python benchmarks/bench.py{' --quick' if s.quick else ''}` on "
        f"{datetime.now().strftime('%Y-%m-%d %H:%M')} in {elapsed:.0f} s. "
        "What each figure means: [README.md](README.md).",
        "",
        "| figure | value | target | met? | notes |",
        "|---|---:|---|---|---|",
    ]
    for f in report.figures:
        met = "" if f.met is None else ("yes" if f.met else "**no**")
        lines.append(f"| `{f.name}` | {fmt(f.value)} | {f.target} | {met} | {f.note} |")
    ctx = machine()
    lines += [
        "",
        "## Machine and configuration",
        "",
        f"- CPU: {ctx['cpu']}; Python {ctx['python']}; {ctx['platform']}",
        f"- load average (1, 5, 15 min) at the start: {load_before}; at the end: {ctx['load']} "
        "(other processes share the cores)",
        f"- judge latency {s.latency_ms:.0f} ms (simulated), `max_concurrent_requests` {s.concurrency}, "
        f"`async_max_workers` {s.workers}",
        f"- efficiency: {s.efficiency_questions} questions in-process, {s.efficiency_http_questions} over HTTP; "
        "5 LLM traits (3 boolean, 1 score, 1 literal), `deep_judgment_rubric_mode=enable_all` with excerpts, "
        "recorded answers of ~650 characters",
        f"- calls/tokens: {s.calls_questions} tasks per mode; overhead: {s.overhead_tasks_standard} standard and "
        f"{s.overhead_tasks_dj} deep-judgment tasks at zero latency, median of {s.overhead_repeats} run(s)",
        f"- memory: {s.rss_sizes[0]} and {s.rss_sizes[1]} tasks, each in a fresh process, "
        "1 LLM + 1 regex trait, standard rubric, results streamed to JSONL (`keep_results=False`)",
        f"- rerun: {s.rerun_questions} deep-judgment+search tasks, run twice with `cache_dir`; "
        f"dj_task: median of {s.dj_task_repeats} single-task runs",
        "",
    ]
    path.write_text("\n".join(lines) + kept_sections(path), encoding="utf-8")


def kept_sections(path: Path) -> str:
    """The sections other scripts keep in ``path`` between ``<!-- name:start -->`` and
    ``<!-- name:end -->`` lines (reliability.py, vs_karenina.py): rewriting the figures keeps them."""
    if not path.exists():
        return ""
    kept, inside = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("<!-- ") and line.endswith(":start -->"):
            inside = True
        if inside:
            kept.append(line)
        if line.startswith("<!-- ") and line.endswith(":end -->"):
            inside = False
            kept.append("")
    return "\n" + "\n".join(kept) if kept else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes; finishes in under a minute")
    parser.add_argument(
        "--write", action="store_true", help="with --quick: write RESULTS.md, not RESULTS-quick.md"
    )
    parser.add_argument("--no-write", action="store_true", help="print the figures only")
    parser.add_argument("--only", default="", help=f"comma-separated sections of: {', '.join(SECTIONS)}")
    parser.add_argument("--latency-ms", type=float, help="judge latency (default 200)")
    parser.add_argument("--concurrency", type=int, help="max_concurrent_requests (default 16)")
    parser.add_argument("--workers", type=int, help="async_max_workers (default 16)")
    parser.add_argument("--rss-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_child:
        rss_child(args.rss_child)
        return 0
    s = Settings.for_mode(args.quick)
    for name in ("latency_ms", "concurrency", "workers"):
        if getattr(args, name) is not None:
            setattr(s, name, getattr(args, name))
    only = [x.strip() for x in args.only.split(",") if x.strip()]
    unknown = [x for x in only if x not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {unknown}; choose from {', '.join(SECTIONS)}")
    report = Report()
    load_before = machine()["load"]
    started = time.perf_counter()
    for name in only or SECTIONS:
        t0 = time.perf_counter()
        RUNNERS[name](s, report)
        say(f"{name} took {time.perf_counter() - t0:.1f} s")
    elapsed = time.perf_counter() - started
    say(f"total {elapsed:.1f} s")
    customised = only or any(getattr(args, n) is not None for n in ("latency_ms", "concurrency", "workers"))
    if not args.no_write and not customised:
        target = HERE / ("RESULTS.md" if (not s.quick or args.write) else "RESULTS-quick.md")
        write_markdown(target, report, s, elapsed, load_before)
        say(f"wrote {target.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
