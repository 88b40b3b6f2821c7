"""Batched rubric deep judgment (``deep_judgment_rubric_strategy: batched``): call counts, prompt size,
the evidence policy kept (auto-fail, absence, unscored), the per-trait result fields, and the wiring."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fakes import ScriptedModel, honest, make_config, prompt_of, run_pipeline, run_rubric, simulated_judge
from typer.testing import CliRunner

from verify.benchmark.traits import LLMTrait
from verify.cli import app
from verify.config.verification import VerificationConfig
from verify.errors import ConfigError, ModelError
from verify.judging import deep_batched
from verify.judging.deep_fallback import FALLBACK_STAGE
from verify.llm.ports import ChatRequest, Purpose
from verify.llm.simulated import brain
from verify.llm.simulated.imperfect import Imperfections, elided, imperfect_reply
from verify.llm.simulated.search import SimulatedSearch
from verify.llm.simulated.text import fabricate
from verify.results.models import TraitOutcome
from verify.results.reasons import CONTRADICTION

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "verify" / "examples" / "demo" / "demo.jsonld"
QUESTION = "How does fermentation work in sample 3?"
ANSWER = (  # about 650 characters, six sentences (the shape of benchmarks/benchgen.py's answers)
    "In sample 3, fermentation works because energy drives the underlying mechanism of the process "
    "step by step until the material changes state. "
    "The process is run at 23 degrees Celsius and usually takes 6 minutes, "
    "according to the measurements reported by the laboratory. "
    "Safety precautions matter here: wear gloves and goggles, because the risks of burns are real. "
    "The explanation is organized in clear steps so that it is easy to follow for a new technician. "
    "First the fermentation vessel is prepared, then it is heated, and finally it is cooled slowly. "
    "Overall this is a formal, precise and technical description of a standard procedure."
)
TRAITS = [
    LLMTrait(name="explains_mechanism", kind="boolean",
             description="The response explains the underlying mechanism of the process"),
    LLMTrait(name="clarity", kind="score", min_score=1, max_score=5,
             description="The response is clear and organized in steps that are easy to follow"),
    LLMTrait(name="gives_numbers", kind="boolean",
             description="The response gives concrete numbers such as temperatures or durations"),
    LLMTrait(name="mentions_safety", kind="boolean", description="The response mentions safety precautions or risks"),
    LLMTrait(name="register", kind="literal", description="The register of the response",
             classes={"formal": "Formal, precise and technical register",
                      "casual": "Casual, chatty register with informal words"}),
]
NO_ANTIBIOTICS = LLMTrait(name="no_antibiotics", kind="boolean", description="Does not recommend antibiotics")
NAMES = [t.name for t in TRAITS]


def config(strategy: str = "batched", **kw: Any) -> VerificationConfig:
    return make_config(deep_judgment_rubric_mode="enable_all", deep_judgment_rubric_strategy=strategy, **kw)


async def run(judge: Any, strategy: str = "batched", traits: list[LLMTrait] | None = None, search: Any = None,
              **kw: Any) -> Any:
    return await run_rubric(traits or TRAITS, ANSWER, judge, config=config(strategy, **kw), question=QUESTION,
                            search=search)


def outcomes(state: Any) -> dict[str, tuple[Any, ...]]:
    return {n: (o.status, o.score, o.label) for n, o in state.rubric.trait_status.items()}


def chars(judge: ScriptedModel) -> int:
    return sum(len(m.content) for r in judge.requests for m in r.messages)


def edit(request: ChatRequest, change: Any) -> str:
    """The honest reply to ``request`` with ``change(value)`` applied to its parsed JSON."""
    value = json.loads(honest(request))
    change(value)
    return json.dumps(value)


# --------------------------------------------------------------------------- calls and prompt size


async def test_batched_makes_two_calls_and_reaches_the_per_trait_verdicts() -> None:
    per_trait, batched = ScriptedModel(honest), ScriptedModel(honest)
    expected, _ = await run(per_trait, "per_trait")
    state, deps = await run(batched)
    assert outcomes(state) == outcomes(expected)
    assert all(status == "scored" for status, *_ in outcomes(state).values())
    assert batched.purposes() == [Purpose.DJ_BATCH_EXCERPTS, Purpose.DJ_BATCH_SCORE]
    assert len(per_trait.requests) == 3 * len(TRAITS)
    dj, old = state.deep_judgment_rubric, expected.deep_judgment_rubric
    # same result fields: excerpts with offsets, reasoning, scores, per-trait metadata
    for name in NAMES:
        got, want = dj.extracted_rubric_excerpts[name], old.extracted_rubric_excerpts[name]
        assert [(e.text, e.start, e.end, e.match_method) for e in got] == [
            (e.text, e.start, e.end, e.match_method) for e in want]
        assert all(ANSWER[e.start:e.end] == e.text for e in got)
        meta = dj.trait_metadata[name]
        assert meta.stages_completed == old.trait_metadata[name].stages_completed
        assert meta.evidence == "excerpts" and meta.had_excerpts and meta.settings["source"] == "enable_all"
        assert meta.model_calls == 2  # each shared call counts once for every trait it covered
        assert "VERDICT" in dj.rubric_trait_reasoning[name]
    assert dj.deep_judgment_rubric_scores == old.deep_judgment_rubric_scores
    assert dj.total_deep_judgment_model_calls == 2 and dj.total_traits_evaluated == len(TRAITS)
    assert [(r.purpose, r.trait) for r in deps.judge.records] == [("dj_batch_excerpts", None), ("dj_batch_score", None)]


async def test_prompt_characters_are_at_most_40_percent_of_per_trait() -> None:
    per_trait, batched = ScriptedModel(honest), ScriptedModel(honest)
    await run(per_trait, "per_trait")
    await run(batched)
    assert len(ANSWER) > 600
    assert chars(batched) <= 0.4 * chars(per_trait), (chars(batched), chars(per_trait))


async def test_each_trait_reasons_over_its_own_numbered_evidence() -> None:
    judge = ScriptedModel(honest)
    state, _ = await run(judge)
    prompt = prompt_of(judge.for_purpose(Purpose.DJ_BATCH_SCORE)[0])
    for name in NAMES:
        block = re.search(rf'<evidence for="{name}">(.*?)</evidence>', prompt, re.S)
        assert block is not None
        quotes = state.deep_judgment_rubric.extracted_rubric_excerpts[name]
        assert [f"[E{i}] {e.text}" for i, e in enumerate(quotes, 1)] == block.group(1).strip().splitlines()


async def test_a_retry_call_covers_only_the_traits_whose_quotes_failed() -> None:
    def script(request: ChatRequest) -> str:
        if request.purpose is Purpose.DJ_BATCH_EXCERPTS and "<retry_feedback>" not in prompt_of(request):
            def fake(value: dict[str, Any]) -> None:
                for item in value["traits"]["clarity"]["excerpts"]:
                    item["text"] = fabricate(item["text"])
            return edit(request, fake)
        return honest(request)

    judge = ScriptedModel(script)
    state, _ = await run(judge)
    assert judge.purposes() == [Purpose.DJ_BATCH_EXCERPTS] * 2 + [Purpose.DJ_BATCH_SCORE]
    retry = prompt_of(judge.requests[1])
    assert re.findall(r'<trait name="([^"]+)"', retry) == ["clarity"]
    dj = state.deep_judgment_rubric
    rejected = dj.trait_metadata["clarity"].rejected_excerpts
    assert rejected and all(r.attempt == 1 and f'"{r.text}"' in retry for r in rejected)
    assert outcomes(state)["clarity"][0] == "scored"
    assert {n: m.excerpt_retry_count for n, m in dj.trait_metadata.items()} == {n: int(n == "clarity") for n in NAMES}
    assert {n: m.model_calls for n, m in dj.trait_metadata.items()} == {n: 2 + (n == "clarity") for n in NAMES}
    assert dj.total_excerpt_retries == 1 and dj.total_deep_judgment_model_calls == 3


# --------------------------------------------------------------------------- the evidence policy, kept


def injected(request: ChatRequest) -> str:
    """The honest judge with quotes injected per trait: ``explains_mechanism`` fabricated, ``clarity``
    elided (head ... tail, verbatim parts), ``no_antibiotics`` says nothing is relevant but is judged violated."""
    def change_quotes(name: str, entry: dict[str, Any]) -> None:
        for item in entry.get("excerpts") or []:
            if name == "explains_mechanism":
                item["text"] = fabricate(item["text"])
            elif name == "clarity" and (parts := elided(item["text"], ANSWER)):
                item["text"] = f"{parts[0]} ... {parts[1]}"

    if request.purpose is Purpose.DJ_EXCERPTS:
        return edit(request, lambda v: change_quotes(str(request.trait), v))
    if request.purpose is Purpose.DJ_BATCH_EXCERPTS:
        return edit(request, lambda v: [change_quotes(n, e) for n, e in v["traits"].items()])
    if request.purpose is Purpose.DJ_SCORE and request.trait == "no_antibiotics":
        return json.dumps({"result": False})
    if request.purpose is Purpose.DJ_BATCH_SCORE:
        return edit(request, lambda v: v["traits"]["no_antibiotics"].update(verdict=False))
    return honest(request)


async def test_injected_fabricated_and_elided_quotes_auto_fail_the_same_traits() -> None:
    traits = [*TRAITS, NO_ANTIBIOTICS]
    runs = {}
    for strategy in ("per_trait", "batched"):
        judge = ScriptedModel(injected)
        state, _ = await run(judge, strategy, traits)
        runs[strategy] = state
    per_trait, batched = runs["per_trait"], runs["batched"]
    failed = sorted(n for n, o in outcomes(batched).items() if o[0] == "auto_failed")
    assert failed == sorted(n for n, o in outcomes(per_trait).items() if o[0] == "auto_failed")
    assert failed == ["explains_mechanism"]  # fabricated quotes; the absence judged violated is the judge's contradiction
    assert outcomes(batched) == outcomes(per_trait)
    for state in (per_trait, batched):
        assert state.rubric.trait_status["no_antibiotics"].unscored_category == "contradiction"
    dj = batched.deep_judgment_rubric
    assert sorted(dj.traits_without_valid_excerpts) == failed
    assert dj.trait_metadata["explains_mechanism"].excerpt_retry_count == 2  # retried as per_trait does
    assert dj.trait_metadata["no_antibiotics"].evidence == "absence"
    assert any(e.match_method == "elided" for e in dj.extracted_rubric_excerpts["clarity"])
    assert batched.rubric.trait_status["no_antibiotics"].reason == per_trait.rubric.trait_status["no_antibiotics"].reason


async def test_simulated_fabricating_judge_fails_the_task_in_both_strategies() -> None:
    failures = []
    for strategy in ("per_trait", "batched"):
        result = await run_pipeline(TRAITS, ANSWER, simulated_judge(fabricate_rate=1.0), config=config(strategy))
        assert sorted(result.deep_judgment_rubric.traits_without_valid_excerpts) == sorted(NAMES)
        failures.append(result.metadata.failure)
    assert failures[0] is not None and failures[0].category == "deep_judgment_rubric"
    assert failures[0] == failures[1]  # the same auto-fail stage, reason and retries


@pytest.mark.parametrize("purpose", [Purpose.DJ_BATCH_EXCERPTS, Purpose.DJ_BATCH_SCORE])
async def test_an_unusable_batch_reply_falls_back_to_the_per_trait_path(purpose: Purpose) -> None:
    judge = ScriptedModel(lambda r: "I think it is fine." if r.purpose is purpose else honest(r))
    state, _ = await run(judge)
    assert {o.status for o in state.rubric.trait_status.values()} == {"scored"}  # judged one by one
    dj = state.deep_judgment_rubric
    assert all(m.stages_completed[0] == FALLBACK_STAGE for m in dj.trait_metadata.values())
    batched = [p for p in judge.purposes() if p in (Purpose.DJ_BATCH_EXCERPTS, Purpose.DJ_BATCH_SCORE)]
    if purpose is Purpose.DJ_BATCH_EXCERPTS:  # asked again like per_trait (retries), never a verdict call
        assert batched == [purpose] * 3
    else:  # the reply is asked again twice (parse retries), then given up
        assert batched == [Purpose.DJ_BATCH_EXCERPTS] + [purpose] * 3
    assert len(judge.for_purpose(Purpose.DJ_EXCERPTS)) == len(NAMES)
    assert dj.trait_metadata["clarity"].model_calls == len(batched) + 3


async def test_without_the_fallback_an_unusable_batch_reply_leaves_traits_unscored_not_failed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_fallback(*_args: Any) -> None:
        return None

    monkeypatch.setattr(deep_batched, "fall_back", no_fallback)
    judge = ScriptedModel(lambda r: "I think it is fine." if r.purpose is Purpose.DJ_BATCH_SCORE else honest(r))
    state, _ = await run(judge)
    assert {o.unscored_category for o in state.rubric.trait_status.values()} == {"unparseable"}
    assert state.deep_judgment_rubric.traits_without_valid_excerpts == []


async def test_a_trait_the_verdict_reply_leaves_out_is_asked_again_then_judged_alone() -> None:
    judge = ScriptedModel(lambda r: edit(r, lambda v: v["traits"].pop("clarity", None))
                          if r.purpose is Purpose.DJ_BATCH_SCORE else honest(r))
    state, _ = await run(judge)
    assert all(outcomes(state)[n][0] == "scored" for n in NAMES)
    follow_ups = judge.for_purpose(Purpose.DJ_BATCH_SCORE)[1:]
    assert len(follow_ups) == 2
    assert all("- clarity:" in r.messages[-1].content and "register" not in r.messages[-1].content
               for r in follow_ups)
    meta = state.deep_judgment_rubric.trait_metadata["clarity"]
    assert meta.stages_completed[0] == FALLBACK_STAGE and meta.model_calls == 4 + 3
    assert judge.purposes("clarity") == [Purpose.DJ_EXCERPTS, Purpose.DJ_REASONING, Purpose.DJ_SCORE]


async def test_a_trait_the_excerpt_reply_leaves_out_is_never_auto_failed() -> None:
    judge = ScriptedModel(lambda r: edit(r, lambda v: v["traits"].pop("clarity", None))
                          if r.purpose is Purpose.DJ_BATCH_EXCERPTS else honest(r))
    state, _ = await run(judge)
    assert [re.findall(r'<trait name="([^"]+)"', prompt_of(r)) for r in judge.requests[1:3]] == [["clarity"]] * 2
    assert state.rubric.trait_status["clarity"].status == "scored"  # judged alone after the batch retries
    assert state.deep_judgment_rubric.traits_without_valid_excerpts == []


async def test_an_invalid_verdict_is_asked_again_for_that_trait_only() -> None:
    def script(request: ChatRequest) -> str:
        if request.purpose is Purpose.DJ_BATCH_SCORE and len(request.messages) == 2:
            return edit(request, lambda v: v["traits"]["clarity"].update(verdict=9))
        return honest(request)

    judge = ScriptedModel(script)
    state, _ = await run(judge)
    assert outcomes(state)["clarity"][0] == "scored"
    second = judge.for_purpose(Purpose.DJ_BATCH_SCORE)[1]
    assert "- clarity:" in second.messages[-1].content and "gives_numbers" not in second.messages[-1].content


async def test_replies_without_the_traits_wrapper_are_read() -> None:
    judge = ScriptedModel(lambda r: json.dumps(json.loads(honest(r))["traits"]))
    state, _ = await run(judge)
    assert all(o.status == "scored" for o in state.rubric.trait_status.values())
    assert len(judge.requests) == 2


async def test_a_judge_outage_leaves_the_traits_unscored_with_its_category() -> None:
    judge = ScriptedModel(lambda r: ModelError("down", category="server_error")
                          if r.purpose is Purpose.DJ_BATCH_SCORE else honest(r))
    state, _ = await run(judge)
    assert {(o.status, o.error_category) for o in state.rubric.trait_status.values()} == {("unscored", "server_error")}
    assert state.errors and state.errors[0].category == "server_error"


async def test_an_ungrounded_presence_verdict_is_sent_back_once_then_unscored_as_a_contradiction() -> None:
    def script(request: ChatRequest) -> str:
        if request.purpose is Purpose.DJ_BATCH_EXCERPTS:
            return edit(request, lambda v: v["traits"]["gives_numbers"].update(excerpts=[], nothing_relevant=True))
        return honest(request)

    judge = ScriptedModel(script)
    state, _ = await run(judge)
    outcome: TraitOutcome = state.rubric.trait_status["gives_numbers"]
    assert (outcome.status, outcome.unscored_category) == ("unscored", "contradiction")
    assert outcome.reason is not None and outcome.reason.startswith(CONTRADICTION) and outcome.raw_reply
    calls = judge.for_purpose(Purpose.DJ_BATCH_SCORE)
    assert len(calls) == 2 and "gives_numbers: your verdict contradicts your own evidence" in calls[1].messages[-1].content
    assert "no passage of the response bears on this trait" in calls[1].messages[-1].content.lower()
    assert state.deep_judgment_rubric.traits_without_valid_excerpts == []
    assert state.failure is None  # the answer is not blamed for the judge's contradiction


async def test_a_contradiction_the_judge_corrects_is_scored() -> None:
    def script(request: ChatRequest) -> str:
        if request.purpose is Purpose.DJ_BATCH_EXCERPTS:
            return edit(request, lambda v: v["traits"]["gives_numbers"].update(excerpts=[], nothing_relevant=True))
        if request.purpose is Purpose.DJ_BATCH_SCORE and len(request.messages) > 2:
            return json.dumps({"traits": {"gives_numbers": {"reasoning": "Nothing relevant, so not met.", "verdict": False}}})
        return honest(request)

    state, _ = await run(ScriptedModel(script))
    assert outcomes(state)["gives_numbers"] == ("scored", False, None)


# --------------------------------------------------------------------------- search and reasoning only


async def test_search_risks_come_back_in_the_verdict_call() -> None:
    search = SimulatedSearch()
    state, deps = await run(simulated_judge(), deep_judgment_rubric_search_enabled=True,
                            deep_judgment_rubric_search_tool="simulated", search=search)
    assert [r.purpose for r in deps.judge.records] == ["dj_batch_excerpts", "dj_batch_score"]
    dj = state.deep_judgment_rubric
    assert search.calls == sum(len(v) for v in dj.extracted_rubric_excerpts.values())
    risks = dj.rubric_hallucination_risk_assessment
    assert risks is not None and set(risks) == set(NAMES)
    for name in NAMES:
        excerpts = dj.extracted_rubric_excerpts[name]
        assert risks[name].assessed and risks[name].per_excerpt_risks == [e.hallucination_risk for e in excerpts]
        assert all(e.search_results is not None for e in excerpts)
        assert "hallucination_assessment" in dj.trait_metadata[name].stages_completed


async def test_search_outage_is_not_assessed_and_traits_still_scored() -> None:
    state, _ = await run(simulated_judge(), deep_judgment_rubric_search_enabled=True,
                         deep_judgment_rubric_search_tool="simulated", search=SimulatedSearch(fail=True))
    risks = state.deep_judgment_rubric.rubric_hallucination_risk_assessment
    assert risks is not None and {r.overall_risk for r in risks.values()} == {"not_assessed"}
    assert all(o.status == "scored" for o in state.rubric.trait_status.values())


async def test_reasoning_only_traits_need_one_call() -> None:
    judge = ScriptedModel(honest)
    state, _ = await run(judge, deep_judgment_rubric_global_excerpts=False)
    assert judge.purposes() == [Purpose.DJ_BATCH_SCORE]
    assert "<evidence" not in prompt_of(judge.requests[0])
    assert all(o.status == "scored" for o in state.rubric.trait_status.values())
    assert all(m.stages_completed == ["reasoning_generation", "score_extraction"]
               for m in state.deep_judgment_rubric.trait_metadata.values())


# --------------------------------------------------------------------------- the simulated judges


def test_the_simulated_batch_replies_are_the_per_trait_replies() -> None:
    from verify.judging.batched_prompts import batch_excerpt_prompt
    from verify.judging.prompts import excerpt_prompt

    batch = json.loads(brain.reply(Purpose.DJ_BATCH_EXCERPTS, [_user(batch_excerpt_prompt(
        QUESTION, ANSWER, TRAITS, {t.name: 3 for t in TRAITS}, None))], None))
    for trait in TRAITS:
        one = json.loads(brain.reply(Purpose.DJ_EXCERPTS, [_user(excerpt_prompt(QUESTION, ANSWER, trait, 3, None))], None))
        assert batch["traits"][trait.name] == one


def _user(text: str) -> Any:
    from verify.llm.ports import Message
    return Message("user", text)


@pytest.mark.parametrize("behaviour", ["elide", "invented_trait", "out_of_range", "class_description",
                                       "quote_question", "placeholder_copy"])
def test_the_imperfect_judge_applies_its_behaviours_to_batch_replies(behaviour: str) -> None:
    from verify.judging.batched_prompts import TraitEvidence, batch_excerpt_prompt, batch_verdict_prompt

    excerpts = batch_excerpt_prompt(QUESTION, ANSWER, TRAITS, {t.name: 3 for t in TRAITS}, None)
    verdicts = batch_verdict_prompt(QUESTION, ANSWER, [TraitEvidence(t, []) for t in TRAITS])
    purpose = Purpose.DJ_BATCH_SCORE if behaviour in ("out_of_range", "class_description") else Purpose.DJ_BATCH_EXCERPTS
    prompt = verdicts if purpose is Purpose.DJ_BATCH_SCORE else excerpts
    perfect = json.loads(brain.reply(purpose, [_user(prompt)], None))
    settings = Imperfections(rate=1.0, behaviours=(behaviour,))
    changed = imperfect_reply(purpose, [_user(prompt)], prompt, {}, perfect, settings, seed=3)
    assert changed is not None and changed.behaviour == behaviour and json.loads(changed.text) != perfect


async def test_batched_over_the_simulated_http_server_matches_in_process() -> None:
    from verify.config.models import ModelConfig
    from verify.llm.adapters.langchain import LangChainModel
    from verify.llm.simulated.server import start_server

    expected, _ = await run(simulated_judge())
    with start_server() as server:
        judge = LangChainModel(ModelConfig(id="judge", model_provider="openai", model_name="simulated-judge",
                                           interface="openai_endpoint", endpoint_base_url=server.url,
                                           temperature=0.0, request_timeout=10.0))
        try:
            state, _ = await run(judge)
        finally:
            await judge.aclose()
        sent = [{k.lower(): v for k, v in r["headers"].items()} for r in server.chat_requests]
    assert outcomes(state) == outcomes(expected)
    assert [h.get("x-verify-purpose") for h in sent] == ["dj_batch_excerpts", "dj_batch_score"]


async def test_imperfect_judge_coverage_holds_with_batched() -> None:
    coverage = {}
    for strategy in ("per_trait", "batched"):
        scored = total = 0
        for seed in range(10):
            judge = simulated_judge(imperfection_rate=0.6, seed=seed)
            state, _ = await run(judge, strategy)
            scored += sum(o.status == "scored" for o in state.rubric.trait_status.values())
            total += len(TRAITS)
        coverage[strategy] = scored / total
    assert coverage["batched"] >= coverage["per_trait"] - 0.01, coverage


# --------------------------------------------------------------------------- config, CLI and plan


def test_batch_purposes_count_as_rubric_deep_judgment() -> None:
    for purpose in (Purpose.DJ_BATCH_EXCERPTS, Purpose.DJ_BATCH_SCORE):
        assert purpose.is_rubric_deep_judgment and purpose.usage_group == "deep_judgment_rubric"



def test_config_field_is_validated_and_taken_by_from_overrides() -> None:
    assert make_config().deep_judgment_rubric_strategy == "per_trait"
    assert VerificationConfig.from_overrides(make_config(), deep_judgment_rubric_strategy="batched") \
        .deep_judgment_rubric_strategy == "batched"
    with pytest.raises(ConfigError, match="deep_judgment_rubric_strategy"):
        VerificationConfig.from_overrides(make_config(), deep_judgment_rubric_strategy="per_task")


def test_cli_flag_reaches_the_config_and_the_plan() -> None:
    runner = CliRunner()
    shown = runner.invoke(app, [str(DEMO), "--preset", "demo", "--deep-judgment-rubric-strategy", "batched",
                                "--show-config"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["deep_judgment_rubric_strategy"] == "batched"
    plan = runner.invoke(app, [str(DEMO), "--preset", "demo", "--deep-judgment-rubric-mode", "enable_all",
                               "--deep-judgment-rubric-strategy", "batched", "--show-plan"])
    assert plan.exit_code == 0, plan.output
    assert "deep_judgment_rubric_strategy: batched" in plan.stdout
    default = runner.invoke(app, [str(DEMO), "--preset", "demo", "--show-plan"])
    assert "deep_judgment_rubric_strategy: per_trait" in default.stdout
    bad = runner.invoke(app, [str(DEMO), "--preset", "demo", "--deep-judgment-rubric-strategy", "per_task",
                              "--show-config"])
    assert bad.exit_code == 1 and "deep_judgment_rubric_strategy" in bad.output


async def test_a_failed_retry_call_leaves_only_the_traits_it_was_for_unscored() -> None:
    traits = [TRAITS[1], TRAITS[2]]  # clarity, gives_numbers
    excerpt_calls = 0

    def script(request: ChatRequest) -> Any:
        nonlocal excerpt_calls
        if request.purpose == Purpose.DJ_BATCH_EXCERPTS:
            excerpt_calls += 1
            if excerpt_calls == 1:  # gives_numbers quotes the answer, clarity makes a quote up
                return json.dumps({"traits": {
                    "gives_numbers": {"excerpts": [{"text": "The process is run at 23 degrees Celsius", "confidence": "high"}]},
                    "clarity": {"excerpts": [{"text": "a sentence that is nowhere in the answer at all", "confidence": "high"}]}}})
            return ModelError("down", category="server_error")  # the retry, for clarity only, fails for good
        return honest(request)

    state, _ = await run(ScriptedModel(script), traits=traits)
    assert state.rubric is not None
    assert state.rubric.trait_status["gives_numbers"].status == "scored"  # its quote validated on attempt 1
    clarity = state.rubric.trait_status["clarity"]
    assert clarity.status == "unscored" and "judge call failed" in (clarity.reason or "")
