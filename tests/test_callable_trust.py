"""Callable traits stored as cloudpickle, karenina's only form: run on explicit trust, else skipped.

The checkpoints were written by karenina itself (tests/fixtures/karenina_written/make_fixtures.py),
and ``expected.json`` holds karenina's own ``CallableRubricTrait.evaluate`` on the sample answers,
so "scored as karenina would" is checked against karenina, not against a copy of its rules.
"""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

import pytest
from fakes import SIM_ANSWERER, SIM_JUDGE

from verify.benchmark.jsonld import Benchmark, load_benchmark
from verify.benchmark.question import Question
from verify.benchmark.traits import CallableTrait, Rubric
from verify.config.verification import VerificationConfig
from verify.judging.deterministic import eval_callable, is_pickled, score_callable
from verify.results.models import VerificationResult
from verify.results.report import render_plan, render_summary
from verify.run.runner import RunOutcome, run_verification
from verify.sandbox import calls

WRITTEN = Path(__file__).parent / "fixtures" / "karenina_written"
EXPECTED = json.loads((WRITTEN / "expected.json").read_text(encoding="utf-8"))
ANSWERS: dict[str, str] = EXPECTED["answers"]
FIX = "rerun with --trust-checkpoint-code if you trust this checkpoint"
LIMIT = 0.5


def one_question_per_answer(name: str) -> Benchmark:
    """The fixture's benchmark with its question copied once per sample answer (ids: the labels)."""
    bench = load_benchmark(WRITTEN / name)
    (question,) = bench.questions
    bench.questions = [question.model_copy(update={"id": label}) for label in ANSWERS]
    return bench


def run(bench: Benchmark, trusted: bool, answers: dict[str, str] = ANSWERS) -> RunOutcome:
    config = VerificationConfig(answering_models=[SIM_ANSWERER], parsing_models=[SIM_JUDGE],
                                evaluation_mode="rubric_only", trust_checkpoint_code=trusted)
    return run_verification(bench, config, answers={"*": answers}, code_time_limit=LIMIT)


def by_question(outcome: RunOutcome) -> dict[str, VerificationResult]:
    return {r.metadata.question_id: r for r in outcome.results}


def status(result: VerificationResult) -> dict[str, Any]:
    assert result.rubric is not None
    return result.rubric.trait_status


# -- trusted: scored as karenina scores them -----------------------------------------------------------------


def test_the_fixture_callables_are_karenina_pickles() -> None:
    bench = load_benchmark(WRITTEN / "callables.jsonld")
    assert bench.global_rubric is not None
    traits = bench.global_rubric.of_type(CallableTrait)
    assert [t.name for t in traits] == list(EXPECTED["callables"])
    assert all(is_pickled(t) for t in traits)
    assert [t.kind for t in traits] == ["boolean", "boolean", "score", "literal", "score"]


def test_trusted_run_scores_every_kind_as_karenina_does() -> None:
    results = by_question(run(one_question_per_answer("callables.jsonld"), trusted=True))
    tone_classes = ["formal", "casual", "shouting"]
    for trait, rows in EXPECTED["callables"].items():
        for label, karenina in rows.items():
            outcome = status(results[label])[trait]
            if "value" in karenina:
                assert outcome.status == "scored", (trait, label, outcome.reason)
                assert outcome.score == karenina["value"] and type(outcome.score) is type(karenina["value"])
                if trait == "tone":  # literal: karenina's class index, and the class it names
                    assert outcome.label == tone_classes[karenina["value"]]
            else:  # karenina raised: unscored here, with the reason
                assert (outcome.status, outcome.unscored_category) == ("unscored", "code"), (trait, label)
                assert outcome.reason == "score 60 outside [0, 50]" and "above maximum 50" in karenina["error"]
    plain = results["plain"].rubric
    assert plain is not None and plain.callable_trait_scores == {
        "mentions_paris": True, "no_apology": True, "word_count": 6, "tone": 0, "characters": 31,
    }
    # invert_result: karenina's own value for the apologising answer is False
    assert status(results["apology"])["no_apology"].score is False
    # a score callable without min/max is not range-checked (299 characters)
    assert status(results["long"])["characters"].score == 299
    assert [results[q].metadata.verdict for q in ANSWERS] == ["judged", "judged", "judged", "incomplete"]  # rubric_only: no rule


def test_source_text_callables_still_run_untrusted() -> None:
    source = base64.b64encode(b"def f(text):\n    return len(text.split())\n").decode()
    words = CallableTrait(name="words", kind="score", min_score=0, max_score=10, callable_code=source)
    bench = Benchmark(name="src", questions=[Question(id="q", text="Q?", raw_answer="a", finished=True)],
                      global_rubric=Rubric(traits=[words]))
    (result,) = run(bench, trusted=False, answers={"q": "one two three"}).results
    assert status(result)["words"].score == 3 and result.metadata.verdict == "judged"


# -- untrusted (the default): skipped, and a gap everywhere ----------------------------------------------------


def test_untrusted_run_skips_them_unrun_and_leaves_tasks_incomplete(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []

    async def no_worker(trait: CallableTrait, text: str, timeout: float, **kw: Any) -> Any:
        ran.append(trait.name)
        raise AssertionError("an untrusted pickle must not reach a worker")

    monkeypatch.setattr("verify.stages.rubric.run_callable", no_worker)
    assert VerificationConfig.model_fields["trust_checkpoint_code"].default is False
    outcome = run(one_question_per_answer("callables.jsonld"), trusted=False)
    assert ran == []
    names = list(EXPECTED["callables"])
    for result in outcome.results:
        qid = result.metadata.question_id
        for name in names:
            o = status(result)[name]
            assert (o.status, o.unscored_category, o.score) == ("skipped", "untrusted", None)
            assert o.reason.startswith(f"question {qid}, trait {name!r}: not run: callable_code is a cloudpickle")
            assert o.reason.endswith(FIX)
        assert result.metadata.coverage.unscored == dict.fromkeys(names, "untrusted")
        assert result.metadata.verdict == "incomplete"
        assert result.rubric is not None and result.rubric.callable_trait_scores is None
    s = outcome.summary
    assert (s.passed, s.failed, s.incomplete, s.coverage) == (0, 0, 4, 0.0)
    assert s.coverage_line().endswith("; 20 unscored: 20 untrusted")
    line = s.untrusted_line()
    assert line is not None and line.endswith(FIX)
    assert "5 callable trait(s) stored as cloudpickle, 20 evaluation(s) left unjudged" in line
    assert all(repr(n) in line for n in names)
    assert s.by_trait["tone"].unscored == 4


def test_summary_shows_the_gap_even_when_other_tasks_pass(capsys: pytest.CaptureFixture[str]) -> None:
    """The report's case: the tasks that could be judged are complete (judged: rubric_only has no pass
    rule); the gap must show beside them: an incomplete task, coverage below 1, and a line naming the
    unrun traits."""
    karenina = load_benchmark(WRITTEN / "callables.jsonld")
    assert karenina.global_rubric is not None
    tone = next(t for t in karenina.global_rubric.traits if t.name == "tone")
    source = base64.b64encode(b"def f(text):\n    return bool(text)\n").decode()
    answered = CallableTrait(name="answered", callable_code=source)
    bench = Benchmark(name="mixed", global_rubric=Rubric(traits=[answered]), questions=[
        Question(id="plain", text="Q?", raw_answer="a", finished=True),
        Question(id="pickled", text="Q?", raw_answer="a", finished=True, rubric=Rubric(traits=[tone])),
    ])
    outcome = run(bench, trusted=False, answers={"plain": "yes", "pickled": "yes"})
    s = outcome.summary
    assert (s.passed, s.judged_tasks, s.incomplete, s.has_pass_rule) == (0, 1, 1, False)
    assert (s.judged, s.evaluations) == (2, 3) and dict(s.untrusted) == {"tone": 1}
    render_summary(outcome)
    out = capsys.readouterr().out
    assert "coverage: judged 2 of 3 evaluations (66.7%" in out and "1 unscored: 1 untrusted" in out
    assert f"not run (untrusted code): 1 callable trait(s) stored as cloudpickle, 1 evaluation(s) left unjudged: 'tone'; {FIX}" in out
    assert "passed 0 | judged (no pass rule) 1 | failed 0 | incomplete 1" in out


def test_show_plan_says_which_traits_will_not_run(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_benchmark(WRITTEN / "callables.jsonld")
    for trusted in (False, True):
        config = VerificationConfig(answering_models=[SIM_ANSWERER], parsing_models=[SIM_JUDGE],
                                    evaluation_mode="rubric_only", trust_checkpoint_code=trusted)
        render_plan(bench, config, bench.questions)
        out = capsys.readouterr().out
        rows = [line for line in out.splitlines() if "callable (cloudpickle)" in line]
        assert len(rows) == 5
        names = "'mentions_paris', 'no_apology', 'word_count', 'tone', 'characters'"
        if trusted:
            assert all("runs in a worker (trusted)" in r for r in rows) and FIX not in out
            assert f"note: 5 callable trait(s) stored as cloudpickle will be unpickled and run in worker processes (--trust-checkpoint-code): {names}" in out
        else:
            assert all("skipped: untrusted" in r for r in rows)
            assert (f"warning: 5 callable trait(s) stored as cloudpickle will not run and count as not judged "
                    f"(their tasks end incomplete): {names}; {FIX}") in out


# -- trusted, but the code misbehaves ----------------------------------------------------------------------------


def test_a_looping_raising_or_wrong_typed_callable_is_unscored_and_the_run_goes_on() -> None:
    bench = load_benchmark(WRITTEN / "failing_callables.jsonld")
    (question,) = bench.questions
    bench.questions = [question.model_copy(update={"id": qid}) for qid in ("q1", "q2")]
    started = time.perf_counter()
    results = by_question(run(bench, trusted=True, answers={"q1": "Paris.", "q2": "It is Paris."}))
    assert time.perf_counter() - started < 10  # the endless loop was stopped at LIMIT, per task
    for qid, result in results.items():
        got = status(result)
        loops = got["loops_forever"]
        assert (loops.status, loops.unscored_category) == ("unscored", "code")
        assert loops.reason == (f"question {qid}, trait 'loops_forever': the callable did not finish within "
                                f"{LIMIT:g} s (an endless loop?)")
        assert (got["raises"].status, got["raises"].reason) == ("unscored", "callable failed: ValueError: no verdict for this text")
        assert EXPECTED["failing_callables"]["raises"]["plain"]["error"].endswith("no verdict for this text")
        assert (got["says_yes"].status, got["says_yes"].reason) == ("unscored", "boolean callable returned str, not bool")
        assert (got["has_text"].status, got["has_text"].score) == ("scored", True)
        assert result.metadata.verdict == "incomplete"
        assert set(result.metadata.coverage.unscored) == {"loops_forever", "raises", "says_yes"}


async def test_the_worker_unpickles_only_when_told_to_trust() -> None:
    bench = load_benchmark(WRITTEN / "callables.jsonld")
    assert bench.global_rubric is not None
    tone = next(t for t in bench.global_rubric.of_type(CallableTrait) if t.name == "tone")
    refused = await calls.run_callable(tone, "HELLO", timeout=5)
    assert refused.score is None and refused.reason is not None and refused.reason.endswith(FIX)
    trusted = await calls.run_callable(tone, "HELLO", timeout=5, trusted=True)
    assert (trusted.score, trusted.label, trusted.reason) == (2, "shouting", None)
    # in the run's own process a pickle is never unpickled, trusted or not
    assert eval_callable(tone, "HELLO").reason == f"callable failed: ValueError: {refused.reason.removeprefix('callable failed: ValueError: ')}"
    bad = tone.model_copy(update={"callable_code": base64.b64encode(b"\x80\x05not a pickle").decode()})
    broken = await calls.run_callable(bad, "x", timeout=5, trusted=True)
    assert broken.score is None and broken.reason is not None
    assert broken.reason.startswith("callable_code could not be unpickled (")


@pytest.mark.parametrize(("trait", "value", "score", "reason"), [
    (CallableTrait(name="b", invert_result=True), True, False, None),
    (CallableTrait(name="b"), 1, None, "boolean callable returned int, not bool"),
    (CallableTrait(name="s", kind="score", max_score=3), -40, -40, None),  # only the bound that is set
    (CallableTrait(name="s", kind="score", max_score=3), 3.5, None, "score 3.5 outside [None, 3]"),
    (CallableTrait(name="s", kind="score"), True, True, None),  # karenina: a bool is an int
    (CallableTrait(name="s", kind="score"), float("nan"), None, "score callable returned nan, not a finite number"),
    (CallableTrait(name="l", kind="literal", classes={"a": "A", "b": "B"}), "b", 1, None),
    (CallableTrait(name="l", kind="literal", classes={"a": "A", "b": "B"}), 1, None, "literal callable returned int, not str"),
])
def test_score_callable_follows_karenina(trait: CallableTrait, value: Any, score: Any, reason: str | None) -> None:
    verdict = score_callable(trait, value)
    assert (verdict.score, verdict.reason) == (score, reason)
    assert type(verdict.score) is type(score)
