"""The tool loop shared by tool-using judges and tool-using answering models, and the tools they run.

One round is one model call offered the tools. Every tool the model calls is handled (the caller
decides how: a judge's ``submit_grade`` ends the loop with the grade) and its result goes back as a
``tool`` message; a reply that calls no tool ends the loop. The loop also ends when ``rounds``
model calls have all called tools, or when ``time_limit`` seconds have passed (the conversation so
far is kept). Failures are data: a tool that fails, times out or does not exist gives an error text
as its result, never an exception.

:class:`ToolBox` runs the non-judge tools: ``search`` through the run's search port and command
runners through :func:`~verify.judging.judge_commands.run_command` (the entry syntax of
:mod:`verify.benchmark.judge_tools`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from verify.benchmark.judge_tools import DEFAULT_COMMAND_TIMEOUT, SEARCH_TOOL, tool_name
from verify.judging.judge_commands import run_command
from verify.llm.ports import ChatRequest, Message, Purpose, ToolCall, ToolSpec
from verify.llm.resilience import redact

if TYPE_CHECKING:
    from verify.llm.ports import ChatModel, Search

__all__ = ["RESULT_LIMIT", "Handled", "LoopEnd", "ToolBox", "run_tool_loop", "spec_of"]

RESULT_LIMIT = 4000
_SEARCH_PARAMS: dict[str, Any] = {
    "type": "object", "properties": {"query": {"type": "string", "description": "what to search the web for"}},
    "required": ["query"],
}

EndReason = Literal["replied", "done", "rounds", "timeout"]


def spec_of(entry: Any) -> ToolSpec:
    """How the port offers a ``search`` or command-runner entry to the model (a ``description``
    given in the entry replaces the default one)."""
    name = tool_name(entry)
    given = entry if isinstance(entry, dict) else {}
    if name == SEARCH_TOOL:
        spec = ToolSpec(name, "Search the web; returns the top results.", _SEARCH_PARAMS)
    else:
        commands = list(given["commands"])
        spec = ToolSpec(name, "Run one of these commands and see its exit code and output: " + "; ".join(commands),
                        {"type": "object", "properties": {"command": {"type": "string", "enum": commands}},
                         "required": ["command"]})
    return ToolSpec(spec.name, str(given.get("description") or spec.description), spec.parameters)


@dataclass(frozen=True)
class ToolBox:
    """The search and command-runner tools of one loop, by name."""

    entries: dict[str, Any]
    search: Search | None = None

    @classmethod
    def of(cls, tools: Sequence[Any], search: Search | None) -> ToolBox:
        return cls({tool_name(e): e for e in tools}, search)

    async def run(self, call: ToolCall) -> str:
        """The text the model gets back for ``call``; an error text when it could not run."""
        entry = self.entries.get(call.name)
        if entry is None:
            return f"error: there is no tool {call.name!r}; use one of {sorted(self.entries)}"
        if call.name == SEARCH_TOOL:
            return await self._search(str(call.arguments.get("query") or "").strip())
        command = str(call.arguments.get("command") or "")
        return await run_command(command, list(entry["commands"]), float(entry.get("timeout", DEFAULT_COMMAND_TIMEOUT)))

    async def _search(self, query: str) -> str:
        if not query:
            return "error: search needs a query"
        if self.search is None:
            return "error: search is not available in this run"
        try:
            hits = await self.search.search(query[:400])
        except Exception as exc:  # noqa: BLE001 - a search outage is told to the model, and recorded
            return redact(f"search failed: {type(exc).__name__}: {exc}", 300)
        lines = [f"[{n}] {h.title or ''} {h.url or ''}\n{h.content}" for n, h in enumerate(hits, 1)]
        return ("\n\n".join(lines) or "no results")[:RESULT_LIMIT]


@dataclass(frozen=True)
class Handled:
    """What the caller made of one tool call: the ``result`` sent back, and ``done`` (not None: the
    loop ends here with it, as with a judge's accepted grade)."""

    result: str
    done: Any = None


@dataclass(frozen=True)
class LoopEnd:
    """How a loop ended. ``messages``: the whole conversation, the model's last reply included (a
    loop cut by ``time_limit`` ends where it was cut). ``calls``: every tool call in order with its
    ``round``, ``id``, ``name``, ``arguments`` and ``result``, and ``{"round", "reply"}`` for a
    reply without calls. ``reason``: ``replied`` (a reply without tool calls: ``reply``),
    ``done`` (a handler ended it: ``done``), ``rounds`` (still calling tools after the last round)
    or ``timeout``."""

    messages: tuple[Message, ...]
    calls: list[dict[str, Any]]
    reason: EndReason
    rounds: int
    reply: str | None = None
    done: Any = None


@dataclass
class _Progress:
    messages: list[Message]
    calls: list[dict[str, Any]] = field(default_factory=list)
    rounds: int = 0


async def run_tool_loop(
    model: ChatModel, messages: Sequence[Message], specs: tuple[ToolSpec, ...],
    handle: Callable[[ToolCall], Awaitable[Handled]], *, purpose: Purpose, rounds: int,
    trait: str | None = None, time_limit: float | None = None,
) -> LoopEnd:
    """Run the loop from ``messages`` (see the module docstring) and say how it ended."""
    progress = _Progress(list(messages))
    try:
        async with asyncio.timeout(time_limit) as limit:
            return await _loop(model, progress, specs, handle, purpose, rounds, trait)
    except TimeoutError:
        if not limit.expired():
            raise  # a TimeoutError of the model or a tool, not the loop's own time limit
        return LoopEnd(tuple(progress.messages), progress.calls, "timeout", progress.rounds)


async def _loop(model: ChatModel, progress: _Progress, specs: tuple[ToolSpec, ...],
                handle: Callable[[ToolCall], Awaitable[Handled]], purpose: Purpose, rounds: int,
                trait: str | None) -> LoopEnd:
    messages, calls = progress.messages, progress.calls
    for round_no in range(1, rounds + 1):
        progress.rounds = round_no
        reply = await model.complete(ChatRequest(tuple(messages), purpose=purpose, trait=trait, tools=specs))
        messages.append(Message("assistant", reply.text, tool_calls=reply.tool_calls))
        if not reply.tool_calls:
            calls.append({"round": round_no, "reply": reply.text})
            return LoopEnd(tuple(messages), calls, "replied", round_no, reply=reply.text)
        for call in reply.tool_calls:
            record: dict[str, Any] = {"round": round_no, "id": call.id, "name": call.name, "arguments": call.arguments}
            calls.append(record)
            handled = await handle(call)
            record["result"] = handled.result
            if handled.done is not None:
                return LoopEnd(tuple(messages), calls, "done", round_no, done=handled.done)
            messages.append(Message("tool", handled.result, tool_call_id=call.id))
    return LoopEnd(tuple(messages), calls, "rounds", rounds)
