"""Batched rubric deep judgment against per-trait: judge calls, prompt characters, and a quality guard.

Usage::

    python benchmarks/bench_batched.py            # 100 questions, a few seconds
    python benchmarks/bench_batched.py --quick    # 20 questions

The benchmark is ``benchgen``'s (recorded answers of about 650 characters, five LLM traits: 3
boolean, 1 score, 1 literal), every trait by deep judgment with excerpts (``enable_all``), run once
per ``deep_judgment_rubric_strategy``. Printed (``name: value``; notes start with ``#``, on stderr):

* ``calls_per_task_<strategy>`` / ``max_calls_per_task_<strategy>``: rubric deep-judgment judge calls
  per task (mean, max) with the perfect simulated judge (no retries);
* ``prompt_chars_per_task_<strategy>``: characters of every message sent to the judge, per task;
  ``prompt_chars_ratio``: batched / per_trait (target <= 0.40); ``calls_ratio`` likewise;
* the quality guard, with fabricated quotes (``fabricate_rate``) and elided quotes (the imperfect
  judge's ``elide`` behaviour) injected: ``injected_auto_failed_<strategy>`` (trait evaluations
  auto-failed) and ``injected_same_auto_fail_set`` (1 when both strategies auto-fail exactly the same
  (question, trait) pairs);
* on the imperfect judge (all behaviours) at each rate: ``coverage_<rate>_<strategy>`` (scored / all
  trait evaluations) and ``coverage_diff_points_<rate>`` (batched minus per_trait, in points; the
  target is >= -1), with ``calls_per_task_<rate>_<strategy>``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if __package__ in (None, ""):
    sys.path.insert(0, str(HERE.parent))
    sys.path.insert(0, str(HERE))

from benchgen import Counted, generated_benchmark, make_config, simulated  # noqa: E402

from verify.llm.ports import Purpose  # noqa: E402
from verify.run.runner import run_verification  # noqa: E402

STRATEGIES = ("per_trait", "batched")
RATES = (0.1, 0.3, 0.5)
SEED = 11


@dataclass(frozen=True)
class Run:
    outcomes: dict[tuple[str, str], str]  # (question id, trait) -> status
    calls: list[int]  # deep-judgment judge calls per task
    prompt_chars: int

    @property
    def tasks(self) -> int:
        return len(self.calls)


def run(n: int, strategy: str, **judge_extra: Any) -> Run:
    bench, answers = generated_benchmark(n)
    judge = simulated("judge")
    if judge_extra:
        judge["extra_kwargs"] = {"seed": SEED, **judge_extra}
    cfg = make_config(judge, deep_judgment_rubric_strategy=strategy)
    factory = Counted(cfg)
    outcome = run_verification(bench, cfg, answers=answers, adapter_factory=factory)
    outcomes: dict[tuple[str, str], str] = {}
    calls: list[int] = []
    for r in outcome.results:
        for name, o in (r.rubric.trait_status if r.rubric else {}).items():
            outcomes[(r.metadata.question_id, name)] = o.status
        calls.append(r.deep_judgment_rubric.total_deep_judgment_model_calls if r.deep_judgment_rubric else 0)
    chars = sum(len(m.content) for model in factory.models for req in model.requests
                if req.purpose.is_rubric_deep_judgment for m in req.messages)
    return Run(outcomes, calls, chars)


def report(name: str, value: float) -> None:
    print(f"{name}: {value if isinstance(value, int) else f'{value:.3f}'}", flush=True)


def say(message: str) -> None:
    print(f"# {message}", file=sys.stderr, flush=True)


def coverage(r: Run) -> float:
    return sum(s == "scored" for s in r.outcomes.values()) / len(r.outcomes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="20 questions instead of 100")
    args = parser.parse_args(argv)
    logging.getLogger("verify").setLevel(logging.ERROR)  # auto-fail warnings: counted, not printed
    n = 20 if args.quick else 100
    started = time.perf_counter()
    say(f"{n} questions x 5 LLM traits, all by deep judgment with excerpts; seed {SEED}")
    perfect = {s: run(n, s) for s in STRATEGIES}
    report("tasks", perfect["batched"].tasks)
    for s in STRATEGIES:
        r = perfect[s]
        report(f"calls_per_task_{s}", sum(r.calls) / r.tasks)
        report(f"max_calls_per_task_{s}", max(r.calls))
        report(f"prompt_chars_per_task_{s}", round(r.prompt_chars / r.tasks))
    report("calls_ratio", sum(perfect["batched"].calls) / sum(perfect["per_trait"].calls))
    report("prompt_chars_ratio", perfect["batched"].prompt_chars / perfect["per_trait"].prompt_chars)
    report("perfect_same_verdicts", int(perfect["batched"].outcomes == perfect["per_trait"].outcomes))

    injected = {s: run(n, s, fabricate_rate=0.3, imperfection_rate=0.5, imperfections="elide") for s in STRATEGIES}
    failed = {s: {k for k, v in injected[s].outcomes.items() if v == "auto_failed"} for s in STRATEGIES}
    for s in STRATEGIES:
        report(f"injected_auto_failed_{s}", len(failed[s]))
    report("injected_same_auto_fail_set", int(failed["batched"] == failed["per_trait"]))

    for rate in RATES:
        runs = {s: run(n, s, imperfection_rate=rate) for s in STRATEGIES}
        for s in STRATEGIES:
            report(f"coverage_{rate:g}_{s}", coverage(runs[s]))
            report(f"calls_per_task_{rate:g}_{s}", sum(runs[s].calls) / runs[s].tasks)
        report(f"coverage_diff_points_{rate:g}", 100 * (coverage(runs["batched"]) - coverage(runs["per_trait"])))
    say(f"total {time.perf_counter() - started:.1f} s; judge purposes counted: "
        f"{', '.join(p.value for p in Purpose if p.is_rubric_deep_judgment)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
