"""Reliability of the verify CLI under the accidents of real use, driven the way a new user drives it.

Usage::

    python benchmarks/reliability.py                 # every scenario, about 2 minutes on 2 cores
    python benchmarks/reliability.py --quick         # fewer cases, about 45 s
    python benchmarks/reliability.py --only kill,secrets --keep /tmp/rel   # some scenarios; keep the files

Every case runs ``python -m verify`` in subprocesses, in a fresh folder, on the offline demo
(``verify/examples/demo``: 4 questions x 2 recorded answerers = 8 tasks, deep judgment by the simulated
judge, slowed down with ``extra_kwargs.latency_ms`` so that a run can be stopped part-way), and
compares the final export with an uninterrupted reference run. Only loopback networking is used.
Scenarios (the names ``--only`` takes):

* ``kill``: a run is stopped at a random moment (a seeded delay between 0 and 1.1 times the
  reference run's wall time: start-up, the export and the exit included) by SIGKILL, SIGINT or
  SIGTERM; every other case stops its first ``--resume`` too; a last ``--resume`` finishes it. The
  export must hold every task of the reference exactly once (``metadata.task_key``) with the same
  verdict (``metadata.verdict``), and the ``resumed N`` it prints must be the number of tasks saved.
  SIGINT and SIGTERM must exit 130 and 143 with one ``interrupted...`` line on stderr that mentions
  ``--resume`` (or truthfully says that nothing was written) and no traceback; a process the signal
  found already done must exit 0 without a traceback. A process that dies of SIGTERM before verify
  handles the signal (Python start-up: no output, nothing saved or changed) is accepted, as a shell
  reports 143 for it too, and counted in ``kill_outcome_startup``.
* ``counted``: counted means durable. A run through the Python API prints each task key from its
  ``on_result`` callback (called once the task counts as finished, as the summary and the progress
  bar count it) and is stopped at a random moment by SIGKILL, SIGINT or SIGTERM; every key it
  printed must be in its progress file (or its export, when it got that far). ``counted_keys`` is
  how many keys were printed, ``counted_not_durable`` how many of them were missing (must be 0).
* ``faults``: the judge is the simulated OpenAI-compatible server in its own process (``--rate-429
  0.2 --rate-500 0.1 --malformed-rate 0.1``, a seed per case) over HTTP (``interface:
  openai_endpoint``), with the default retry policy or (every other case) few quick retries (2 per
  rate limit, 1 per server error), so that some tasks end with errors; the run is resumed while it exits 3
  (at most 5 rounds). Every task exactly once, verdicts only passed, failed or incomplete, no
  traceback.
* ``two_process``: two runs started together on one ``--output``: one fails before the other ends
  (exit 1, "is in use by another verify run"), the other exits 0 and its export holds every task once.
* ``full_disk`` (root on Linux): the output folder is a small tmpfs, filled but for a random amount
  of free space (half the cases fill it while results are saved, half while the export is
  written); the run must exit non-zero with one ``error:`` line naming the file and how many
  results are safe (which must be how many the progress file holds), no traceback and no hidden
  ``.partial`` file; once the filler is deleted, ``--resume`` completes it. Elsewhere the figure reads
  ``full_disk_cases: skipped (why)``.
* ``secrets``: values planted in an environment variable (``MY_SERVICE_API_KEY``), a preset's
  ``endpoint_api_key``, the password of an ``endpoint_base_url`` and a ``default_headers`` header,
  with a simulated server that answers some requests with a 401 quoting the request's credential
  headers (``--echo-auth-rate``). After ``--show-config``, runs to JSON, CSV and JSONL (stopped by
  SIGTERM, so its progress file stays), a run against a closed port, a refused ``--resume`` with and
  without ``--debug`` and ``save_preset``, every file the runs wrote (exports, progress files, the
  response cache, the saved preset) and every stdout and stderr is searched for each planted value
  (and for the base64 ``user:password`` that HTTP Basic auth sends).

Output: ``name: value`` lines on stdout (``<scenario>_cases``, ``<scenario>_passed`` and a few more per
scenario, then the totals ``cases``, ``passed``, ``failed``, ``lost`` (reference tasks missing from a
final export), ``duplicated`` (task keys found more than once), ``leaked`` (planted value x place
hits) and ``wall_seconds``). Notes, failures (``# FAIL``) and leaks (``# LEAK``) start with ``#`` and go
to stderr. The exit status is 1 when a case failed or anything was lost, duplicated or leaked.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # run as a script or loaded by file path from the tests
    sys.path.insert(0, str(HERE))

from benchgen import server_process  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "verify" / "examples" / "demo" / "demo.jsonld"
ANSWERS = REPO / "verify" / "examples" / "demo" / "answers.json"
DEMO_PRESET = REPO / "verify" / "config" / "presets" / "demo.json"
SCENARIOS = ("kill", "counted", "faults", "two_process", "full_disk", "secrets")
SEED = 12
LATENCY_MS = 80  # per judge call: a reference run takes about 1.5 s, long enough to stop it part-way
WORKERS = 2
TIMEOUT_S = 180.0
MAX_RESUMES = 5
VERDICTS = frozenset({"passed", "judged", "failed", "incomplete"})
STOP_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}
ENV = {**os.environ, "COLUMNS": "1000"}  # wide: a wrapped line could split a value the scan looks for


def report(name: str, value: object) -> None:
    shown = f"{value:.3f}" if isinstance(value, float) else value
    print(f"{name}: {shown}", flush=True)


def say(message: str) -> None:
    print(f"# {message}", file=sys.stderr, flush=True)


def tail(text: str, lines: int = 3) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])


# --------------------------------------------------------------------------- processes


@dataclass(frozen=True)
class Exit:
    """How a process ended: its exit code (negative: the signal that killed it) and output."""

    code: int
    out: str
    err: str
    seconds: float
    signalled: bool = False
    hung: bool = False

    @property
    def traceback(self) -> bool:
        return "Traceback" in self.err


class Process:
    """A started process; its output goes to unnamed temporary files, so no pipe can fill up."""

    def __init__(self, args: Sequence[object], cwd: Path, env: Mapping[str, str] | None = None) -> None:
        self._out = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 - closed by wait()
        self._err = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115
        self.started = time.monotonic()
        self.ended: float | None = None
        self.proc = subprocess.Popen(
            [str(a) for a in args], cwd=cwd, env=dict(env or ENV),
            stdin=subprocess.DEVNULL, stdout=self._out, stderr=self._err,
        )  # fmt: skip

    def poll(self) -> int | None:
        code = self.proc.poll()
        if code is not None and self.ended is None:
            self.ended = time.monotonic()
        return code

    def wait(
        self, *, stop: Callable[[float], bool] | None = None, sig: signal.Signals = signal.SIGTERM,
        timeout: float = TIMEOUT_S,
    ) -> Exit:
        """Wait for the end; ``stop(elapsed seconds)`` True sends ``sig`` (once) while it runs."""
        signalled = hung = False
        while self.poll() is None:
            elapsed = time.monotonic() - self.started
            if stop is not None and not signalled and stop(elapsed):
                self.proc.send_signal(sig)
                signalled = True
            elif elapsed > timeout:
                self.proc.kill()
                self.proc.wait()
                hung = True
            time.sleep(0.005)
        assert self.ended is not None and self.proc.returncode is not None
        texts = []
        for handle in (self._out, self._err):
            handle.seek(0)
            texts.append(handle.read())
            handle.close()
        return Exit(self.proc.returncode, texts[0], texts[1], self.ended - self.started, signalled, hung)


def after(seconds: float) -> Callable[[float], bool]:
    """A ``stop`` for :meth:`Process.wait`: once ``seconds`` have passed."""
    return lambda elapsed: elapsed >= seconds


def verify_cli(*args: object) -> list[object]:
    return [sys.executable, "-m", "verify", *args]


def run_args(preset: Path, output: Path, *extra: object) -> list[object]:
    """A demo run on recorded answers, without the response cache unless ``extra`` sets one."""
    cache = () if "--cache-dir" in extra else ("--no-cache",)
    return verify_cli(DEMO, "--preset", preset, "--answers", ANSWERS, *cache, "--output", output, *extra)


def closed_port() -> int:
    """A loopback port nobody listens on (connections to it are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# --------------------------------------------------------------------------- presets and results


def demo_preset(path: Path, judges: list[dict[str, Any]] | None = None, **config: Any) -> Path:
    """The shipped demo preset, with other judges and config fields; written to ``path``."""
    preset: dict[str, Any] = json.loads(DEMO_PRESET.read_text(encoding="utf-8"))
    preset["name"] = path.stem
    if judges is not None:
        preset["config"]["parsing_models"] = judges
    preset["config"].update(config)
    path.write_text(json.dumps(preset, indent=2), encoding="utf-8")
    return path


def http_judge(url: str, **more: Any) -> dict[str, Any]:
    judge = {"id": "judge", "model_name": "simulated-judge", "interface": "openai_endpoint",
             "endpoint_base_url": url, "temperature": 0.0}  # fmt: skip
    return {**judge, **more}


def fresh(root: Path, name: str) -> Path:
    folder = root / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def progress_of(output: Path) -> Path:
    return output.with_name(output.name + ".progress.jsonl")


def export_records(export: Path) -> list[dict[str, Any]]:
    """The results of a JSON or JSONL export."""
    text = export.read_text(encoding="utf-8")
    if export.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    records: list[dict[str, Any]] = json.loads(text)["results"]
    return records


def saved_keys(progress: Path) -> set[str]:
    """Task keys of the complete result lines of a progress file (the header and a torn line skipped)."""
    keys: set[str] = set()
    if not progress.exists():
        return keys
    for line in progress.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True):
        try:
            data = json.loads(line) if line.endswith("\n") else None
        except ValueError:
            continue
        # karenina's form keeps the task key in verify's own section; an older verify's line, in its metadata
        own = (data.get("verify") or data.get("metadata") or {}) if isinstance(data, dict) else {}
        key = own.get("task_key") if isinstance(own, dict) else None
        if isinstance(key, str):
            keys.add(key)
    return keys


def saved_count(output: Path) -> int:
    """How many tasks a ``--resume`` of ``output`` should find done."""
    if progress_of(output).exists():
        return len(saved_keys(progress_of(output)))
    if output.exists():
        try:
            return len({r["verify"]["task_key"] for r in export_records(output)})
        except (ValueError, KeyError, TypeError):
            return 0
    return 0


def output_state(output: Path) -> tuple[frozenset[str], float | None]:
    """What a run has saved so far: its progress file's task keys and the export's modification time."""
    return frozenset(saved_keys(progress_of(output))), output.stat().st_mtime if output.exists() else None


def resumed(out: str) -> int | None:
    found = re.search(r"resumed (\d+)", out)
    return int(found.group(1)) if found else None


@dataclass(frozen=True)
class Reference:
    """The uninterrupted demo run every case is compared with."""

    preset: Path  # the demo preset with the slowed-down judge
    verdicts: dict[str, str]  # task key -> verdict
    tasks: frozenset[tuple[str, str]]  # (question id, answering model id): the same for any judge
    seconds: float
    export_bytes: int


def reference_run(root: Path, latency_ms: int = LATENCY_MS) -> Reference:
    folder = fresh(root, "reference")
    judge = {"id": "judge", "model_provider": "simulated", "model_name": "simulated-judge",
             "interface": "simulated", "temperature": 0.0, "extra_kwargs": {"latency_ms": latency_ms}}  # fmt: skip
    preset = demo_preset(folder / "slow.json", [judge], async_max_workers=WORKERS)
    out = folder / "reference.json"
    done = Process(run_args(preset, out), folder).wait()
    if done.code != 0:
        raise RuntimeError(f"the reference run failed (exit {done.code}): {tail(done.err)}")
    metas = [{**r["metadata"], **r["verify"]} for r in export_records(out)]  # karenina's and ours
    return Reference(
        preset=preset,
        verdicts={m["task_key"]: m["verdict"] for m in metas},
        tasks=frozenset((m["question_id"], m["answering"]["config_id"]) for m in metas),
        seconds=done.seconds,
        export_bytes=out.stat().st_size,
    )


# --------------------------------------------------------------------------- cases


@dataclass
class Case:
    """One case (a run, or a run and its resumes): what went wrong, and what was lost or duplicated."""

    scenario: str
    label: str
    problems: list[str] = field(default_factory=list)
    lost: int = 0
    duplicated: int = 0
    counts: Counter[str] = field(default_factory=Counter)  # scenario figures (signals sent...)
    seconds: float = 0.0  # two_process: how long the refused run took

    @property
    def passed(self) -> bool:
        return not (self.problems or self.lost or self.duplicated)

    def check_exit(self, what: str, done: Exit, codes: Sequence[int], *, traceback_ok: bool = False) -> None:
        if done.hung:
            self.problems.append(f"{what} hung for {TIMEOUT_S:.0f} s and was killed")
        elif done.code not in codes:
            wanted = " or ".join(map(str, codes))
            self.problems.append(f"{what} exited {done.code}, expected {wanted}: {tail(done.err)}")
        if done.traceback and not traceback_ok:
            self.problems.append(f"{what} printed a traceback: {tail(done.err)}")

    def check_export(self, export: Path, ref: Reference, *, same_judge: bool = True) -> None:
        """Every reference task exactly once; with ``same_judge`` the reference's verdicts, else
        verdicts of the known kinds."""
        try:
            metas = [{**r["metadata"], **r["verify"]} for r in export_records(export)]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            self.problems.append(f"no readable export {export.name}: {type(exc).__name__}: {exc}")
            self.lost += len(ref.tasks)
            return
        keys = Counter(m["task_key"] for m in metas)
        self.duplicated += sum(1 for n in keys.values() if n > 1)
        if same_judge:
            self.lost += len(set(ref.verdicts) - set(keys))
            got = {m["task_key"]: m.get("verdict") for m in metas}
            changed = sorted(k for k, verdict in got.items() if k in ref.verdicts and ref.verdicts[k] != verdict)
            if changed:
                self.problems.append(f"{len(changed)} verdict(s) differ from the reference: {changed[:3]}")
        else:
            tasks = {(m["question_id"], m["answering"]["config_id"]) for m in metas}
            self.lost += len(ref.tasks - tasks)
        extra = {(m["question_id"], m["answering"]["config_id"]) for m in metas} - ref.tasks
        if extra:
            self.problems.append(f"tasks the reference does not have: {sorted(extra)[:3]}")
        odd = Counter(str(m.get("verdict")) for m in metas if m.get("verdict") not in VERDICTS)
        if odd:
            self.problems.append(f"verdicts other than {'/'.join(sorted(VERDICTS))}: {dict(odd)}")

    def check_resumed(self, done: Exit, saved: int) -> None:
        said = resumed(done.out)
        if done.code == 0 and said != saved:
            self.problems.append(f"--resume said 'resumed {said}' but {saved} task(s) were saved")


# --------------------------------------------------------------------------- 1. kill and resume


def check_stop(case: Case, what: str, done: Exit, sig: signal.Signals, changed: bool) -> str:
    """Check how a signalled process ended (``changed``: it saved results or wrote the export);
    returns ``finished``, ``stopped`` or ``startup`` (it died of the signal before verify handled it,
    having changed nothing)."""
    if done.hung:
        case.check_exit(what, done, [0])
        return "stopped"
    if done.code == 0:  # the run was over before the signal, or it came as the process ended
        if done.traceback:
            case.problems.append(f"{what} exited 0 but printed a traceback: {tail(done.err)}")
        return "finished"
    if sig == signal.SIGKILL:
        case.check_exit(what, done, [-signal.SIGKILL])
        return "stopped"
    if done.code == -sig and not done.err.strip() and not changed:
        return "startup"
    case.check_exit(what, done, [STOP_CODES[sig]])
    lines = [line for line in done.err.splitlines() if line.startswith("interrupted")]
    if len(lines) != 1:
        case.problems.append(f"{what}: {len(lines)} 'interrupted' line(s) on stderr: {tail(done.err)}")
    elif "nothing was written" in lines[0]:
        if changed:
            case.problems.append(f"{what}: says {lines[0]!r}, but it saved results")
    elif "--resume" not in done.err:
        case.problems.append(f"{what}: the message does not mention --resume: {tail(done.err)}")
    elif (named := re.search(r"saved in (\S+\.progress\.jsonl)", lines[0])) and not Path(named.group(1)).exists():
        case.problems.append(f"{what}: says {lines[0]!r}, but there is no such file")
    return "stopped"


def kill_case(ref: Reference, folder: Path, sig: signal.Signals, stops: int, rng: random.Random) -> Case:
    """Start a run, stop it with ``sig`` at a random moment, also stop ``stops - 1`` of its resumes,
    then resume it to the end and compare with the reference."""
    case = Case(f"kill_{sig.name.lower()}", f"{sig.name} x{stops}")
    out = folder / "out.json"
    for attempt in range(stops):
        at = rng.uniform(0.0, 1.1 * ref.seconds)  # the end of the run and the exit included
        what = "the run" if attempt == 0 else f"resume {attempt}"
        args = run_args(ref.preset, out, *(["--resume"] if attempt else []))
        before = output_state(out)
        done = Process(args, folder).wait(stop=after(at), sig=sig)
        changed = output_state(out) != before
        outcome = check_stop(case, f"{what} ({sig.name} at {at:.2f} s)", done, sig, changed)
        case.counts["signals_sent"] += done.signalled
        case.counts[f"outcome_{outcome}"] += 1
    saved = saved_count(out)
    final = Process(run_args(ref.preset, out, "--resume"), folder).wait()
    case.check_exit("the last --resume", final, [0])
    case.check_resumed(final, saved)
    case.check_export(out, ref)
    case.counts["stray_files"] += sum(1 for p in folder.iterdir() if p != out)
    return case


def kill_cases(ref: Reference, root: Path, sig: signal.Signals, count: int, rng: random.Random) -> list[Case]:
    """``count`` cases; every other one also stops its first resume."""
    return [kill_case(ref, fresh(root, f"{sig.name.lower()}-{i}"), sig, 1 + i % 2, rng) for i in range(count)]


# --------------------------------------------------------------------------- 1b. counted => durable


def counting_child(preset: Path, output: Path) -> int:
    """The child of a ``counted`` case: a demo run whose ``on_result`` prints each task key counted."""
    sys.path.insert(0, str(REPO))
    from verify.benchmark.jsonld import load_benchmark
    from verify.config.preset import load_preset
    from verify.run.runner import run_verification

    def counted(result: Any) -> None:
        print(json.dumps(result.metadata.task_key), flush=True)  # one write per line

    answers = json.loads(ANSWERS.read_text(encoding="utf-8"))
    run_verification(load_benchmark(DEMO), load_preset(preset), answers=answers, output=output, on_result=counted,
                     keep_results=False)
    return 0


def counted_case(ref: Reference, folder: Path, sig: signal.Signals, rng: random.Random) -> Case:
    """Stop a counting run with ``sig`` at a random moment: every key it counted must be saved."""
    case = Case(f"counted_{sig.name.lower()}", sig.name)
    out = folder / "out.json"
    at = rng.uniform(0.1, 1.0) * ref.seconds
    done = Process([sys.executable, Path(__file__).resolve(), "--counting-child", ref.preset, out], folder).wait(
        stop=after(at), sig=sig)
    counted: set[str] = set()
    for line in done.out.splitlines():
        with contextlib.suppress(ValueError):
            counted.add(json.loads(line))
    durable = saved_keys(progress_of(out))
    if out.exists():
        durable |= {r["verify"]["task_key"] for r in export_records(out)}
    missing = counted - durable
    case.counts["signals_sent"] += done.signalled
    case.counts["keys"] += len(counted)
    case.counts["not_durable"] += len(missing)
    case.lost += len(missing)
    if missing:
        case.problems.append(f"{len(missing)} counted task(s) are in no file after {sig.name} at {at:.2f} s")
    if done.code == 0 and len(counted) != len(ref.verdicts):
        case.problems.append(f"the run finished but counted {len(counted)} of {len(ref.verdicts)} tasks")
    return case


# --------------------------------------------------------------------------- 2. a faulty server


FAULTS = ("--rate-429", "0.2", "--rate-500", "0.1", "--malformed-rate", "0.1")
#: Few quick retries (2 per rate limit, 1 per server error): some tasks end with errors and need --resume.
FEW_RETRIES = {category: {"max_attempts": attempts, "backoff_min": 0.01, "backoff_max": 0.05}
               for category, attempts in (("rate_limit", 2), ("server_error", 1))}  # fmt: skip


def faults_case(ref: Reference, folder: Path, seed: int, *, few_retries: bool) -> Case:
    """A run against a server that fails some requests, resumed while tasks end with errors (exit 3);
    with the default retry policy, or with ``FEW_RETRIES``."""
    case = Case("faults", f"seed {seed}, {'few' if few_retries else 'default'} retries")
    out = folder / "out.json"
    with server_process(*FAULTS, "--seed", seed) as url:
        policy = {"retry_policy": FEW_RETRIES} if few_retries else {}
        preset = demo_preset(folder / "faults.json", [http_judge(url)], **policy)
        for rounds in range(MAX_RESUMES + 1):
            done = Process(run_args(preset, out, *(["--resume"] if rounds else [])), folder).wait()
            case.check_exit(f"round {rounds}", done, [0, 3, 5])  # 5: coverage below --min-coverage 1
            if done.code != 3:
                break
        else:
            case.problems.append(f"still exit 3 (execution errors) after {MAX_RESUMES} resumes")
    case.counts["resumes"] += rounds
    case.check_export(out, ref, same_judge=False)
    if out.exists():
        verdicts = Counter(str(r["verify"].get("verdict")) for r in export_records(out))
        case.counts.update({f"verdict_{v}": n for v, n in verdicts.items()})
    return case


# --------------------------------------------------------------------------- 3. two runs, one output


def two_process_case(ref: Reference, folder: Path) -> Case:
    case = Case("two_process", folder.name)
    out = folder / "out.json"
    runs = [Process(run_args(ref.preset, out), folder) for _ in range(2)]
    while any(run.poll() is None for run in runs):
        if time.monotonic() - runs[0].started > TIMEOUT_S:
            break
        time.sleep(0.005)
    first, second = (run.wait() for run in runs)
    for what, done in (("the first run", first), ("the second run", second)):
        case.check_exit(what, done, [0, 1])
    if sorted((first.code, second.code)) != [0, 1]:
        case.problems.append(f"exits {first.code} and {second.code}: expected one 0 and one 1")
    else:
        winner, loser = (first, second) if first.code == 0 else (second, first)
        if "is in use by another verify run" not in loser.err:
            case.problems.append(f"the refused run does not say the output is in use: {tail(loser.err)}")
        if loser.seconds >= winner.seconds:
            case.problems.append(f"the refused run took {loser.seconds:.1f} s, the other {winner.seconds:.1f} s")
        case.seconds = loser.seconds
    case.check_export(out, ref)
    left = sorted(p.name for p in folder.iterdir() if p != out)
    if left:
        case.problems.append(f"files left next to the export: {left}")
    return case


# --------------------------------------------------------------------------- 4. a full disk


@contextlib.contextmanager
def small_filesystem(path: Path, size_kb: int) -> Iterator[None]:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(path)],
                   check=True, capture_output=True, text=True)  # fmt: skip
    try:
        yield
    finally:
        if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def cannot_mount() -> str | None:
    """Why a small filesystem cannot be mounted here, or None."""
    if not sys.platform.startswith("linux"):
        return f"needs Linux, this is {sys.platform}"
    if os.geteuid() != 0:
        return "needs root to mount a tmpfs"
    if shutil.which("mount") is None or shutil.which("umount") is None:
        return "mount/umount not found"
    return None


SAFE = re.compile(r"(?:all )?(\d+) (?:finished )?result\(s\) are safe")


def full_disk_case(ref: Reference, disk: Path, folder: Path, free_kb: int) -> Case:
    """A run on a disk with ``free_kb`` KB left, then ``--resume`` once the filler is deleted."""
    case = Case("full_disk", f"{free_kb} KB free")
    filler = disk / "filler"
    stat = os.statvfs(disk)
    with filler.open("wb") as handle:
        handle.write(b"\0" * max(0, stat.f_bavail * stat.f_frsize - free_kb * 1024))
    out = folder / "out.json"
    done = Process(run_args(ref.preset, out), folder).wait()
    saved = len(saved_keys(progress_of(out)))
    case.counts["results_safe"] += saved
    if done.code == 0:
        case.problems.append(f"the run completed with {free_kb} KB free: the disk never filled")
    else:
        case.check_exit("the run", done, [1])
        errors = [line for line in done.err.splitlines() if line.startswith("error:")]
        said = SAFE.search(errors[0]) if len(errors) == 1 else None
        if len(errors) != 1:
            case.problems.append(f"{len(errors)} 'error:' line(s) on stderr: {tail(done.err)}")
        elif out.name not in errors[0] or said is None:
            case.problems.append(f"the error does not name the file and the results safe: {errors[0]}")
        elif int(said.group(1)) != saved:
            case.problems.append(f"says {said.group(1)} result(s) are safe, the progress file holds {saved}")
        else:
            case.counts["stopped_in_export" if out.name + ":" in errors[0] else "stopped_in_progress"] += 1
    hidden = sorted(p.name for p in folder.iterdir() if p.name.endswith(".partial"))
    if hidden:
        case.problems.append(f"hidden partial files left: {hidden}")
    filler.unlink()
    final = Process(run_args(ref.preset, out, "--resume"), folder).wait()
    case.check_exit("--resume after freeing space", final, [0])
    case.check_resumed(final, saved)
    case.check_export(out, ref)
    return case


def full_disk_cases(ref: Reference, root: Path, count: int, rng: random.Random) -> list[Case] | str:
    """``count`` cases, or why they cannot run here. The free space is drawn so that the disk fills
    while results are saved (even cases: up to 0.9 of an export's size) or while the export is
    written (odd cases: 1.15 to 1.6 exports, so every result is saved first)."""
    reason = cannot_mount()
    if reason is not None:
        return reason
    disk = root / "disk"
    size_kb = 4 * ref.export_bytes // 1024 + 64
    try:
        with small_filesystem(disk, size_kb):
            cases = []
            for i in range(count):
                share = rng.uniform(0.0, 0.9) if i % 2 == 0 else rng.uniform(1.15, 1.6)  # progress | export
                free_kb = max(8, int(share * ref.export_bytes / 1024) // 4 * 4)
                cases.append(full_disk_case(ref, disk, fresh(disk, f"case-{i}"), free_kb))
                shutil.rmtree(disk / f"case-{i}")
            return cases
    except subprocess.CalledProcessError as exc:
        return f"mount failed: {(exc.stderr or '').strip() or exc}"


# --------------------------------------------------------------------------- 5. planted secrets


@dataclass(frozen=True)
class Planted:
    """A secret planted in the setup, and the forms in which it would show if it leaked."""

    name: str
    value: str
    forms: tuple[str, ...]


@dataclass(frozen=True)
class Leak:
    secret: str  # Planted.name
    place: str  # a file (relative to the work folder) or a step's stdout/stderr


@dataclass(frozen=True)
class SecretsScan:
    cases: list[Case]
    leaks: list[Leak]
    places: int  # files and streams searched
    echoes: int  # places that hold a server reply quoting credentials: the echo was exercised


ENV_NAME = "MY_SERVICE_API_KEY"
URL_USER = "user"
PLANTED = (
    Planted("env", "plantedKEY123", ("plantedKEY123",)),
    Planted("api_key", "plantedAPIKEY555", ("plantedAPIKEY555",)),
    Planted("url_password", "plantedPW987",
            ("plantedPW987", base64.b64encode(f"{URL_USER}:plantedPW987".encode()).decode())),
    Planted("header", "plantedHDR456", ("plantedHDR456",)),
)  # fmt: skip
SECRET = {p.name: p.value for p in PLANTED}
ECHO_MARK = "(simulated echo)"
SAVE_PRESET = (
    "import sys\nfrom verify.config.preset import load_preset, save_preset\n"
    "print(save_preset(load_preset(sys.argv[1]), sys.argv[2], 'planted copy'))"
)
SECRET_STEPS = ("show_config", "run_json", "run_csv", "run_interrupted", "run_unreachable",
                "resume_refused", "resume_refused_debug", "save_preset")  # fmt: skip


def planted_preset(path: Path, url: str, url_port: int | None = None) -> Path:
    """Two judges on the server at ``url``: one with the API key and the custom header, one with
    credentials in its URL (on ``url_port`` if given)."""
    host = url.removeprefix("http://").partition("/")[0]
    if url_port is not None:
        host = f"127.0.0.1:{url_port}"
    keyed = http_judge(url, id="judge-key", endpoint_api_key=SECRET["api_key"],
                       extra_kwargs={"default_headers": {"X-Custom-Auth": SECRET["header"]}})  # fmt: skip
    in_url = http_judge(f"http://{URL_USER}:{SECRET['url_password']}@{host}/v1", id="judge-url")
    return demo_preset(path, [keyed, in_url], async_max_workers=WORKERS)


class Step(NamedTuple):
    args: list[object]
    codes: list[int]  # accepted exit codes
    stop: Callable[[float], bool] | None = None  # when to send SIGTERM


def secret_step(step: str, inputs: dict[str, Path], work: Path) -> Step:
    planted = inputs["planted"]
    cache = ("--cache-dir", work / "cache")
    if step == "show_config":
        return Step(verify_cli(DEMO, "--preset", planted, "--show-config"), [0])
    if step == "run_json":
        return Step(run_args(planted, work / "out.json", *cache), [0, 3])
    if step == "run_csv":
        return Step(run_args(planted, work / "out.csv", *cache), [0, 3])
    if step == "run_interrupted":  # stopped once a result is saved, so its progress file stays
        progress = progress_of(work / "out.jsonl")
        args = run_args(planted, work / "out.jsonl", "--cache-dir", work / "cache-2", "--no-async")
        return Step(args, [143, 0], lambda _: bool(saved_keys(progress)))
    if step == "run_unreachable":
        return Step(run_args(inputs["unreachable"], work / "unreachable.json"), [3])
    if step in ("resume_refused", "resume_refused_debug"):  # the judge's URL moved: another run
        debug = ("--debug",) if step.endswith("debug") else ()
        return Step(run_args(inputs["moved"], work / "out.json", "--resume", *debug), [1])
    if step == "save_preset":
        (work / "saved").mkdir(exist_ok=True)
        return Step([sys.executable, "-c", SAVE_PRESET, planted, work / "saved"], [0])
    raise ValueError(f"unknown step {step!r}; one of {', '.join(SECRET_STEPS)}")


def secrets_scan(root: Path, steps: Sequence[str] = SECRET_STEPS, seed: int = SEED) -> SecretsScan:
    """Run ``steps`` with the planted secrets, then search what they wrote and printed."""
    inputs_dir, work = fresh(root, "inputs"), fresh(root, "work")
    env = {**ENV, ENV_NAME: SECRET["env"]}
    streams: dict[str, str] = {}
    cases = []
    with server_process("--echo-auth-rate", "0.3", "--latency-ms", "20", "--seed", seed) as url:
        inputs = {
            "planted": planted_preset(inputs_dir / "planted.json", url),
            "unreachable": planted_preset(inputs_dir / "unreachable.json", f"http://127.0.0.1:{closed_port()}"),
            "moved": planted_preset(inputs_dir / "moved.json", url, url_port=closed_port()),
        }
        for step in steps:
            case = Case("secrets", step)
            run = secret_step(step, inputs, work)
            done = Process(run.args, work, env).wait(stop=run.stop)
            case.check_exit(step, done, run.codes, traceback_ok=step.endswith("debug"))
            streams[f"{step} stdout"], streams[f"{step} stderr"] = done.out, done.err
            cases.append(case)
    texts = {**place_texts(work), **streams}
    echoes = sum(ECHO_MARK in text for text in texts.values())
    return SecretsScan(cases, find_leaks(texts), len(texts), echoes)


def place_texts(work: Path) -> dict[str, str]:
    """Every file under ``work`` as text (bytes decoded leniently), SQLite files also cell by cell."""
    texts = {}
    for path in sorted(p for p in work.rglob("*") if p.is_file()):
        name = str(path.relative_to(work))
        texts[name] = path.read_bytes().decode("utf-8", "replace")
        if path.suffix in (".sqlite", ".db"):
            texts[f"{name} (cells)"] = sqlite_text(path)
    return texts


def sqlite_text(path: Path) -> str:
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            rows = (row for table in tables for row in db.execute(f'SELECT * FROM "{table}"'))
            return "\n".join(str(cell) for row in rows for cell in row)
    except sqlite3.Error as exc:
        return f"(unreadable: {exc})"


def find_leaks(texts: Mapping[str, str]) -> list[Leak]:
    """Every (planted secret, place) where one of its forms shows, also across wrapped lines."""
    leaks = []
    for place, text in texts.items():
        squeezed = re.sub(r"[\s│┃║]+", "", text)
        leaks += [Leak(p.name, place) for p in PLANTED if any(f in text or f in squeezed for f in p.forms)]
    return leaks


# --------------------------------------------------------------------------- the whole harness


@dataclass(frozen=True)
class Sizes:
    kill_per_signal: int = 10
    faults: int = 4
    two_process: int = 5
    full_disk: int = 4

    @classmethod
    def quick(cls) -> Sizes:
        return cls(kill_per_signal=3, faults=2, two_process=2, full_disk=2)


KILL_SIGNALS = (signal.SIGKILL, signal.SIGINT, signal.SIGTERM)


def scenario_figures(scenario: str, cases: Sequence[Case]) -> None:
    report(f"{scenario}_cases", len(cases))
    report(f"{scenario}_passed", sum(c.passed for c in cases))


#: The counts each scenario reports (summed over its cases), always all of them.
COUNTS = {
    "kill": ("signals_sent", "outcome_stopped", "outcome_finished", "outcome_startup", "stray_files"),
    "counted": ("signals_sent", "keys", "not_durable"),
    "faults": ("resumes", "verdict_passed", "verdict_failed", "verdict_incomplete"),
    "two_process": (),
    "full_disk": ("stopped_in_progress", "stopped_in_export", "results_safe"),
}


def counted(scenario: str, cases: Sequence[Case]) -> None:
    totals: Counter[str] = Counter()
    for case in cases:
        totals.update(case.counts)
    for name in COUNTS[scenario]:
        report(f"{scenario}_{name}", totals[name])


def run_scenario(name: str, ref: Reference, root: Path, sizes: Sizes, seed: int) -> list[Case] | SecretsScan:
    """Run one scenario and print its figures."""
    rng = random.Random(f"{seed}-{name}")
    folder = root / name
    if name == "kill":
        cases = []
        for sig in KILL_SIGNALS:
            some = kill_cases(ref, folder, sig, sizes.kill_per_signal, rng)
            scenario_figures(f"kill_{sig.name.lower()}", some)
            cases += some
        counted("kill", cases)
        return cases
    if name == "counted":
        cases = [counted_case(ref, fresh(folder, f"{sig.name.lower()}-{i}"), sig, rng)
                 for sig in KILL_SIGNALS for i in range(sizes.kill_per_signal)]
    elif name == "faults":
        cases = [faults_case(ref, fresh(folder, f"seed-{i}"), seed + i, few_retries=i % 2 == 1)
                 for i in range(sizes.faults)]  # fmt: skip
    elif name == "two_process":
        cases = [two_process_case(ref, fresh(folder, f"pair-{i}")) for i in range(sizes.two_process)]
    elif name == "full_disk":
        found = full_disk_cases(ref, folder, sizes.full_disk, rng)
        if isinstance(found, str):
            report("full_disk_cases", f"skipped ({found})")
            return []
        cases = found
    else:
        scan = secrets_scan(folder, seed=seed)
        scenario_figures(name, scan.cases)
        report("secrets_values", len(PLANTED))
        report("secrets_places", scan.places)
        report("secrets_echo_places", scan.echoes)
        for planted in PLANTED:
            report(f"secrets_leaked_{planted.name}", sum(leak.secret == planted.name for leak in scan.leaks))
        return scan
    scenario_figures(name, cases)
    counted(name, cases)
    if name == "two_process":
        report("two_process_refused_max_seconds", max((c.seconds for c in cases), default=0.0))
    return cases


@contextlib.contextmanager
def workspace(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        say(f"files kept in {keep}")
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="verify-reliability-") as tmp:
        yield Path(tmp)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 kill cases per signal, fewer of the others")
    parser.add_argument("--only", default=",".join(SCENARIOS), help=f"some of {', '.join(SCENARIOS)}")
    parser.add_argument("--seed", type=int, default=SEED, help="seed of kill delays, free space, servers")
    parser.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it")
    parser.add_argument("--counting-child", nargs=2, type=Path, metavar=("PRESET", "OUTPUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.counting_child:
        return counting_child(*args.counting_child)
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(chosen) - set(SCENARIOS))
    if unknown:
        parser.error(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}")
    sizes = Sizes.quick() if args.quick else Sizes()
    started = time.perf_counter()
    cases: list[Case] = []
    leaks: list[Leak] = []
    with workspace(args.keep) as root:
        ref = reference_run(root)
        say(f"reference run: {len(ref.verdicts)} tasks in {ref.seconds:.2f} s, export {ref.export_bytes} bytes")
        report("reference_seconds", ref.seconds)
        for name in SCENARIOS:
            if name not in chosen:
                continue
            scenario_started = time.perf_counter()
            outcome = run_scenario(name, ref, root, sizes, args.seed)
            found = outcome.cases if isinstance(outcome, SecretsScan) else outcome
            for case in found:
                for problem in case.problems:
                    say(f"FAIL {case.scenario} [{case.label}]: {problem}")
                if case.lost or case.duplicated:
                    say(f"FAIL {case.scenario} [{case.label}]: lost {case.lost}, duplicated {case.duplicated}")
            if isinstance(outcome, SecretsScan):
                leaks += outcome.leaks
                for leak in outcome.leaks:
                    say(f"LEAK {leak.secret} ({SECRET[leak.secret]}) in {leak.place}")
            cases += found
            say(f"{name}: {len(found)} case(s) in {time.perf_counter() - scenario_started:.1f} s")
    passed = sum(c.passed for c in cases)
    report("cases", len(cases))
    report("passed", passed)
    report("failed", len(cases) - passed)
    report("lost", sum(c.lost for c in cases))
    report("duplicated", sum(c.duplicated for c in cases))
    report("leaked", len(leaks))
    report("wall_seconds", time.perf_counter() - started)
    return 0 if passed == len(cases) and not leaks else 1


if __name__ == "__main__":
    sys.exit(main())
