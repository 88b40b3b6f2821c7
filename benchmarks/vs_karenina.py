"""Side by side with karenina: the same checkpoint, answers, judge and command line (issue 17, item 5).

Both programs verify the same generated checkpoint (20 questions with long recorded answers, 5 LLM
rubric traits: 3 boolean, 1 score 1..5, 1 literal) from the same manual-traces file, in deep judgment
``enable_all`` with excerpts, against one OpenAI-compatible judge on 127.0.0.1 (``latency_judge.py``,
in its own process) that waits a fixed latency before every reply. Each run is a fresh process of
``karenina verify ...`` or ``verify verify ...`` with the SAME argv (karenina's CLI names; verify
accepts them all), in its own empty working directory (so verify's response cache starts empty);
runs alternate between the two tools. Figures are medians over ``--repeat`` runs:

* wall time at default settings (2 workers in both) and with ``--async-workers 20``;
* judge requests, prompt characters and peak RSS (``os.wait4`` rusage of the child) at defaults;
* wall time with a 0 ms judge (default / 20 workers), and with deep judgment off;
* time from spawning the process to the judge's first request;
* verify with ``--deep-judgment-rubric-strategy batched`` when its CLI has that flag.

Without karenina (``--karenina-venv`` pointing nowhere, or ``--no-karenina``) only verify's figures
are printed. Output: ``name: value`` lines, then a markdown table; progress notes go to stderr.
``--write`` puts the table, the machine and the command lines into ``benchmarks/RESULTS.md`` between
``<!-- vs_karenina:start -->`` and ``<!-- vs_karenina:end -->`` (appended if absent), and nowhere else.

    .venv/bin/python benchmarks/vs_karenina.py                  # full: 20 questions, 3 repeats
    .venv/bin/python benchmarks/vs_karenina.py --quick          # 5 questions, 1 repeat
    .venv/bin/python benchmarks/vs_karenina.py --write          # and record it in RESULTS.md
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if __package__ in (None, ""):
    sys.path.insert(0, str(HERE.parent))
    sys.path.insert(0, str(HERE))

from benchgen import TRAITS, url_process  # noqa: E402 - the 5-trait rubric of the other benchmarks

from verify.benchmark.jsonld import Benchmark, save_benchmark  # noqa: E402
from verify.benchmark.question import Question  # noqa: E402
from verify.benchmark.traits import Rubric  # noqa: E402

START, END = "<!-- vs_karenina:start -->", "<!-- vs_karenina:end -->"
DEFAULT_VENV = Path("/tmp/karvenv")
STRATEGY_FLAG = "--deep-judgment-rubric-strategy"
TOOLS = ("karenina", "verify")

_TOPICS = ("fermentation", "distillation", "annealing", "electrolysis", "composting",
           "tempering", "pasteurisation", "crystallisation", "sintering", "oxidation")  # fmt: skip


# ---------------------------------------------------------------- the inputs both tools read


def question_text(i: int) -> str:
    return f"How does {_TOPICS[i % len(_TOPICS)]} work in workshop {i}?"


def answer_text(i: int) -> str:
    """A long recorded answer (about 2,800-3,400 characters, five or six paragraphs), the same for the same ``i``."""
    rng = random.Random(i)
    topic = _TOPICS[i % len(_TOPICS)]
    paragraphs = []
    for part in range(1, 6 + i % 2):
        sentences = [
            f"In part {part} of this account, {topic} is described as a controlled process that the "
            f"engineers of workshop {i} run with care.",
            f"The operators keep the temperature near {20 + rng.randrange(80)} degrees Celsius for about "
            f"{3 + rng.randrange(20)} minutes at this stage.",
            "Safety precautions matter here, because burns and fumes are real risks for anyone standing "
            "close to the vessel.",
            "The underlying mechanism is that energy drives molecular changes step by step until the "
            "material reaches a new state.",
            f"Each step is written down in the notebook so that a new technician can follow procedure "
            f"{rng.randrange(1000)} without help.",
        ]
        rng.shuffle(sentences)
        paragraphs.append(" ".join(sentences))
    return "\n\n".join(paragraphs)


@dataclass(frozen=True)
class Inputs:
    checkpoint: Path
    traces: Path
    preset: Path


def write_checkpoint(folder: Path, n: int) -> tuple[Path, Path]:
    """The checkpoint (verify's saver writes karenina's JSON-LD) and the manual traces ``{md5(question): answer}``."""
    questions = [Question(id=f"q-{i:03d}", text=question_text(i), raw_answer="A reference answer.", finished=True)
                 for i in range(n)]  # fmt: skip
    bench = Benchmark(name=f"vs-karenina-{n}", global_rubric=Rubric(traits=list(TRAITS)), questions=questions)
    checkpoint, traces = folder / "checkpoint.jsonld", folder / "traces.json"
    save_benchmark(bench, checkpoint)
    answers = {hashlib.md5(question_text(i).encode()).hexdigest(): answer_text(i) for i in range(n)}
    traces.write_text(json.dumps(answers, indent=1))
    return checkpoint, traces


def write_preset(folder: Path, url: str) -> Path:
    """karenina's CLI has no endpoint flags, so the judge comes from a preset (both tools read it).
    karenina refuses a manual answering model in a preset; ``--manual-traces`` replaces this one."""
    judge = {"id": "judge", "model_name": "judge", "interface": "openai_endpoint", "temperature": 0.0,
             "endpoint_base_url": url, "endpoint_api_key": "sk-local"}  # fmt: skip
    preset = {"name": "vs-karenina", "description": "local judge of benchmarks/vs_karenina.py",
              "config": {"answering_models": [judge], "parsing_models": [judge]}}  # fmt: skip
    path = folder / "preset.json"
    path.write_text(json.dumps(preset, indent=1))
    return path


def argv(inputs: Inputs, *, workers: int | None = None, deep: bool = True, extra: tuple[str, ...] = ()) -> list[str]:
    """The one command line both programs get, after ``karenina verify`` or ``verify``."""
    args = [str(inputs.checkpoint), "--preset", str(inputs.preset), "--manual-traces", str(inputs.traces),
            "--evaluation-mode", "rubric_only",
            "--deep-judgment-rubric-mode", "enable_all" if deep else "disabled"]  # fmt: skip
    if deep:
        args.append("--deep-judgment-rubric-excerpts")
    if workers is not None:
        args += ["--async-workers", str(workers)]
    return [*args, "--output", "results.json", *extra]


# ---------------------------------------------------------------- the judge and one measured run


class Judge:
    """``latency_judge.py`` in its own process; ``reset`` before a run, ``stats`` after it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.root = url.removesuffix("/v1")

    def _call(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        with urllib.request.urlopen(urllib.request.Request(self.root + path, data=data), timeout=10) as reply:
            result: dict[str, Any] = json.loads(reply.read())
            return result

    def reset(self, latency_ms: float) -> None:
        self._call("/bench/reset", {"latency_ms": latency_ms})

    def stats(self) -> dict[str, Any]:
        return self._call("/bench/stats")


@contextmanager
def judge_process(traces: Path, latency_ms: float, log: Path | None = None) -> Iterator[Judge]:
    cmd = [sys.executable, str(HERE / "latency_judge.py"), "--answers", str(traces), "--latency-ms", str(latency_ms)]
    if log is not None:
        cmd += ["--log", str(log)]
    with url_process(cmd, "the judge") as url:
        yield Judge(url)


@dataclass(frozen=True)
class Run:
    wall_s: float
    requests: int
    prompt_chars: int
    rss_mb: float
    first_request_s: float | None
    max_in_flight: int


class RunFailed(RuntimeError):
    pass


def check_results(path: Path, n: int) -> str | None:
    """What is wrong with a run's export (both tools write karenina's format), if anything: every
    question must have a result with all five LLM traits scored."""
    if not path.exists():
        return "no results file"
    results = json.loads(path.read_text()).get("results") or []
    if len(results) != n:
        return f"{len(results)} results for {n} questions"
    for result in results:
        scores = (result.get("rubric") or {}).get("llm_trait_scores") or {}
        missing = [t.name for t in TRAITS if scores.get(t.name) is None]
        if missing:
            return f"{result['metadata'].get('question_id')}: unscored traits {missing}"
    return None


def run_once(program: list[str], args: list[str], judge: Judge, latency_ms: float, n: int) -> Run:
    """One fresh process in an empty working directory; its wall time, rusage and the judge's counts.
    A run that fails, or leaves a question or trait unscored, stops the benchmark (``RunFailed``)."""
    judge.reset(latency_ms)
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    with tempfile.TemporaryDirectory(prefix="vsk-run-") as cwd:
        log = Path(cwd) / "output.txt"
        with log.open("w") as out:
            spawned = time.time()
            start = time.perf_counter()
            proc = subprocess.Popen([*program, *args], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)  # fmt: skip
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        problem = f"exit status {code}" if code else check_results(Path(cwd) / "results.json", n)
        if problem:
            tail = log.read_text(errors="replace")[-1500:]
            raise RunFailed(f"{shlex.join([*program, *args])}: {problem}\n{tail}")
    stats = judge.stats()
    first = stats["first_request_at"]
    return Run(wall_s=wall, requests=stats["requests"], prompt_chars=stats["prompt_chars"],
               rss_mb=usage.ru_maxrss / 1024, first_request_s=None if first is None else first - spawned,
               max_in_flight=stats["max_in_flight"])  # fmt: skip


# ---------------------------------------------------------------- the scenarios and figures


@dataclass(frozen=True)
class Scenario:
    key: str  # the figure's name without the tool prefix
    latency_ms: float
    workers: int | None
    deep: bool = True
    batched: bool = False  # verify only


def scenarios(latency_ms: float, workers: int, batched: bool) -> list[Scenario]:
    rows = [Scenario("default", latency_ms, None), Scenario(f"workers{workers}", latency_ms, workers)]
    if latency_ms:  # with a 0 ms judge already, these repeat the two rows above
        rows += [Scenario("0ms_default", 0, None), Scenario(f"0ms_workers{workers}", 0, workers)]
    rows.append(Scenario("dj_off_0ms", 0, None, deep=False))
    if batched:
        rows.append(Scenario("batched_default", latency_ms, None, batched=True))
    return rows


def programs(karenina_venv: Path | None) -> dict[str, list[str]]:
    found = {}
    if karenina_venv is not None and (karenina_venv / "bin" / "karenina").exists():
        found["karenina"] = [str(karenina_venv / "bin" / "karenina"), "verify"]
    script = Path(sys.executable).parent / "verify"  # verify's run command is its default one
    found["verify"] = [str(script)] if script.exists() else [sys.executable, "-m", "verify"]
    return found


def has_batched(verify: list[str]) -> bool:
    """Whether verify's CLI has the batched deep-judgment strategy (being added by another change)."""
    env = {**os.environ, "COLUMNS": "400", "NO_COLOR": "1"}
    shown = [subprocess.run([*verify, *sub, "--help"], capture_output=True, text=True, env=env, check=False)
             for sub in ([], ["run"])]  # fmt: skip
    return any(STRATEGY_FLAG in out.stdout + out.stderr for out in shown)


def measure(inputs: Inputs, judge: Judge, tools: dict[str, list[str]], rows: list[Scenario], repeat: int,
            n: int) -> dict[str, dict[str, list[Run]]]:  # fmt: skip
    """Every scenario ``repeat`` times, the tools alternating (and swapping who goes first each round)."""
    runs: dict[str, dict[str, list[Run]]] = {name: {} for name in tools}
    for round_ in range(repeat):
        for row in rows:
            order = list(tools) if round_ % 2 == 0 else list(reversed(tools))
            for name in order:
                if row.batched and name != "verify":
                    continue
                extra = (STRATEGY_FLAG, "batched") if row.batched else ()
                args = argv(inputs, workers=row.workers, deep=row.deep, extra=extra)
                run = run_once(tools[name], args, judge, row.latency_ms, n)
                runs[name].setdefault(row.key, []).append(run)
                print(f"# round {round_ + 1}/{repeat} {name} {row.key}: {run.wall_s:.2f} s, "
                      f"{run.requests} requests ({run.requests / n:.1f}/question), at most {run.max_in_flight} "
                      "at once", file=sys.stderr)  # fmt: skip
    return runs


def median(runs: list[Run], attr: str) -> float:
    values = [v for v in (getattr(run, attr) for run in runs) if v is not None]
    return statistics.median(values) if values else 0.0


def figures(runs: dict[str, dict[str, list[Run]]], n: int, workers: int, latency_ms: float) -> dict[str, float]:
    """The medians by figure name (``<tool>_<figure>``), and ``ratio_<figure>`` = karenina / verify."""
    out: dict[str, float] = {"questions": n, "latency_ms": latency_ms}
    for tool, by_key in runs.items():
        def of(key: str, attr: str, by_key: dict[str, list[Run]] = by_key) -> float:
            # with a 0 ms judge already, the 0 ms rows are the default ones
            return median(by_key[key] if key in by_key else by_key[key.removeprefix("0ms_")], attr)

        out[f"{tool}_wall_default_s"] = of("default", "wall_s")
        out[f"{tool}_wall_workers{workers}_s"] = of(f"workers{workers}", "wall_s")
        out[f"{tool}_judge_requests"] = of("default", "requests")
        out[f"{tool}_requests_per_question"] = of("default", "requests") / n
        out[f"{tool}_prompt_chars"] = of("default", "prompt_chars")
        out[f"{tool}_peak_rss_mb"] = of("default", "rss_mb")
        out[f"{tool}_first_request_s"] = of("default", "first_request_s")
        out[f"{tool}_wall_0ms_default_s"] = of("0ms_default", "wall_s")
        out[f"{tool}_wall_0ms_workers{workers}_s"] = of(f"0ms_workers{workers}", "wall_s")
        out[f"{tool}_wall_dj_off_0ms_s"] = of("dj_off_0ms", "wall_s")
        if "batched_default" in by_key:
            out[f"{tool}_batched_wall_default_s"] = of("batched_default", "wall_s")
            out[f"{tool}_batched_judge_requests"] = of("batched_default", "requests")
            out[f"{tool}_batched_requests_per_question"] = of("batched_default", "requests") / n
    if "karenina" in runs:
        for key in [k.removeprefix("karenina_") for k in out if k.startswith("karenina_")]:
            if out.get(f"verify_{key}"):
                out[f"ratio_{key.removesuffix('_s')}"] = out[f"karenina_{key}"] / out[f"verify_{key}"]
    return out


# ---------------------------------------------------------------- output


def _num(value: float, digits: int = 2) -> str:
    return f"{value:.{digits}f}"


def table(f: dict[str, float], tools: list[str], workers: int, latency_ms: float) -> str:
    """The issue's table: one row per figure, a column per tool, and karenina / verify."""
    w = workers
    rows: list[tuple[str, str, int, float]] = [  # label, figure key, digits, scale
        (f"wall, default settings, {latency_ms:g} ms judge (s)", "wall_default_s", 2, 1),
        (f"wall, {w} workers (s)", f"wall_workers{w}_s", 2, 1),
        ("judge requests", "judge_requests", 0, 1),
        ("judge requests per question", "requests_per_question", 1, 1),
        ("prompt characters (M)", "prompt_chars", 3, 1e-6),
        ("peak RSS (MB)", "peak_rss_mb", 0, 1),
        ("wall, 0 ms judge, default (s)", "wall_0ms_default_s", 2, 1),
        (f"wall, 0 ms judge, {w} workers (s)", f"wall_0ms_workers{w}_s", 2, 1),
        ("wall, deep judgment off, 0 ms judge, default (s)", "wall_dj_off_0ms_s", 2, 1),
        ("process start to first judge request (s)", "first_request_s", 2, 1),
        ("batched strategy: wall, default settings (s)", "batched_wall_default_s", 2, 1),
        ("batched strategy: judge requests per question", "batched_requests_per_question", 1, 1),
    ]
    lines = [f"| figure | {' | '.join(tools)} |" + (" karenina / verify |" if len(tools) > 1 else ""),
             "|---|" + "---:|" * (len(tools) + (len(tools) > 1))]  # fmt: skip
    for label, key, digits, scale in rows:
        cells = [_num(f[f"{t}_{key}"] * scale, digits) if f"{t}_{key}" in f else "" for t in tools]
        if not any(cells):
            continue
        ratio = f.get(f"ratio_{key.removesuffix('_s')}")
        tail = [f"{ratio:.2f}x" if ratio else ""] if len(tools) > 1 else []
        lines.append(f"| {label} | " + " | ".join([*cells, *tail]) + " |")
    return "\n".join(lines)


def targets(f: dict[str, float]) -> list[str]:
    """Issue 17's "done when", checked on these figures."""
    def met(ok: bool) -> str:
        return "met" if ok else "NOT met"

    found = [f"target: verify at most 15 judge requests per question (300 for 20): "
             f"{met(f['verify_requests_per_question'] <= 15)}"]  # fmt: skip
    if "ratio_wall_default" in f:
        found.append(f"target: karenina / verify wall at default settings >= 10x: {f['ratio_wall_default']:.2f}x, "
                     f"{met(f['ratio_wall_default'] >= 10)}")  # fmt: skip
    if "ratio_wall_workers20" in f:
        found.append(f"target: karenina / verify wall at 20 workers >= 5x: {f['ratio_wall_workers20']:.2f}x, "
                     f"{met(f['ratio_wall_workers20'] >= 5)}")  # fmt: skip
    if "verify_batched_requests_per_question" in f:
        per = f["verify_batched_requests_per_question"]
        found.append(f"target: batched at most 3 judge requests per question: {per:g}, {met(per <= 3)}")
    return found


def print_figures(f: dict[str, float]) -> None:
    for name, value in f.items():
        shown = str(int(value)) if float(value).is_integer() and "wall" not in name else f"{value:.3f}"
        print(f"{name}: {shown}")


def replace_section(text: str, section: str) -> str:
    """``text`` with the part from START to END (markers included) replaced by ``section``, which
    carries its own markers; appended at the end if absent. Everything else stays byte for byte."""
    start = text.find(START)
    end = text.find(END, start) if start >= 0 else -1
    if start >= 0 and end >= 0:
        return text[:start] + section + text[end + len(END):]
    separator = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
    return text + separator + section + "\n"


def section(body: str, command: str, loads: tuple[str, str], notes: list[str], how: str) -> str:
    machine = f"{platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPUs"
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return "\n".join([
        START,
        "## Side by side with karenina (`benchmarks/vs_karenina.py`)",
        "",
        how,
        "",
        body,
        "",
        f"Machine: {machine}. Load average (1, 5, 15 min) at start {loads[0]}, at end {loads[1]}. Date: {date}.",
        "",
        f"- Benchmark command: `{command}`",
        *(f"- {note}" for note in notes),
        END,
    ])  # fmt: skip


def loadavg() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


# ---------------------------------------------------------------- main


def parse(argv_: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--karenina-venv", type=Path, default=DEFAULT_VENV if DEFAULT_VENV.exists() else None,
                        help="virtualenv with karenina installed (default /tmp/karvenv if it exists)")  # fmt: skip
    parser.add_argument("--no-karenina", action="store_true", help="verify's figures only")
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="5 questions, 1 repeat, no warm-up run")
    parser.add_argument("--latency-ms", type=float, default=200.0, help="the judge's latency per request")
    parser.add_argument("--workers", type=int, default=20, help="--async-workers of the many-workers rows")
    parser.add_argument("--write", action="store_true", help="update the vs_karenina section of --results")
    parser.add_argument("--results", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument("--log-requests", type=Path, help="the judge appends every request and reply here")
    args = parser.parse_args(argv_)
    if args.quick:
        args.questions, args.repeat = min(args.questions, 5), 1
    if args.no_karenina:
        args.karenina_venv = None
    return args


def main(argv_: list[str] | None = None) -> int:
    args = parse(argv_)
    command = shlex.join(["python", "benchmarks/vs_karenina.py", *(sys.argv[1:] if argv_ is None else argv_)])
    loads = [loadavg()]
    tools = programs(args.karenina_venv)
    batched = has_batched(tools["verify"])
    notes = [] if batched else [f"verify has no `{STRATEGY_FLAG}` yet: the batched rows are skipped."]
    if "karenina" not in tools:
        notes.append("karenina not found (no `--karenina-venv`): verify's figures only.")
    with tempfile.TemporaryDirectory(prefix="vs-karenina-") as tmp:
        folder = Path(tmp)
        checkpoint, traces = write_checkpoint(folder, args.questions)
        with judge_process(traces, args.latency_ms, args.log_requests) as judge:
            inputs = Inputs(checkpoint, traces, write_preset(folder, judge.url))
            shown = shlex.join(argv(inputs, workers=args.workers)).replace(tmp, "$TMP")
            notes = [f"Command line of both tools (after `karenina verify` / `verify`; the {args.workers}-worker rows, "
                     f"without `--async-workers` for the default rows): `{shown}`", *notes]  # fmt: skip
            rows = scenarios(args.latency_ms, args.workers, batched)
            try:
                if not args.quick:  # warm the file cache and .pyc files of both tools
                    for program in tools.values():
                        run_once(program, argv(inputs, deep=False), judge, 0, args.questions)
                runs = measure(inputs, judge, tools, rows, args.repeat, args.questions)
            except RunFailed as error:
                print(f"error: {error}", file=sys.stderr)
                return 1
    loads.append(loadavg())
    found = figures(runs, args.questions, args.workers, args.latency_ms)
    notes += targets(found)
    for tool in runs:  # 5 traits x (excerpts, reasoning, verdict): more means retries, fewer a skipped step
        per_question = found[f"{tool}_requests_per_question"]
        if per_question != 15:
            notes.append(f"{tool} made {per_question:g} judge requests per question with deep judgment, not 15.")
    print_figures(found)
    body = table(found, list(tools), args.workers, args.latency_ms)
    print()
    print(body)
    print()
    for note in notes:
        print(f"- {note}")
    if args.write:
        text = args.results.read_text() if args.results.exists() else ""
        how = (f"{args.questions} questions with recorded answers of about 3,000 characters, 5 LLM traits, deep "
               f"judgment `enable_all` with excerpts; one judge on 127.0.0.1 in its own process, {args.latency_ms:g} ms "
               f"per request. Each figure is the median of {args.repeat} run(s), each run a fresh process, the two "
               "tools alternating. Default settings: no `--async-workers` (karenina then runs 2 questions at a "
               "time; verify chooses its own concurrency). Ratios are karenina / verify.")  # fmt: skip
        args.results.write_text(replace_section(text, section(body, command, (loads[0], loads[1]), notes, how)))
        print(f"# wrote {args.results}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
