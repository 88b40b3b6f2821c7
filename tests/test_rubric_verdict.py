"""The rubric verdict (issue 14, part 1): weights, required traits, pass thresholds, score ranges.

Each trait is normalised to 0-1, the task gets AgentV's weighted score, and the verdict fails the task
only when the rubric (a trait with weight/required/pass_threshold/score_ranges) or the config
(rubric_pass_threshold) asks for one; a karenina rubric keeps passing as it does in karenina.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fakes import SIM_ANSWERER, SIM_JUDGE, ScriptedModel, honest, make_config, prompt_of, run_pipeline
from peers import karenina_python

from verify.benchmark.jsonld import Benchmark, load_benchmark, save_benchmark
from verify.benchmark.question import Question
from verify.benchmark.traits import CallableTrait, LLMTrait, MetricTrait, RegexTrait, Rubric
from verify.config.verification import VerificationConfig
from verify.errors import ConfigError
from verify.llm.ports import ChatRequest
from verify.results.export import export, load_results
from verify.results.identity import judging_config
from verify.results.karenina_form import to_karenina
from verify.results.models import TraitOutcome, VerificationResult
from verify.results.report import render_plan, render_summary
from verify.results.rubric_verdict import normalise
from verify.run.runner import run_verification

ANSWER = "Paris is the capital of France."
KARENINA_PYTHON = karenina_python()


def judge_saying(values: dict[str, Any]) -> ScriptedModel:
    """A judge that gives each LLM trait the value in ``values`` (a class name for literal traits)."""
    def script(request: ChatRequest) -> str:
        if request.purpose == "rubric_batch":
            return json.dumps({"scores": values})
        if request.purpose == "rubric_literal_batch":
            return json.dumps({"classifications": values})
        return honest(request)
    return ScriptedModel(script)


def boolean(name: str, **kw: Any) -> LLMTrait:
    return LLMTrait(name=name, kind="boolean", description=f"The response is {name}", **kw)


def score(name: str, **kw: Any) -> LLMTrait:
    if "score_ranges" not in kw:  # analytic traits take the 0-10 scale themselves
        kw.setdefault("min_score", 1)
        kw.setdefault("max_score", 5)
    return LLMTrait(name=name, kind="score", description=f"How {name} the response is", **kw)


async def judged(traits: list[Any], values: dict[str, Any], **config: Any) -> VerificationResult:
    return await run_pipeline(traits, ANSWER, judge_saying(values), config=make_config(**config))


# -- normalisation, per kind ---------------------------------------------------------------------------------------


def scored(value: Any) -> TraitOutcome:
    return TraitOutcome(status="scored", score=value)


LITERAL = LLMTrait(name="tone", kind="literal", classes={"rude": "r", "plain": "p", "warm": "w"})
FACTS = MetricTrait(name="facts", tp_instructions=["Paris"], metrics=["precision", "recall"])
LENGTH = CallableTrait(name="length", kind="score", min_score=0, max_score=200, callable_code="eA==")


@pytest.mark.parametrize(("trait", "value", "expected"), [
    (boolean("kind"), True, 1.0),
    (boolean("kind"), False, 0.0),
    (boolean("harmful", higher_is_better=False), True, 0.0),  # true is bad: turned round
    (score("clear"), 1, 0.0),
    (score("clear"), 4, 0.75),  # (s - min) / (max - min)
    (score("clear", higher_is_better=False), 4, 0.25),
    (score("accurate", score_ranges={0: "wrong", 5: "partly", 9: "right"}), 7, 0.7),  # analytic: s / 10
    (LITERAL, 0, 0.0),
    (LITERAL, 1, 0.5),  # class index / (classes - 1)
    (LITERAL, 2, 1.0),
    (FACTS, 0.6, 0.6),  # the headline value as it is
    (RegexTrait(name="cites", pattern="x"), True, 1.0),
    (RegexTrait(name="swears", pattern="x", higher_is_better=False), True, 0.0),
    (LENGTH, 50, 0.25),
])
def test_each_kind_is_normalised_to_0_1_with_higher_is_better(trait: Any, value: Any, expected: float) -> None:
    assert normalise(trait, scored(value)) == pytest.approx(expected)


def test_an_auto_fail_is_0_and_a_trait_not_judged_has_no_value() -> None:
    trait = boolean("grounded")
    assert normalise(trait, TraitOutcome(status="auto_failed")) == 0.0
    assert normalise(trait, TraitOutcome(status="unscored", unscored_category="unparseable")) is None
    assert normalise(trait, None) is None


# -- the weighted score and the verdict ---------------------------------------------------------------------------


async def test_checklist_score_is_satisfied_weight_over_total_weight() -> None:
    traits = [boolean("correct", weight=3.0), boolean("concise", weight=1.0)]
    result = await judged(traits, {"correct": True, "concise": False})
    weighed = result.rubric.rubric_verdict if result.rubric else None
    assert weighed is not None and weighed.score == pytest.approx(0.75)
    assert (weighed.verdict, weighed.threshold) == ("failed", 0.8)  # weights ask for the verdict; 0.75 < 0.8
    assert {n: t.passed for n, t in weighed.traits.items()} == {"correct": True, "concise": False}
    assert result.verdict == "failed"
    failure = result.metadata.failure
    assert failure is not None and (failure.category, failure.group) == ("rubric_threshold", "content")
    assert failure.reason == "rubric score 0.75 < 0.80"


async def test_analytic_score_is_score_over_10_times_weight_over_total_weight() -> None:
    ranges = {0: "wrong", 4: "partly right", 8: "right"}
    traits = [score("accurate", score_ranges=ranges, weight=2.0), boolean("polite")]
    result = await judged(traits, {"accurate": 7, "polite": True})
    assert result.rubric is not None and result.rubric.rubric_verdict is not None
    assert result.rubric.rubric_verdict.score == pytest.approx((0.7 * 2 + 1.0) / 3)  # 0.8: just passes
    assert result.rubric.rubric_verdict.verdict == "passed" and result.verdict == "passed"


async def test_a_failed_required_trait_fails_the_task_whatever_the_score() -> None:
    traits = [boolean("safe", required=True), boolean("a", weight=5.0), boolean("b", weight=5.0)]
    result = await judged(traits, {"safe": False, "a": True, "b": True})
    assert result.rubric is not None and result.rubric.rubric_verdict is not None
    assert result.rubric.rubric_verdict.score == pytest.approx(10 / 11)  # well above 0.8
    assert result.rubric.rubric_verdict.failed_required == ["safe"]
    assert result.verdict == "failed"
    assert result.metadata.failure is not None
    assert result.metadata.failure.category == "required_trait"
    assert result.metadata.failure.reason == "required trait(s) not met: safe (0.00 < 0.80)"


async def test_pass_threshold_is_the_trait_bar_on_its_normalised_score() -> None:
    low_bar = [score("clear", required=True, pass_threshold=0.7)]
    high_bar = [score("clear", required=True, pass_threshold=0.8)]
    ok = await judged(low_bar, {"clear": 4}, rubric_pass_threshold=0.5)  # 4 of 1-5 is 0.75
    bad = await judged(high_bar, {"clear": 4}, rubric_pass_threshold=0.5)
    assert ok.verdict == "passed"
    assert bad.verdict == "failed" and bad.metadata.failure is not None
    assert bad.metadata.failure.category == "required_trait"


async def test_a_karenina_rubric_is_judged_not_failed_and_gets_its_score_recorded() -> None:
    traits = [boolean("correct"), score("clear")]
    result = await judged(traits, {"correct": False, "clear": 2})
    # karenina has no rubric verdict: never failed, and (no rule decided it) never passed either
    assert result.verdict == "judged" and result.metadata.failure is None
    weighed = result.rubric.rubric_verdict if result.rubric else None
    assert weighed is not None and weighed.verdict is None
    assert weighed.score == pytest.approx((0 + 0.25) / 2)
    assert weighed.traits["correct"].passed is False  # recorded, not acted on


async def test_rubric_pass_threshold_in_the_config_asks_every_rubric_for_a_verdict() -> None:
    traits = [boolean("correct"), score("clear")]
    result = await judged(traits, {"correct": False, "clear": 2}, rubric_pass_threshold=0.5)
    assert result.verdict == "failed" and result.metadata.failure is not None
    assert result.metadata.failure.reason == "rubric score 0.12 < 0.50"
    lenient = await judged(traits, {"correct": True, "clear": 2}, rubric_pass_threshold=0.5)
    assert lenient.verdict == "passed"


async def test_a_missing_judgment_makes_the_verdict_incomplete_never_passed() -> None:
    traits = [boolean("correct", weight=2.0), score("clear")]
    result = await judged(traits, {"correct": True, "clear": 9})  # 9 is out of 1-5: unscored
    weighed = result.rubric.rubric_verdict if result.rubric else None
    assert weighed is not None and weighed.verdict == "incomplete" and weighed.score is None
    assert weighed.reason == "not judged: clear"
    assert result.verdict == "incomplete" and result.metadata.failure is None


async def test_a_score_that_cannot_reach_the_bar_fails_even_with_traits_not_judged() -> None:
    traits = [boolean("correct", weight=3.0), score("clear")]
    result = await judged(traits, {"correct": False, "clear": 9})  # at most 0.25 even if clear were 5
    weighed = result.rubric.rubric_verdict if result.rubric else None
    assert weighed is not None and weighed.verdict == "failed"
    assert weighed.reason == "rubric score at most 0.25 (with full marks for the traits not judged) < 0.80"
    assert result.verdict == "failed"


def test_the_template_verdict_comes_first_and_the_rubric_failure_becomes_a_warning() -> None:
    from test_templates import CAPITAL  # a template whose verify() wants Paris

    rubric = Rubric(traits=[boolean("correct", required=True)])
    bench = Benchmark(name="weights", questions=[Question(id="q1", text="What is the capital of France?", raw_answer="Paris",
                                          template_code=CAPITAL, finished=True, rubric=rubric)])
    config = VerificationConfig(answering_models=[SIM_ANSWERER], parsing_models=[SIM_JUDGE],
                                evaluation_mode="template_and_rubric")
    judge = judge_saying({"correct": False})
    (result,) = run_verification(bench, config, answers={"*": {"q1": "Lyon."}}, adapter_factory=lambda m: judge).results
    assert result.metadata.failure is not None and result.metadata.failure.category == "content"
    assert "rubric_evaluation: required trait(s) not met: correct (0.00 < 0.80)" in result.metadata.warnings


# -- score ranges: the judge sees them; bad ones are refused -----------------------------------------------------


async def test_score_ranges_are_rendered_into_the_judge_prompt() -> None:
    judge = judge_saying({"accurate": 10})
    trait = score("accurate", score_ranges=[{"range": [0, 3], "description": "mostly wrong"},
                                            {"range": [4, 9], "description": "right with gaps"},
                                            {"range": [10, 10], "description": "fully right"}])
    await run_pipeline([trait], ANSWER, judge)
    (request,) = judge.requests
    text = prompt_of(request)
    assert 'min="0" max="10"' in text
    assert "- 0-3: mostly wrong\n- 4-9: right with gaps\n- 10: fully right" in text


@pytest.mark.parametrize(("kw", "message"), [
    ({"kind": "score", "score_ranges": [{"range": [0, 5], "description": "a"}, {"range": [5, 10], "description": "b"}]},
     "score_ranges [0, 5] and [5, 10] overlap"),
    ({"kind": "score", "score_ranges": [{"range": [0, 11], "description": "a"}]}, "0 <= lo <= hi <= 10"),
    ({"kind": "boolean", "score_ranges": {0: "a"}}, "score_ranges need kind 'score'"),
    ({"kind": "score", "min_score": 1, "max_score": 5, "score_ranges": {0: "a"}}, "set min_score 0 and max_score 10"),
    ({"kind": "boolean", "weight": 0}, "greater than 0"),
    ({"kind": "boolean", "pass_threshold": 1.5}, "less than or equal to 1"),
])
def test_bad_weighting_is_refused_naming_the_trait(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match="t") as info:
        LLMTrait(name="t", **kw)
    assert message in str(info.value)


def test_a_callable_score_without_bounds_cannot_be_weighed_and_stops_the_run_before_any_call() -> None:
    code = base64.b64encode(b"def evaluate(text):\n    return 3\n").decode()
    trait = CallableTrait(name="count", kind="score", callable_code=code)
    bench = Benchmark(name="weights", questions=[Question(id="q1", text="Q?", raw_answer="a", finished=True,
                                          rubric=Rubric(traits=[trait, boolean("ok", required=True)]))])
    config = VerificationConfig(answering_models=[SIM_ANSWERER], parsing_models=[SIM_JUDGE],
                                evaluation_mode="rubric_only")
    seen: list[VerificationResult] = []
    with pytest.raises(ConfigError, match="question 'q1', trait 'count': a score trait needs min_score"):
        run_verification(bench, config, answers={"*": {"q1": "a"}}, on_result=seen.append)
    assert seen == []


# -- checkpoints: round trip, unchanged karenina checkpoints, karenina loads ours ----------------------------------


def weighted_benchmark() -> Benchmark:
    global_traits = [boolean("safe", required=True), score("clear", weight=2.0, pass_threshold=0.5)]
    own = [score("accurate", weight=3.0, score_ranges={0: "wrong", 5: "partly", 9: "right"}),
           RegexTrait(name="cites", pattern=r"\[\d+\]", weight=0.5),
           MetricTrait(name="facts", tp_instructions=["Paris"], required=True, pass_threshold=0.6)]
    return Benchmark(name="weights", global_rubric=Rubric(traits=global_traits), questions=[
        Question(id="q1", text="What is the capital of France?", raw_answer="Paris", finished=True,
                 rubric=Rubric(traits=own))])


def test_a_checkpoint_keeps_weights_required_thresholds_and_ranges(tmp_path: Path) -> None:
    path = save_benchmark(weighted_benchmark(), tmp_path / "weighted.jsonld")
    again = load_benchmark(path)
    assert again.global_rubric == weighted_benchmark().global_rubric
    assert again.questions[0].rubric == weighted_benchmark().questions[0].rubric
    accurate = again.questions[0].rubric.traits[0] if again.questions[0].rubric else None
    assert isinstance(accurate, LLMTrait) and (accurate.min_score, accurate.max_score, accurate.weight) == (0, 10, 3.0)
    ratings = json.loads(path.read_text())["rating"]
    safe = next(r for r in ratings if r["name"] == "safe")
    assert {"@type": "PropertyValue", "name": "required", "value": True} in safe["additionalProperty"]


def test_a_karenina_checkpoint_is_written_back_without_weighting_properties(tmp_path: Path) -> None:
    demo = Path(__file__).resolve().parents[1] / "verify" / "examples" / "demo" / "demo.jsonld"
    text = save_benchmark(load_benchmark(demo), tmp_path / "copy.jsonld").read_text()
    for name in ("weight", "required", "pass_threshold", "score_ranges"):
        assert f'"name": "{name}"' not in text


def test_score_ranges_without_stored_bounds_are_refused_on_load(tmp_path: Path) -> None:
    path = save_benchmark(weighted_benchmark(), tmp_path / "weighted.jsonld")
    data = json.loads(path.read_text())
    rating = next(r for r in data["dataFeedElement"][0]["item"]["rating"] if r["name"] == "accurate")
    rating["additionalProperty"] = [p for p in rating["additionalProperty"] if p["name"] not in ("min_score", "max_score")]
    path.write_text(json.dumps(data))
    with pytest.raises(Exception, match="score_ranges need min_score 0 and max_score 10"):
        load_benchmark(path)


@pytest.mark.skipif(KARENINA_PYTHON is None, reason="karenina is not importable (set KARENINA_PYTHON)")
def test_karenina_loads_a_checkpoint_with_weights_and_ranges(tmp_path: Path) -> None:
    path = save_benchmark(weighted_benchmark(), tmp_path / "weighted.jsonld")
    code = (
        "import json, sys\nfrom karenina.benchmark import Benchmark\n"
        "b = Benchmark.load(sys.argv[1])\nq = b.get_all_questions(ids_only=False)[0]\n"
        "g = b.get_global_rubric()\nr = b.get_question_rubric(q['id'])\n"
        "names = lambda rub: sorted(t.name for t in [*rub.llm_traits, *rub.regex_traits, *rub.metric_traits])\n"
        "acc = next(t for t in r.llm_traits if t.name == 'accurate')\n"
        "print(json.dumps({'global': names(g), 'question': names(r), 'accurate': [acc.min_score, acc.max_score]}))\n"
    )
    out = subprocess.run([KARENINA_PYTHON, "-c", code, str(path)], capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {
        "global": ["clear", "safe"], "question": ["accurate", "cites", "facts"], "accurate": [0, 10]}


# -- results, summary and plan ---------------------------------------------------------------------------------------


def run_weighted(**config: Any) -> Any:
    bench = Benchmark(name="weights", questions=[Question(id="q1", text="What is the capital of France?", raw_answer="Paris",
                                          finished=True, rubric=Rubric(traits=[boolean("correct", required=True),
                                                                               score("clear", weight=2.0)]))])
    cfg = VerificationConfig(answering_models=[SIM_ANSWERER], parsing_models=[SIM_JUDGE],
                             evaluation_mode="rubric_only", **config)
    judge = judge_saying({"correct": False, "clear": 5})
    return bench, cfg, run_verification(bench, cfg, answers={"*": {"q1": ANSWER}}, adapter_factory=lambda m: judge)


def test_results_hold_the_rubric_verdict_and_karenina_sees_a_content_failure(tmp_path: Path) -> None:
    _, _, outcome = run_weighted()
    (result,) = outcome.results
    form = to_karenina(result)
    assert form["metadata"]["failure"]["category"] == "content"  # karenina's own category for it
    assert form["verify"]["failure"]["category"] == "required_trait"
    assert form["rubric"]["rubric_verdict"]["verdict"] == "failed"
    assert form["rubric"]["rubric_verdict"]["traits"]["clear"] == {
        "normalised": 1.0, "weight": 2.0, "required": False, "pass_at": 0.8, "passed": True}
    export([result], tmp_path / "r.json")
    (back,) = load_results(tmp_path / "r.json")
    assert back.metadata.failure == result.metadata.failure and back.rubric == result.rubric


def test_summary_shows_the_rubric_score_verdicts_and_per_trait_pass(capsys: pytest.CaptureFixture[str]) -> None:
    _, _, outcome = run_weighted()
    assert outcome.summary.by_trait["correct"].passed == 0 and outcome.summary.by_trait["clear"].passed == 1
    render_summary(outcome)
    out = capsys.readouterr().out
    assert ("rubric: mean weighted score 0.667 over 1 task(s); rubric verdict given for 1 task(s): passed 0, "
            "failed 1, incomplete 0") in out
    assert "failures: required_trait 1" in out
    assert "1/1" in out and "0/1" in out  # the by-trait passed column


def test_show_plan_shows_weight_required_and_pass_bar_per_trait(capsys: pytest.CaptureFixture[str]) -> None:
    bench, cfg, _ = run_weighted()
    render_plan(bench, cfg, bench.questions)
    out = capsys.readouterr().out
    assert "rubric verdict: on for 1 of 1 question(s) with rubric traits" in out
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│")]
    assert ["correct", "q1", "1", "yes", "0.80 (rubric's)", "true=1, false=0"] in rows
    assert ["clear", "q1", "2", "no", "0.80 (rubric's)", "(s-1)/4"] in rows
    plain = make_config()
    render_plan(bench, plain.model_copy(update={"rubric_pass_threshold": None}), bench.questions)
    render_plan(Benchmark(name="weights", questions=[Question(id="q2", text="Q?", raw_answer="a", finished=True,
                                              rubric=Rubric(traits=[boolean("x")]))]), plain, [])
    assert "rubric verdict: off (scores only, as in karenina)" in capsys.readouterr().out


def test_rubric_pass_threshold_belongs_to_the_judging_config() -> None:
    assert judging_config(make_config(rubric_pass_threshold=0.7))["rubric_pass_threshold"] == 0.7
    assert judging_config(make_config())["rubric_pass_threshold"] is None
