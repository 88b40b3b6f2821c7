"""The simulated judge's seams: it answers by the request's Purpose (and the schema), never by prompt
wording; every Purpose has its own handler; over HTTP the purpose travels in X-Verify-Purpose; and
absence criteria are recognised by the judging code's one rule."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fakes import make_config, run_rubric, simulated_judge

from verify.benchmark.traits import LLMTrait
from verify.config.models import ModelConfig
from verify.judging import prompts
from verify.judging.consistency import is_absence_criterion
from verify.llm.adapters.langchain import LangChainModel
from verify.llm.ports import Message, Purpose
from verify.llm.simulated import brain
from verify.llm.simulated.brain import TraitSpec
from verify.llm.simulated.server import start_server
from verify.templates import prompts as template_prompts

QUESTION = "At what temperature does pure water boil at sea level?"
ANSWER = (
    "Pure water boils at 100 degrees Celsius (212 degrees Fahrenheit) at sea level. "
    "At that altitude the atmospheric pressure is 1 atm, so the boiling point is reached at 100 degrees."
)
CLARITY = LLMTrait(name="clarity", kind="score", min_score=1, max_score=5,
                   description="The response is clear, well organized and easy to understand")
STATES_FACT = LLMTrait(name="states_fact", kind="boolean",
                       description="The response states a concrete fact that answers the question")


def reworded_reasoning_prompt(question: str, response: str, trait: LLMTrait, evidence: str | None) -> str:
    """The reasoning prompt in other words: same structural tags, none of the original instruction."""
    block = f"\n<evidence>\n{evidence}\n</evidence>" if evidence else ""
    return (
        "Think aloud about whether the criterion below holds for this answer; the verdict comes later.\n"
        f"{prompts.context_block(question, response)}\n{prompts.render_trait(trait)}{block}"
    )


async def deep_judgment(traits: list[LLMTrait], judge: Any) -> tuple[dict[str, str], dict[str, Any]]:
    """(reasoning per trait, deep-judgment scores) of one rubric run with deep judgment on every trait."""
    state, _ = await run_rubric(traits, ANSWER, judge, config=make_config(deep_judgment_rubric_mode="enable_all"),
                                question=QUESTION)
    dj = state.deep_judgment_rubric
    assert dj is not None
    return dict(dj.rubric_trait_reasoning), dict(dj.deep_judgment_rubric_scores)


async def test_rewording_the_reasoning_prompt_keeps_the_reasoning_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    reasoning, scores = await deep_judgment([CLARITY, STATES_FACT], simulated_judge())
    monkeypatch.setattr(prompts, "reasoning_prompt", reworded_reasoning_prompt)
    reworded = reworded_reasoning_prompt(QUESTION, ANSWER, CLARITY, None)
    assert "Explain" not in reworded and "step by step" not in reworded
    reasoning_after, scores_after = await deep_judgment([CLARITY, STATES_FACT], simulated_judge())
    for name in ("clarity", "states_fact"):
        # still a reasoning reply (not "This is a simulated answer to: ..."), ending in its verdict
        assert reasoning_after[name].startswith(f"Considering the trait '{name}'")
        assert "VERDICT: " in reasoning_after[name]
    assert reasoning_after == reasoning and scores_after == scores


def test_reply_kind_follows_the_purpose_not_the_words() -> None:
    trait = prompts.render_trait(CLARITY)
    context = prompts.context_block(QUESTION, ANSWER)
    for wording in ("Explain, step by step, how well the response meets the trait.", "Say something.", ""):
        messages = [Message("user", f"{wording}\n{context}\n{trait}")]
        assert "VERDICT: " in brain.reply(Purpose.DJ_REASONING, messages, None)
        assert brain.reply(Purpose.ANSWER, messages, None) == f"This is a simulated answer to: {QUESTION}"
        assert brain.reply(None, messages, None) == brain.reply(Purpose.ANSWER, messages, None)  # no purpose


# -- every purpose is handled ------------------------------------------------------------------------


OPAQUE = {"title": "Opaque", "type": "object", "properties": {"x": {"type": "string"}}}


def test_every_purpose_has_its_own_handler() -> None:
    assert set(brain.HANDLERS) == set(Purpose)
    messages = [Message("user", f"{prompts.context_block(QUESTION, ANSWER)}\n{prompts.render_trait(CLARITY)}")]
    generic = brain.reply(None, messages, OPAQUE)  # what an unknown schema without a purpose gets
    assert json.loads(generic) == {"x": "simulated"}
    for purpose in Purpose:
        assert brain.purpose_for(purpose, OPAQUE) is purpose
        assert brain.reply(purpose, messages, OPAQUE) != generic, f"{purpose} fell into the generic default"


def test_titles_without_a_purpose_name_real_reply_models() -> None:
    # the fallback for plain HTTP clients: each title is a reply model's name, mapped to its step
    for title, purpose in brain.PURPOSE_BY_TITLE.items():
        assert hasattr(prompts, title) or hasattr(template_prompts, title) or title in (
            "SingleNumericScore", "SingleLiteralClassification"  # built per trait by verdict_schema
        ), title
        assert brain.purpose_for(None, {"title": title}) is purpose
    assert brain.purpose_for(None, None) is Purpose.ANSWER
    assert brain.purpose_for(None, OPAQUE) is None


# -- over HTTP: the adapter says the purpose ---------------------------------------------------------


def endpoint(url: str) -> ModelConfig:
    return ModelConfig(id="judge", model_provider="openai", model_name="simulated-judge",
                       interface="openai_endpoint", endpoint_base_url=url, temperature=0.0, request_timeout=10.0)


async def test_deep_judgment_over_http_matches_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = await deep_judgment([CLARITY, STATES_FACT], simulated_judge())
    monkeypatch.setattr(prompts, "reasoning_prompt", reworded_reasoning_prompt)
    with start_server() as server:
        judge = LangChainModel(endpoint(server.url))
        try:
            over_http = await deep_judgment([CLARITY, STATES_FACT], judge)
        finally:
            await judge.aclose()
        sent = [{k.lower(): v for k, v in r["headers"].items()} for r in server.chat_requests]
    assert over_http == expected
    assert {h.get("x-verify-purpose") for h in sent} == {"dj_excerpts", "dj_reasoning", "dj_score"}


# -- absence criteria: one rule ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "description"),
    [
        ("no_antibiotics", "Does not recommend antibiotics"),
        ("boiling_point", "Mentions the boiling point"),
        ("history", "The response did not speculate about the future"),  # "did not": judging only, before
        ("tone", "Avoiding medical jargon throughout"),  # "avoiding": judging only, before
        ("scope", "No mention of prices"),  # "no mention": judging only, before
        ("avoids_jargon", "Plain language a lay reader follows"),  # the cue only in the name, before
        ("register", "The register\nClasses: formal: precise; casual: does not use technical terms"),
    ],
)
def test_the_brain_recognises_absence_criteria_as_the_judging_code_does(name: str, description: str) -> None:
    trait = LLMTrait(name=name, kind="boolean", description=description.split("\nClasses: ")[0])
    spec = TraitSpec(name, "boolean", None, None, description)  # as read back from <trait ...>
    assert brain.is_absence(spec.criterion) is is_absence_criterion(trait)
