"""Agent runs as answers: transcripts parsed from OpenAI chat and karenina trace formats, rendered in
numbered blocks for judges, judged with the full trace or the final answer, and quotes located by block."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.fakes import ScriptedModel, honest, make_config, make_deps, make_task
from verify.benchmark.question import Question
from verify.benchmark.traits import LLMTrait, Rubric
from verify.cli import app
from verify.errors import ConfigError
from verify.judging.transcript import Transcript, TranscriptError, parse_transcript
from verify.llm.ports import ChatRequest, Purpose
from verify.results.karenina_form import to_karenina
from verify.results.models import VerificationResult
from verify.run.pipeline import plan, run_task
from verify.run.recorded import check_recorded_answers
from verify.run.state import Task, TaskState

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "verify" / "examples" / "demo" / "demo.jsonld"

BOILING = LLMTrait(name="boiling_point", kind="boolean", description="Mentions the boiling point of water")
EVIDENCE = "The boiling point of water is 100 degrees Celsius at sea level."

OPENAI = [
    {"role": "system", "content": "You are a careful assistant."},
    {"role": "user", "content": "At what temperature does pure water boil at sea level?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "search", "arguments": '{"q": "water boiling point"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": EVIDENCE},
    {"role": "assistant", "content": "It boils at 100 degrees Celsius."},
]
# karenina's template.trace_messages form, and its port messages (content blocks)
KARENINA_TRACE = [
    {"role": "user", "content": "At what temperature does pure water boil at sea level?", "block_index": 0},
    {"role": "assistant", "content": "", "block_index": 1,
     "tool_calls": [{"id": "c1", "name": "search", "input": {"q": "water boiling point"}}]},
    {"role": "tool", "content": EVIDENCE, "block_index": 2, "tool_result": {"tool_use_id": "c1", "is_error": False}},
    {"role": "assistant", "content": "It boils at 100 degrees Celsius.", "block_index": 3},
]
KARENINA_PORT = [
    {"role": "user", "content": [{"type": "text", "text": "At what temperature does pure water boil at sea level?"}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "search",
                                       "input": {"q": "water boiling point"}}]},
    {"role": "tool", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": EVIDENCE}]},
    {"role": "assistant", "content": [{"type": "text", "text": "It boils at 100 degrees Celsius."}]},
]
RENDERED = (
    "[B1] user: At what temperature does pure water boil at sea level?\n\n"
    '[B2] assistant -> tool search({"q": "water boiling point"})\n\n'
    f"[B3] tool search: {EVIDENCE}\n\n"
    "[B4] assistant: It boils at 100 degrees Celsius."
)

CAPITAL_TEMPLATE = '''from karenina.schemas.entities import BaseAnswer
from pydantic import Field

class Answer(BaseAnswer):
    temperature: str = Field(description="The boiling temperature named in the response")

    def ground_truth(self):
        self.correct = {"temperature": "100"}

    def verify(self) -> bool:
        return "100" in self.temperature
'''


# --------------------------------------------------------------------------- parsing


def test_openai_chat_messages_become_turns_with_tool_calls_and_named_results() -> None:
    t = parse_transcript(OPENAI)
    assert [x.role for x in t.turns] == ["system", "user", "assistant", "tool", "assistant"]
    (call,) = t.turns[2].tool_calls
    assert (call.name, call.arguments) == ("search", {"q": "water boiling point"})  # JSON arguments decoded
    assert t.turns[3].tool_name == "search"  # named from the call it answers
    assert t.turns[3].text == EVIDENCE


@pytest.mark.parametrize("messages", [KARENINA_TRACE, KARENINA_PORT], ids=["trace_messages", "port_messages"])
def test_karenina_trace_formats_parse_to_the_same_transcript(messages: list[Any]) -> None:
    t = parse_transcript(messages)
    assert t == parse_transcript(OPENAI[1:])
    assert t.rendered().text == RENDERED


@pytest.mark.parametrize(("messages", "needle"), [
    ([], "non-empty list"),
    ([{"role": "user", "content": "hi"}, {"role": "bot", "content": "x"}], "message 2: role 'bot'"),
    ([{"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}], "message 1: a tool call has no tool name"),
    ([{"role": "tool", "content": "x"}], "message 1: a tool message needs tool_call_id"),
    (["hello"], "message 1 is str"),
])
def test_malformed_transcripts_name_the_message(messages: list[Any], needle: str) -> None:
    with pytest.raises(TranscriptError) as err:
        parse_transcript(messages)
    assert needle in str(err.value)


def test_a_malformed_recorded_transcript_is_a_located_error_naming_file_model_and_question(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    bad = [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [{"id": "c"}]}]
    answers.write_text(json.dumps({"model-a": {"demo-capital": bad}}))
    result = CliRunner().invoke(app, [str(DEMO), "--preset", "demo", "--answers", str(answers),
                                      "--question-ids", "demo-capital", "--output", str(tmp_path / "r.json")])
    assert result.exit_code == 1, result.output
    line = result.output + (result.stderr or "")
    assert str(answers) in line and "'model-a'" in line and "'demo-capital'" in line
    assert "message 2: a tool call has no tool name" in line


def test_check_recorded_answers_refuses_a_bad_transcript_before_any_call() -> None:
    config = make_config()
    q = Question(id="q1", text="?", raw_answer="x", finished=True)
    with pytest.raises(ConfigError, match=r"answers\.json: model 'answerer', question 'q1': message 1"):
        check_recorded_answers(config, [q], {"*": {"q1": [{"role": "robot"}]}}, source="answers.json",
                               generate_missing=False)


# --------------------------------------------------------------------------- rendering and extractors


def test_rendering_numbers_blocks_and_offsets_fall_in_them() -> None:
    t = parse_transcript(OPENAI[1:])
    rendered = t.rendered()
    assert rendered.text == RENDERED
    start = rendered.text.index(EVIDENCE)
    assert rendered.block_of(start) == 3
    assert rendered.block_of(0) == 1
    assert rendered.block_of(rendered.text.index("It boils")) == 4
    assert rendered.block_of(rendered.spans[0][1]) is None  # the blank line between blocks


def test_extractors_choose_the_submission() -> None:
    t = parse_transcript([*OPENAI, {"role": "assistant", "content": "Final: 100 C."}])
    assert t.submission() == "Final: 100 C."  # last_assistant, karenina's final answer
    assert t.submission("all_assistant") == "It boils at 100 degrees Celsius.\n\nFinal: 100 C."
    assert t.submission("tool_output:search") == EVIDENCE
    assert t.submission("tool_output:calculator") == ""
    with pytest.raises(TranscriptError, match="unknown extractor"):
        t.submission("first")


# --------------------------------------------------------------------------- judging


def _run(config: Any, judge: ScriptedModel, messages: list[Any], task: Task | None = None) -> VerificationResult:
    task = task or make_task([BOILING], config=config)
    deps = make_deps(config, judge, answers={"*": {task.question.id: messages}})
    return asyncio.run(run_task(TaskState(task), deps, plan(config)))


def _prompts(judge: ScriptedModel, purpose: Purpose) -> list[str]:
    return ["\n".join(m.content for m in r.messages) for r in judge.requests if r.purpose == purpose]


def test_rubric_judges_see_the_full_trace_or_the_final_answer() -> None:
    full, final = ScriptedModel(honest), ScriptedModel(honest)
    on = _run(make_config(use_full_trace_for_rubric=True), full, OPENAI)
    off = _run(make_config(use_full_trace_for_rubric=False), final, OPENAI)
    (seen_full,) = _prompts(full, Purpose.RUBRIC_BATCH)
    (seen_final,) = _prompts(final, Purpose.RUBRIC_BATCH)
    assert f"[B4] tool search: {EVIDENCE}" in seen_full  # B1 is the system prompt here
    assert EVIDENCE not in seen_final and "[B" not in seen_final
    assert "It boils at 100 degrees Celsius." in seen_final
    assert on.template is not None and off.template is not None
    # the result keeps the transcript whatever the judges saw: the rendered trace and karenina's messages
    assert on.template.raw_llm_response == off.template.raw_llm_response == parse_transcript(OPENAI).rendered().text
    assert [m["role"] for m in on.template.trace_messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert on.template.trace_messages[2]["tool_calls"][0]["name"] == "search"



def test_karenina_root_trace_fields_say_what_the_judges_read() -> None:
    on = to_karenina(_run(make_config(use_full_trace_for_rubric=True), ScriptedModel(honest), OPENAI))
    off = to_karenina(_run(make_config(use_full_trace_for_rubric=False), ScriptedModel(honest), OPENAI))
    assert on["used_full_trace"] is True and on["evaluation_input"] == parse_transcript(OPENAI).rendered().text
    assert off["used_full_trace"] is False and off["evaluation_input"] == "It boils at 100 degrees Celsius."
    plain = to_karenina(_run(make_config(use_full_trace_for_rubric=False), ScriptedModel(honest), "It boils at 100."))
    assert plain["used_full_trace"] is True and plain["evaluation_input"] is None  # a string answer: karenina's defaults
    from verify.results.karenina_form import from_export

    back = from_export(off)
    assert (back.used_full_trace, back.evaluation_input) == (False, "It boils at 100 degrees Celsius.")

def test_template_judge_sees_the_final_answer_by_default_and_the_trace_when_asked() -> None:
    def script(request: ChatRequest) -> str:
        return json.dumps({"temperature": "100 degrees Celsius"}) if request.purpose == Purpose.PARSING else honest(request)

    def task_for(config: Any) -> Task:
        q = Question(id="q1", text="At what temperature does water boil?", raw_answer="100 C", finished=True,
                     template_code=CAPITAL_TEMPLATE)
        return Task(q, Rubric(traits=[]), {}, config.answering_models[0], config.parsing_models[0], None, "q1\tt")

    for full in (False, True):
        config = make_config(evaluation_mode="template_only", use_full_trace_for_template=full)
        judge = ScriptedModel(script)
        result = _run(config, judge, OPENAI, task_for(config))
        (prompt,) = _prompts(judge, Purpose.PARSING)
        assert (f"tool search: {EVIDENCE}" in prompt) is full
        assert "It boils at 100 degrees Celsius." in prompt
        assert result.template is not None and result.template.verify_result is True


def test_the_extractor_sets_what_the_final_answer_judges_see() -> None:
    judge = ScriptedModel(honest)
    _run(make_config(use_full_trace_for_rubric=False, transcript_extractor="tool_output:search"), judge, OPENAI)
    (seen,) = _prompts(judge, Purpose.RUBRIC_BATCH)
    assert EVIDENCE in seen and "It boils at" not in seen and "[B" not in seen


def test_deep_judgment_quotes_from_the_full_trace_point_at_the_tool_result_block() -> None:
    def script(request: ChatRequest) -> str:
        if request.purpose == Purpose.DJ_EXCERPTS:  # quotes the tool's result, not the final answer
            return json.dumps({"excerpts": [{"text": "boiling point of water is 100 degrees Celsius",
                                             "confidence": "high"}]})
        return honest(request)

    config = make_config(deep_judgment_rubric_mode="enable_all", use_full_trace_for_rubric=True)
    result = _run(config, ScriptedModel(script), OPENAI[1:])
    assert result.deep_judgment_rubric is not None and result.template is not None
    (quote,) = result.deep_judgment_rubric.extracted_rubric_excerpts["boiling_point"]
    text = result.template.raw_llm_response or ""
    assert text[quote.start:quote.end] == quote.text  # offsets into the rendered transcript
    assert quote.block == 3 and text[text.index("[B3]"):].startswith("[B3] tool search:")
    assert result.rubric is not None and result.rubric.trait_status["boiling_point"].status == "scored"
    # karenina's readers keep the extra block key (tests/test_karenina_readers.py checks the whole file)
    dumped = to_karenina(result)
    assert dumped["deep_judgment_rubric"]["extracted_rubric_excerpts"]["boiling_point"][0]["block"] == 3
    assert dumped["template"]["trace_messages"][2]["tool_result"]["tool_use_id"] == "c1"


def test_the_simulated_judge_quotes_tool_blocks_under_the_full_trace_only() -> None:
    on = _run(make_config(deep_judgment_rubric_mode="enable_all"), ScriptedModel(honest), OPENAI[1:])
    off = _run(make_config(deep_judgment_rubric_mode="enable_all", use_full_trace_for_rubric=False),
               ScriptedModel(honest), OPENAI[1:])
    assert on.deep_judgment_rubric is not None and off.deep_judgment_rubric is not None
    blocks = {q.block for q in on.deep_judgment_rubric.extracted_rubric_excerpts["boiling_point"]}
    assert 3 in blocks  # the tool result holds the evidence
    assert {q.block for q in off.deep_judgment_rubric.extracted_rubric_excerpts["boiling_point"]} == {None}


def test_a_string_answer_is_judged_as_before() -> None:
    judge = ScriptedModel(honest)
    result = _run(make_config(), judge, "Water boils at 100 degrees Celsius.")  # type: ignore[arg-type]
    (seen,) = _prompts(judge, Purpose.RUBRIC_BATCH)
    assert "Water boils at 100 degrees Celsius." in seen and "[B" not in seen
    assert result.template is not None and result.template.trace_messages == []
    assert result.template.raw_llm_response == "Water boils at 100 degrees Celsius."
    assert isinstance(parse_transcript(OPENAI), Transcript)


def test_trace_checks_read_the_whole_run() -> None:
    # karenina's trace primitives read the raw trace: for a transcript, every block, tool calls included
    code = '''from karenina.schemas.entities import BaseAnswer, VerifiedField
from karenina.schemas.primitives.trace import TraceContains

class Answer(BaseAnswer):
    searched: bool = VerifiedField(description="searched", ground_truth=True,
                                   verify_with=TraceContains(substring="-> tool search("))
'''
    config = make_config(evaluation_mode="template_only", use_full_trace_for_template=False)
    q = Question(id="q1", text="At what temperature does water boil?", raw_answer="100 C", finished=True,
                 template_code=code)
    task = Task(q, Rubric(traits=[]), {}, config.answering_models[0], config.parsing_models[0], None, "q1\tt")
    judge = ScriptedModel(honest)
    result = _run(config, judge, OPENAI, task)
    assert result.template is not None and result.template.verify_result is True
    assert not judge.requests  # a trace-only template makes no judge call


def test_manual_traces_may_hold_karenina_trace_messages(tmp_path: Path) -> None:
    traces, out = tmp_path / "traces.json", tmp_path / "r.json"
    traces.write_text(json.dumps({"demo-capital": [KARENINA_TRACE[0], {"role": "tool", "content": "x"}]}))
    bad = CliRunner().invoke(app, [str(DEMO), "--preset", "demo", "--manual-traces", str(traces),
                                   "--question-ids", "demo-capital", "--output", str(out)])
    assert bad.exit_code == 1
    assert f"manual traces {traces}" in bad.output and "'demo-capital': message 2" in bad.output
    traces.write_text(json.dumps({"demo-capital": KARENINA_TRACE}))
    good = CliRunner().invoke(app, [str(DEMO), "--preset", "demo", "--manual-traces", str(traces),
                                    "--question-ids", "demo-capital", "--output", str(out)])
    assert good.exit_code in (0, 4), good.output
    (result,) = json.loads(out.read_text())["results"]
    assert result["template"]["raw_llm_response"].startswith("[B1] user:")
    assert result["template"]["trace_messages"][2]["tool_result"]["tool_use_id"] == "c1"


def test_template_deep_judgment_quotes_carry_blocks_under_the_full_trace() -> None:
    def script(request: ChatRequest) -> str:
        return json.dumps({"temperature": "100 degrees Celsius"}) if request.purpose == Purpose.PARSING else honest(request)

    config = make_config(evaluation_mode="template_only", use_full_trace_for_template=True, deep_judgment_mode="full")
    q = Question(id="q1", text="At what temperature does water boil?", raw_answer="100 C", finished=True,
                 template_code=CAPITAL_TEMPLATE)
    task = Task(q, Rubric(traits=[]), {}, config.answering_models[0], config.parsing_models[0], None, "q1\tt")
    result = _run(config, ScriptedModel(script), OPENAI[1:], task)
    assert result.deep_judgment is not None and result.template is not None
    quotes = result.deep_judgment.extracted_excerpts["temperature"]
    text = result.template.raw_llm_response or ""
    assert quotes and all(text[q.start:q.end] == q.text and q.block is not None for q in quotes)
