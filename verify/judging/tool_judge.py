"""Judges that use tools before they grade (letta's agent-as-judge), over the one chat port.

The judge gets the trait's prompt (rendered as for a prompt grader) and the trait's tools
(:mod:`verify.benchmark.judge_tools`) as :class:`~verify.llm.ports.ToolSpec` s, and runs the shared
tool loop (:mod:`verify.llm.tool_loop`, as tool-using answering models do): each round is one model
call; every tool the judge calls is run (``search`` through the run's search port; a command runner
through :func:`~verify.judging.judge_commands.run_command`) and its result sent back as a ``tool``
message. The grade is the first valid ``submit_grade(score, rationale)`` call (score
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
from verify.benchmark.judge_tools import SUBMIT_TOOL, tool_name, tool_problems
from verify.llm.ports import Message, Purpose, ToolCall, ToolSpec
from verify.llm.tool_loop import Handled, ToolBox, run_tool_loop, spec_of
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


def tool_specs(tools: list[Any]) -> tuple[ToolSpec, ...]:
    """The trait's tools as the port offers them to the model."""
    return tuple(_submit_spec(entry) if tool_name(entry) == SUBMIT_TOOL else spec_of(entry) for entry in tools)


def _submit_spec(entry: Any) -> ToolSpec:
    given = entry if isinstance(entry, dict) else {}
    return ToolSpec(SUBMIT_TOOL, str(given.get("description") or "Submit your grade: a score from 0.0 to 1.0 and its "
                                     "rationale."), given.get("parameters") or _SUBMIT_PARAMS)


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


async def judge_with_tools(judge: ChatModel, question: str, answer: str, trait: LLMTrait, reference: str | None,
                           search: Search | None) -> TraitOutcome:
    tools = list(trait.tools or [])
    problems = tool_problems(trait.name, tools)
    if problems:  # the trait's validation refuses these at load; a hand-built trait is refused here, uncalled
        return TraitOutcome(status="unscored", reason="; ".join(problems), unscored_category="nothing_to_evaluate")
    box = ToolBox.of(tools, search)
    text = render(trait.prompt or "{submission}", question, answer, reference, trait.description)

    async def handle(call: ToolCall) -> Handled:
        if call.name != SUBMIT_TOOL:
            return Handled(await box.run(call))
        grade = _grade_of(call.arguments)
        if isinstance(grade, str):
            return Handled(f"error: {grade}; call {SUBMIT_TOOL} again")
        return Handled("grade accepted", done=grade)

    end = await run_tool_loop(judge, [Message("system", TOOL_SYSTEM_PROMPT), Message("user", text)],
                              tool_specs(tools), handle, purpose=Purpose.RUBRIC_GRADER, rounds=trait.tool_rounds,
                              trait=trait.name)
    if end.reason == "done":
        score, rationale = end.done
        return TraitOutcome(status="scored", score=score, rationale=rationale, tool_calls=end.calls)
    if end.reason == "replied":
        why = f"the judge stopped in round {end.rounds} without calling {SUBMIT_TOOL}"
    else:
        why = f"no grade after {trait.tool_rounds} tool round(s): the judge never called {SUBMIT_TOOL} with a valid grade"
    return TraitOutcome(status="unscored", reason=why, raw_reply=end.reply, unscored_category="invalid_reply",
                        tool_calls=end.calls)
