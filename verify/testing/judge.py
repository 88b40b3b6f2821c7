"""Judging one answer from a test: the pytest plugin's fixture and helper (:mod:`verify.testing.pytest_plugin`),
usable from any test runner.

``Judge(config).check(answer, question=..., criteria=[...], assertions=[...])`` runs the answer through
the same stages as ``verify suite.yaml`` (the answer is recorded, so no answering model is called) and
returns a :class:`Judgment`; ``assert_passes`` raises ``AssertionError`` naming each failing trait with
its reason and the quotes found for it. ``check_test(suite, test_id, answer)`` judges an answer against
a test of a suite file. Without a config the judge is the simulated one (offline, deterministic: it
scores criteria by word overlap, so it is for trying the plumbing; deterministic assertions are exact).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.benchmark.assertions import parse_assert_cell
from verify.benchmark.jsonld import Benchmark
from verify.benchmark.question import Question
from verify.benchmark.suite import Suite, load_suite, parse_assertions
from verify.benchmark.traits import Rubric
from verify.config.verification import VerificationConfig
from verify.errors import UserError
from verify.results.findings import TaskFindings, answer_of, findings_of
from verify.results.models import VerificationResult

__all__ = ["Judge", "Judgment", "assert_passes", "offline_config"]

ANSWER_ID = "answer"


def offline_config() -> VerificationConfig:
    """The simulated judge, rubric only: no key, no network."""
    model = {"model_provider": "simulated", "interface": "simulated", "temperature": 0.0}
    return VerificationConfig.model_validate({
        "answering_models": [{**model, "id": "recorded", "model_name": "simulated-answerer"}],
        "parsing_models": [{**model, "id": "judge", "model_name": "simulated-judge"}],
        "evaluation_mode": "rubric_only",
    })


@dataclass(frozen=True)
class Judgment:
    """One answer's verdict: ``passed``, the outcome (passed, failed, incomplete, judged), why, and the result."""

    outcome: str
    findings: TaskFindings
    result: VerificationResult

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    def explain(self) -> str:
        """What a failing assertion prints: the outcome, each finding with its quotes, and the answer."""
        head = f"verify: the answer {self.outcome} ({self.result.metadata.question_id})"
        if self.outcome == "judged":
            head += ": no pass rule decided it (scores only); give a criterion or an assertion"
        return "\n".join([head, *(f"  {line}" for line in self.findings.text().splitlines()),
                          f"  answer: {answer_of(self.result, 300)!r}"])


class Judge:
    """Judges answers with one config (a preset's, or the offline simulated judge)."""

    def __init__(self, config: VerificationConfig | None = None, *, cache_dir: Path | None = None) -> None:
        self.config = config if config is not None else offline_config()
        self.cache_dir = cache_dir

    def check(self, answer: str, *, question: str = "", criteria: Sequence[str] = (),
              assertions: Sequence[dict[str, Any] | str] = (), expected: str | None = None) -> Judgment:
        """``criteria``: outcomes for the judge (required); ``assertions``: ``{type: contains, value: ...}``
        entries or one-line ``contains:Paris`` strings, as in a suite or a CSV cell."""
        entries: list[Any] = list(criteria)
        for item in assertions:
            entries += parse_assert_cell(item) if isinstance(item, str) else [item]
        if not entries:
            raise UserError("nothing to judge the answer by", "give criteria=[...] or assertions=[...]")
        traits = parse_assertions(entries, "verify.testing.Judge.check")
        q = Question(id=ANSWER_ID, text=question or "(no question given)", raw_answer=expected or "",
                     finished=True, rubric=Rubric(traits=list[Any](traits)))
        return self._run(Benchmark(name="pytest", questions=[q]), ANSWER_ID, answer)

    def check_test(self, suite: str | Path, test_id: str, answer: str | None = None) -> Judgment:
        """Judge ``answer`` against test ``test_id`` of a suite or dataset file (see :meth:`check_suite_test`)."""
        return self.check_suite_test(load_suite(suite), test_id, answer)

    def check_suite_test(self, suite: Suite, test_id: str, answer: str | None = None) -> Judgment:
        """Judge ``answer`` against a test of a loaded suite; without ``answer``, the test's recorded
        output, else what the config's answering model answers."""
        ids = [q.id for q in suite.benchmark.questions]
        if test_id not in ids:
            raise UserError(f"{suite.benchmark.source}: no test {test_id!r}", f"use one of: {', '.join(ids[:10])}")
        if answer is None:
            answer = (suite.answers.get("*") or next(iter(suite.answers.values()), {})).get(test_id)
        if answer is None and all(m.interface == "simulated" for m in self.config.answering_models):
            # the offline answerer only echoes the question: judging that would pass or fail a made-up answer
            raise UserError(f"{suite.benchmark.source}: test {test_id!r} has no recorded output to judge",
                            "give the test an output in the suite, pass answer=..., or a preset with a real "
                            "answering model (--verify-preset)")
        return self._run(suite.benchmark, test_id, answer)

    def assert_passes(self, answer: str, **kwargs: Any) -> Judgment:
        """:meth:`check`, raising ``AssertionError`` with the reasons unless the answer passed."""
        __tracebackhide__ = True  # pytest shows the caller's line and the reasons, not this frame
        judgment = self.check(answer, **kwargs)
        if not judgment.passed:
            raise AssertionError(judgment.explain())
        return judgment

    def _run(self, benchmark: Benchmark, question_id: str, answer: str | None) -> Judgment:
        from verify.run.runner import run_verification

        answers = {"*": {question_id: answer}} if answer is not None else {}
        outcome = run_verification(benchmark, self.config, answers=answers,
                                   question_ids=[question_id], cache_dir=self.cache_dir, include_unfinished=True)
        result = outcome.results[0]
        found = findings_of(result)
        return Judgment(found.outcome, found, result)


def assert_passes(answer: str, *, judge: Judge | None = None, **kwargs: Any) -> Judgment:
    """Fail the calling test unless ``answer`` passes (see :meth:`Judge.check` for the keywords)."""
    __tracebackhide__ = True
    return (judge or Judge()).assert_passes(answer, **kwargs)
