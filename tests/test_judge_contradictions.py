"""A judge that contradicts itself fails as a judge, never the answer: conflicting duplicate entries for
one trait are an invalid reply (asked again, raw reply kept, unscored if it persists); a verdict against
the judge's own finding of nothing relevant is sent back once, then unscored (``contradiction``); one
reason string per outcome. Batched deep judgment held to the per-trait standard: typed schema, no
copyable example values, misplaced traits found, retries that name the problems, a per-trait fallback;
reasoning that is not reasoning is asked again. And the simulated judge never quotes prompt markup."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fakes import ScriptedModel, honest, make_config, prompt_of, run_pipeline, run_rubric, simulated_judge
from test_deep_batched import NAMES, NO_ANTIBIOTICS, QUESTION, TRAITS, edit, outcomes, run

from verify.benchmark.judge_spec import SchemaJudgeSpec
from verify.benchmark.traits import LLMTrait, SchemaJudgeTrait
from verify.judging.deep_fallback import FALLBACK_STAGE
from verify.llm.ports import ChatRequest, Purpose
from verify.results.reasons import CONTRADICTION, NO_VALID_QUOTE

REGISTER = LLMTrait(name="register", kind="literal", description="The register of the response",
                    classes={"formal": "Formal register", "casual": "Casual register"})


def labels(*pairs: tuple[str, str]) -> str:
    return json.dumps({"classifications": [{"trait_name": n, "class_name": c} for n, c in pairs]})


def literal_batch(*replies: str) -> ScriptedModel:
    """A judge whose literal batch replies come in turn (the last again when they run out)."""
    seen: list[int] = []

    def script(request: ChatRequest) -> str:
        seen.append(1)
        return replies[min(len(seen), len(replies)) - 1]

    return ScriptedModel(script)


async def rubric(judge: ScriptedModel) -> Any:
    state, _ = await run_rubric([REGISTER], "Dear Sir, the capital is Paris.", judge,
                                config=make_config(rubric_evaluation_strategy="batch"))
    return state.rubric.trait_status["register"]


# --------------------------------------------------------------------------- conflicting duplicates


async def test_a_literal_classified_twice_differently_is_asked_again_and_never_scored_silently() -> None:
    judge = literal_batch(labels(("register", "formal"), ("register", "casual")), labels(("register", "formal")))
    outcome = await rubric(judge)
    assert (outcome.status, outcome.label) == ("scored", "formal")
    retry = judge.requests[1].messages[-1].content
    assert "register" in retry and "'formal', then 'casual'" in retry


async def test_a_conflict_that_persists_is_unscored_with_the_raw_reply_kept() -> None:
    twice = labels(("register", "formal"), ("register", "casual"))
    outcome = await rubric(literal_batch(twice))
    assert (outcome.status, outcome.unscored_category, outcome.score) == ("unscored", "invalid_reply", None)
    assert outcome.raw_reply == twice and "different values" in (outcome.reason or "")


async def test_an_identical_duplicate_is_accepted() -> None:
    outcome = await rubric(literal_batch(labels(("register", "casual"), ("register", "casual"))))
    assert (outcome.status, outcome.label) == ("scored", "casual")


async def test_a_json_key_given_twice_with_different_values_is_sent_back() -> None:
    twice = '{"classifications": {"register": "formal", "register": "casual"}}'
    judge = literal_batch(twice, '{"classifications": {"register": "casual"}}')
    outcome = await rubric(judge)
    assert (outcome.status, outcome.label) == ("scored", "casual")
    assert "'register' is given twice with different values" in judge.requests[1].messages[-1].content
    outcome = await rubric(literal_batch(twice))
    assert outcome.status == "unscored" and outcome.raw_reply == twice


async def test_a_batched_deep_judgment_entry_given_twice_is_asked_again() -> None:
    def script(request: ChatRequest) -> str:
        if request.purpose is Purpose.DJ_BATCH_SCORE and len(request.messages) == 2:
            reply = honest(request)
            entry = json.dumps({"reasoning": "Chatty, so casual.", "verdict": "casual"})
            return reply[:-2] + f', "Register": {entry}' + reply[-2:]  # "register" leniently twice
        return honest(request)

    judge = ScriptedModel(script)
    state, _ = await run(judge)
    assert outcomes(state)["register"] == ("scored", 0, "formal")
    follow_up = judge.for_purpose(Purpose.DJ_BATCH_SCORE)[1].messages[-1].content
    assert "- register: given more than once with different values" in follow_up


# --------------------------------------------------------------------------- contradictions


def nothing_relevant(*names: str) -> Any:
    def script(request: ChatRequest) -> str:
        if request.purpose is Purpose.DJ_BATCH_EXCERPTS:
            return edit(request, lambda v: [v["traits"][n].update(excerpts=[], nothing_relevant=True) for n in names])
        if request.purpose is Purpose.DJ_EXCERPTS and request.trait in names:
            return json.dumps({"excerpts": [], "nothing_relevant": True})
        if request.purpose is Purpose.DJ_SCORE and request.trait == "no_antibiotics":
            return json.dumps({"result": False})
        if request.purpose is Purpose.DJ_BATCH_SCORE:
            return edit(request, lambda v: "no_antibiotics" in v["traits"]
                        and v["traits"]["no_antibiotics"].update(verdict=False))
        return honest(request)
    return script


@pytest.mark.parametrize("strategy", ["per_trait", "batched"])
async def test_an_absence_criterion_judged_violated_with_nothing_relevant_is_unscored_not_a_failed_answer(
        strategy: str) -> None:
    config = make_config(deep_judgment_rubric_mode="enable_all", deep_judgment_rubric_strategy=strategy)
    answer = "Rest and fluids help; a cold usually clears in a week."
    result = await run_pipeline([NO_ANTIBIOTICS], answer, ScriptedModel(nothing_relevant("no_antibiotics")),
                                config=config)
    assert result.rubric is not None and result.deep_judgment_rubric is not None
    outcome = result.rubric.trait_status["no_antibiotics"]
    assert (outcome.status, outcome.unscored_category) == ("unscored", "contradiction")
    assert outcome.reason is not None and outcome.reason.startswith(CONTRADICTION)
    assert result.metadata.failure is None and result.verdict == "incomplete"
    assert result.deep_judgment_rubric.traits_without_valid_excerpts == []
    assert f"trait no_antibiotics unscored: {CONTRADICTION}" in result.metadata.warnings
    assert result.metadata.coverage is not None
    assert "contradiction" in result.metadata.coverage.unscored.values()


async def test_quotes_not_in_the_answer_still_auto_fail_with_one_reason_everywhere() -> None:
    def script(request: ChatRequest) -> str:
        if request.purpose is Purpose.DJ_EXCERPTS:
            return json.dumps({"excerpts": [{"text": "Antibiotics cure every cold at once.", "confidence": "high"}]})
        return honest(request)

    config = make_config(deep_judgment_rubric_mode="enable_all")
    result = await run_pipeline([NO_ANTIBIOTICS], "Rest and fluids help.", ScriptedModel(script), config=config)
    assert result.rubric is not None and result.metadata.failure is not None
    outcome = result.rubric.trait_status["no_antibiotics"]
    assert (outcome.status, outcome.reason) == ("auto_failed", NO_VALID_QUOTE)
    assert result.metadata.failure.reason.startswith(f"{NO_VALID_QUOTE}: no_antibiotics")
    assert any(w.startswith(NO_VALID_QUOTE) for w in result.metadata.warnings)


# --------------------------------------------------------------------------- batched: typed schema, misplaced traits


async def test_the_batched_schema_types_each_verdict_and_the_prompt_has_no_copyable_example() -> None:
    judge = ScriptedModel(honest)
    await run(judge)
    excerpts, verdicts = judge.requests[0], judge.for_purpose(Purpose.DJ_BATCH_SCORE)[0]
    for request in (excerpts, verdicts):
        assert "high|medium|low" not in prompt_of(request) and '"..."' not in prompt_of(request)
    traits = verdicts.schema["properties"]["traits"]
    assert sorted(traits["required"]) == sorted(NAMES)
    kinds = {n: traits["properties"][n]["properties"]["verdict"] for n in NAMES}
    assert kinds["explains_mechanism"] == {"type": "boolean"}
    assert kinds["clarity"] == {"type": "integer", "minimum": 1, "maximum": 5}
    assert kinds["register"] == {"type": "string", "enum": ["formal", "casual"]}
    item = excerpts.schema["properties"]["traits"]["properties"]["clarity"]
    assert json.dumps(item).count('"enum": ["high", "medium", "low"]') == 1


STRINGS = {"explains_mechanism": "Met", "clarity": "4 out of 5", "gives_numbers": "yes.", "mentions_safety": "True",
           "register": "formal"}


def string_verdicts(values: dict[str, str]) -> Any:
    def script(request: ChatRequest) -> str:
        if request.purpose is Purpose.DJ_BATCH_SCORE:
            return edit(request, lambda v: [e.update(verdict=values[n]) for n, e in v["traits"].items()])
        return honest(request)
    return script


async def test_string_verdicts_in_batched_mode_are_read_when_unambiguous() -> None:
    judge = ScriptedModel(string_verdicts(STRINGS))
    state, _ = await run(judge)
    assert {n: o[0] for n, o in outcomes(state).items()} == dict.fromkeys(NAMES, "scored")
    assert outcomes(state)["clarity"][1] == 4 and len(judge.for_purpose(Purpose.DJ_BATCH_SCORE)) == 1


async def test_a_judge_batched_cannot_use_judges_as_many_traits_as_per_trait() -> None:
    literal = dict.fromkeys(NAMES, "true/false, an integer score in range, or one class name")
    coverage = {}
    for strategy in ("per_trait", "batched"):
        state, _ = await run(ScriptedModel(string_verdicts(literal)), strategy)
        coverage[strategy] = sum(o.status == "scored" for o in state.rubric.trait_status.values())
        if strategy == "batched":
            assert all(m.stages_completed[0] == FALLBACK_STAGE
                       for m in state.deep_judgment_rubric.trait_metadata.values())
    assert coverage == {"per_trait": len(NAMES), "batched": len(NAMES)}


@pytest.mark.parametrize("where", ["too_high", "too_low"])
async def test_misplaced_traits_are_found_and_used(where: str) -> None:
    moved = ["clarity", "gives_numbers", "register"]

    def misplace(value: dict[str, Any]) -> None:
        entries = {n: value["traits"].pop(n) for n in moved}
        if where == "too_high":
            value.update(entries)
        else:
            value["traits"]["traits"] = entries

    judge = ScriptedModel(lambda r: edit(r, misplace) if r.purpose in (Purpose.DJ_BATCH_EXCERPTS, Purpose.DJ_BATCH_SCORE)
                          else honest(r))
    state, _ = await run(judge)
    assert {n: o[0] for n, o in outcomes(state).items()} == dict.fromkeys(NAMES, "scored")
    assert len(judge.requests) == 2  # used where they were: no retry, no fallback


async def test_a_misplaced_trait_with_a_bad_entry_is_named_with_where_it_was_found() -> None:
    def script(request: ChatRequest) -> str:
        if request.purpose is Purpose.DJ_BATCH_SCORE and len(request.messages) == 2:
            return edit(request, lambda v: v.update(clarity={**v["traits"].pop("clarity"), "verdict": 9}))
        return honest(request)

    judge = ScriptedModel(script)
    state, _ = await run(judge)
    assert outcomes(state)["clarity"][0] == "scored"
    follow_up = judge.for_purpose(Purpose.DJ_BATCH_SCORE)[1].messages[-1].content
    assert '- clarity: score 9 outside [1, 5] (found under the top level: put it directly under "traits")' in follow_up


async def test_a_retry_differs_from_the_request_it_retries_and_names_the_problems() -> None:
    judge = ScriptedModel(lambda r: edit(r, lambda v: v["traits"].pop("clarity", None))
                          if r.purpose is Purpose.DJ_BATCH_EXCERPTS and "retry_feedback" not in prompt_of(r)
                          else honest(r))
    state, _ = await run(judge)
    first, retry = judge.requests[0], judge.requests[1]
    assert prompt_of(retry) != prompt_of(first)
    assert "- clarity: missing from your reply" in prompt_of(retry)
    assert outcomes(state)["clarity"][0] == "scored"


# --------------------------------------------------------------------------- reasoning that is not reasoning


async def test_per_trait_reasoning_echoing_the_trait_is_asked_again_once() -> None:
    trait = TRAITS[0]
    echo = json.dumps({"name": trait.name, "kind": "boolean", "description": trait.description})
    said: list[int] = []

    def script(request: ChatRequest) -> str:
        if request.purpose is Purpose.DJ_REASONING:
            said.append(1)
            return echo if len(said) == 1 else honest(request)
        return honest(request)

    judge = ScriptedModel(script)
    state, _ = await run(judge, "per_trait", [trait])
    assert outcomes(state)[trait.name][0] == "scored"
    reasoning = judge.for_purpose(Purpose.DJ_REASONING)
    assert len(reasoning) == 2 and "JSON data, not reasoning" in reasoning[1].messages[-1].content
    assert state.deep_judgment_rubric.rubric_trait_reasoning[trait.name] != echo


async def test_per_trait_reasoning_empty_twice_leaves_the_trait_unscored() -> None:
    judge = ScriptedModel(lambda r: "" if r.purpose is Purpose.DJ_REASONING else honest(r))
    state, _ = await run(judge, "per_trait", [TRAITS[0]])
    outcome = state.rubric.trait_status[TRAITS[0].name]
    assert (outcome.status, outcome.unscored_category) == ("unscored", "invalid_reply")
    assert "reasoning reply unusable: the reply is empty" in (outcome.reason or "")
    assert judge.purposes().count(Purpose.DJ_REASONING) == 2 and Purpose.DJ_SCORE not in judge.purposes()


async def test_batched_reasoning_that_echoes_the_trait_is_asked_again() -> None:
    def script(request: ChatRequest) -> str:
        if request.purpose is Purpose.DJ_BATCH_SCORE and len(request.messages) == 2:
            return edit(request, lambda v: v["traits"]["clarity"].update(reasoning=TRAITS[1].description))
        return honest(request)

    judge = ScriptedModel(script)
    state, _ = await run(judge)
    assert outcomes(state)["clarity"][0] == "scored"
    follow_up = judge.for_purpose(Purpose.DJ_BATCH_SCORE)[1].messages[-1].content
    assert "- clarity:" in follow_up and "repeats the trait's definition" in follow_up


# --------------------------------------------------------------------------- the simulated judge


SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"label": {"type": "string", "enum": ["pass", "fail"]},
                   "explanation": {"type": "string", "citations": True}},
    "required": ["label", "explanation"],
}


@pytest.mark.parametrize("answer", [
    "The Great Wall of China was built over many centuries.",
    "The capital of France is Paris. Its walls were built and rebuilt over many centuries.",
])
async def test_the_simulated_judge_never_quotes_the_templates_markup(answer: str) -> None:
    spec = SchemaJudgeSpec(rubric_text="Does the answer say how long the wall took to build?",
                           output_schema=SPEC_SCHEMA, verdict_field="label",
                           prompt_templates=[{"content": "{rubric}\n<agent_run>{agent_run}</agent_run>\n{output_schema}\n"
                                                     "Answer with <response>...</response>."}])
    trait = SchemaJudgeTrait(name="history", description="says how long", judge=spec)
    result = await run_pipeline([trait], answer, simulated_judge(), question=QUESTION)
    assert result.rubric is not None and result.rubric.schema_judgments is not None
    judgment = result.rubric.schema_judgments["history"]
    assert judgment.proven is True and judgment.attempts == 1
    assert "agent_run" not in json.dumps(judgment.output)
    # judged, not failed: the quotes were proven (no rubric verdict is configured, so nothing passes either)
    assert result.verdict == "judged" and result.metadata.failure is None



# --------------------------------------------------------------------------- verdicts against the quotes' own stance

QUOTE = "The process is run at 23 degrees Celsius and usually takes 6 minutes"


def stance_judge(stances: list[str], verdicts: list[bool]) -> ScriptedModel:
    """Quotes for gives_numbers marked with ``stances``; its verdicts come in turn (the last again)."""
    given: list[int] = []

    def verdict() -> bool:
        given.append(1)
        return verdicts[min(len(given), len(verdicts)) - 1]

    def script(request: ChatRequest) -> str:
        quotes = [{"text": QUOTE if i == 0 else "according to the measurements reported by the laboratory",
                   "confidence": "high", "supports": s} for i, s in enumerate(stances)]
        if request.purpose is Purpose.DJ_EXCERPTS and request.trait == "gives_numbers":
            return json.dumps({"excerpts": quotes})
        if request.purpose is Purpose.DJ_SCORE and request.trait == "gives_numbers":
            return json.dumps({"result": verdict()})
        if request.purpose is Purpose.DJ_BATCH_EXCERPTS:
            return edit(request, lambda v: "gives_numbers" in v["traits"]
                        and v["traits"]["gives_numbers"].update(excerpts=quotes, nothing_relevant=False))
        if request.purpose is Purpose.DJ_BATCH_SCORE:
            return edit(request, lambda v: "gives_numbers" in v["traits"]
                        and v["traits"]["gives_numbers"].update(verdict=verdict()))
        return honest(request)
    return ScriptedModel(script)


@pytest.mark.parametrize("strategy", ["per_trait", "batched"])
async def test_a_verdict_against_every_quotes_stance_is_sent_back_then_unscored(strategy: str) -> None:
    judge = stance_judge(["fails", "fails"], [True])
    state, _ = await run(judge, strategy)
    outcome = state.rubric.trait_status["gives_numbers"]
    assert (outcome.status, outcome.unscored_category) == ("unscored", "contradiction")
    assert outcome.reason == (f"{CONTRADICTION}: every passage you quoted shows the response failing the trait, "
                              "yet your verdict says it meets it")
    purpose = Purpose.DJ_SCORE if strategy == "per_trait" else Purpose.DJ_BATCH_SCORE
    sent_back = [r for r in judge.for_purpose(purpose) if "contradicts your own evidence" in prompt_of(r)]
    assert len(sent_back) == 1 and "fails" in prompt_of(sent_back[0])
    assert outcomes(state)["explains_mechanism"][0] == "scored"  # the other traits are untouched


@pytest.mark.parametrize("strategy", ["per_trait", "batched"])
async def test_a_verdict_corrected_after_the_stance_feedback_is_scored(strategy: str) -> None:
    state, _ = await run(stance_judge(["fails", "fails"], [True, False]), strategy)
    assert outcomes(state)["gives_numbers"] == ("scored", False, None)


@pytest.mark.parametrize(("stances", "verdict"), [(["fails", "meets"], True), (["meets", "meets"], True),
                                                  (["fails", "fails"], False), (["sideways", "fails"], True)])
async def test_mixed_agreeing_or_missing_stances_are_no_contradiction(stances: list[str], verdict: bool) -> None:
    judge = stance_judge(stances, [verdict])
    state, _ = await run(judge, "per_trait")
    assert outcomes(state)["gives_numbers"] == ("scored", verdict, None)
    assert len(judge.for_purpose(Purpose.DJ_SCORE)) == len(TRAITS)  # nothing sent back


async def test_quotes_keep_the_stance_the_judge_gave_and_the_prompt_asks_it_of_yes_no_traits_only() -> None:
    judge = stance_judge(["fails", "fails"], [False])
    state, _ = await run(judge, "per_trait")
    excerpts = state.deep_judgment_rubric.extracted_rubric_excerpts["gives_numbers"]
    assert [e.supports for e in excerpts] == ["fails", "fails"]
    asked = {r.trait: '"supports"' in prompt_of(r) for r in judge.for_purpose(Purpose.DJ_EXCERPTS)}
    assert asked["gives_numbers"] is True and asked["clarity"] is False


@pytest.mark.parametrize("strategy", ["per_trait", "batched"])
async def test_a_class_label_with_nothing_relevant_is_no_contradiction(strategy: str) -> None:
    # "nothing bears on the register" and then a class: a label claims nothing is present, so it agrees
    judge = ScriptedModel(nothing_relevant("register"))
    state, _ = await run(judge, strategy)
    assert outcomes(state)["register"][0] == "scored"
    purpose = Purpose.DJ_SCORE if strategy == "per_trait" else Purpose.DJ_BATCH_SCORE
    assert not any("contradicts your own evidence" in prompt_of(r) for r in judge.for_purpose(purpose))
