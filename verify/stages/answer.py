"""GenerateAnswer: take a recorded answer, or ask the answering model.

Reads the question and few-shot settings; writes ``state.answer`` and ``state.answer_source``.
Recorded answers come from ``--answers FILE`` (per answering-model id, keyed by question id or by
md5 of the question text) or from karenina's ``manual`` interface (``manual_traces``).
One answer per (question, answering model, replicate) is shared by every judge model.

An answering model with ``tools`` answers through the tool loop (:mod:`verify.llm.tool_loop`): its
run is kept in OpenAI chat format and parsed as a recorded transcript is (``state.transcript``, the
submission by ``transcript_extractor``). A run still calling tools after ``tool_rounds`` calls is
karenina's ``recursion_limit`` auto-fail; one cut by ``agent_timeout`` is a partial trace. Either
way the transcript is kept, and judged only when ``allow_partial_trace_scoring`` (karenina's field:
truncated traces are scored, default true).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from verify.errors import ModelError
from verify.judging.transcript import chat_messages, parse_transcript
from verify.llm.ports import Message, Purpose
from verify.llm.structured import ask_text
from verify.llm.tool_loop import Handled, ToolBox, run_tool_loop, spec_of

if TYPE_CHECKING:
    from verify.benchmark.question import Question
    from verify.config.models import ModelConfig
    from verify.config.verification import VerificationConfig
    from verify.llm.ports import ToolCall
    from verify.run.state import Deps, TaskState


def find_recorded(question: Question, answering: ModelConfig, recorded: dict[str, dict[str, Any]]) -> str | list[Any] | None:
    """The recorded answer of ``question`` for ``answering``: ``--answers`` (by the model's id, then
    ``"*"``; by question id, then md5 of the text), then the model's ``manual_traces``."""
    keys = (question.id, question.question_hash)
    for table in (recorded.get(answering.id or ""), recorded.get("*")):
        if table:
            for key in keys:
                if key in table:
                    value: str | list[Any] = table[key]
                    return value
    traces = answering.manual_traces
    if isinstance(traces, dict):
        for key in keys:
            if key in traces:
                found = traces[key]
                return found if isinstance(found, list) else str(found)
    return None


def recorded_answer(state: TaskState, deps: Deps) -> str | list[Any] | None:
    return find_recorded(state.task.question, state.task.answering, deps.recorded_answers)


def few_shot_examples(config: VerificationConfig, question: Any) -> list[dict[str, Any]]:
    """Examples per ``few_shot_config`` (:meth:`~verify.config.prompts.FewShotConfig.select`): the
    question's own examples per ``question_configs[question.id]`` (or the pool settings), then the
    global ones."""
    fsc = config.few_shot_config
    if fsc is None:
        return []
    return fsc.select(question.id, question.few_shot_examples or []).examples


def few_shot_warnings(config: VerificationConfig, question: Any) -> list[str]:
    """Selected or excluded examples that match none of the question's examples."""
    fsc = config.few_shot_config
    if fsc is None:
        return []
    return fsc.select(question.id, question.few_shot_examples or []).warnings(question.id)


def answer_messages(config: VerificationConfig, state: TaskState) -> list[Message]:
    """The answering model's system prompt plus ``prompt_config.generation`` (appended, as karenina
    does), and the question after the few-shot examples as one user message."""
    task = state.task
    system = task.answering.system_prompt or ""
    generation = config.prompt_config.get_for_task("generation") if config.prompt_config else None
    if generation:
        system = f"{system}\n\n{generation}".strip()
    examples = few_shot_examples(config, task.question)
    if examples:
        # karenina's layout; an example without a question or an answer is skipped
        shots = "".join(
            f"Question: {e['question']}\nAnswer: {e['answer']}\n\n" for e in examples if "question" in e and "answer" in e
        )
        user = f"{shots}Question: {task.question.text}\nAnswer:"
    else:
        user = task.question.text
    messages = [Message("system", system)] if system else []
    return [*messages, Message("user", user)]


async def answer_with_tools(deps: Deps, answering: ModelConfig, messages: list[Message]) -> str:
    """Run the answering model's tool loop from ``messages``; its run as JSON (the chat messages,
    how it ended and after how many rounds), the form shared with every judge of the answer."""
    assert deps.answerer is not None
    tools = list(answering.tools or [])
    box = ToolBox.of(tools, deps.search)

    async def handle(call: ToolCall) -> Handled:
        return Handled(await box.run(call))

    end = await run_tool_loop(deps.answerer, messages, tuple(spec_of(t) for t in tools), handle, purpose=Purpose.ANSWER,
                              rounds=answering.tool_rounds, time_limit=answering.agent_timeout)
    return json.dumps({"messages": chat_messages(end.messages), "end": end.reason, "rounds": end.rounds})


def take_tool_run(state: TaskState, deps: Deps, run: str) -> None:
    """The transcript and submission of a tool-using answering model's run; a truncated run is
    recorded (and left unjudged unless ``allow_partial_trace_scoring``)."""
    data = json.loads(run)
    config, answering = deps.config, state.task.answering
    state.transcript = parse_transcript(data["messages"])
    state.answer, state.answer_source = state.transcript.submission(config.transcript_extractor), "model"
    if data["end"] == "rounds":
        state.template.section.recursion_limit_reached = True
        state.fail("recursion_limit", "generate_answer", f"answering model {answering.id!r} was still calling tools "
                   f"after {data['rounds']} round(s) (tool_rounds): its transcript has no final answer", "autofail")
    elif data["end"] == "timeout":
        state.template.section.response_timeout_partial = True
        state.warnings.append(f"generate_answer: answering model {answering.id!r} was stopped after agent_timeout="
                              f"{answering.agent_timeout}s in round {data['rounds']}: its transcript is partial")
    else:
        return
    if not config.allow_partial_trace_scoring:  # karenina: truncated traces are not scored
        state.answer = None
        if data["end"] == "timeout":
            state.fail("partial_trace", "generate_answer", "the transcript was cut by agent_timeout and "
                       "allow_partial_trace_scoring is false, so it is not judged", "autofail")


class GenerateAnswer:
    name = "generate_answer"
    summary = "answer from the answering model, or a recorded answer"

    def enabled(self, config: VerificationConfig) -> bool:
        return True

    def should_run(self, state: TaskState) -> bool:
        return state.template.answer_needed

    async def run(self, state: TaskState, deps: Deps) -> None:
        task = state.task
        recorded = recorded_answer(state, deps)
        if isinstance(recorded, list):  # an agent run: the answer is its submission (checked before the run)
            state.transcript = parse_transcript(recorded)
            state.answer = state.transcript.submission(deps.config.transcript_extractor)
            state.answer_source = "recorded"
            return
        if recorded is not None:
            state.answer, state.answer_source = recorded, "recorded"
            return
        if task.answering.interface == "manual":
            raise ModelError(
                f"no recorded answer for question {task.question.id!r} and manual model "
                f"{task.answering.id!r}; add it to manual_traces or --answers"
            )
        if deps.answerer is None:
            raise ModelError(f"no answering model available for {task.answering.id!r}")
        state.warnings.extend(few_shot_warnings(deps.config, task.question))
        tools = bool(task.answering.tools)
        if state.revision_turns is not None:  # a revision is this judge's own: never shared
            if tools:  # the follow-up turn continues the transcript
                take_tool_run(state, deps, await answer_with_tools(deps, task.answering, state.revision_turns))
                return
            reply = await ask_text(deps.answerer, state.revision_turns, purpose=Purpose.ANSWER)
            state.answer, state.answer_source = reply.text, "model"
            return
        key = (task.question.id, task.answering.id or task.answering.model_name or "", task.replicate)
        shared = deps.answers.get(key)
        if shared is not None:
            text, source = await shared
        else:
            future = deps.answers.claim(key)
            messages = answer_messages(deps.config, state)
            try:
                if tools:
                    text = await answer_with_tools(deps, task.answering, messages)
                else:
                    text = (await ask_text(deps.answerer, messages, purpose=Purpose.ANSWER)).text
            except BaseException as exc:
                future.set_exception(exc)
                future.exception()  # mark retrieved: other judges of this answer see it when they await
                raise
            source = "model"
            future.set_result((text, source))
        if tools:  # every judge parses the shared run into its own transcript
            take_tool_run(state, deps, text)
        else:
            state.answer, state.answer_source = text, source
