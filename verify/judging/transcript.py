"""Agent runs as answers: a transcript of messages with roles, tool calls and tool results.

A recorded answer may be a message list instead of a string: OpenAI chat format (``tool_calls``
with ``function.name``/``arguments``, ``role: tool`` results with ``tool_call_id``) or karenina's
trace formats (its ``trace_messages`` dicts with ``tool_calls[].input`` and ``tool_result``, or its
port messages whose ``content`` is a list of ``text``/``tool_use``/``tool_result`` blocks).

Judges see a transcript rendered as numbered blocks (``[B1] user: ...``, ``[B2] assistant -> tool
search({...})``, ``[B3] tool search: ...``), so a quote validated against the rendered text has
offsets into it and falls in one block. The *submission* (what counts as the answer when the full
trace is not used) is chosen by an extractor: ``last_assistant`` (karenina's final answer, the last
assistant message's text), ``all_assistant``, or ``tool_output:<tool name>``.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from verify.llm import ports

__all__ = [
    "EXTRACTORS", "Rendered", "ToolCall", "Transcript", "TranscriptError", "Turn", "chat_messages", "parse_transcript",
]

ROLES = ("system", "user", "assistant", "tool")
#: the extractor names; ``tool_output:<name>`` takes a tool's name after the colon
EXTRACTORS = ("last_assistant", "all_assistant", "tool_output:")


class TranscriptError(ValueError):
    """A message list that is not a transcript; the message says which message and why."""


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: Any


@dataclass(frozen=True)
class Turn:
    role: str
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_name: str | None = None  # tool results: the tool that produced them
    tool_call_id: str | None = None
    is_error: bool = False


@dataclass(frozen=True)
class Rendered:
    """The transcript as judges see it; ``spans[i]`` is block ``i + 1``'s (start, end) in ``text``."""

    text: str
    spans: tuple[tuple[int, int], ...]

    def block_of(self, offset: int) -> int | None:
        """The 1-based block holding ``offset`` (None when it falls between blocks)."""
        i = bisect_right([s for s, _ in self.spans], offset) - 1
        if i >= 0 and offset < self.spans[i][1]:
            return i + 1
        return None


@dataclass(frozen=True)
class Transcript:
    turns: tuple[Turn, ...]
    _rendered: list[Rendered] = field(default_factory=list, compare=False, repr=False)

    def submission(self, extractor: str = "last_assistant") -> str:
        """What counts as the answer, per ``extractor`` (see the module docstring)."""
        said = [t.text for t in self.turns if t.role == "assistant" and t.text.strip()]
        if extractor == "last_assistant":
            return said[-1] if said else ""
        if extractor == "all_assistant":
            return "\n\n".join(said)
        if extractor.startswith("tool_output:"):
            name = extractor.partition(":")[2]
            return "\n\n".join(t.text for t in self.turns if t.role == "tool" and t.tool_name == name)
        raise TranscriptError(f"unknown extractor {extractor!r}; use last_assistant, all_assistant or tool_output:<tool>")

    def rendered(self) -> Rendered:
        if not self._rendered:  # computed once: every judge of the task sees the same text
            self._rendered.append(_render(self.turns))
        return self._rendered[0]

    def port_messages(self) -> list[ports.Message]:
        """The transcript as port messages, to continue the conversation (a revision's follow-up turn)."""
        return [
            ports.Message(t.role, t.text, tool_calls=tuple(  # type: ignore[arg-type]  # ROLES are the port's roles
                ports.ToolCall(c.id, c.name, c.arguments if isinstance(c.arguments, dict) else {"input": c.arguments})
                for c in t.tool_calls), tool_call_id=t.tool_call_id)
            for t in self.turns
        ]

    def trace_messages(self) -> list[dict[str, Any]]:
        """karenina's ``template.trace_messages`` form (role, content, block_index, tool calls/result)."""
        out: list[dict[str, Any]] = []
        for i, t in enumerate(self.turns):
            item: dict[str, Any] = {"role": t.role, "content": t.text, "block_index": i}
            if t.tool_calls:
                item["tool_calls"] = [{"id": c.id, "name": c.name, "input": c.arguments} for c in t.tool_calls]
            if t.role == "tool":
                item["tool_result"] = {"tool_use_id": t.tool_call_id or "", "is_error": t.is_error}
            out.append(item)
        return out


def chat_messages(messages: Sequence[ports.Message]) -> list[dict[str, Any]]:
    """Port messages in OpenAI chat format: how a tool-using answering model's run is kept, so it
    becomes a transcript exactly as a recorded one does (:func:`parse_transcript`)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        item: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.tool_calls:
            item["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                "name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}} for c in m.tool_calls]
        if m.tool_call_id is not None:
            item["tool_call_id"] = m.tool_call_id
        out.append(item)
    return out


def _render(turns: tuple[Turn, ...]) -> Rendered:
    blocks: list[str] = []
    for t in turns:
        if t.role == "tool":
            mark = " (error)" if t.is_error else ""
            blocks.append(f"tool {t.tool_name or 'unknown'}{mark}: {t.text}")
            continue
        if t.text or not t.tool_calls:
            blocks.append(f"{t.role}: {t.text}")
        for call in t.tool_calls:
            args = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments, ensure_ascii=False)
            blocks.append(f"{t.role} -> tool {call.name}({args})")
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    at = 0
    for n, body in enumerate(blocks, 1):
        piece = f"[B{n}] {body}"
        spans.append((at, at + len(piece)))
        parts.append(piece)
        at += len(piece) + 2  # the blank line between blocks
    return Rendered("\n\n".join(parts), tuple(spans))


# --------------------------------------------------------------------------- parsing


def _text_of(content: Any, where: str) -> tuple[str, list[ToolCall], dict[str, Any] | None]:
    """Text, tool calls and a tool result from a message's ``content`` (a string or a block list)."""
    if content is None:
        return "", [], None
    if isinstance(content, str):
        return content, [], None
    if not isinstance(content, list):
        raise TranscriptError(f"{where}: content is {type(content).__name__}, expected text or a list of parts")
    texts: list[str] = []
    calls: list[ToolCall] = []
    result: dict[str, Any] | None = None
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "tool_use":
            calls.append(ToolCall(str(part.get("id", "")), _name(part.get("name"), where), part.get("input", {})))
        elif kind == "tool_result":
            result = part
        elif kind != "thinking":  # thinking is not part of what the judge sees
            raise TranscriptError(f"{where}: content part {part!r:.60} is not a text, tool_use or tool_result part")
    return "".join(texts), calls, result


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise TranscriptError(f"{where}: a tool call has no tool name")
    return value


def _calls(raw: Any, where: str) -> list[ToolCall]:
    if not isinstance(raw, list):
        raise TranscriptError(f"{where}: tool_calls must be a list")
    calls: list[ToolCall] = []
    for c in raw:
        if not isinstance(c, dict):
            raise TranscriptError(f"{where}: a tool call must be an object")
        fn = c.get("function")
        if isinstance(fn, dict):  # OpenAI: arguments are a JSON string
            args: Any = fn.get("arguments", "")
            if isinstance(args, str):
                with suppress(ValueError):  # arguments that are not JSON are kept as the text they were
                    args = json.loads(args) if args.strip() else {}
            calls.append(ToolCall(str(c.get("id", "")), _name(fn.get("name"), where), args))
        else:  # karenina: name and input
            calls.append(ToolCall(str(c.get("id", "")), _name(c.get("name"), where), c.get("input", {})))
    return calls


def parse_transcript(messages: Any) -> Transcript:
    """A transcript from a message list in OpenAI chat or karenina trace format; raises
    :class:`TranscriptError` naming the message (1-based) that is malformed."""
    if not isinstance(messages, list) or not messages:
        raise TranscriptError("a transcript must be a non-empty list of messages")
    names: dict[str, str] = {}  # tool call id -> tool name, for results that do not repeat it
    turns: list[Turn] = []
    for n, msg in enumerate(messages, 1):
        where = f"message {n}"
        if not isinstance(msg, dict):
            raise TranscriptError(f"{where} is {type(msg).__name__}, expected an object with a role")
        role = msg.get("role")
        if role not in ROLES:
            raise TranscriptError(f"{where}: role {role!r} is not one of {', '.join(ROLES)}")
        text, calls, result = _text_of(msg.get("content"), where)
        if "tool_calls" in msg and msg["tool_calls"] is not None:
            calls += _calls(msg["tool_calls"], where)
        for c in calls:
            names[c.id] = c.name
        if role != "tool":
            turns.append(Turn(role, text, tuple(calls)))
            continue
        given = msg.get("tool_result")
        meta: dict[str, Any] = given if isinstance(given, dict) else result or {}
        call_id = msg.get("tool_call_id") or meta.get("tool_use_id")
        if result is not None and isinstance(result.get("content"), str):
            text = result["content"]
        name = msg.get("name") or names.get(str(call_id))
        if not call_id and not name:
            raise TranscriptError(f"{where}: a tool message needs tool_call_id (or name)")
        turns.append(Turn("tool", text, (), name, str(call_id) if call_id else None, bool(meta.get("is_error"))))
    return Transcript(tuple(turns))
