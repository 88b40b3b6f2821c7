"""A literal trait the judge leaves out of its batch reply: karenina's -1 and label, but unscored.

karenina stores ``llm_trait_scores[name] = -1`` and ``llm_trait_labels[name] =
"[MISSING_FROM_RESPONSE]"`` for such a trait. We store the same, so karenina's readers see what they
expect, while ``trait_status`` keeps the trait ``unscored``: it is never judged, never a pass, and its
-1 is never averaged as a score.
"""

from __future__ import annotations

import json

from fakes import ScriptedModel, honest, make_config, run_pipeline, run_rubric

from verify.benchmark.traits import LLMTrait
from verify.llm.ports import ChatRequest, Purpose
from verify.results.summary import Summary
from verify.stages.rubric import BATCH_ATTEMPTS, MISSING_FROM_RESPONSE

ANSWER = "BCL2 inhibits apoptosis. It is found in the mitochondrial membrane."
REGISTER = LLMTrait(name="register", kind="literal", description="The register of the response",
                    classes={"formal": "Formal scientific register", "casual": "Casual, chatty register"})
DEPTH = LLMTrait(name="depth", kind="literal", description="How deep the response goes",
                 classes={"shallow": "One fact, no mechanism", "deep": "Explains the mechanism"})
CLEAR = LLMTrait(name="clear", kind="boolean", description="The response is clear")
BATCH = make_config(rubric_evaluation_strategy="batch")


def omitting(*left_out: str) -> ScriptedModel:
    """A judge whose literal batch replies always leave ``left_out`` out."""
    def script(request: ChatRequest) -> str:
        if request.purpose is not Purpose.RUBRIC_LITERAL_BATCH:
            return honest(request)
        reply = json.loads(honest(request))
        reply["classifications"] = [c for c in reply["classifications"] if c["trait_name"] not in left_out]
        return json.dumps(reply)

    return ScriptedModel(script)


async def test_left_out_literal_is_stored_as_karenina_does_but_unscored() -> None:
    judge = omitting("register")
    result = await run_pipeline([REGISTER, DEPTH, CLEAR], ANSWER, judge, config=BATCH)
    rubric = result.rubric
    assert rubric is not None
    # karenina's stored shape
    assert (rubric.llm_trait_scores or {})["register"] == -1
    assert (rubric.llm_trait_labels or {})["register"] == MISSING_FROM_RESPONSE == "[MISSING_FROM_RESPONSE]"
    # verify's principle: not judged, so not a pass
    outcome = rubric.trait_status["register"]
    assert outcome.status == "unscored" and outcome.score is None
    assert outcome.reason == "trait missing from the judge's reply" and outcome.unscored_category == "invalid_reply"
    assert result.verdict == "incomplete" and not result.passed
    coverage = result.metadata.coverage
    assert coverage is not None and coverage.unscored == {"register": "invalid_reply"}
    assert (coverage.judged, coverage.total) == (2, 3)
    # asked again, for that trait alone, before giving up
    literal_calls = [r for r in judge.requests if r.purpose is Purpose.RUBRIC_LITERAL_BATCH]
    assert len(literal_calls) == BATCH_ATTEMPTS
    # the traits the judge did answer are untouched
    assert rubric.trait_status["depth"].status == "scored" and (rubric.llm_trait_labels or {})["depth"] in DEPTH.class_names
    again = type(result).model_validate_json(result.model_dump_json())
    assert again.rubric is not None and again.rubric.llm_trait_scores == rubric.llm_trait_scores


async def test_minus_one_is_never_averaged() -> None:
    result = await run_pipeline([REGISTER, CLEAR], ANSWER, omitting("register"), config=BATCH)
    assert result.rubric is not None and (result.rubric.llm_trait_scores or {})["register"] == -1
    summary = Summary()
    summary.add(result)
    tally = summary.by_trait["register"]
    assert (tally.scored, tally.unscored, tally.mean) == (0, 1, None)
    assert (summary.passed, summary.incomplete) == (0, 1)


async def test_a_trait_given_on_the_retry_is_scored_normally() -> None:
    seen = {"n": 0}

    def first_reply_omits(request: ChatRequest) -> str:
        reply = json.loads(honest(request))
        if request.purpose is Purpose.RUBRIC_LITERAL_BATCH:
            seen["n"] += 1
            if seen["n"] == 1:
                reply["classifications"] = [c for c in reply["classifications"] if c["trait_name"] != "register"]
        return json.dumps(reply)

    state3, _ = await run_rubric([REGISTER, DEPTH], ANSWER, ScriptedModel(first_reply_omits), config=BATCH)
    section = state3.rubric
    assert section is not None
    outcome = section.trait_status["register"]
    assert outcome.status == "scored" and outcome.label in REGISTER.class_names
    assert (section.llm_trait_scores or {})["register"] in (0, 1)
    assert MISSING_FROM_RESPONSE not in (section.llm_trait_labels or {}).values()
    assert seen["n"] == 2  # the first reply left it out; the retry gave it


async def test_an_unusable_last_reply_is_not_reported_as_missing() -> None:
    """Left out first, then a reply with no JSON at all: the trait is unscored as unparseable, with no
    karenina marker (the judge did not leave it out of a usable reply)."""
    seen = {"n": 0}

    def script(request: ChatRequest) -> str:
        if request.purpose is not Purpose.RUBRIC_LITERAL_BATCH:
            return honest(request)
        seen["n"] += 1
        if seen["n"] == 1:
            return json.dumps({"classifications": []})
        return "I cannot classify this."

    state, _ = await run_rubric([REGISTER], ANSWER, ScriptedModel(script), config=BATCH)
    rubric = state.rubric
    assert rubric is not None
    outcome = rubric.trait_status["register"]
    assert outcome.status == "unscored" and outcome.unscored_category == "unparseable" and outcome.label is None
    assert rubric.llm_trait_scores is None and rubric.llm_trait_labels is None


async def test_a_left_out_boolean_trait_gets_no_placeholder() -> None:
    """karenina records no value for a boolean or score trait missing from the reply; neither do we."""
    def script(request: ChatRequest) -> str:
        if request.purpose is Purpose.RUBRIC_BATCH:
            return json.dumps({"scores": {}})
        return honest(request)

    state, _ = await run_rubric([CLEAR, REGISTER], ANSWER, ScriptedModel(script), config=BATCH)
    rubric = state.rubric
    assert rubric is not None
    assert rubric.trait_status["clear"].status == "unscored" and rubric.trait_status["clear"].label is None
    assert "clear" not in (rubric.llm_trait_scores or {}) and "clear" not in (rubric.llm_trait_labels or {})
