"""Answering models that use tools: the answer stage runs the shared tool loop, and the run becomes a
transcript exactly as a recorded one would (rendering, extractor, full trace, excerpt blocks)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import ValidationError

from tests.fakes import SIM_ANSWERER, ScriptedModel, honest, make_config, make_task
from verify.benchmark.jsonld import Benchmark
from verify.benchmark.question import Question
from verify.benchmark.traits import LLMTrait, RegexTrait, Rubric
from verify.config.models import ModelConfig
from verify.errors import ConfigError
from verify.judging.transcript import Transcript, chat_messages, parse_transcript
from verify.llm.ports import ChatReply, ChatRequest, Message, Purpose, SearchHit, ToolCall
from verify.llm.recording import RecordingModel
from verify.llm.simulated.model import SimulatedModel
from verify.llm.simulated.search import SimulatedSearch
from verify.llm.tool_loop import Handled, run_tool_loop
from verify.results.karenina_form import to_karenina
from verify.results.models import VerificationResult
from verify.run.pipeline import plan, run_task
from verify.run.revision import run_revising
from verify.run.state import Deps, Task, TaskState
from verify.run.tasks import check_command_trust, needs_search

BOILING = LLMTrait(name="boiling_point", kind="boolean", description="Mentions that water boils at 100 degrees Celsius")
QUESTION = "At what temperature does water boil at sea level?"


def answerer(**kw: Any) -> dict[str, Any]:
    return {**SIM_ANSWERER, "tools": ["search"], **kw}


def run(config: Any, answering_model: Any, judge: Any, *, search: Any = None, traits: Any = (BOILING,),
        revise: bool = False) -> VerificationResult:
    task = make_task(list(traits), question=QUESTION, raw_answer="100 C", config=config)
    deps = Deps(config=config, answerer=RecordingModel(answering_model), judge=RecordingModel(judge),
                search=search if search is not None else SimulatedSearch())
    if revise:
        return asyncio.run(run_revising(task, deps, plan(config)))
    return asyncio.run(run_task(TaskState(task), deps, plan(config)))


def sim_answerer(config: Any) -> SimulatedModel:
    return SimulatedModel(config.answering_models[0])


# --------------------------------------------------------------------------- config


def test_answering_tools_take_the_judge_entry_syntax_minus_submit_grade() -> None:
    model = ModelConfig(**answerer(tools=["search", {"name": "py", "commands": ["python -V"], "timeout": 5}]))
    assert model.tool_rounds == 5
    with pytest.raises(ValidationError, match="'submit_grade' is a judge's tool"):
        ModelConfig(**answerer(tools=["search", "submit_grade"]))
    with pytest.raises(ValidationError, match="unknown tool 'browse'"):
        ModelConfig(**answerer(tools=["browse"]))
    with pytest.raises(ValidationError, match="a manual model answers from its traces"):
        ModelConfig(id="m", interface="manual", manual_traces={"q1": "a"}, tools=["search"])


def test_a_command_runner_needs_trust_and_a_judge_model_takes_no_tools_before_any_call() -> None:
    bench = Benchmark(name="b")
    runner = {"name": "py", "commands": ["python -V"]}
    config = make_config(answering_models=[answerer(tools=[runner])])
    with pytest.raises(ConfigError, match="answering model 'answerer': its tool 'py' runs commands"):
        check_command_trust(bench, config, [])
    check_command_trust(bench, make_config(answering_models=[answerer(tools=[runner])], trust_checkpoint_code=True), [])
    judge = {"id": "judge", "model_name": "simulated-judge", "interface": "simulated", "tools": ["search"]}
    with pytest.raises(ConfigError, match="parsing model 'judge': tools are for answering models"):
        check_command_trust(bench, make_config(parsing_models=[judge]), [])


def test_an_answering_model_with_search_makes_the_run_build_its_search() -> None:
    bench = Benchmark(name="b")
    assert needs_search(bench, make_config(answering_models=[answerer()]), []) is True
    assert needs_search(bench, make_config(), []) is False


# --------------------------------------------------------------------------- the loop


def test_the_simulated_answerer_searches_then_answers_and_the_run_is_a_transcript() -> None:
    config = make_config(answering_models=[answerer()], deep_judgment_rubric_mode="enable_all")
    model = sim_answerer(config)
    result = run(config, model, ScriptedModel(honest))
    assert result.template is not None and result.template.answer_source == "model"
    roles = [m["role"] for m in result.template.trace_messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    call = result.template.trace_messages[2]["tool_calls"][0]
    assert call["name"] == "search" and "boil" in call["input"]["query"]
    rendered = result.template.raw_llm_response or ""
    assert "[B3] assistant -> tool search(" in rendered and "[B4] tool search: [1] Water" in rendered
    assert "Water boils at 100 degrees Celsius" in rendered.split("[B5]")[1]  # the answer repeats the evidence
    assert result.template.usage_metadata["answer_generation"].calls == 2  # search round + answer round
    # the deep-judgment quotes are located in the rendered transcript, with their blocks
    assert result.deep_judgment_rubric is not None
    quotes = result.deep_judgment_rubric.extracted_rubric_excerpts["boiling_point"]
    assert quotes and all(rendered[q.start:q.end] == q.text and q.block is not None for q in quotes)
    assert 4 in {q.block for q in quotes}  # the evidence sits in the tool result block


def test_the_extractor_and_full_trace_apply_to_a_live_run_as_to_a_recorded_one() -> None:
    seen: dict[str, list[str]] = {}
    for label, overrides in {"full": {}, "final": {"use_full_trace_for_rubric": False},
                             "tool": {"use_full_trace_for_rubric": False, "transcript_extractor": "tool_output:search"}}.items():
        config = make_config(answering_models=[answerer()], **overrides)
        judge = ScriptedModel(honest)
        run(config, sim_answerer(config), judge)
        seen[label] = ["\n".join(m.content for m in r.messages) for r in judge.for_purpose(Purpose.RUBRIC_BATCH)]
    assert "tool search: [1] Water" in seen["full"][0]
    assert "[B" not in seen["final"][0] and "This is a simulated answer" in seen["final"][0]
    assert "This is a simulated answer" not in seen["tool"][0] and "Water boils at 100" in seen["tool"][0]


def test_a_live_run_round_trips_through_chat_messages_unchanged() -> None:
    messages = [Message("user", QUESTION), Message("assistant", "", tool_calls=(ToolCall("c1", "search", {"query": "q"}),)),
                Message("tool", "hit", tool_call_id="c1"), Message("assistant", "100 C")]
    transcript = parse_transcript(chat_messages(messages))
    assert isinstance(transcript, Transcript) and transcript.turns[2].tool_name == "search"
    assert transcript.port_messages() == messages


def failing_search() -> Any:
    class Down:
        async def search(self, query: str) -> list[SearchHit]:
            raise ConnectionError("search backend unreachable")
    return Down()


def test_a_tool_error_becomes_the_tool_message_and_the_answer_still_comes() -> None:
    config = make_config(answering_models=[answerer()])
    result = run(config, sim_answerer(config), ScriptedModel(honest), search=failing_search())
    assert result.template is not None
    tool = result.template.trace_messages[3]
    assert tool["role"] == "tool" and tool["content"].startswith("search failed: ConnectionError")
    assert result.metadata.errors == [] and result.rubric is not None


def always_searching(request: ChatRequest) -> ChatReply:
    step = sum(len(m.tool_calls) for m in request.messages) + 1
    return ChatReply("", tool_calls=(ToolCall(f"c{step}", "search", {"query": "water"}),))


@pytest.mark.parametrize("partial", [True, False])
def test_running_out_of_rounds_is_recursion_limit_and_partial_scoring_decides_judging(partial: bool) -> None:
    config = make_config(answering_models=[answerer(tool_rounds=2)], allow_partial_trace_scoring=partial)
    model = ScriptedModel(always_searching)
    result = run(config, model, ScriptedModel(honest))
    assert len(model.requests) == 2 and all(r.tools for r in model.requests)
    assert result.metadata.failure is not None and result.metadata.failure.category == "recursion_limit"
    assert "after 2 round(s)" in result.metadata.failure.reason
    assert result.template is not None and len(result.template.trace_messages) == 6  # the transcript is kept
    assert (result.rubric is not None) is partial  # judged only when partial traces are scored
    assert result.template.recursion_limit_reached and not result.template.response_timeout_partial
    assert to_karenina(result)["template"]["recursion_limit_reached"] is True  # karenina's flag


@pytest.mark.parametrize("partial", [True, False])
def test_agent_timeout_cuts_the_loop_and_keeps_a_partial_trace(partial: bool) -> None:
    config = make_config(answering_models=[answerer(agent_timeout=1)], allow_partial_trace_scoring=partial)
    slow = ScriptedModel(always_searching, delay=0.4)
    result = run(config, slow, ScriptedModel(honest))
    assert any("agent_timeout=1s" in w and "partial" in w for w in result.metadata.warnings)
    assert result.template is not None and result.template.trace_messages[0]["role"] == "system"
    assert (result.rubric is not None) is partial
    assert result.template.response_timeout_partial and not result.template.recursion_limit_reached
    failure = result.metadata.failure
    assert (failure is not None and failure.category == "partial_trace") is (not partial)


async def test_the_judge_and_the_answerer_share_one_loop_whose_handler_may_end_it() -> None:
    model = ScriptedModel(always_searching)
    seen: list[str] = []

    async def handle(call: ToolCall) -> Handled:
        seen.append(call.id)
        return Handled("ok", done="stop" if len(seen) == 2 else None)

    end = await run_tool_loop(model, [Message("user", "go")], (), handle, purpose=Purpose.ANSWER, rounds=5)
    assert end.reason == "done" and end.done == "stop" and end.rounds == 2 and seen == ["c1", "c2"]
    assert [c["result"] for c in end.calls] == ["ok", "ok"]


def test_the_simulated_answerer_runs_its_command_tool_with_trust() -> None:
    runner = {"name": "py", "commands": ["python -c \"print('water boils at 100 C')\""]}
    config = make_config(answering_models=[answerer(tools=["search", runner])], trust_checkpoint_code=True)
    result = run(config, sim_answerer(config), ScriptedModel(honest))
    assert result.template is not None
    names = [m["tool_calls"][0]["name"] for m in result.template.trace_messages if m.get("tool_calls")]
    assert names == ["search", "py"]
    assert "exit code 0\nwater boils at 100 C" in result.template.trace_messages[5]["content"]


def test_revising_a_tool_using_answer_continues_its_transcript() -> None:
    trait = RegexTrait(name="names_kelvin", description="Names the Kelvin scale", pattern=r"\bKelvin\b")
    config = make_config(answering_models=[answerer()], revision_max_iterations=2)
    model = sim_answerer(config)
    result = run(config, model, ScriptedModel(honest), traits=(trait,), revise=True)
    revision = result.metadata.revision
    assert revision is not None and len(revision.evaluations) == 2
    assert result.template is not None
    roles = [m["role"] for m in result.template.trace_messages]
    # first pass (system, user, search, tool, answer), the feedback, then the revised answer
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user", "assistant"]
    assert "<revision_request>" in result.template.trace_messages[5]["content"]
    assert model.calls == 3  # search + answer, then one revision (every tool already called)


def test_a_question_task_keeps_one_shared_run_for_every_judge() -> None:
    config = make_config(answering_models=[answerer()], parsing_models=[
        {"id": "j1", "model_name": "simulated-judge", "interface": "simulated"},
        {"id": "j2", "model_name": "simulated-judge", "interface": "simulated"}])
    model = sim_answerer(config)
    q = Question(id="q1", text=QUESTION, raw_answer="100 C", finished=True)
    from verify.run.state import AnswerMemo

    memo = AnswerMemo(sharers=2)

    async def both() -> list[VerificationResult]:
        out = []
        for parsing in config.parsing_models:
            task = Task(q, Rubric(traits=[BOILING]), {}, config.answering_models[0], parsing, None, f"q1\t{parsing.id}")
            deps = Deps(config=config, answerer=RecordingModel(model), judge=RecordingModel(ScriptedModel(honest)),
                        search=SimulatedSearch(), answers=memo)
            out.append(await run_task(TaskState(task), deps, plan(config)))
        return out

    first, second = asyncio.run(both())
    assert model.calls == 2  # one run, shared
    assert first.template is not None and second.template is not None
    assert first.template.trace_messages == second.template.trace_messages
