"""Time limits on code from the checkpoint: a stalled regex, callable or template fails only its own
trait or task, with a located reason, and the run goes on; stalled Python code is killed.

The ReDoS input is the user's report: 40 ``a`` then ``!``. ``regex`` already survives their
``^(a+)+$``; ``^(a|aa)+$`` on the same text backtracks for about 12 s under ``re`` (and ``regex``), so
without the limits these tests fail on time rather than hang.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import time

import pytest
from fakes import SIM_ANSWERER, SIM_JUDGE
from test_templates import CAPITAL, bench, run, sim_config

from verify.benchmark.jsonld import Benchmark
from verify.benchmark.question import Question
from verify.benchmark.traits import CallableTrait, RegexTrait, Rubric
from verify.config.verification import VerificationConfig
from verify.results.models import VerificationResult
from verify.run.runner import run_verification
from verify.sandbox import calls
from verify.sandbox.pool import WorkerPool, shared_pool
from verify.templates.answer_base import check_regex
from verify.templates.time_limit import CodeTimeout

LIMIT = 0.5
REDOS_TEXT = "a" * 40 + "!"
REDOS = r"^(a|aa)+$"
LOOP = "def check(text):\n    while True:\n        pass\n"
VERIFY_BODY = 'return self.capital.strip().lower() == self.correct["capital"].lower()'


def b64(source: str) -> str:
    return base64.b64encode(source.encode()).decode()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_dead(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not alive(pid)


def rubric_run(traits: list[object], answers: dict[str, str]) -> dict[str, VerificationResult]:
    questions = [Question(id=qid, text=f"Question {qid}?", raw_answer="x", finished=True) for qid in answers]
    benchmark = Benchmark(name="limits", questions=questions, global_rubric=Rubric(traits=traits))
    config = VerificationConfig(answering_models=[SIM_ANSWERER], parsing_models=[SIM_JUDGE], evaluation_mode="rubric_only")
    outcome = run_verification(benchmark, config, answers={"*": answers}, code_time_limit=LIMIT)
    return {r.metadata.question_id: r for r in outcome.results}


# -- regex traits ----------------------------------------------------------------------------------------


def test_a_redos_regex_trait_is_unscored_on_its_task_and_the_run_goes_on() -> None:
    answers = {f"q{i}": f"answer {i}: aaaa" for i in range(20)}
    answers["q7"] = REDOS_TEXT
    started = time.perf_counter()
    results = rubric_run([RegexTrait(name="format", pattern=REDOS)], answers)
    assert time.perf_counter() - started < 5  # about LIMIT; unlimited, the one answer takes ~12 s
    stalled = results["q7"].rubric
    assert stalled is not None
    outcome = stalled.trait_status["format"]
    assert (outcome.status, outcome.unscored_category) == ("unscored", "code")
    assert outcome.reason == f"question q7, trait 'format': regex timed out after {LIMIT:g} s"
    assert results["q7"].metadata.coverage.unscored == {"format": "code"}
    assert results["q7"].metadata.verdict == "incomplete"
    others = [r for qid, r in results.items() if qid != "q7"]
    assert len(others) == 19
    assert all(r.rubric and r.rubric.trait_status["format"].status == "scored" for r in others)
    assert all(r.rubric and r.rubric.regex_trait_scores == {"format": False} for r in others)


def test_the_reported_pattern_now_finishes_and_keeps_re_semantics() -> None:
    results = rubric_run(
        [RegexTrait(name="nested", pattern=r"^(a+)+$"), RegexTrait(name="word", pattern=r"\bAAA", case_sensitive=False)],
        {"q1": REDOS_TEXT, "q2": "aaa"},
    )
    assert results["q1"].rubric and results["q1"].rubric.regex_trait_scores == {"nested": False, "word": True}
    assert results["q2"].rubric and results["q2"].rubric.regex_trait_scores == {"nested": True, "word": True}


@pytest.mark.parametrize(("pattern", "text"), [
    (r"(a|aa)+", "x aaa ba"), (r"(a)|(b)", "ab"), (r"(a)(x)?", "aa"), (r"a*", "baa"), (r"(\w+)@(\w+)", "a@b c@d"),
])
def test_template_regex_checks_find_what_re_finds(pattern: str, text: str) -> None:
    import re

    from verify.templates.answer_base import findall

    assert findall(pattern, text, 1.0) == re.findall(pattern, text)


def test_an_invalid_pattern_keeps_its_old_behaviour() -> None:
    bad = RegexTrait.model_construct(name="bad", pattern="(", case_sensitive=True, invert_result=False)
    from verify.judging.deterministic import eval_regex

    with pytest.raises(Exception, match="missing \\), unterminated subpattern"):
        eval_regex(bad, "text", 1.0)
    specs = {"bad": {"pattern": "(", "expected": "x", "match_type": "contains"}}
    details = check_regex(specs, "text", timeout=1.0).details["bad"]
    assert details["failure_reason"].startswith("invalid pattern: missing ), unterminated subpattern")


# -- callable traits -----------------------------------------------------------------------------------------


def test_a_callable_that_never_returns_is_unscored_and_its_worker_killed() -> None:
    pool = shared_pool()
    killed_before = len(pool.stats().killed)
    loop = CallableTrait(name="loops", kind="boolean", callable_code=b64(LOOP))
    words = CallableTrait(name="words", kind="score", min_score=0, max_score=100,
                          callable_code=b64("def f(text):\n    return len(text.split())\n"))
    started = time.perf_counter()
    results = rubric_run([loop, words], {"q1": "one two three", "q2": "four five"})
    assert time.perf_counter() - started < 5
    for qid, count in (("q1", 3), ("q2", 2)):
        rubric = results[qid].rubric
        assert rubric is not None
        outcome = rubric.trait_status["loops"]
        assert (outcome.status, outcome.unscored_category) == ("unscored", "code")
        assert outcome.reason == f"question {qid}, trait 'loops': the callable did not finish within {LIMIT:g} s (an endless loop?)"
        assert rubric.callable_trait_scores == {"words": count}
    killed = pool.stats().killed[killed_before:]
    assert len(killed) == 2  # one worker per stalled call, killed
    assert all(wait_dead(pid) for pid in killed)
    assert not set(killed) & set(pool.stats().live)


async def test_a_cancelled_call_kills_its_worker() -> None:
    pool = shared_pool()
    killed_before = len(pool.stats().killed)
    trait = CallableTrait(name="loops", kind="boolean", callable_code=b64(LOOP))
    task = asyncio.create_task(calls.run_callable(trait, "x", timeout=60))
    await asyncio.sleep(0.3)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    deadline = time.monotonic() + 3
    while len(pool.stats().killed) == killed_before and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    (pid,) = pool.stats().killed[killed_before:]
    assert wait_dead(pid)


async def test_a_pool_reuses_its_workers_and_leaves_none_behind() -> None:
    pool = WorkerPool(size=2)
    try:
        assert await pool.call("echo", {"a": [1, "b"]}, timeout=5, what="echo") == {"a": [1, "b"]}
        for _ in range(20):
            await asyncio.gather(*(pool.call("echo", {}, timeout=5, what="echo") for _ in range(3)))
        assert pool.stats().started == 2  # one per thread of the pool, not one per call
        trait = CallableTrait(name="loops", kind="boolean", callable_code=b64(LOOP)).model_dump(mode="json")
        with pytest.raises(CodeTimeout, match="did not finish within 0.2 s"):
            await pool.call("callable", {"trait": trait, "text": ""}, timeout=0.2, what="the callable")
        (killed,) = pool.stats().killed
        assert wait_dead(killed) and killed not in pool.stats().live
        assert await asyncio.gather(*(pool.call("echo", {}, timeout=5, what="echo") for _ in range(3))) == [{}] * 3
        live = pool.stats().live
        assert live and killed not in live
    finally:
        pool.shutdown()
    assert all(wait_dead(pid) for pid in live)


ORPHAN = """
import asyncio, base64
from verify.benchmark.traits import CallableTrait
from verify.sandbox import calls
from verify.sandbox.pool import shared_pool

async def main():
    trait = CallableTrait(name="loops", kind="boolean", callable_code=base64.b64encode(LOOP.encode()).decode())
    task = asyncio.create_task(calls.run_callable(trait, "x", timeout=60))
    while not shared_pool().stats().live:
        await asyncio.sleep(0.01)
    print(*shared_pool().stats().live, flush=True)
    await task

asyncio.run(main())
"""


def test_stalled_code_does_not_outlive_a_killed_run() -> None:
    import signal
    import subprocess
    import sys

    run = subprocess.Popen([sys.executable, "-c", f"LOOP = {LOOP!r}\n{ORPHAN}"], stdout=subprocess.PIPE, text=True)
    assert run.stdout is not None
    pids = [int(p) for p in run.stdout.readline().split()]
    assert pids and all(alive(pid) for pid in pids)
    run.send_signal(signal.SIGKILL)  # no atexit, no cancellation: the worker notices by itself
    run.wait()
    assert all(wait_dead(pid) for pid in pids)


# -- templates --------------------------------------------------------------------------------------------------


def capital(body: str = VERIFY_BODY, extra: str = "") -> str:
    code = CAPITAL.replace(VERIFY_BODY, body)
    return code.replace("    def ground_truth(self):", f"{extra}    def ground_truth(self):") if extra else code


def template_run(codes: dict[str, str], answers: dict[str, str] | None = None) -> dict[str, VerificationResult]:
    questions = [Question(id=qid, text="What is the capital of France?", raw_answer="Paris", template_code=code,
                          finished=True) for qid, code in codes.items()]
    answers = answers or {qid: "The capital of France is Paris." for qid in codes}
    return run(bench(*questions), answers, sim_config("template_only"), code_time_limit=LIMIT)


def test_a_verify_that_loops_forever_fails_only_its_task() -> None:
    pool = shared_pool()
    killed_before = len(pool.stats().killed)
    started = time.perf_counter()
    results = template_run({"ok": CAPITAL, "loops": capital("while True:\n            pass")})
    assert time.perf_counter() - started < 5
    assert results["ok"].passed
    r = results["loops"]
    assert r.template is not None and r.template.verify_result is None
    assert r.template.field_verification_error == (
        f"CodeTimeout: the template's verify() did not finish within {LIMIT:g} s (an endless loop?)")
    assert r.template.parsed_llm_response == {"capital": "Paris"}
    failure = r.metadata.failure
    assert failure is not None and (failure.category, failure.group) == ("field_verification_error", "system")
    assert r.metadata.verdict == "incomplete"
    killed = pool.stats().killed[killed_before:]
    assert len(killed) == 1 and wait_dead(killed[0])


def test_a_ground_truth_that_loops_forever_fails_only_its_task() -> None:
    # compiling runs the ground truth: in the worker only, or this run would never end
    code = CAPITAL.replace('self.correct = {"capital": "Paris"}', "while True:\n            pass")
    results = template_run({"ok": CAPITAL, "loops": code})
    assert results["ok"].passed
    failure = results["loops"].metadata.failure
    assert failure is not None and failure.category == "template_validation"
    assert failure.reason == f"question 'loops': compiling the template did not finish within {LIMIT:g} s (an endless loop?)"


def test_a_validator_that_loops_forever_fails_only_its_task() -> None:
    validator = ('    @field_validator("capital")\n    @classmethod\n    def spin(cls, value):\n'
                 "        while True:\n            pass\n\n")
    code = "from pydantic import field_validator\n" + capital(extra=validator)
    results = template_run({"ok": CAPITAL, "loops": code})
    assert results["ok"].passed
    failure = results["loops"].metadata.failure
    assert failure is not None and (failure.category, failure.stage) == ("parsing", "parse_template")
    assert f"model_post_init did not finish within {LIMIT:g} s" in failure.reason


def test_a_redos_template_regex_check_fails_that_check_and_its_task_only() -> None:
    regex = f'    regex = {{"shape": {{"pattern": r"(?m){REDOS}", "expected": "a", "match_type": "contains"}}}}\n\n'
    code = capital(extra=regex)
    answers = {"ok": "The capital of France is Paris.\naaa", "stalls": "The capital of France is Paris.\n" + REDOS_TEXT}
    started = time.perf_counter()
    results = template_run({"ok": code, "stalls": code}, answers)
    assert time.perf_counter() - started < 5
    assert results["ok"].passed and results["ok"].template is not None
    assert results["ok"].template.regex_validation_results == {"shape": True}
    t = results["stalls"].template
    assert t is not None and t.regex_validation_results == {"shape": False} and t.regex_overall_success is False
    reason = f"question stalls, regex check 'shape': regex timed out after {LIMIT:g} s"
    assert t.regex_validation_details["shape"]["failure_reason"] == reason
    assert t.verify_result is None  # not judged: a timeout never says the answer is wrong
    meta = results["stalls"].metadata
    assert meta.failure is not None and (meta.failure.category, meta.failure.group) == ("field_verification_error", "system")
    assert meta.failure.reason == reason
    assert [(e.stage, e.message) for e in meta.errors] == [("verify_template", reason)]
    assert meta.verdict == "incomplete"


def test_a_redos_regex_check_does_not_hide_a_wrong_answer() -> None:
    regex = f'    regex = {{"shape": {{"pattern": r"(?m){REDOS}", "expected": "a", "match_type": "contains"}}}}\n\n'
    results = template_run({"wrong": capital(extra=regex)}, {"wrong": "The capital of France is Lyon.\n" + REDOS_TEXT})
    meta = results["wrong"].metadata
    assert meta.failure is not None and meta.failure.category == "content"  # verify() said so
    assert "regex timed out" in meta.errors[0].message
