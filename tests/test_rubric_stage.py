"""RubricEvaluation: every trait kind, both strategies, and the unscored outcomes."""

from __future__ import annotations

import base64
import json

import pytest
from fakes import ScriptedModel, honest, make_config, prompt_of, run_rubric, simulated_judge

from verify.benchmark.traits import CallableTrait, LLMTrait, MetricTrait, RegexTrait
from verify.errors import ModelError
from verify.llm.ports import ChatRequest, Purpose
from verify.stages.rubric import BATCH_ATTEMPTS, RubricEvaluation

QUESTION = "What is the main function of the BCL2 protein?"
ANSWER = (
    "BCL2 is an anti-apoptotic protein: BCL2 inhibits apoptosis by blocking the release of cytochrome c. "
    "BCL2 is located in the mitochondrial membrane."
)
CASUAL = "hey, BCL2 is pretty much a gene that does stuff in cells lol"
WORDS = "def evaluate(text):\n    return len(text.split())\n"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


STATES_FACT = LLMTrait(name="states_fact", kind="boolean",
                       description="The response states a concrete fact that answers the question")
CLARITY = LLMTrait(name="clarity", kind="score", min_score=1, max_score=5,
                   description="The response is clear, well organized and easy to understand")
REGISTER = LLMTrait(
    name="register", kind="literal", description="The register of the response",
    classes={"formal": "Formal, precise scientific or encyclopedic register",
             "casual": "Casual, chatty register with informal words like hey or pretty much"},
)
MENTIONS = RegexTrait(name="mentions_bcl2", pattern=r"bcl2", case_sensitive=False)
NO_LOL = RegexTrait(name="no_lol", pattern=r"\blol\b", invert_result=True)
WORD_COUNT = CallableTrait(name="word_count", kind="score", min_score=0, max_score=100, callable_code=b64(WORDS.encode()))
FACTS = MetricTrait(
    name="bcl2_facts", description="Key facts about BCL2",
    tp_instructions=["BCL2 inhibits apoptosis", "BCL2 is located in the mitochondrial membrane",
                     "BCL2 is encoded on chromosome 18"],
)
ALL_KINDS = [STATES_FACT, CLARITY, REGISTER, MENTIONS, NO_LOL, WORD_COUNT, FACTS]
LLM_NAMES = {"states_fact", "clarity", "register"}


def config(strategy: str | None = "batch", **kw: object) -> object:
    return make_config(rubric_evaluation_strategy=strategy, **kw)


# -- every kind, both strategies --------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["batch", "sequential"])
async def test_every_trait_kind_is_scored(strategy: str) -> None:
    judge = simulated_judge()
    state, deps = await run_rubric(ALL_KINDS, ANSWER, judge, config=config(strategy), question=QUESTION)
    section = state.rubric
    assert section is not None
    assert section.rubric_evaluation_strategy == strategy
    assert {n: o.status for n, o in section.trait_status.items()} == {t.name: "scored" for t in ALL_KINDS}
    assert state.deep_judgment_rubric is None  # deep judgment is off by default

    scores = section.llm_trait_scores or {}
    assert scores["states_fact"] is True
    assert isinstance(scores["clarity"], int) and not isinstance(scores["clarity"], bool)
    assert 1 <= scores["clarity"] <= 5
    assert scores["register"] == 0 and section.llm_trait_labels == {"register": "formal"}
    assert section.regex_trait_scores == {"mentions_bcl2": True, "no_lol": True}
    assert section.callable_trait_scores == {"word_count": len(ANSWER.split())}
    assert section.metric_trait_scores == {"bcl2_facts": {"precision": 1.0, "recall": pytest.approx(2 / 3),
                                                          "f1": pytest.approx(0.8)}}
    assert section.metric_trait_confusion_lists == {"bcl2_facts": {
        "tp": ["BCL2 inhibits apoptosis", "BCL2 is located in the mitochondrial membrane"],
        "fn": ["BCL2 is encoded on chromosome 18"], "fp": [], "tn": [],
    }}
    assert section.trait_provenance == {t.name: "question_specific" for t in ALL_KINDS}

    purposes = sorted(r.purpose for r in deps.judge.records)
    if strategy == "batch":
        assert purposes == ["rubric_batch", "rubric_literal_batch", "rubric_metric"]
    else:
        assert purposes == ["rubric_metric", "rubric_single", "rubric_single", "rubric_single"]
        assert sorted(r.trait for r in deps.judge.records if r.purpose == "rubric_single") == sorted(LLM_NAMES)


@pytest.mark.parametrize("strategy", ["batch", "sequential"])
async def test_scores_follow_the_judge_and_the_answer(strategy: str) -> None:
    """A casual answer gets the other label and the deterministic traits flip."""
    state, _ = await run_rubric(ALL_KINDS, CASUAL, simulated_judge(), config=config(strategy), question=QUESTION)
    section = state.rubric
    assert section is not None
    assert section.llm_trait_labels == {"register": "casual"}
    assert section.llm_trait_scores is not None and section.llm_trait_scores["register"] == 1
    assert section.regex_trait_scores == {"mentions_bcl2": True, "no_lol": False}
    assert section.callable_trait_scores == {"word_count": len(CASUAL.split())}
    metrics = (section.metric_trait_scores or {})["bcl2_facts"]
    assert metrics == {"precision": 0.0, "recall": 0.0, "f1": 0.0}


def _scripted_scores(request: ChatRequest) -> str:
    if request.purpose == "rubric_batch":
        return json.dumps({"scores": {"states_fact": False, "clarity": 4}})
    if request.purpose == "rubric_single":
        return json.dumps({"result": False} if request.trait == "states_fact" else {"score": 4}
                          if request.trait == "clarity" else {"classification": "casual"})
    if request.purpose == "rubric_literal_batch":
        return json.dumps({"classifications": [{"trait_name": "register", "class_name": "Casual"}]})
    return honest(request)


@pytest.mark.parametrize("strategy", ["batch", "sequential", None])
async def test_judge_values_are_taken_as_given(strategy: str | None) -> None:
    state, _ = await run_rubric([STATES_FACT, CLARITY, REGISTER], ANSWER, ScriptedModel(_scripted_scores),
                                config=config(strategy))
    section = state.rubric
    assert section is not None
    assert section.rubric_evaluation_strategy == (strategy or "sequential")
    # a batch label is matched case-insensitively and stored with the trait's own spelling
    assert section.llm_trait_scores == {"states_fact": False, "clarity": 4, "register": 1}
    assert section.llm_trait_labels == {"register": "casual"}


async def test_ground_truth_traits_get_their_own_batch_with_the_reference() -> None:
    with_ref = CLARITY.model_copy(update={"name": "correctness", "include_ground_truth": True})
    judge = ScriptedModel(honest)
    state, _ = await run_rubric([CLARITY, with_ref], ANSWER, judge, config=config("batch"), raw_answer="REF-ANSWER-42")
    batches = judge.for_purpose("rubric_batch")
    assert len(batches) == 2
    with_reference = [r for r in batches if "<reference>REF-ANSWER-42</reference>" in prompt_of(r)]
    assert len(with_reference) == 1
    assert 'name="correctness"' in prompt_of(with_reference[0])
    assert 'name="clarity"' not in prompt_of(with_reference[0])
    assert state.rubric is not None and set(state.rubric.llm_trait_scores or {}) == {"clarity", "correctness"}


# -- callable traits -------------------------------------------------------------------------------


async def test_cloudpickle_callable_is_unscored_with_a_reason() -> None:
    pickled = CallableTrait(name="pickled", kind="boolean", callable_code=b64(b"\x80\x05\x95\x10\x00cloudpickle"))
    state, _ = await run_rubric([pickled, MENTIONS], ANSWER, simulated_judge())
    assert state.rubric is not None
    outcome = state.rubric.trait_status["pickled"]
    # not trusted (the default): skipped, and a gap (tests/test_callable_trust.py has the rest)
    assert (outcome.status, outcome.unscored_category, outcome.score) == ("skipped", "untrusted", None)
    assert outcome.reason is not None and "cloudpickle" in outcome.reason
    assert state.rubric.callable_trait_scores is None
    assert state.rubric.trait_status["mentions_bcl2"].status == "scored"


async def test_failing_callable_is_unscored_not_false() -> None:
    boom = CallableTrait(name="boom", kind="boolean", callable_code=b64(b"def f(text):\n    return 1 / 0\n"))
    state, _ = await run_rubric([boom], ANSWER, simulated_judge())
    assert state.rubric is not None
    outcome = state.rubric.trait_status["boom"]
    assert outcome.status == "unscored" and "ZeroDivisionError" in (outcome.reason or "")


# -- judge outages and bad replies --------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["batch", "sequential"])
async def test_outage_on_llm_calls_leaves_other_traits_scored(strategy: str) -> None:
    failing = {"rubric_batch", "rubric_single"}

    def script(request: ChatRequest) -> str | Exception:
        if request.purpose in failing and not (strategy == "sequential" and request.trait == "register"):
            return ModelError("judge unreachable after 3 attempts", "connection")
        return honest(request)

    judge = ScriptedModel(script)
    state, _ = await run_rubric(ALL_KINDS, ANSWER, judge, config=config(strategy), question=QUESTION)
    section = state.rubric
    assert section is not None
    for name in ("states_fact", "clarity"):
        outcome = section.trait_status[name]
        assert outcome.status == "unscored" and outcome.score is None
        assert outcome.reason is not None and "judge call failed (connection)" in outcome.reason
        assert "judge unreachable" in outcome.reason
    for name in ("register", "mentions_bcl2", "no_lol", "word_count", "bcl2_facts"):
        assert section.trait_status[name].status == "scored", name
    assert section.llm_trait_scores == {"register": 0}
    assert section.llm_trait_labels == {"register": "formal"}
    assert section.metric_trait_scores is not None and "bcl2_facts" in section.metric_trait_scores
    assert section.callable_trait_scores == {"word_count": len(ANSWER.split())}


async def test_outage_only_for_rubric_batch() -> None:
    def script(request: ChatRequest) -> str | Exception:
        return ModelError("503 from provider", "server_error") if request.purpose == "rubric_batch" else honest(request)

    state, _ = await run_rubric(ALL_KINDS, ANSWER, ScriptedModel(script), config=config("batch"), question=QUESTION)
    status = state.rubric.trait_status if state.rubric else {}
    assert {n for n, o in status.items() if o.status == "unscored"} == {"states_fact", "clarity"}
    assert all("503 from provider" in (status[n].reason or "") for n in ("states_fact", "clarity"))


async def test_outage_is_recorded_as_a_retryable_stage_error() -> None:
    def script(request: ChatRequest) -> str | Exception:
        return ModelError("rate limited", "rate_limit") if request.purpose == "rubric_batch" else honest(request)

    state, _ = await run_rubric(ALL_KINDS, ANSWER, ScriptedModel(script), config=config("batch"), question=QUESTION)
    assert [(e.stage, e.category) for e in state.errors] == [("rubric_evaluation", "rate_limit")]
    assert "clarity (rate_limit)" in state.errors[0].message


async def test_non_finite_batch_score_is_unscored_and_others_survive() -> None:
    def script(request: ChatRequest) -> str:
        if request.purpose == "rubric_batch":
            return '{"scores": {"clarity": NaN, "states_fact": true}}'
        return honest(request)

    state, _ = await run_rubric(ALL_KINDS, ANSWER, ScriptedModel(script), config=config("batch"), question=QUESTION)
    assert state.rubric is not None
    assert state.rubric.trait_status["clarity"].status == "unscored"
    assert state.rubric.trait_status["states_fact"].score is True


async def test_a_bug_in_one_evaluation_leaves_the_other_traits_scored(monkeypatch: pytest.MonkeyPatch) -> None:
    import verify.stages.rubric as rubric_stage

    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(rubric_stage, "confusion_metrics", broken)
    state, _ = await run_rubric(ALL_KINDS, ANSWER, simulated_judge(), config=config("batch"), question=QUESTION)
    assert state.rubric is not None
    status = state.rubric.trait_status
    assert status["bcl2_facts"].status == "unscored" and "ZeroDivisionError: boom" in (status["bcl2_facts"].reason or "")
    assert status["clarity"].status == "scored" and status["register"].status == "scored"


GARBAGE = "I think the response is quite good overall, well done!"


@pytest.mark.parametrize("strategy", ["batch", "sequential"])
async def test_unparseable_reply_is_unscored_with_the_raw_reply(strategy: str) -> None:
    def script(request: ChatRequest) -> str:
        return honest(request) if request.purpose == "rubric_metric" else GARBAGE

    judge = ScriptedModel(script)
    state, _ = await run_rubric(ALL_KINDS, ANSWER, judge, config=config(strategy), question=QUESTION)
    section = state.rubric
    assert section is not None
    for name in LLM_NAMES:
        outcome = section.trait_status[name]
        assert outcome.status == "unscored", name
        assert outcome.score is None and outcome.label is None  # never False or the minimum
        assert outcome.raw_reply == GARBAGE
        assert outcome.reason is not None and "unusable" in outcome.reason
    assert section.llm_trait_scores is None and section.llm_trait_labels is None
    assert section.trait_status["bcl2_facts"].status == "scored"
    # the judge was asked again with feedback before giving up (1 + 2 parse retries per call)
    llm_calls = [r for r in judge.requests if r.purpose != "rubric_metric"]
    assert len(llm_calls) == (2 if strategy == "batch" else 3) * 3


async def test_unparseable_metric_reply_is_unscored() -> None:
    state, _ = await run_rubric([FACTS], ANSWER, ScriptedModel(lambda r: GARBAGE))
    assert state.rubric is not None
    outcome = state.rubric.trait_status["bcl2_facts"]
    assert outcome.status == "unscored" and outcome.raw_reply == GARBAGE
    assert state.rubric.metric_trait_scores is None


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ({"states_fact": True, "clarity": 9}, "outside [1, 5]"),
        ({"states_fact": True, "clarity": 0}, "outside [1, 5]"),
        ({"states_fact": True, "clarity": 2.5}, "integer"),
        ({"states_fact": True, "clarity": True}, "integer"),
        ({"states_fact": True, "clarity": None}, "integer"),
    ],
)
async def test_bad_batch_score_is_unscored_not_clamped(reply: dict[str, object], reason: str) -> None:
    judge = ScriptedModel(lambda r: json.dumps({"scores": reply}))
    state, _ = await run_rubric([STATES_FACT, CLARITY], ANSWER, judge, config=config("batch"))
    section = state.rubric
    assert section is not None
    clarity = section.trait_status["clarity"]
    assert clarity.status == "unscored" and clarity.score is None
    assert reason in (clarity.reason or "")
    assert section.llm_trait_scores == {"states_fact": True}
    assert clarity.raw_reply == json.dumps({"scores": reply}) and clarity.unscored_category == "invalid_reply"
    # only the bad trait is asked again, with feedback, until the attempts run out
    assert len(judge.requests) == BATCH_ATTEMPTS
    retry = judge.requests[-1].messages[-1].content
    assert "clarity" in retry and "states_fact" not in retry and reason in retry


async def test_bad_batch_value_for_a_boolean_trait_spares_the_others() -> None:
    judge = ScriptedModel(lambda r: json.dumps({"scores": {"states_fact": 2, "clarity": 4.0}}))
    state, _ = await run_rubric([STATES_FACT, CLARITY], ANSWER, judge, config=config("batch"))
    assert state.rubric is not None
    assert state.rubric.trait_status["states_fact"].status == "unscored"
    assert state.rubric.llm_trait_scores == {"clarity": 4}


async def test_trait_missing_from_batch_reply_is_unscored() -> None:
    judge = ScriptedModel(lambda r: json.dumps({"scores": {"states_fact": True}}))
    state, _ = await run_rubric([STATES_FACT, CLARITY], ANSWER, judge, config=config("batch"))
    assert state.rubric is not None
    assert state.rubric.trait_status["clarity"].status == "unscored"
    assert "missing" in (state.rubric.trait_status["clarity"].reason or "")


async def test_out_of_range_sequential_score_is_unscored() -> None:
    judge = ScriptedModel(lambda r: json.dumps({"score": 7}))
    state, _ = await run_rubric([CLARITY], ANSWER, judge, config=config("sequential"))
    assert state.rubric is not None
    outcome = state.rubric.trait_status["clarity"]
    assert outcome.status == "unscored" and outcome.score is None
    assert outcome.raw_reply == json.dumps({"score": 7})


async def test_unknown_literal_label_is_unscored() -> None:
    judge = ScriptedModel(lambda r: json.dumps({"classifications": [{"trait_name": "register", "class_name": "poetic"}]}))
    state, _ = await run_rubric([REGISTER], ANSWER, judge, config=config("batch"))
    assert state.rubric is not None
    outcome = state.rubric.trait_status["register"]
    assert outcome.status == "unscored" and "poetic" in (outcome.reason or "")


# -- deep judgment for some traits -----------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["batch", "sequential"])
async def test_deep_judgment_for_some_traits_keeps_the_others(strategy: str) -> None:
    cfg = config(strategy, deep_judgment_rubric_mode="custom",
                 deep_judgment_rubric_config={"global": {"clarity": {}, "register": {}}})
    judge = ScriptedModel(honest)
    state, deps = await run_rubric(ALL_KINDS, ANSWER, judge, config=cfg, question=QUESTION)
    section, dj = state.rubric, state.deep_judgment_rubric
    assert section is not None and dj is not None
    assert all(o.status == "scored" for o in section.trait_status.values()), section.trait_status
    # deep-judgment traits
    assert set(dj.deep_judgment_rubric_scores) == {"clarity", "register"}
    assert set(dj.trait_metadata) == {"clarity", "register"}
    # standard LLM trait still evaluated, and reported as standard
    assert dj.standard_rubric_scores == {"states_fact": True}
    assert section.llm_trait_scores is not None and section.llm_trait_scores["states_fact"] is True
    # deterministic and metric traits still evaluated
    assert section.regex_trait_scores == {"mentions_bcl2": True, "no_lol": True}
    assert section.callable_trait_scores == {"word_count": len(ANSWER.split())}
    assert section.metric_trait_scores is not None and set(section.metric_trait_scores) == {"bcl2_facts"}
    # the standard call covers only the non-deep-judgment LLM trait
    std = [r for r in judge.requests if r.purpose.is_rubric_evaluation and r.purpose is not Purpose.RUBRIC_METRIC]
    assert len(std) == 1
    assert 'name="states_fact"' in prompt_of(std[0]) and 'name="clarity"' not in prompt_of(std[0])
    assert {r.trait for r in judge.requests if r.purpose.is_rubric_deep_judgment} == {"clarity", "register"}
    assert deps.judge.calls_for("clarity", lambda p: p.is_rubric_deep_judgment) == 3


async def test_literal_trait_under_deep_judgment_gets_a_label() -> None:
    cfg = config(deep_judgment_rubric_mode="enable_all")
    state, _ = await run_rubric([REGISTER], CASUAL, simulated_judge(), config=cfg)
    assert state.rubric is not None and state.deep_judgment_rubric is not None
    outcome = state.rubric.trait_status["register"]
    assert (outcome.status, outcome.score, outcome.label) == ("scored", 1, "casual")
    assert state.rubric.llm_trait_labels == {"register": "casual"}
    assert state.deep_judgment_rubric.deep_judgment_rubric_scores == {"register": 1}


async def test_template_kind_trait_without_fields_is_unscored_without_a_call() -> None:
    # evaluated since issue 13 (tests/test_template_kind_traits.py); a schema with nothing to fill is refused
    tmpl = LLMTrait(name="tmpl", kind="template", template_schema={"type": "object"})
    judge = ScriptedModel(honest)
    state, _ = await run_rubric([tmpl, MENTIONS], ANSWER, judge, config=config(deep_judgment_rubric_mode="enable_all"))
    assert state.rubric is not None
    outcome = state.rubric.trait_status["tmpl"]
    assert outcome.status == "unscored" and outcome.unscored_category == "code"
    assert all(r.trait != "tmpl" for r in judge.requests)
    assert state.deep_judgment_rubric is None  # template-kind traits never run deep judgment


def test_stage_runs_only_with_an_answer_and_traits() -> None:
    from fakes import make_task

    from verify.run.state import TaskState

    stage = RubricEvaluation()
    assert not stage.should_run(TaskState(make_task([CLARITY]), answer=None))
    assert not stage.should_run(TaskState(make_task([]), answer="x"))
    assert stage.should_run(TaskState(make_task([CLARITY]), answer=""))
    assert not stage.enabled(make_config(evaluation_mode="template_only"))
