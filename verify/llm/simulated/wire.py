"""Reading an OpenAI chat-completions request the way the simulated server needs it: messages,
the purpose header, what kind of reply is wanted (schema, JSON mode, a tool call), and the
request features a server may refuse the way llama.cpp does."""

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
    """A request the server answers with an HTTP error status (``body``: a body of its own)."""

    def __init__(self, status: int, message: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.body = body


def _llama_error(message: str) -> BadRequest:
    """llama.cpp's server answers an unsupported request feature with a 500 and this body."""
    return BadRequest(500, message, {"error": {"code": 500, "message": message, "type": "server_error"}})


def check_supported(body: dict[str, Any], *, json_schema: bool, json_object: bool, tools: bool) -> None:
    """Refuse a ``response_format`` type or ``tools`` the server is told not to support.

    ``json_schema`` and ``tools`` fail like llama.cpp (HTTP 500, its message); ``json_object`` like
    a server that validates its input (HTTP 400).
    """
    fmt = body.get("response_format")
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "json_schema" and not json_schema:
        raise _llama_error('response_format type must be one of "text" or "json_object", but got: json_schema')
    if kind == "json_object" and not json_object:
        raise BadRequest(400, "response_format type json_object is not supported by this server")
    if body.get("tools") and not tools:
        raise _llama_error("tools param requires --jinja flag")


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
    if isinstance(fmt, dict) and fmt.get("type") == "json_object":  # llama.cpp's form may carry a schema
        return Wanted(named_schema(fmt.get("schema"), None), True, None, False)
    return Wanted(None, False, None, False)
