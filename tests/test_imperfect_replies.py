"""Imperfect judges: coverage in the verdict, every reply validated and retried on every path.

Each test scripts a judge that fails the way small real models do (echoes the schema, answers with
a class description, renames traits, copies placeholders, says one sentence to everything) and
checks that verify neither passes nor fails the answer on an unusable reply.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import ScriptedModel, honest, make_config, prompt_of, run_pipeline, run_rubric
from test_rubric_stage import ANSWER, CLARITY, QUESTION, REGISTER, STATES_FACT

from verify.benchmark.jsonld import Benchmark, load_benchmark
from verify.benchmark.question import Question
from verify.benchmark.traits import AgenticTrait, CallableTrait, LLMTrait, Rubric
from verify.config.verification import VerificationConfig
from verify.errors import ConfigError
from verify.llm.ports import ChatRequest, Purpose
from verify.results.summary import Summary
from verify.run.runner import run_verification
from verify.stages.rubric import BATCH_ATTEMPTS

KARENINA = Path(__file__).resolve().parent / "fixtures" / "karenina"
STUB = "I think the answer is fine."


def no_repeated_requests(judge: ScriptedModel) -> None:
    """A retry must never send a request identical to one already answered (the cache would replay it)."""
    seen = [(r.purpose, r.trait, r.messages) for r in judge.requests]
    assert len(seen) == len(set(seen))


# -- coverage is part of the verdict ----------------------------------------------------------------


async def test_a_stub_judge_leaves_the_task_incomplete_never_passed() -> None:
    judge = ScriptedModel(lambda r: STUB)
    result = await run_pipeline([STATES_FACT, CLARITY, REGISTER], ANSWER, judge, question=QUESTION,
                                config=make_config(rubric_evaluation_strategy="batch"))
    assert result.verdict == "incomplete" and not result.passed
    coverage = result.metadata.coverage
    assert coverage is not None and (coverage.judged, coverage.total) == (0, 3)
    assert set(coverage.unscored.values()) == {"unparseable"}
    for outcome in result.rubric.trait_status.values():  # type: ignore[union-attr]
        assert outcome.status == "unscored" and outcome.raw_reply == STUB
    summary = Summary()
    summary.add(result)
    assert (summary.passed, summary.failed, summary.incomplete) == (0, 0, 1)
    assert summary.coverage == 0.0 and summary.pass_rate is None
    assert summary.coverage_line() == "judged 0 of 3 evaluations (0.0%); 3 unscored: 3 unparseable"
    no_repeated_requests(judge)


async def test_a_judged_failure_stays_failed_when_another_trait_is_unscored() -> None:
    def script(request: ChatRequest) -> str:
        if request.purpose is Purpose.RUBRIC_LITERAL_BATCH:
            return STUB
        return honest(request)

    result = await run_pipeline([STATES_FACT, REGISTER], ANSWER, ScriptedModel(script), question=QUESTION)
    assert result.verdict == "incomplete"
    assert result.metadata.coverage is not None and result.metadata.coverage.unscored == {"register": "unparseable"}


def test_pass_rate_counts_complete_tasks_only() -> None:
    bench = load_benchmark(KARENINA / "with_rubrics.jsonld")
    config = VerificationConfig(answering_models=[{"id": "a", "model_name": "simulated-a", "interface": "simulated"}],
                                parsing_models=[{"id": "j", "model_name": "simulated-j", "interface": "simulated"}],
                                evaluation_mode="template_and_rubric")
    outcome = run_verification(bench, config)
    s = outcome.summary
    assert s.total == s.passed + s.failed + s.incomplete
    complete = s.passed + s.failed
    assert s.pass_rate == (s.passed / complete if complete else None)
    assert s.evaluations == sum(r.metadata.coverage.total for r in outcome.results)  # type: ignore[union-attr]


def rubric_only_benchmark(*traits: Any) -> Benchmark:
    q = Question(id="q1", text="What is 2+2?", raw_answer="4", finished=True, rubric=Rubric(traits=list(traits)))
    return Benchmark(name="b", questions=[q], source="bench.jsonld")


@pytest.mark.parametrize("traits", [(), (AgenticTrait(name="uses_tools"),)], ids=["empty", "all-skipped"])
def test_nothing_to_evaluate_is_an_error_before_any_call(traits: tuple[Any, ...]) -> None:
    judge = ScriptedModel(lambda r: STUB)
    with pytest.raises(ConfigError, match=r"bench\.jsonld: nothing to evaluate for question 'q1'"):
        run_verification(rubric_only_benchmark(*traits), make_config(), adapter_factory=lambda cfg: judge)
    assert judge.requests == []


async def test_a_callable_trait_that_cannot_run_makes_the_task_incomplete() -> None:
    refused = CallableTrait(name="pickled", callable_code=None)
    result = await run_pipeline([refused], ANSWER, ScriptedModel(lambda r: STUB), question=QUESTION)
    assert result.verdict == "incomplete"
    assert result.metadata.coverage is not None and result.metadata.coverage.unscored == {"pickled": "code"}


# -- batch replies: only the bad traits are asked again ----------------------------------------------


async def test_a_bad_batch_trait_is_retried_alone_and_recovers() -> None:
    replies = iter([{"states_fact": True, "clarity": 9}, {"clarity": 4}])
    judge = ScriptedModel(lambda r: json.dumps({"scores": next(replies)}))
    state, _ = await run_rubric([STATES_FACT, CLARITY], ANSWER, judge, config=make_config(rubric_evaluation_strategy="batch"))
    assert state.rubric is not None and state.rubric.llm_trait_scores == {"states_fact": True, "clarity": 4}
    assert len(judge.requests) == 2
    feedback = judge.requests[1].messages[-1].content
    assert "clarity: score 9 outside [1, 5]" in feedback and "attempt 2" in feedback
    no_repeated_requests(judge)


async def test_renamed_traits_and_invented_names_are_read_leniently() -> None:
    judge = ScriptedModel(lambda r: json.dumps({"scores": {"States Fact": True, "CLARITY": 3, "helpfulness": 5}}))
    state, _ = await run_rubric([STATES_FACT, CLARITY], ANSWER, judge, config=make_config(rubric_evaluation_strategy="batch"))
    assert state.rubric is not None and state.rubric.llm_trait_scores == {"states_fact": True, "clarity": 3}
    assert "helpfulness" not in state.rubric.trait_status
    assert len(judge.requests) == 1


@pytest.mark.parametrize("strategy", ["batch", "sequential"])
@pytest.mark.parametrize("said", [
    "Formal, precise scientific or encyclopedic register",
    "formal: Formal, precise scientific or encyclopedic register.",
    " FORMAL ",
])
async def test_a_class_description_is_read_as_its_class(strategy: str, said: str) -> None:
    def script(request: ChatRequest) -> str:
        if request.purpose is Purpose.RUBRIC_LITERAL_BATCH:
            return json.dumps({"classifications": [{"trait_name": "register", "class_name": said}]})
        return json.dumps({"classification": said})

    state, _ = await run_rubric([REGISTER], ANSWER, ScriptedModel(script),
                                config=make_config(rubric_evaluation_strategy=strategy))
    assert state.rubric is not None
    outcome = state.rubric.trait_status["register"]
    assert (outcome.status, outcome.label, outcome.score) == ("scored", "formal", 0)
    assert outcome.label_read_as == said  # recorded as read leniently


async def test_an_unknown_label_is_retried_then_unscored_with_its_reply() -> None:
    judge = ScriptedModel(lambda r: json.dumps({"classifications": {"register": "neutral"}}))
    state, _ = await run_rubric([REGISTER], ANSWER, judge, config=make_config(rubric_evaluation_strategy="batch"))
    assert state.rubric is not None
    outcome = state.rubric.trait_status["register"]
    assert outcome.status == "unscored" and outcome.unscored_category == "invalid_reply"
    assert outcome.raw_reply == json.dumps({"classifications": {"register": "neutral"}})
    assert len(judge.requests) == BATCH_ATTEMPTS
    no_repeated_requests(judge)


async def test_a_single_trait_verdict_out_of_range_is_retried() -> None:
    replies = iter(['{"score": 7}', '{"score": 4}'])
    judge = ScriptedModel(lambda r: next(replies))
    state, _ = await run_rubric([CLARITY], ANSWER, judge, config=make_config(rubric_evaluation_strategy="sequential"))
    assert state.rubric is not None and state.rubric.llm_trait_scores == {"clarity": 4}
    assert "less than or equal to 5" in judge.requests[1].messages[-1].content


# -- template parse: an echoed schema is a parsing failure, never "the answer is wrong" --------------

TEMPLATE = '''from karenina.schemas.entities import BaseAnswer
from pydantic import Field

class Answer(BaseAnswer):
    capital: str = Field(description="the capital city named in the response")

    def model_post_init(self, __context):
        self.correct = {"capital": "Paris"}

    def verify(self) -> bool:
        return (self.capital or "").strip().lower() == "paris"
'''


def template_run(script: Any) -> tuple[Any, ScriptedModel]:
    judge = ScriptedModel(script)
    q = Question(id="q1", text="What is the capital of France?", raw_answer="Paris", finished=True,
                 template_code=TEMPLATE)
    config = make_config(evaluation_mode="template_only")
    outcome = run_verification(Benchmark(name="b", questions=[q]), config, answers={"*": {"q1": "It is Paris."}},
                               adapter_factory=lambda cfg: judge)
    (result,) = outcome.results
    return result, judge


@pytest.mark.parametrize("echo", ["schema", "empty", "properties"])
def test_an_echoed_schema_is_retried_and_ends_as_parsing(echo: str) -> None:
    def script(request: ChatRequest) -> str:
        assert request.schema is not None
        if echo == "schema":
            return json.dumps(request.schema)
        if echo == "properties":
            return json.dumps({"properties": request.schema["properties"], "type": "object"})
        return "{}"

    result, judge = template_run(script)
    failure = result.metadata.failure
    assert failure is not None and failure.category == "parsing" and result.verdict == "incomplete"
    assert result.template.verify_result is None
    parse_calls = [r for r in judge.requests if r.purpose is Purpose.PARSING]
    assert len(parse_calls) == 3  # the first reply and two retries with feedback
    assert "attempt 2 of 3" in parse_calls[1].messages[-1].content
    assert result.metadata.coverage is not None and result.metadata.coverage.unscored == {"template": "unparseable"}
    no_repeated_requests(judge)


def test_an_echoed_schema_followed_by_the_answer_is_read() -> None:
    def script(request: ChatRequest) -> str:
        return f"Schema: {json.dumps(request.schema)}\nAnswer: {json.dumps({'capital': 'Paris'})}"

    result, judge = template_run(script)
    assert result.passed and len(judge.requests) == 1


def test_a_schema_echo_then_a_real_parse_passes() -> None:
    replies = iter(["{}", json.dumps({"capital": "Paris"})])
    result, judge = template_run(lambda r: next(replies))
    assert result.passed and result.verdict == "passed" and len(judge.requests) == 2


# -- excerpt replies, item by item ---------------------------------------------------------------------

DJ_TRAIT = LLMTrait(name="states_fact", kind="boolean", deep_judgment_enabled=True,
                    description="The response states a concrete fact that answers the question")


def dj_config() -> VerificationConfig:
    return make_config(deep_judgment_rubric_mode="enable_all")


def excerpts_reply(items: list[Any], nothing_relevant: bool = False) -> Any:
    def script(request: ChatRequest) -> str:
        if request.purpose is Purpose.DJ_EXCERPTS:
            return json.dumps({"excerpts": items, "nothing_relevant": nothing_relevant})
        return honest(request)

    return script


async def test_a_copied_confidence_placeholder_keeps_the_quote() -> None:
    quote = ANSWER.split(".")[0] + "."
    judge = ScriptedModel(excerpts_reply([{"text": quote, "confidence": "high|medium|low"}, {"text": "..."}]))
    state, _ = await run_rubric([DJ_TRAIT], ANSWER, judge, config=dj_config(), question=QUESTION)
    dj = state.deep_judgment_rubric
    assert dj is not None
    excerpts = dj.extracted_rubric_excerpts["states_fact"]
    assert [e.text for e in excerpts] == [quote] and excerpts[0].confidence == "medium"
    assert len(judge.for_purpose(Purpose.DJ_EXCERPTS)) == 1


@pytest.mark.parametrize("placeholder", ["...", "text", "", "[...]", "<quote>"])
async def test_placeholder_quotes_are_not_quotes(placeholder: str) -> None:
    judge = ScriptedModel(excerpts_reply([{"text": placeholder, "confidence": "high"}]))
    state, _ = await run_rubric([DJ_TRAIT], ANSWER, judge, config=dj_config(), question=QUESTION)
    assert state.rubric is not None
    outcome = state.rubric.trait_status["states_fact"]
    # never evidence, and not an answer without evidence either: the judge gave no usable reply
    assert outcome.status == "unscored" and outcome.unscored_category == "invalid_reply"
    calls = judge.for_purpose(Purpose.DJ_EXCERPTS)
    assert len(calls) > 1 and "Attempt 2 of" in prompt_of(calls[1])
    no_repeated_requests(judge)


async def test_nothing_relevant_keeps_its_meaning() -> None:
    absent = LLMTrait(name="no_dosage", kind="boolean", deep_judgment_enabled=True,
                      description="The response does not recommend a dosage")
    judge = ScriptedModel(excerpts_reply([], nothing_relevant=True))
    state, _ = await run_rubric([absent], ANSWER, judge, config=dj_config(), question=QUESTION)
    assert state.deep_judgment_rubric is not None
    assert state.deep_judgment_rubric.trait_metadata["no_dosage"].evidence == "absence"


async def test_rejected_quotes_are_retried_with_new_requests() -> None:
    judge = ScriptedModel(excerpts_reply([{"text": "BCL2 was discovered on the moon in 1066.", "confidence": "high"}]))
    state, _ = await run_rubric([DJ_TRAIT], ANSWER, judge, config=dj_config(), question=QUESTION)
    assert state.rubric is not None and state.rubric.trait_status["states_fact"].status == "auto_failed"
    assert len(judge.for_purpose(Purpose.DJ_EXCERPTS)) == 3  # the same bad quote three times: three distinct requests
    no_repeated_requests(judge)


def test_an_echoed_schema_is_never_a_reply_even_when_every_field_is_optional() -> None:
    from verify.judging.prompts import TraitExcerptsOutput
    from verify.llm.structured import json_schema_of, parse_json_reply

    echo = json.dumps(json_schema_of(TraitExcerptsOutput))
    assert TraitExcerptsOutput.model_validate(json.loads(echo))  # pydantic alone would accept it
    with pytest.raises(ValueError, match="JSON schema itself"):
        parse_json_reply(echo, TraitExcerptsOutput)
