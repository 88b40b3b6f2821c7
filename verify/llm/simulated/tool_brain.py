"""The simulated judge's turns when it is offered tools (a letta-style agent-as-judge).

Deterministic: first a ``search`` call (when that tool is offered) with the start of the question,
then one call to each command runner (its first allowed command), then the grade through the tool
whose parameters include ``score`` and ``rationale`` (``submit_grade`` first): the prompt grader's
length-based score (:func:`verify.llm.simulated.judge_brain.grader`), its rationale naming the
tools used and how the last one answered. Offered no such tool, it replies in text (and so never
submits). Only the in-process model takes this path; the simulated HTTP server has no tool support.
"""

from __future__ import annotations

import re

from verify.llm.ports import ChatRequest, ToolCall, ToolSpec
from verify.llm.simulated.judge_brain import grader

__all__ = ["turn"]


def _is_submit(spec: ToolSpec) -> bool:
    props = spec.parameters.get("properties")
    return isinstance(props, dict) and {"score", "rationale"} <= set(props)


def _query(prompt: str) -> str:
    found = re.search(r"Question:\s*(.+)", prompt)
    text = found.group(1) if found else prompt
    return " ".join(text.split()[:16])


def turn(request: ChatRequest) -> tuple[str, tuple[ToolCall, ...]]:
    """The text and tool calls of the judge's next turn."""
    prompt = "\n".join(m.content for m in request.messages if m.role == "user")
    called = [c.name for m in request.messages for c in m.tool_calls]
    results = [m.content for m in request.messages if m.role == "tool"]
    step = len(called) + 1
    for spec in request.tools:
        if spec.name in called or _is_submit(spec):
            continue
        if spec.name == "search":
            return "", (ToolCall(f"call_{step}", "search", {"query": _query(prompt)}),)
        command = spec.parameters.get("properties", {}).get("command", {}).get("enum")
        if isinstance(command, list) and command:
            return "", (ToolCall(f"call_{step}", spec.name, {"command": command[0]}),)
    submit = sorted((s for s in request.tools if _is_submit(s)), key=lambda s: s.name != "submit_grade")
    if not submit:
        return "I have no tool to submit a grade with.", ()
    graded = grader(prompt)
    rationale = str(graded["rationale"])
    if called:
        last = " ".join((results[-1] if results else "").split())[:80]
        rationale += f" Checked with {', '.join(dict.fromkeys(called))}; the last tool said: {last!r}."
    args = {"score": graded["score"], "rationale": rationale}
    return "", (ToolCall(f"call_{step}", submit[0].name, args),)
