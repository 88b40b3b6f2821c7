"""Reading an OpenAI chat-completions request the way the simulated server needs it: messages,
the purpose header, and what kind of reply is wanted (schema, JSON mode, a tool call)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from verify.llm.ports import PURPOSE_HEADER, Message, Purpose, Role

ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
}

@dataclass(frozen=True)
class Wanted:
    """What the request asks for: a schema (or None), JSON or not, and the tool to call if any."""

    schema: dict[str, Any] | None
    json_only: bool
    tool: str | None
    forced: bool


class BadRequest(Exception):
    """A request the server answers with an HTTP error status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def stream_pieces(text: str, size: int = 16) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def is_json_text(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def content_text(content: Any) -> str:
    """OpenAI content is a string or a list of parts; keep the text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in content]
        return "".join(p for p in parts if isinstance(p, str))
    return str(content)


def request_messages(raw: list[Any]) -> list[Message]:
    """Chat messages -> ports.Message: developer -> system; tool results and calls become text."""
    out: list[Message] = []
    for item in raw:
        if not isinstance(item, dict):
            raise BadRequest(400, "each message must be an object")
        role = str(item.get("role", ""))
        text = content_text(item.get("content"))
        if role == "assistant" and not text and item.get("tool_calls"):
            text = "\n".join(str(c.get("function", {}).get("arguments", "")) for c in item["tool_calls"])
        if role in ("tool", "function"):
            out.append(Message("user", text))
        elif role in ROLES:
            out.append(Message(ROLES[role], text))
        else:
            raise BadRequest(400, f"unsupported message role {role!r}")
    return out


def purpose_from_header(header: str | None) -> Purpose | None:
    """The request's purpose from the ``X-Verify-Purpose`` header (None without it)."""
    if header is None or not header.strip():
        return None
    try:
        return Purpose(header.strip())
    except ValueError:
        raise BadRequest(400, f"unknown {PURPOSE_HEADER} {header!r}; one of {', '.join(Purpose)}") from None


def named_schema(schema: Any, name: str | None) -> dict[str, Any] | None:
    if not isinstance(schema, dict):
        return None
    if name and "title" not in schema:
        return {"title": name, **schema}
    return schema


def wanted_reply(body: dict[str, Any]) -> Wanted:
    """Find the wanted reply: a forced (or only) tool, else response_format, else free text."""
    tools = [
        t for t in body.get("tools") or [] if isinstance(t, dict) and t.get("type", "function") == "function"
    ]
    choice = body.get("tool_choice")
    if tools and choice != "none":
        by_name = {t.get("function", {}).get("name"): t for t in tools}
        forced_name = None
        if isinstance(choice, dict):
            forced_name = (choice.get("function") or {}).get("name") or choice.get("name")
        if forced_name is not None and forced_name not in by_name:
            raise BadRequest(400, f"tool_choice names {forced_name!r}, which is not in 'tools'")
        if forced_name is None and (len(tools) == 1 or choice in ("required", "any")):
            forced_name = tools[0].get("function", {}).get("name")
        if forced_name is not None:
            function = by_name[forced_name].get("function", {})
            schema = named_schema(function.get("parameters") or {"type": "object", "properties": {}}, forced_name)
            return Wanted(schema, True, forced_name, isinstance(choice, dict))
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema") or {}
        schema = named_schema(spec.get("schema"), spec.get("name"))
        if schema is None:
            raise BadRequest(400, "response_format.json_schema.schema must be an object")
        return Wanted(schema, True, None, False)
    if isinstance(fmt, dict) and fmt.get("type") == "json_object":
        return Wanted(None, True, None, False)
    return Wanted(None, False, None, False)
