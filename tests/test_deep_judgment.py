"""Deep judgment for rubric traits: evidence, retries, absence criteria, search, auto-fail, cost."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pytest
from fakes import (
    ScriptedModel,
    honest,
    make_config,
    prompt_of,
    run_pipeline,
    run_rubric,
    simulated_judge,
)

from verify.benchmark.traits import LLMTrait, RegexTrait
from verify.config.deep_judgment import TraitDJSettings
from verify.config.verification import VerificationConfig
from verify.errors import ModelError
from verify.judging.consistency import is_absence_criterion
from verify.judging.deep_judgment import TraitContext, judge_trait
from verify.llm.adapters.tavily import make_search
from verify.llm.ports import ChatRequest
from verify.llm.simulated import brain
from verify.llm.simulated.search import SimulatedSearch
from verify.results.models import VerificationResult
from verify.results.reasons import CONTRADICTION
from verify.run.runner import run_verification

BOILING_Q = "At what temperature does pure water boil at sea level?"
BOILING = (
    "Pure water boils at 100 degrees Celsius (212 degrees Fahrenheit) at sea level. "
    "At that altitude the atmospheric pressure is 1 atm, so the boiling point is reached at 100 degrees."
)
CLARITY = LLMTrait(name="clarity", kind="score", min_score=1, max_score=5,
                   description="The response is clear, well organized and easy to understand")
STATES_FACT = LLMTrait(name="states_fact", kind="boolean",
                       description="The response states a concrete fact that answers the question")
NO_ANTIBIOTICS = LLMTrait(name="no_antibiotics", kind="boolean", description="Does not recommend antibiotics")
BOILING_POINT = LLMTrait(name="boiling_point", kind="boolean", description="Mentions the boiling point")
FABRICATE = brain.Faults(fabricate_excerpts=1.0)

SEED_003_SECTION_FIELDS = {
    "deep_judgment_rubric_performed", "extracted_rubric_excerpts", "rubric_trait_reasoning",
    "deep_judgment_rubric_scores", "standard_rubric_scores", "trait_metadata", "traits_without_valid_excerpts",
    "rubric_hallucination_risk_assessment", "total_deep_judgment_model_calls", "total_traits_evaluated",
    "total_excerpt_retries",
}
SEED_003_TRAIT_FIELDS = {"stages_completed", "model_calls", "had_excerpts", "excerpt_retry_count",
                         "excerpt_validation_failed"}


def dj_config(**kw: Any) -> VerificationConfig:
    return make_config(**{"deep_judgment_rubric_mode": "enable_all", **kw})


def search_config(**kw: Any) -> VerificationConfig:
    return dj_config(deep_judgment_rubric_search_enabled=True, deep_judgment_rubric_search_tool="simulated", **kw)


def by_purpose(script: dict[str, Any]) -> Any:
    """A script from purpose -> reply (a value, a list consumed in order, or a callable)."""
    queues = {k: list(v) for k, v in script.items() if isinstance(v, list)}

    def reply(request: ChatRequest) -> Any:
        if request.purpose in queues:
            queue = queues[request.purpose]
            item = queue.pop(0) if len(queue) > 1 else queue[0]
        else:
            item = script[request.purpose]
        if callable(item):
            item = item(request)
        return item if isinstance(item, str | BaseException) else json.dumps(item)

    return reply


# -- honest evidence -------------------------------------------------------------------------------


async def test_honest_quotes_are_validated_with_offsets() -> None:
    state, deps = await run_rubric([CLARITY], BOILING, simulated_judge(), config=dj_config(), question=BOILING_Q)
    dj, section = state.deep_judgment_rubric, state.rubric
    assert dj is not None and section is not None
    outcome = section.trait_status["clarity"]
    assert outcome.status == "scored" and isinstance(outcome.score, int) and 1 <= outcome.score <= 5
    assert dj.deep_judgment_rubric_performed is True
    assert dj.deep_judgment_rubric_scores == {"clarity": outcome.score}
    assert section.llm_trait_scores == {"clarity": outcome.score}
    excerpts = dj.extracted_rubric_excerpts["clarity"]
    assert excerpts
    for e in excerpts:
        assert e.similarity_score == 1.0
        assert BOILING[e.start:e.end] == e.text
        assert e.match_method == "exact"
    meta = dj.trait_metadata["clarity"]
    assert meta.model_calls == 3
    assert meta.excerpt_retry_count == 0 and dj.total_excerpt_retries == 0
    assert meta.had_excerpts is True and meta.excerpt_validation_failed is False
    assert meta.evidence == "excerpts"
    assert meta.stages_completed == ["excerpt_extraction", "reasoning_generation", "score_extraction"]
    assert meta.settings["max_excerpts"] == 7 and meta.settings["source"] == "enable_all"
    assert dj.traits_without_valid_excerpts == []
    assert dj.rubric_trait_reasoning["clarity"]
    assert dj.total_deep_judgment_model_calls == 3 and dj.total_traits_evaluated == 1
    assert dj.rubric_hallucination_risk_assessment is None
    assert [(r.purpose, r.trait) for r in deps.judge.records] == [
        ("dj_excerpts", "clarity"), ("dj_reasoning", "clarity"), ("dj_score", "clarity"),
    ]


async def test_reasoning_is_asked_with_the_numbered_evidence() -> None:
    judge = ScriptedModel(honest)
    state, _ = await run_rubric([CLARITY], BOILING, judge, config=dj_config(), question=BOILING_Q)
    assert state.deep_judgment_rubric is not None
    first = state.deep_judgment_rubric.extracted_rubric_excerpts["clarity"][0].text
    (reasoning,) = judge.for_purpose("dj_reasoning")
    assert f"[E1] {first}" in prompt_of(reasoning)
    (score,) = judge.for_purpose("dj_score")
    assert state.deep_judgment_rubric.rubric_trait_reasoning["clarity"] in prompt_of(score)


async def test_model_calls_count_three_per_trait_for_several_traits() -> None:
    state, _ = await run_rubric([CLARITY, STATES_FACT], BOILING, simulated_judge(), config=dj_config())
    dj = state.deep_judgment_rubric
    assert dj is not None
    assert {n: m.model_calls for n, m in dj.trait_metadata.items()} == {"clarity": 3, "states_fact": 3}
    assert dj.total_deep_judgment_model_calls == 6 and dj.total_traits_evaluated == 2


async def test_search_adds_one_call_and_a_risk_assessment() -> None:
    search = SimulatedSearch()
    state, deps = await run_rubric([CLARITY], BOILING, simulated_judge(), config=search_config(), search=search,
                                   question=BOILING_Q)
    dj = state.deep_judgment_rubric
    assert dj is not None and state.rubric is not None
    assert state.rubric.trait_status["clarity"].status == "scored"
    meta = dj.trait_metadata["clarity"]
    assert meta.model_calls == 4 and meta.excerpt_retry_count == 0
    assert meta.stages_completed == ["excerpt_extraction", "hallucination_assessment", "reasoning_generation",
                                     "score_extraction"]
    excerpts = dj.extracted_rubric_excerpts["clarity"]
    assert search.calls == len(excerpts)
    assert all(e.search_results for e in excerpts)  # the corpus has the boiling-point snippet
    assert all(e.hallucination_risk in {"none", "low", "medium", "high"} for e in excerpts)
    risk = (dj.rubric_hallucination_risk_assessment or {})["clarity"]
    assert risk.assessed is True and risk.overall_risk in {"none", "low", "medium", "high"}
    assert risk.per_excerpt_risks == [e.hallucination_risk for e in excerpts]
    assert [r.purpose for r in deps.judge.records].count("dj_hallucination") == 1


@pytest.mark.parametrize("search", [SimulatedSearch(fail=True), make_search(lambda q: 1 / 0)],
                         ids=["simulated-fail", "raising-callable"])
async def test_failing_search_is_not_assessed_and_trait_still_scored(search: Any) -> None:
    state, _ = await run_rubric([CLARITY], BOILING, simulated_judge(), config=search_config(), search=search,
                                question=BOILING_Q)
    dj = state.deep_judgment_rubric
    assert dj is not None and state.rubric is not None
    assert state.rubric.trait_status["clarity"].status == "scored"
    risk = (dj.rubric_hallucination_risk_assessment or {})["clarity"]
    assert risk.overall_risk == "not_assessed" and risk.assessed is False
    assert risk.note is not None and "search failed" in risk.note
    assert dj.trait_metadata["clarity"].model_calls == 3  # no risk call without search results
    assert all(e.search_results is None for e in dj.extracted_rubric_excerpts["clarity"])
    assert dj.traits_without_valid_excerpts == []


async def test_without_excerpts_two_calls_and_no_evidence() -> None:
    search = SimulatedSearch()
    judge = ScriptedModel(honest)
    config = dj_config(deep_judgment_rubric_global_excerpts=False, deep_judgment_rubric_search_enabled=True,
                       deep_judgment_rubric_search_tool="simulated")
    state, _ = await run_rubric([CLARITY], BOILING, judge, config=config, search=search)
    dj = state.deep_judgment_rubric
    assert dj is not None and state.rubric is not None
    assert state.rubric.trait_status["clarity"].status == "scored"
    meta = dj.trait_metadata["clarity"]
    assert meta.model_calls == 2
    assert judge.purposes() == ["dj_reasoning", "dj_score"]
    assert meta.stages_completed == ["reasoning_generation", "score_extraction"]
    assert meta.had_excerpts is False and meta.excerpt_retry_count == 0
    assert dj.extracted_rubric_excerpts == {}
    assert "<evidence>" not in prompt_of(judge.requests[0])
    assert search.calls == 0
    assert dj.traits_without_valid_excerpts == []


# -- fabricated evidence -----------------------------------------------------------------------------


@pytest.mark.parametrize("retries", [0, 1, 2, 4])
async def test_fabricated_quotes_auto_fail_after_retries(retries: int) -> None:
    judge = ScriptedModel(lambda r: honest(r, FABRICATE))
    config = dj_config(deep_judgment_rubric_excerpt_retry_attempts_default=retries)
    state, deps = await run_rubric([CLARITY], BOILING, judge, config=config)
    dj, section = state.deep_judgment_rubric, state.rubric
    assert dj is not None and section is not None
    outcome = section.trait_status["clarity"]
    assert outcome.status == "auto_failed" and outcome.score is None
    assert dj.traits_without_valid_excerpts == ["clarity"]
    assert dj.deep_judgment_rubric_scores == {} and section.llm_trait_scores is None
    meta = dj.trait_metadata["clarity"]
    assert meta.excerpt_retry_count == retries and dj.total_excerpt_retries == retries
    assert meta.excerpt_validation_failed is True and meta.evidence == "failed"
    # only excerpt calls: no reasoning or score call after evidence failed
    assert judge.purposes() == ["dj_excerpts"] * (retries + 1)
    assert meta.model_calls == retries + 1 == dj.total_deep_judgment_model_calls
    assert meta.stages_completed == ["excerpt_extraction"]
    assert {r.attempt for r in meta.rejected_excerpts} == set(range(1, retries + 2))
    assert all(BOILING.find(r.text) == -1 for r in meta.rejected_excerpts)
    # each retry prompt names the quotes rejected on the attempt before
    for attempt, request in enumerate(judge.requests[1:], start=1):
        rejected = [r.text for r in meta.rejected_excerpts if r.attempt == attempt]
        assert rejected
        assert all(f'"{text}"' in prompt_of(request) for text in rejected)
        assert "<retry_feedback>" in prompt_of(request)
    assert "<retry_feedback>" not in prompt_of(judge.requests[0])


async def test_fabricating_simulated_model_auto_fails_the_trait() -> None:
    judge = simulated_judge(fabricate_rate=1.0)
    state, _ = await run_rubric([CLARITY, STATES_FACT], BOILING, judge, config=dj_config())
    dj = state.deep_judgment_rubric
    assert dj is not None
    assert sorted(dj.traits_without_valid_excerpts) == ["clarity", "states_fact"]
    assert all(m.excerpt_retry_count == 2 and m.model_calls == 3 for m in dj.trait_metadata.values())
    assert dj.total_excerpt_retries == 4 and dj.total_deep_judgment_model_calls == 6 == judge.calls
    assert dj.deep_judgment_rubric_scores == {}


async def test_auto_fail_stage_fails_the_task_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    regex = RegexTrait(name="has_number", pattern=r"\d+")
    with caplog.at_level(logging.WARNING, logger="verify"):
        result = await run_pipeline([CLARITY, STATES_FACT, regex], BOILING, simulated_judge(fabricate_rate=1.0),
                                    config=dj_config(deep_judgment_rubric_mode="custom",
                                                     deep_judgment_rubric_config={"global": {"clarity": {}}}))
    failure = result.metadata.failure
    assert failure is not None and result.passed is False
    assert failure.category == "deep_judgment_rubric"
    assert failure.stage == "deep_judgment_rubric_auto_fail"
    assert failure.group == "autofail"
    assert "clarity (2 retries)" in failure.reason
    assert any("clarity" in w and "2 retries" in w for w in result.metadata.warnings)
    assert "clarity (2 retries)" in caplog.text
    assert result.metadata.stages == ["generate_answer", "rubric_evaluation", "deep_judgment_rubric_auto_fail",
                                      "finalize_result"]
    assert result.metadata.errors == []
    # other traits were still evaluated
    assert result.rubric is not None
    assert result.rubric.trait_status["states_fact"].status == "scored"
    assert result.rubric.regex_trait_scores == {"has_number": True}
    usage = result.template.usage_metadata if result.template else {}
    assert usage["deep_judgment_rubric"].calls == 3


async def test_honest_task_passes_through_the_pipeline() -> None:
    result = await run_pipeline([CLARITY, STATES_FACT], BOILING, simulated_judge(), config=dj_config())
    assert result.verdict == "judged" and result.metadata.failure is None  # rubric_only: no pass rule
    assert "deep_judgment_rubric_auto_fail" not in result.metadata.stages
    assert result.deep_judgment_rubric is not None
    assert result.deep_judgment_rubric.total_deep_judgment_model_calls == 6


async def test_abstention_skips_the_auto_fail_stage() -> None:
    result = await run_pipeline([CLARITY], BOILING, simulated_judge(fabricate_rate=1.0), config=dj_config(),
                                abstention_detected=True)
    assert result.deep_judgment_rubric is not None
    assert result.deep_judgment_rubric.traits_without_valid_excerpts == ["clarity"]
    assert "deep_judgment_rubric_auto_fail" not in result.metadata.stages
    assert result.metadata.failure is None or result.metadata.failure.category != "deep_judgment_rubric"


async def test_fabricated_then_real_quote_passes_on_retry() -> None:
    real = "Pure water boils at 100 degrees Celsius (212 degrees Fahrenheit) at sea level."
    fake = "Pure water boils at 90 degrees Celsius at sea level according to a 2019 review."
    judge = ScriptedModel(by_purpose({
        "dj_excerpts": [{"excerpts": [{"text": fake, "confidence": "high"}]},
                        {"excerpts": [{"text": real, "confidence": "high"}]}],
        "dj_reasoning": "The answer states the boiling point clearly [E1].",
        "dj_score": {"score": 4},
    }))
    result = await run_pipeline([CLARITY], BOILING, judge, config=dj_config())
    dj = result.deep_judgment_rubric
    assert dj is not None and result.rubric is not None
    assert result.verdict == "judged"  # complete, no pass rule
    assert result.rubric.trait_status["clarity"].score == 4
    meta = dj.trait_metadata["clarity"]
    assert meta.excerpt_retry_count == 1 and dj.total_excerpt_retries == 1
    assert meta.model_calls == 4
    assert [(r.text, r.attempt) for r in meta.rejected_excerpts] == [(fake, 1)]
    (excerpt,) = dj.extracted_rubric_excerpts["clarity"]
    assert excerpt.text == real and BOILING[excerpt.start:excerpt.end] == real
    assert fake in prompt_of(judge.for_purpose("dj_excerpts")[1])
    assert dj.traits_without_valid_excerpts == []


# -- absence of evidence --------------------------------------------------------------------------------

NOTHING = {"excerpts": [], "nothing_relevant": True}


def absence_judge(verdict: bool) -> ScriptedModel:
    return ScriptedModel(by_purpose({
        "dj_excerpts": NOTHING,
        "dj_reasoning": "Nothing in the response bears on the criterion.",
        "dj_score": {"result": verdict},
    }))


def test_absence_criteria_are_recognised() -> None:
    assert is_absence_criterion(NO_ANTIBIOTICS)
    assert not is_absence_criterion(BOILING_POINT)
    assert not is_absence_criterion(CLARITY)


async def test_absence_criterion_met_without_quotes_is_scored() -> None:
    judge = absence_judge(True)
    result = await run_pipeline([NO_ANTIBIOTICS], "Rest and fluids help; a cold usually clears in a week.", judge,
                                config=dj_config())
    dj = result.deep_judgment_rubric
    assert dj is not None and result.rubric is not None
    outcome = result.rubric.trait_status["no_antibiotics"]
    assert (outcome.status, outcome.score) == ("scored", True)
    assert result.verdict == "judged"  # complete, no pass rule
    meta = dj.trait_metadata["no_antibiotics"]
    assert meta.evidence == "absence" and meta.had_excerpts is False and meta.excerpt_validation_failed is False
    assert meta.model_calls == 3 and meta.excerpt_retry_count == 0
    assert dj.traits_without_valid_excerpts == []
    assert "No passage of the response bears on this trait." in prompt_of(judge.for_purpose("dj_reasoning")[0])


async def test_absence_criterion_violated_without_quotes_is_a_contradiction_not_a_failed_answer() -> None:
    judge = absence_judge(False)
    result = await run_pipeline([NO_ANTIBIOTICS], "Rest and fluids help.", judge, config=dj_config())
    assert result.rubric is not None and result.deep_judgment_rubric is not None
    outcome = result.rubric.trait_status["no_antibiotics"]
    assert (outcome.status, outcome.unscored_category, outcome.score) == ("unscored", "contradiction", None)
    assert outcome.reason is not None and outcome.reason.startswith(CONTRADICTION)
    assert outcome.raw_reply == json.dumps({"result": False})
    assert result.deep_judgment_rubric.traits_without_valid_excerpts == []
    assert result.metadata.failure is None and result.verdict == "incomplete"  # not judged, never failed
    sent_back = judge.for_purpose("dj_score")
    assert len(sent_back) == 2  # sent back once, with the evidence
    assert "contradicts your own evidence" in sent_back[1].messages[-1].content
    assert "No passage of the response bears on this trait." in sent_back[1].messages[-1].content


async def test_a_contradiction_the_judge_corrects_on_the_second_ask_is_scored() -> None:
    judge = ScriptedModel(by_purpose({"dj_excerpts": NOTHING, "dj_reasoning": "Nothing bears on it.",
                                      "dj_score": [{"result": False}, {"result": True}]}))
    state, _ = await run_rubric([NO_ANTIBIOTICS], "Rest and fluids help.", judge, config=dj_config())
    assert state.rubric is not None
    outcome = state.rubric.trait_status["no_antibiotics"]
    assert (outcome.status, outcome.score, outcome.reason) == ("scored", True, None)


async def test_presence_criterion_met_without_quotes_is_a_contradiction() -> None:
    result = await run_pipeline([BOILING_POINT], "Water is wet and clear.", absence_judge(True), config=dj_config())
    dj = result.deep_judgment_rubric
    assert dj is not None and result.rubric is not None
    outcome = result.rubric.trait_status["boiling_point"]
    assert (outcome.status, outcome.unscored_category, outcome.score) == ("unscored", "contradiction", None)
    assert dj.traits_without_valid_excerpts == []
    assert dj.trait_metadata["boiling_point"].excerpt_validation_failed is False
    assert result.metadata.failure is None


async def test_presence_criterion_not_met_without_quotes_is_scored() -> None:
    result = await run_pipeline([BOILING_POINT], "Water is wet and clear.", absence_judge(False), config=dj_config())
    assert result.rubric is not None and result.deep_judgment_rubric is not None
    outcome = result.rubric.trait_status["boiling_point"]
    assert (outcome.status, outcome.score) == ("scored", False)
    assert result.deep_judgment_rubric.traits_without_valid_excerpts == []
    assert result.verdict == "judged"  # complete, no pass rule


async def test_simulated_judge_handles_an_absence_criterion() -> None:
    answer = "No. The common cold is caused by viruses, and antibiotics only act on bacteria. Rest and fluids help."
    state, _ = await run_rubric([NO_ANTIBIOTICS], answer, simulated_judge(), config=dj_config())
    assert state.rubric is not None and state.deep_judgment_rubric is not None
    assert state.rubric.trait_status["no_antibiotics"].status == "scored"
    assert state.deep_judgment_rubric.trait_metadata["no_antibiotics"].evidence == "absence"


# -- judge failures inside deep judgment ---------------------------------------------------------------


async def test_unparseable_score_reply_is_unscored_not_failed() -> None:
    judge = ScriptedModel(lambda r: "Definitely a four out of five!" if r.purpose == "dj_score" else honest(r))
    result = await run_pipeline([CLARITY], BOILING, judge, config=dj_config())
    assert result.rubric is not None and result.deep_judgment_rubric is not None
    outcome = result.rubric.trait_status["clarity"]
    assert outcome.status == "unscored" and outcome.score is None
    assert outcome.raw_reply == "Definitely a four out of five!"
    assert result.deep_judgment_rubric.traits_without_valid_excerpts == []
    assert result.metadata.failure is None


async def test_unparseable_excerpt_replies_are_unscored_not_auto_failed() -> None:
    garbage = "Here are the quotes you asked for: the first sentence, mostly."
    judge = ScriptedModel(lambda r: garbage if r.purpose == "dj_excerpts" else honest(r))
    result = await run_pipeline([CLARITY], BOILING, judge, config=dj_config())
    assert result.rubric is not None and result.deep_judgment_rubric is not None
    outcome = result.rubric.trait_status["clarity"]
    assert outcome.status == "unscored" and outcome.score is None
    assert outcome.raw_reply == garbage and outcome.unscored_category == "unparseable"
    assert "unusable: no JSON object found" in (outcome.reason or "")
    assert judge.purposes() == ["dj_excerpts"] * 3  # retried with feedback, then gave up
    assert result.deep_judgment_rubric.traits_without_valid_excerpts == []
    assert result.metadata.failure is None


async def test_fabricated_then_unparseable_excerpts_still_auto_fail() -> None:
    fake = "Pure water boils at 90 degrees Celsius at sea level according to a 2019 review."
    judge = ScriptedModel(by_purpose({"dj_excerpts": [{"excerpts": [{"text": fake}]}, "not json"]}))
    state, _ = await run_rubric([CLARITY], BOILING, judge, config=dj_config())
    assert state.rubric is not None and state.deep_judgment_rubric is not None
    assert state.rubric.trait_status["clarity"].status == "auto_failed"
    assert state.deep_judgment_rubric.traits_without_valid_excerpts == ["clarity"]


async def test_out_of_range_deep_judgment_score_is_unscored_not_clamped() -> None:
    judge = ScriptedModel(lambda r: json.dumps({"score": 9}) if r.purpose == "dj_score" else honest(r))
    state, _ = await run_rubric([CLARITY], BOILING, judge, config=dj_config())
    assert state.rubric is not None
    outcome = state.rubric.trait_status["clarity"]
    assert outcome.status == "unscored" and outcome.score is None
    assert len(judge.for_purpose("dj_score")) == 3  # asked again with the validation error


@pytest.mark.parametrize("purpose", ["dj_excerpts", "dj_reasoning", "dj_score"])
async def test_judge_outage_leaves_the_trait_unscored(purpose: str) -> None:
    def script(request: ChatRequest) -> Any:
        return ModelError("timed out", "timeout") if request.purpose == purpose else honest(request)

    result = await run_pipeline([CLARITY, STATES_FACT], BOILING, ScriptedModel(script),
                                config=dj_config(deep_judgment_rubric_mode="custom",
                                                 deep_judgment_rubric_config={"global": {"clarity": {}}}))
    assert result.rubric is not None and result.deep_judgment_rubric is not None
    outcome = result.rubric.trait_status["clarity"]
    assert outcome.status == "unscored" and "judge call failed (timeout)" in (outcome.reason or "")
    assert result.rubric.trait_status["states_fact"].status == "scored"
    assert result.deep_judgment_rubric.traits_without_valid_excerpts == []
    assert result.deep_judgment_rubric.trait_metadata["clarity"].error == "timed out"
    # not a deep-judgment auto-fail: an execution error of a retryable kind, so --resume runs it again
    failure = result.metadata.failure
    assert failure is not None and (failure.category, failure.group) == ("timeout", "retry")
    assert "clarity (timeout)" in failure.reason


# -- judge_trait directly ---------------------------------------------------------------------------------


async def test_judge_trait_respects_max_excerpts_and_threshold() -> None:
    quotes = ["Pure water boils at 100 degrees Celsius", "the atmospheric pressure is 1 atm",
              "the boiling point is reached at 100 degrees"]
    judge = ScriptedModel(by_purpose({
        "dj_excerpts": {"excerpts": [{"text": q} for q in quotes]},
        "dj_reasoning": "Clear [E1] [E2].",
        "dj_score": {"score": 5},
    }))
    settings = TraitDJSettings(enabled=True, max_excerpts=2, excerpt_retry_attempts=0)
    out = await judge_trait(CLARITY, settings, TraitContext(BOILING_Q, BOILING, judge, None))
    assert out.status == "scored" and out.score == 5
    assert [e.text for e in out.excerpts] == quotes[:2]
    assert "<max_excerpts>2</max_excerpts>" in prompt_of(judge.requests[0])


# -- concurrency -----------------------------------------------------------------------------------------


async def test_deep_judgment_traits_of_one_task_run_concurrently() -> None:
    delay = 0.05
    traits = [CLARITY.model_copy(update={"name": f"clarity_{i}"}) for i in range(5)]

    async def timed(ts: list[LLMTrait]) -> float:
        judge = ScriptedModel(honest, delay=delay)
        started = time.perf_counter()
        state, _ = await run_rubric(ts, BOILING, judge, config=dj_config())
        elapsed = time.perf_counter() - started
        assert state.deep_judgment_rubric is not None
        assert len(state.deep_judgment_rubric.deep_judgment_rubric_scores) == len(ts)
        assert len(judge.requests) == 3 * len(ts)
        return elapsed

    single = await timed(traits[:1])
    together = await timed(traits)
    assert single >= 3 * delay * 0.9
    assert together < 0.5 * 5 * single
    assert together < 0.5 * 15 * delay


# -- serialisation -----------------------------------------------------------------------------------------


async def test_results_serialise_with_seed_003_field_names() -> None:
    results = [
        await run_pipeline([CLARITY, STATES_FACT], BOILING, simulated_judge(), config=search_config(),
                           search=SimulatedSearch(), question=BOILING_Q),
        await run_pipeline([CLARITY], BOILING, simulated_judge(fabricate_rate=1.0), config=dj_config()),
        await run_pipeline([CLARITY], BOILING, simulated_judge(), config=dj_config(
            deep_judgment_rubric_global_excerpts=False)),
    ]
    evaluated = [{"clarity", "states_fact"}, {"clarity"}, {"clarity"}]
    for result, traits in zip(results, evaluated, strict=True):
        text = result.model_dump_json()
        data = json.loads(text)
        section = data["deep_judgment_rubric"]
        assert set(section) >= SEED_003_SECTION_FIELDS
        assert set(section["trait_metadata"]) == traits
        for meta in section["trait_metadata"].values():
            assert set(meta) >= SEED_003_TRAIT_FIELDS
        for excerpts in section["extracted_rubric_excerpts"].values():
            for e in excerpts:
                assert {"text", "confidence", "similarity_score"} <= set(e)
        assert VerificationResult.model_validate_json(text) == result
    with_search = json.loads(results[0].model_dump_json())["deep_judgment_rubric"]
    assert set(with_search["rubric_hallucination_risk_assessment"]) == {"clarity", "states_fact"}
    assert "overall_risk" in with_search["rubric_hallucination_risk_assessment"]["clarity"]


# -- end to end through run_verification ---------------------------------------------------------------


def e2e_config(**judge_extra: Any) -> VerificationConfig:
    judge: dict[str, Any] = {"id": "judge", "model_provider": "simulated", "model_name": "simulated-judge",
                             "interface": "simulated"}
    if judge_extra:
        judge["extra_kwargs"] = judge_extra
    answering = [{"id": m, "model_provider": "simulated", "model_name": "simulated-answerer",
                  "interface": "simulated"} for m in ("model-a", "model-b")]
    return VerificationConfig(answering_models=answering, parsing_models=[judge], evaluation_mode="rubric_only",
                              deep_judgment_rubric_mode="enable_all")


def test_end_to_end_enable_all_passes(demo_benchmark: Any, demo_answers: dict[str, dict[str, str]]) -> None:
    out = run_verification(demo_benchmark, e2e_config(), answers=demo_answers)
    assert len(out.results) == 8 == out.tasks
    for r in out.results:
        assert r.verdict == "judged", (r.metadata.question_id, r.metadata.failure)
        assert r.template is not None and r.template.answer_source == "recorded"
        dj = r.deep_judgment_rubric
        assert dj is not None and dj.deep_judgment_rubric_performed
        assert dj.traits_without_valid_excerpts == []
        llm_names = {"clarity", "states_fact", "register"} | (
            {"no_antibiotic_advice"} if r.metadata.question_id == "demo-cold" else set())
        assert set(dj.trait_metadata) == llm_names
        assert set(dj.deep_judgment_rubric_scores) == llm_names
        assert dj.total_deep_judgment_model_calls == 3 * len(llm_names)
        assert r.rubric is not None
        assert r.rubric.regex_trait_scores is not None and r.rubric.callable_trait_scores is not None
    assert out.summary.judged_tasks == 8 and not out.summary.has_pass_rule  # the demo sets no pass rule


def test_end_to_end_fabricating_judge_fails_every_task(
    demo_benchmark: Any, demo_answers: dict[str, dict[str, str]]
) -> None:
    out = run_verification(demo_benchmark, e2e_config(fabricate_rate=1.0), answers=demo_answers)
    assert len(out.results) == 8
    for r in out.results:
        assert r.deep_judgment_rubric is not None
        assert r.metadata.failure is not None, r.metadata.question_id
        assert r.metadata.failure.category == "deep_judgment_rubric"
        assert not r.passed
        assert set(r.deep_judgment_rubric.traits_without_valid_excerpts) == set(r.deep_judgment_rubric.trait_metadata)
        # deterministic traits are still scored on a failed task
        assert r.rubric is not None and r.rubric.callable_trait_scores == {"concise": True}
    assert out.summary.pass_rate == 0.0


def graded_absence_judge(score: int) -> ScriptedModel:
    return ScriptedModel(by_purpose({
        "dj_excerpts": NOTHING,
        "dj_reasoning": "Nothing in the response bears on the criterion.",
        "dj_score": {"score": score},
    }))


async def test_graded_presence_trait_at_minimum_without_quotes_is_scored() -> None:
    result = await run_pipeline([CLARITY], "ok", graded_absence_judge(1), config=dj_config())
    assert result.rubric is not None
    outcome = result.rubric.trait_status["clarity"]
    assert (outcome.status, outcome.score) == ("scored", 1)


async def test_graded_presence_trait_above_minimum_without_quotes_is_a_contradiction() -> None:
    result = await run_pipeline([CLARITY], "ok", graded_absence_judge(4), config=dj_config())
    assert result.rubric is not None
    assert result.rubric.trait_status["clarity"].unscored_category == "contradiction"


async def test_literal_label_under_deep_judgment_matches_case_insensitively() -> None:
    from verify.benchmark.traits import LLMTrait

    tone = LLMTrait(name="tone", kind="literal", classes={"formal": "Formal", "casual": "Casual"},
                    description="Register of the answer")
    judge = ScriptedModel(by_purpose({
        "dj_excerpts": {"excerpts": [{"text": "Hey there", "confidence": "high"}]},
        "dj_reasoning": "Informal greeting.",
        "dj_score": {"classification": "Casual"},
    }))
    result = await run_pipeline([tone], "Hey there, it is Paris.", judge, config=dj_config())
    assert result.rubric is not None
    outcome = result.rubric.trait_status["tone"]
    assert (outcome.status, outcome.score, outcome.label) == ("scored", 1, "casual")
