"""Judges that use tools before they grade (letta's agent-as-judge), over the one chat port.

The judge gets the trait's prompt (rendered as for a prompt grader) and the trait's tools
(:mod:`verify.benchmark.judge_tools`) as :class:`~verify.llm.ports.ToolSpec` s. Each round is one
model call: every tool the judge calls is run (``search`` through the run's search port; a command
runner through :func:`~verify.judging.judge_commands.run_command`) and its result sent back as a
``tool`` message. The grade is the first valid ``submit_grade(score, rationale)`` call (score
0.0-1.0, a non-empty rationale); an invalid one is answered with what was wrong. A judge that stops
calling tools without submitting, or is still calling them after ``tool_rounds`` rounds, leaves the
trait ``unscored`` (never 0.0). Every call and result is kept, in order, in the trait's
``trait_status.<trait>.tool_calls``.
"""

from __future__ import annotations

import contextlib
import math
from typing import TYPE_CHECKING, Any

from verify.benchmark.grader_prompt import render
from verify.benchmark.judge_tools import (
    DEFAULT_COMMAND_TIMEOUT,
    SEARCH_TOOL,
    SUBMIT_TOOL,
    tool_name,
    tool_problems,
)
from verify.judging.judge_commands import run_command
from verify.llm.ports import ChatRequest, Message, Purpose, ToolCall, ToolSpec
from verify.llm.resilience import redact
from verify.results.models import TraitOutcome

if TYPE_CHECKING:
    from verify.benchmark.traits import LLMTrait
    from verify.llm.ports import ChatModel, Search

__all__ = ["TOOL_SYSTEM_PROMPT", "judge_with_tools", "tool_specs"]

TOOL_SYSTEM_PROMPT = """You are an evaluation judge. You will be given a rubric, an input/question and a
submission to evaluate. You may call your tools to check the submission. When you have decided,
call the submit_grade tool with:
- score: a decimal number between 0.0 (complete failure) and 1.0 (perfect), inclusive
- rationale: an explanation of your grading decision
Your grade counts only when submitted through submit_grade."""

_SUBMIT_PARAMS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "number", "minimum": 0.0, "maximum": 1.0,
                  "description": "0.0 (complete failure) to 1.0 (perfect)"},
        "rationale": {"type": "string", "description": "why this score"},
    },
    "required": ["score", "rationale"],
}
_SEARCH_PARAMS: dict[str, Any] = {
    "type": "object", "properties": {"query": {"type": "string", "description": "what to search the web for"}},
    "required": ["query"],
}
RESULT_LIMIT = 4000


def tool_specs(tools: list[Any]) -> tuple[ToolSpec, ...]:
    """The trait's tools as the port offers them to the model."""
    specs = []
    for entry in tools:
        name = tool_name(entry)
        given = entry if isinstance(entry, dict) else {}
        if name == SUBMIT_TOOL:
            spec = ToolSpec(name, "Submit your grade: a score from 0.0 to 1.0 and its rationale.",
                            given.get("parameters") or _SUBMIT_PARAMS)
        elif name == SEARCH_TOOL:
            spec = ToolSpec(name, "Search the web; returns the top results.", _SEARCH_PARAMS)
        else:
            commands = list(given["commands"])
            spec = ToolSpec(name, "Run one of these commands and see its exit code and output: " + "; ".join(commands),
                            {"type": "object", "properties": {"command": {"type": "string", "enum": commands}},
                             "required": ["command"]})
        specs.append(ToolSpec(spec.name, str(given.get("description") or spec.description), spec.parameters))
    return tuple(specs)


def _grade_of(arguments: dict[str, Any]) -> tuple[float, str] | str:
    """The submitted (score, rationale), or what is wrong with the call."""
    score, rationale = arguments.get("score"), arguments.get("rationale")
    if isinstance(score, str):
        with contextlib.suppress(ValueError):
            score = float(score)
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score) or not 0 <= score <= 1:
        return f"score must be a number from 0.0 to 1.0, got {score!r}"
    if not isinstance(rationale, str) or not rationale.strip():
        return "rationale must be a non-empty explanation"
    return float(score), rationale


async def _run_tool(call: ToolCall, entries: dict[str, Any], search: Search | None) -> str:
    entry = entries.get(call.name)
    if entry is None:
        return f"error: there is no tool {call.name!r}; use one of {sorted(entries)}"
    if call.name == SEARCH_TOOL:
        query = str(call.arguments.get("query") or "").strip()
        if not query:
            return "error: search needs a query"
        if search is None:
            return "error: search is not available in this run"
        try:
            hits = await search.search(query[:400])
        except Exception as exc:  # noqa: BLE001 - a search outage is told to the judge, and recorded
            return redact(f"search failed: {type(exc).__name__}: {exc}", 300)
        lines = [f"[{n}] {h.title or ''} {h.url or ''}\n{h.content}" for n, h in enumerate(hits, 1)]
        return ("\n\n".join(lines) or "no results")[:RESULT_LIMIT]
    command = str(call.arguments.get("command") or "")
    return await run_command(command, list(entry["commands"]), float(entry.get("timeout", DEFAULT_COMMAND_TIMEOUT)))


async def judge_with_tools(judge: ChatModel, question: str, answer: str, trait: LLMTrait, reference: str | None,
                           search: Search | None) -> TraitOutcome:
    tools = list(trait.tools or [])
    problems = tool_problems(trait.name, tools)
    if problems:  # the trait's validation refuses these at load; a hand-built trait is refused here, uncalled
        return TraitOutcome(status="unscored", reason="; ".join(problems), unscored_category="nothing_to_evaluate")
    entries = {tool_name(e): e for e in tools}
    specs = tool_specs(tools)
    text = render(trait.prompt or "{submission}", question, answer, reference, trait.description)
    messages = [Message("system", TOOL_SYSTEM_PROMPT), Message("user", text)]
    transcript: list[dict[str, Any]] = []

    def unscored(why: str, raw: str | None) -> TraitOutcome:
        return TraitOutcome(status="unscored", reason=why, raw_reply=raw, unscored_category="invalid_reply",
                            tool_calls=transcript)

    for round_no in range(1, trait.tool_rounds + 1):
        request = ChatRequest(tuple(messages), purpose=Purpose.RUBRIC_GRADER, trait=trait.name, tools=specs)
        reply = await judge.complete(request)
        if not reply.tool_calls:
            transcript.append({"round": round_no, "reply": reply.text})
            return unscored(f"the judge stopped in round {round_no} without calling {SUBMIT_TOOL}", reply.text)
        messages.append(Message("assistant", reply.text, tool_calls=reply.tool_calls))
        for call in reply.tool_calls:
            record: dict[str, Any] = {"round": round_no, "id": call.id, "name": call.name, "arguments": call.arguments}
            transcript.append(record)
            if call.name == SUBMIT_TOOL:
                grade = _grade_of(call.arguments)
                if not isinstance(grade, str):
                    record["result"] = "grade accepted"
                    return TraitOutcome(status="scored", score=grade[0], rationale=grade[1], tool_calls=transcript)
                result = f"error: {grade}; call {SUBMIT_TOOL} again"
            else:
                result = await _run_tool(call, entries, search)
            record["result"] = result
            messages.append(Message("tool", result, tool_call_id=call.id))
    return unscored(f"no grade after {trait.tool_rounds} tool round(s): the judge never called {SUBMIT_TOOL} "
                    "with a valid grade", None)
