"""Converting between verify's port types and langchain's: messages, text, usage, finish reasons,
endpoint URLs, and the SDK clients verify owns (so it can close them)."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from verify.llm.ports import ChatReply, ChatRequest, Message, ToolCall, Usage

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from verify.config.models import ModelConfig

log = logging.getLogger(__name__)


def secret_value(value: Any) -> str | None:
    if value is None:
        return None
    getter = getattr(value, "get_secret_value", None)
    text = getter() if callable(getter) else str(value)
    return text or None


def model_id(provider: str, config: ModelConfig, base_url: str | None, extra: Mapping[str, Any], method: str) -> str:
    """An adapter's ``model_id`` (the response cache's key for the model): what changes its replies
    (temperature, max_tokens, server, structured-output method, extra settings minus credentials).
    One definition, so both adapters give a config the same id and cached replies survive a switch."""
    safe = {k: v for k, v in sorted(extra.items())
            if not any(word in k.lower() for word in ("key", "token", "secret", "header", "auth"))}  # fmt: skip
    identity = {"temperature": config.temperature, "max_tokens": config.max_tokens, "base_url": base_url,
                "structured": method, "extra": safe}  # fmt: skip
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:10]
    return f"{provider}:{config.model_name}@{digest}"


def endpoint_url(base_url: str, mode: str | None) -> str:
    url = base_url.rstrip("/")
    if mode == "raw" or url.endswith("/v1"):
        return url
    return url + "/v1"


def schema_name(schema: Mapping[str, Any]) -> str:
    title = str(schema.get("title") or "reply")
    name = re.sub(r"[^A-Za-z0-9_-]", "_", title)[:64]
    return name or "reply"


def to_langchain(messages: tuple[Message, ...]) -> list[BaseMessage]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    classes = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    out: list[BaseMessage] = []
    for m in messages:
        if m.role == "tool":  # the result of one tool call, sent back to the model
            out.append(ToolMessage(content=m.content, tool_call_id=m.tool_call_id or ""))
        elif m.role == "assistant" and m.tool_calls:
            calls = [{"id": c.id, "name": c.name, "args": c.arguments, "type": "tool_call"} for c in m.tool_calls]
            out.append(AIMessage(content=m.content, tool_calls=calls))
        else:
            out.append(classes[m.role](content=m.content))
    return out


def with_tools(llm: Any, request: ChatRequest) -> Any:
    """The chat model with the request's tools bound (``bind_tools``), or as it is when there are none."""
    if not request.tools:
        return llm
    return llm.bind_tools([
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in request.tools
    ])


def tool_fields(message: Any, request: ChatRequest) -> dict[str, Any]:
    """For a request that offered tools: the reply's own text and its tool calls (``ChatReply`` fields)."""
    if not request.tools:
        return {}
    calls = getattr(message, "tool_calls", None) or []
    found = tuple(
        ToolCall(str(c.get("id") or f"call_{n}"), str(c.get("name") or ""), dict(c.get("args") or {}))
        for n, c in enumerate(calls, 1)
    )
    return {"text": message_text(message), "tool_calls": found}


def message_text(message: Any) -> str:
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return "" if content is None else str(content)


def usage_of(message: Any) -> Usage:
    meta = getattr(message, "usage_metadata", None) or {}
    return Usage(int(meta.get("input_tokens") or 0), int(meta.get("output_tokens") or 0))


def finish_reason_of(message: Any) -> str | None:
    meta = getattr(message, "response_metadata", None) or {}
    for key in ("finish_reason", "stop_reason", "done_reason"):
        value = meta.get(key)
        if value:
            return str(value)
    return None


def new_openai_async_client() -> Any:
    import openai

    return openai.DefaultAsyncHttpxClient()


def own_anthropic_client(llm: Any) -> Any:
    """Give a ChatAnthropic its own async client instead of the process-wide cached one."""
    try:
        import anthropic

        params = dict(llm._client_params)
        http = anthropic.DefaultAsyncHttpxClient(base_url=params["base_url"])
        llm.__dict__["_async_client"] = anthropic.AsyncClient(**params, http_client=http)
        return http
    except Exception as exc:  # noqa: BLE001 - the shared client still works within one event loop
        log.debug("could not give ChatAnthropic its own HTTP client: %s", exc)
        return None


def json_object_of(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def reply_from_finish_error(exc: Exception, started: float, model_id: str) -> ChatReply | None:
    """OpenAI's ``parse()`` raises on finish_reason length / content_filter: return the text."""
    name = type(exc).__name__
    if name not in ("LengthFinishReasonError", "ContentFilterFinishReasonError"):
        return None
    completion = getattr(exc, "completion", None)
    text = ""
    usage = Usage()
    try:
        text = completion.choices[0].message.content or ""  # type: ignore[union-attr]
        raw_usage = completion.usage  # type: ignore[union-attr]
        if raw_usage is not None:
            usage = Usage(int(raw_usage.prompt_tokens or 0), int(raw_usage.completion_tokens or 0))
    except (AttributeError, IndexError, TypeError):
        pass
    finish = "length" if name == "LengthFinishReasonError" else "content_filter"
    return ChatReply(
        text=text, parsed=None, usage=usage, latency_s=time.perf_counter() - started,
        finish_reason=finish, model=model_id,
    )  # fmt: skip
