"""The simulated answering model's turns when it is offered tools (an agent answering a question).

Deterministic: first one call to each offered tool it has not called yet, in the order offered:
``search`` with the question's text, a command runner with its first allowed command. Then its final
answer: the plain simulated answer (:func:`verify.llm.simulated.brain.reply`, which also revises
when asked to), followed by what the first tool result said, so the evidence sits in a tool block of
the transcript and the answer repeats it. Called again after a revision request, it has called every
tool already and answers at once.
"""

from __future__ import annotations

from verify.llm.ports import ChatRequest, Message, Purpose, ToolCall
from verify.llm.simulated import brain

__all__ = ["turn"]


def _question(messages: tuple[Message, ...]) -> str:
    first = next((m.content for m in messages if m.role == "user"), "")
    asked = first.rsplit("Question:", 1)[-1].removesuffix("Answer:") if "Question:" in first else first
    return " ".join(asked.split()[:32])


def _evidence(result: str) -> str:
    """The first search hit's text (after its ``[1] title url`` line), or the result's first line."""
    lines = [line.strip() for line in result.splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].startswith("[1]"):
        return lines[1]
    return lines[0] if lines else ""


def turn(request: ChatRequest, faults: brain.Faults | None = None) -> tuple[str, tuple[ToolCall, ...]]:
    """The text and tool calls of the answering model's next turn."""
    called = [c.name for m in request.messages for c in m.tool_calls]
    step = len(called) + 1
    for spec in request.tools:
        if spec.name in called:
            continue
        if spec.name == "search":
            return "", (ToolCall(f"call_{step}", "search", {"query": _question(request.messages)}),)
        command = spec.parameters.get("properties", {}).get("command", {}).get("enum")
        if isinstance(command, list) and command:
            return "", (ToolCall(f"call_{step}", spec.name, {"command": command[0]}),)
    plain = tuple(m for m in request.messages if m.role != "tool" and not m.tool_calls)
    answer = brain.reply(Purpose.ANSWER, plain, None, faults)
    results = [m.content for m in request.messages if m.role == "tool"]
    evidence = _evidence(results[0]) if results else ""
    return (f"{answer}\nAccording to my {called[0]} tool: {evidence}" if evidence else answer), ()
