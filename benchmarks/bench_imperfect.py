"""How verify copes with an imperfect judge: verdicts under the simulated judge's small-model mistakes.

Usage::

    python benchmarks/bench_imperfect.py            # 200 questions, a few seconds
    python benchmarks/bench_imperfect.py --quick    # 30 questions, about a second

The benchmark is the generated one of ``benchgen`` (recorded answers of about 650 characters) with
six LLM traits (3 boolean, 1 score, 2 literal; ``clarity``, ``gives_numbers`` and ``register`` by
deep judgment, the others in the batch calls) and an answer template per question (two integer
fields, abstention and sufficiency checks, template deep judgment); a quarter of the templates
expect a wrong temperature, so template verdicts both pass and fail. It is run once with the
perfect simulated judge and, for each imperfection rate, with the same judge made imperfect
(``extra_kwargs``: ``imperfection_rate``, all behaviours; ``verify.llm.simulated.imperfect``), whose
mistakes change the form of its replies but never the judgment underneath. Printed per rate:

* ``coverage_<rate>``: scored LLM trait evaluations / all LLM trait evaluations;
* ``template_coverage_<rate>``: template verifications that reached a result / all;
* ``agreement_<rate>``: of the tasks whose verdict (the template result, every LLM trait's score or
  auto-fail) was reached under both judges, the share where it equals the perfect judge's (an
  auto-fail for want of a valid quote is a verdict, and a wrong one: the perfect judge's is a score);
* ``trait_agreement_<rate>``: of the trait evaluations scored under both, the share with equal scores;
* ``auto_failed_<rate>``: LLM trait evaluations auto-failed (no quote could be validated);
* ``judge_calls_<rate>``: judge calls made (the perfect judge's count is ``judge_calls_perfect``).

Output lines are ``name: value``; notes start with ``#`` and go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if __package__ in (None, ""):
    sys.path.insert(0, str(HERE.parent))
    sys.path.insert(0, str(HERE))

import benchgen as gen  # noqa: E402
from benchgen import Counted, make_config, simulated  # noqa: E402

from verify.benchmark.jsonld import Benchmark  # noqa: E402
from verify.benchmark.traits import LLMTrait  # noqa: E402
from verify.config.verification import VerificationConfig  # noqa: E402
from verify.llm.ports import Purpose  # noqa: E402
from verify.run.runner import run_verification  # noqa: E402

RATES = (0.0, 0.1, 0.3, 0.5)
SEED = 11
TONE = LLMTrait(
    name="tone",
    kind="literal",
    description="The tone of the response",
    classes={"neutral": "Neutral, factual and impersonal tone", "warm": "Warm, friendly and encouraging tone"},
)
TRAITS: tuple[LLMTrait, ...] = (*gen.TRAITS, TONE)
DEEP = ("clarity", "gives_numbers", "register")
JUDGED = ("scored", "auto_failed")
TEMPLATE = '''from karenina.schemas.entities import BaseAnswer
from pydantic import Field


class Answer(BaseAnswer):
    celsius: int = Field(description="The temperature in degrees Celsius at which the process is run")
    minutes: int = Field(description="How many minutes the process usually takes")

    def ground_truth(self):
        self.correct = {{"celsius": {celsius}, "minutes": {minutes}}}

    def verify(self) -> bool:
        return self.celsius == self.correct["celsius"] and self.minutes == self.correct["minutes"]
'''


CASUAL = "Honestly, this is casual, chatty stuff in informal words: friendly and easy, you'll get the hang of it!"


def answer(i: int) -> str:
    """``benchgen``'s answer, varied so that verdicts differ between questions: without the safety
    sentence, casual, shorter, or without the mechanism."""
    parts = re.split(r"(?<=\.) ", gen.answer_text(i))
    if i % 5 == 2:
        parts[5] = CASUAL
    if i % 7 == 4:
        del parts[3:5]
    if i % 3 == 1:
        del parts[2]
    if i % 6 == 5:
        parts[0] = f"In sample {i}, the procedure is common in many laboratories."
    return " ".join(parts)


def benchmark(n: int) -> tuple[Benchmark, dict[str, dict[str, str]]]:
    """``n`` generated questions, each with a template (every fourth expects a wrong temperature)."""
    bench, _ = gen.generated_benchmark(n, TRAITS)
    for i, question in enumerate(bench.questions):
        celsius = 20 + i % 80 + (5 if i % 4 == 3 else 0)
        question.template_code = TEMPLATE.format(celsius=celsius, minutes=3 + i % 7)
    return bench, {"*": {gen.question_id(i): answer(i) for i in range(n)}}


def config(judge: dict[str, Any]) -> VerificationConfig:
    return make_config(
        judge,
        mode="deep_judgment",
        evaluation_mode="template_and_rubric",
        rubric_evaluation_strategy="batch",
        deep_judgment_rubric_mode="custom",
        deep_judgment_rubric_config={"global": {name: {"enabled": True} for name in DEEP}},
        deep_judgment_mode="full",
        abstention_enabled=True,
        sufficiency_enabled=True,
    )


def judge(rate: float | None) -> dict[str, Any]:
    model = simulated("judge")
    if rate is not None:
        model["extra_kwargs"] = {"imperfection_rate": rate, "seed": SEED}
    return model


@dataclass(frozen=True)
class Run:
    """One run's verdicts: per task, the template result and each LLM trait's (status, score, label)."""

    traits: dict[str, dict[str, tuple[str, Any, str | None]]]
    templates: dict[str, bool | None]
    judge_calls: int
    wall_s: float

    def verdict(self, task: str) -> tuple[Any, ...] | None:
        """The task's verdict: the template result and every trait's outcome (a score, or auto-failed
        like a template without valid excerpts); None when some evaluation was left unjudged."""
        outcomes = self.traits[task]
        if self.templates[task] is None or any(o[0] not in JUDGED for o in outcomes.values()):
            return None
        return (self.templates[task], tuple(sorted((n, *o) for n, o in outcomes.items())))


def run(n: int, rate: float | None) -> Run:
    bench, answers = benchmark(n)
    cfg = config(judge(rate))
    factory = Counted(cfg)
    started = time.perf_counter()
    outcome = run_verification(bench, cfg, answers=answers, adapter_factory=factory)
    wall = time.perf_counter() - started
    llm = {t.name for t in TRAITS}
    traits: dict[str, dict[str, tuple[str, Any, str | None]]] = {}
    templates: dict[str, bool | None] = {}
    for r in outcome.results:
        task = r.metadata.question_id  # one answering model, one judge, no replicates
        status = r.rubric.trait_status if r.rubric else {}
        traits[task] = {
            name: (o.status, o.score, o.label) if (o := status.get(name)) else ("missing", None, None)
            for name in sorted(llm)
        }
        templates[task] = r.template.verify_result if r.template else None
    calls = sum(c for m in factory.models for p, c in m.by_purpose.items() if p is not Purpose.ANSWER)
    return Run(traits, templates, calls, wall)


def ratio(part: int, whole: int) -> float:
    return part / whole if whole else float("nan")


def report(name: str, value: float) -> None:
    print(f"{name}: {value if isinstance(value, int) else f'{value:.3f}'}", flush=True)


def say(message: str) -> None:
    print(f"# {message}", file=sys.stderr, flush=True)


def compare(label: str, perfect: Run, imperfect: Run) -> None:
    evaluations = [(t, n) for t, outcomes in imperfect.traits.items() for n in outcomes]
    scored = [(t, n) for t, n in evaluations if imperfect.traits[t][n][0] == "scored"]
    both = [(t, n) for t, n in scored if perfect.traits[t][n][0] == "scored"]
    same = [(t, n) for t, n in both if perfect.traits[t][n] == imperfect.traits[t][n]]
    reached = [t for t in imperfect.traits if perfect.verdict(t) is not None and imperfect.verdict(t) is not None]
    agree = [t for t in reached if perfect.verdict(t) == imperfect.verdict(t)]
    templates = [t for t, v in imperfect.templates.items() if v is not None]
    report(f"coverage_{label}", ratio(len(scored), len(evaluations)))
    report(f"template_coverage_{label}", ratio(len(templates), len(imperfect.templates)))
    report(f"agreement_{label}", ratio(len(agree), len(reached)))
    report(f"trait_agreement_{label}", ratio(len(same), len(both)))
    report(f"auto_failed_{label}", sum(imperfect.traits[t][n][0] == "auto_failed" for t, n in evaluations))
    report(f"judge_calls_{label}", imperfect.judge_calls)
    say(f"{label}: {len(reached)} of {len(imperfect.traits)} tasks reached a verdict under both judges; "
        f"{imperfect.wall_s:.1f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="30 questions instead of 200")
    args = parser.parse_args(argv)
    logging.getLogger("verify").setLevel(logging.ERROR)  # auto-fail warnings: counted, not printed
    n = 30 if args.quick else 200
    say(f"{n} questions x ({len(TRAITS)} LLM traits, {len(DEEP)} by deep judgment, + a template); "
        f"rates {', '.join(map(str, RATES))}; seed {SEED}")
    started = time.perf_counter()
    perfect = run(n, None)
    report("tasks", len(perfect.traits))
    report("judge_calls_perfect", perfect.judge_calls)
    for rate in RATES:
        compare(f"{rate:g}", perfect, run(n, rate))
    say(f"total {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
