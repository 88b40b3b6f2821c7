"""Gates (issue 14, part 3): run-level conditions, parsed without eval, checked at the start, measured at
the end over the whole run and per answering / judge model pair, written to the results header."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import SIM_JUDGE, ScriptedModel, honest, make_config

from verify.benchmark.jsonld import Benchmark
from verify.benchmark.question import Question
from verify.benchmark.traits import LLMTrait, Rubric
from verify.config.gates import parse_gate
from verify.config.verification import VerificationConfig
from verify.errors import ConfigError
from verify.llm.ports import ChatRequest
from verify.results.gates import failed_gates
from verify.results.identity import judging_config, run_identity
from verify.results.report import render_summary
from verify.run.runner import RunOutcome, run_verification

GOOD = {"id": "good", "model_provider": "simulated", "model_name": "good-model", "interface": "simulated"}
BAD = {"id": "bad", "model_provider": "simulated", "model_name": "bad-model", "interface": "simulated"}
GOOD_PAIR = "simulated:good-model (good) / simulated:simulated-judge (judge)"
BAD_PAIR = "simulated:bad-model (bad) / simulated:simulated-judge (judge)"
ANSWERS = {"good": {"q1": "Paris, clearly.", "q2": "Rome, clearly."}, "bad": {"q1": "dunno", "q2": "dunno"}}
TRAITS = [LLMTrait(name="correct", kind="boolean", description="The response is correct"),
          LLMTrait(name="clarity", kind="score", min_score=1, max_score=5, description="How clear it is")]


def bench() -> Benchmark:
    return Benchmark(name="gates", global_rubric=Rubric(traits=TRAITS), questions=[
        Question(id="q1", text="What is the capital of France?", raw_answer="Paris", finished=True),
        Question(id="q2", text="What is the capital of Italy?", raw_answer="Rome", finished=True)])


def judge_script(request: ChatRequest) -> str:
    """Good answers: correct, clarity 5; the others: wrong, clarity 2 (a clarity of 9 when asked to)."""
    if request.purpose != "rubric_batch":
        return honest(request)
    text = "\n".join(m.content for m in request.messages)
    good = "clearly" in text
    return json.dumps({"scores": {"correct": good, "clarity": 5 if good else 2}})


def run(gates: list[Any], tmp_path: Path | None = None, script: Any = judge_script, **config: Any) -> RunOutcome:
    config = {"evaluation_mode": "rubric_only", **config}
    cfg = VerificationConfig(answering_models=[GOOD, BAD], parsing_models=[SIM_JUDGE], gates=gates, **config)
    judge = ScriptedModel(script)
    output = tmp_path / "results.json" if tmp_path else None
    return run_verification(bench(), cfg, answers=ANSWERS, adapter_factory=lambda m: judge, output=output)


# -- the grammar ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("given", "text"), [
    ("pass_rate>=0.9", "pass_rate >= 0.9"),
    ("coverage gt 0.99", "coverage > 0.99"),
    ("rubric_score  <  0.75", "rubric_score < 0.75"),
    ("mean(clarity) >= 4", "mean(clarity) >= 4"),
    ("mean( tone (v2) ) lte 3.5", "mean(tone (v2)) <= 3.5"),
    ("pass_rate eq 1", "pass_rate == 1"),
    ({"metric_key": "rubric_score", "op": "gte", "value": 0.75}, "rubric_score >= 0.75"),  # letta's form
    ({"metric_key": "mean(clarity)", "op": "lt", "value": 2}, "mean(clarity) < 2"),
])
def test_gates_are_read_into_their_canonical_text(given: Any, text: str) -> None:
    assert make_config(gates=[given]).gates == [text]


@pytest.mark.parametrize(("given", "message"), [
    ("pas_rate >= 0.9", "gates[0]: gate 'pas_rate >= 0.9': unknown metric 'pas_rate'; did you mean pass_rate?"),
    ("clarity >= 4", "for a trait's mean write mean(clarity)"),
    ("pass_rate => 0.9", "gate 'pass_rate => 0.9' does not parse: write METRIC OP NUMBER"),
    ("pass_rate >= 90", "pass_rate is a share from 0 to 1, so 90 is out of its range"),
    ("pass_rate >= nan", "'nan' is not a number"),
    ("__import__('os').system('touch pwned') >= 1", "only mean(<trait name>) takes a trait"),  # never evaluated
    ({"metric_key": "pass_rate", "value": 0.9}, "needs exactly metric_key, op and value"),
])
def test_a_bad_gate_is_a_located_config_error_naming_it(given: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        VerificationConfig.from_overrides(make_config(), gates=["coverage >= 0.5", given])
    assert message.replace("gates[0]", "gates[1]") in str(info.value)


@pytest.mark.parametrize(("text", "value", "met"), [
    ("pass_rate >= 0.9", 0.9, True), ("pass_rate >= 0.9", 0.89, False), ("pass_rate > 0.9", 0.9, False),
    ("pass_rate <= 0.1", 0.1, True), ("pass_rate < 0.1", 0.1, False), ("pass_rate == 0.3", 0.1 + 0.2, True),
    ("pass_rate >= 0", None, False),  # nothing measured never meets a gate
])
def test_each_op_compares_as_written(text: str, value: float | None, met: bool) -> None:
    assert parse_gate(text).met(value) is met


# -- checked at the start, before any call --------------------------------------------------------------------------


def test_a_gate_on_an_unknown_trait_stops_the_run_before_any_call() -> None:
    calls: list[ChatRequest] = []

    def script(request: ChatRequest) -> str:
        calls.append(request)
        return judge_script(request)

    with pytest.raises(ConfigError) as info:
        run(["mean(clarty) >= 4"], script=script)
    assert str(info.value).startswith("gate 'mean(clarty) >= 4': no trait 'clarty' in the rubrics of the selected "
                                      "questions; did you mean clarity?")
    assert info.value.hint == "traits: clarity, correct"
    assert calls == []


def test_a_rubric_gate_in_a_run_without_rubrics_is_refused() -> None:
    with pytest.raises(ConfigError, match="gate 'rubric_score >= 0.5': no selected question has a rubric trait"):
        run(["rubric_score >= 0.5"], evaluation_mode="template_only")


# -- measured at the end: whole run and per model pair ------------------------------------------------------------


def test_gates_are_measured_over_the_run_and_per_model_pair() -> None:
    gates = ["pass_rate >= 0.5", "mean(clarity) >= 4", "rubric_score >= 0.75", "coverage >= 0.99"]
    outcome = run(gates, rubric_pass_threshold=0.6)
    results = {g.gate: g for g in outcome.summary.gate_results()}
    assert results["pass_rate >= 0.5"].value == 0.5 and results["pass_rate >= 0.5"].passed
    assert results["pass_rate >= 0.5"].by_model == {GOOD_PAIR: (1.0, True), BAD_PAIR: (0.0, False)}
    assert results["mean(clarity) >= 4"].value == 3.5 and not results["mean(clarity) >= 4"].passed
    assert results["mean(clarity) >= 4"].by_model == {GOOD_PAIR: (5.0, True), BAD_PAIR: (2.0, False)}
    assert results["rubric_score >= 0.75"].value == pytest.approx((1.0 + 0.125) / 2)
    assert results["coverage >= 0.99"].value == 1.0 and results["coverage >= 0.99"].passed
    failed = failed_gates(outcome.summary)  # what the CLI exits 4 on
    assert [g.gate for g in failed] == ["mean(clarity) >= 4", "rubric_score >= 0.75"]
    assert failed[0].line() == (f"gate 'mean(clarity) >= 4' not met: 3.500 ({BAD_PAIR} 2.000, {GOOD_PAIR} 5.000)")


def test_fail_under_as_a_gate_on_the_pass_rate() -> None:
    outcome = run([], rubric_pass_threshold=0.6)
    assert [g.value for g in failed_gates(outcome.summary, ["pass_rate >= 0.9"])] == [0.5]
    assert failed_gates(outcome.summary, ["pass_rate >= 0.5"]) == []
    assert failed_gates(outcome.summary) == []  # the run had no gates


def test_a_metric_with_nothing_to_measure_does_not_meet_its_gate() -> None:
    def out_of_range(request: ChatRequest) -> str:
        if request.purpose == "rubric_batch":
            return json.dumps({"scores": {"correct": True, "clarity": 9}})  # clarity is never scored
        return honest(request)

    outcome = run(["mean(clarity) >= 1", "pass_rate >= 0"], script=out_of_range, rubric_pass_threshold=0.6)
    (clarity, rate) = outcome.summary.gate_results()
    assert (clarity.value, clarity.passed) == (None, False)
    assert (rate.value, rate.passed) == (None, False)  # every task incomplete: no pass rate at all
    assert clarity.line().startswith("gate 'mean(clarity) >= 1' not met: n/a (nothing to measure)")


def test_each_gate_is_in_the_results_header_and_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run(["pass_rate >= 0.9"], tmp_path, rubric_pass_threshold=0.6)
    header = json.loads((tmp_path / "results.json").read_text())["metadata"]
    assert header["gates"] == [{"gate": "pass_rate >= 0.9", "value": 0.5, "passed": False, "by_model": {
        GOOD_PAIR: {"value": 1.0, "passed": True}, BAD_PAIR: {"value": 0.0, "passed": False}}}]
    render_summary(outcome)
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in capsys.readouterr().out.splitlines()
            if line.startswith("│") and "pass_rate >= 0.9" in line]
    assert rows == [["pass_rate >= 0.9", "run", "0.500", "NOT MET"], ["pass_rate >= 0.9", BAD_PAIR, "0.000", "NOT MET"],
                    ["pass_rate >= 0.9", GOOD_PAIR, "1.000", "met"]]


def test_gates_are_not_part_of_the_run_identity() -> None:
    one, other = make_config(gates=["pass_rate >= 0.9"]), make_config(gates=["coverage >= 0.5"])
    assert "gates" not in judging_config(one)
    assert run_identity(bench(), one, "x")["config"] == run_identity(bench(), other, "x")["config"]
    stricter = make_config(rubric_pass_threshold=0.9)
    assert run_identity(bench(), one, "x")["config"] != run_identity(bench(), stricter, "x")["config"]


def test_show_plan_lists_the_gates_and_refuses_a_gate_on_an_unknown_trait(capsys: pytest.CaptureFixture[str]) -> None:
    from verify.results.report import render_plan

    good = make_config(gates=["mean(clarity) >= 4", "pass_rate >= 0.9"], rubric_pass_threshold=0.8)
    render_plan(bench(), good, bench().questions)
    assert "gates: mean(clarity) >= 4; pass_rate >= 0.9 (checked at the end; not met: exit 4)" in capsys.readouterr().out
    with pytest.raises(ConfigError, match="gate 'mean\\(clearness\\) >= 4': no trait 'clearness'"):
        render_plan(bench(), make_config(gates=["mean(clearness) >= 4"]), bench().questions)
