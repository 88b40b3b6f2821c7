"""A :class:`~verify.llm.ports.ChatModel` that speaks the OpenAI chat-completions protocol itself.

Used for ``openai_endpoint`` and ``openrouter`` models: a local or hosted OpenAI-compatible server
needs one ``POST {base_url}/chat/completions``, and going through langchain-openai and the OpenAI
SDK for it costs about a second of imports before the first request and several milliseconds of
client CPU per call (message objects, callbacks, response models). Here each server gets one pool
of keep-alive connections per event loop (:mod:`verify.llm.adapters.http_pool`); a call is one dict,
one ``json.dumps``, one write, one read, one ``json.loads``.

Same behaviour as the langchain adapter (:mod:`verify.llm.adapters.langchain`): the structured-
output ladder (:mod:`verify.llm.adapters.negotiation`), the purpose header, ``max_tokens`` only when
configured, tool calls both ways, truncated replies never parsed, a refused connection as
:class:`~verify.llm.endpoints.EndpointUnreachable`, a hard wall-clock guard over the request
timeout, no retries of its own. An error status raises :class:`EndpointStatusError`, which carries
the status and the response (Retry-After), so :mod:`verify.llm.resilience` classifies it as it does
the SDK's errors.

``extra_kwargs`` the protocol has a place for (sampling parameters, ``model_kwargs`` /
``extra_body`` merged into the body, ``default_headers``) are sent; a model whose ``extra_kwargs``
hold anything else is built by the langchain adapter instead (:func:`serves`), so no setting is
silently dropped.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import ssl
import time
import weakref
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import httpx

from verify.errors import ModelSetupError
from verify.llm.adapters.http_pool import ConnectionPool
from verify.llm.adapters.langchain_messages import (
    endpoint_url,
    json_object_of,
    model_id,
    schema_name,
    secret_value,
)
from verify.llm.adapters.negotiation import STRUCTURED_METHODS, MethodLadder, is_unsupported, ladder_start
from verify.llm.endpoints import EndpointUnreachable, connection_refused
from verify.llm.ports import PURPOSE_HEADER, ChatReply, ChatRequest, Message, ToolCall, Usage
from verify.llm.resilience import note_attempts
from verify.llm.structured import is_truncated
from verify.secrets import MASK, MIN_SECRET_LENGTH, scrub

if TYPE_CHECKING:
    from collections.abc import Mapping

    from verify.config.models import ModelConfig

__all__ = ["EndpointStatusError", "OpenAICompatibleModel", "serves"]

OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
_INTERFACES = frozenset({"openai_endpoint", "openrouter"})
_BODY_KEYS = frozenset({
    "top_p", "seed", "stop", "presence_penalty", "frequency_penalty", "logit_bias", "reasoning_effort", "user",
})  # fmt: skip
_OWN_KEYS = frozenset({"structured_output_method", "endpoint_base_url_mode", "api_key", "model_kwargs",
                       "extra_body", "default_headers"})  # fmt: skip
# the OpenAI SDK's defaults: a long read timeout (models think), a short connect timeout
_DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=5.0)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One TLS context for every client: building one loads the CA bundle (~17 ms each)."""
    return httpx.create_ssl_context()


# one pool per event loop and server, shared by the models that call it; counted uses decide when
# it is closed
_SHARED: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, ConnectionPool]] = weakref.WeakKeyDictionary()
_USERS: weakref.WeakKeyDictionary[ConnectionPool, int] = weakref.WeakKeyDictionary()


def serves(config: ModelConfig) -> bool:
    """Whether this adapter builds ``config``: an OpenAI-compatible interface, and nothing in
    ``extra_kwargs`` that only langchain-openai knows what to do with, and not OpenAI's own API."""
    if config.interface not in _INTERFACES:
        return False
    if "api.openai.com" in (config.endpoint_base_url or ""):
        return False  # OpenAI itself: langchain-openai knows its per-model rules (max_completion_tokens, ...)
    return all(key in _BODY_KEYS or key in _OWN_KEYS for key in config.extra_kwargs or {})


class EndpointStatusError(Exception):
    """The server answered with an error status. ``response`` keeps its headers (Retry-After).
    Credentials a server quotes back (``Incorrect API key provided: sk-...``) are masked."""

    def __init__(self, status_code: int, message: str, response: httpx.Response) -> None:
        super().__init__(f"Error code: {status_code} - {scrub(message)}")
        self.status_code = status_code
        self.response = response


class OpenAICompatibleModel:
    """An OpenAI-compatible server, called over one pooled HTTP client per event loop."""

    def __init__(self, config: ModelConfig, *, api_key_env: Mapping[str, str] | None = None) -> None:
        import os

        env: Mapping[str, str] = os.environ if api_key_env is None else api_key_env
        extra = dict(config.extra_kwargs or {})
        if not config.model_name:
            raise ModelSetupError(f"model {config.id!r} has no model_name", "set model_name in the model config")
        method = str(extra.pop("structured_output_method", None) or "auto")
        if method not in STRUCTURED_METHODS:
            raise ModelSetupError(
                f"model {config.id!r}: unknown structured_output_method {method!r}",
                f"use one of {', '.join(STRUCTURED_METHODS)}",
            )
        mode = extra.pop("endpoint_base_url_mode", None)
        if config.interface == "openrouter":
            url = OPENROUTER_BASE_URL
            key = extra.pop("api_key", None) or env.get("OPENROUTER_API_KEY")
            if not key:
                raise ModelSetupError(
                    f"model {config.id!r} needs an API key: OPENROUTER_API_KEY is not set",
                    "export OPENROUTER_API_KEY=... (or put it in your environment) and run again",
                )
        else:
            if not config.endpoint_base_url:
                raise ModelSetupError(
                    f"model {config.id!r}: interface openai_endpoint needs endpoint_base_url",
                    "set endpoint_base_url to the server's URL, e.g. http://localhost:8000/v1",
                )
            url = endpoint_url(config.endpoint_base_url, mode)
            key = secret_value(config.endpoint_api_key) or extra.pop("api_key", None) or "none"
        self.config = config
        self.model_name: str = config.model_name
        self.url = url
        self.timeout: float | None = config.request_timeout
        self._headers = {"Authorization": f"Bearer {key}", **dict(extra.pop("default_headers", None) or {})}
        self._body: dict[str, Any] = {"model": config.model_name}
        if config.temperature is not None:
            self._body["temperature"] = config.temperature
        if config.max_tokens is not None:
            self._body["max_tokens"] = config.max_tokens
        self._body.update(extra.pop("model_kwargs", None) or {})
        self._body.update(extra.pop("extra_body", None) or {})
        self._body.update(extra)  # the sampling parameters serves() let through
        start = ladder_start(method, "openai")
        self.ladder = MethodLadder(start, model=str(config.id), where=url, pinned=method != "auto")
        self._schema_in_json_mode = url != OPENROUTER_BASE_URL  # llama.cpp, vLLM constrain JSON mode with it
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ConnectionPool] = weakref.WeakKeyDictionary()
        self._open: list[ConnectionPool] = []  # the shared pools this model holds a use of
        timeout = "default" if self.timeout is None else self.timeout
        self._pool_key = hashlib.sha256(
            json.dumps([url, timeout, sorted(self._headers.items())]).encode()
        ).hexdigest()  # credentials are part of the key, never kept in clear outside the headers
        # the langchain adapter's id for the same config: cached replies stay valid across the switch
        given = {k: v for k, v in (config.extra_kwargs or {}).items()
                 if k not in ("structured_output_method", "endpoint_base_url_mode")}  # fmt: skip
        self._model_id = model_id("openai", config, url, given, start)

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def structured_output(self) -> str:
        """The structured-output method in use: json_schema, json_mode, function_calling or none."""
        return self.ladder.method

    async def aclose(self) -> None:
        """Give back this model's use of its pools; the last model to let one go closes it."""
        pools, self._open = self._open, []
        self._pools.clear()  # a later call takes a use of a live pool again
        for pool in pools:
            users = _USERS.get(pool, 1) - 1
            _USERS[pool] = users
            if users <= 0:
                await pool.aclose()

    def _pool(self) -> ConnectionPool:
        """This event loop's pool of this server: connections belong to the loop that opened them,
        and models of one server (same URL, credentials, timeout) share one pool."""
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is None:
            shared = _SHARED.setdefault(loop, {})
            pool = shared.get(self._pool_key)
            if pool is None or pool.is_closed:
                timeout = _DEFAULT_TIMEOUT if self.timeout is None else httpx.Timeout(self.timeout)
                pool = shared[self._pool_key] = ConnectionPool(self.url + "/", self._headers, timeout, _ssl_context())
            _USERS[pool] = _USERS.get(pool, 0) + 1
            self._pools[loop] = pool
            self._open.append(pool)
        return pool

    # -- calls ---------------------------------------------------------------------------------------

    async def complete(self, request: ChatRequest) -> ChatReply:
        try:
            return await self._complete(request)
        except (httpx.ConnectError, OSError) as exc:
            if connection_refused(exc):
                raise EndpointUnreachable(self.url) from exc
            raise

    async def _complete(self, request: ChatRequest) -> ChatReply:
        started = time.perf_counter()
        if request.schema is None or request.tools:  # free text, or a tool-using turn
            body = self._body_for(request, None)
            return self._reply(await self._post(body, request), request, None, started)
        if self.ladder.settled:
            return await self._structured(request, request.schema, started)
        # until one structured call has worked, calls go one at a time (see negotiation.py); those
        # that queued behind it go out together once it has
        async with self.ladder.probe_lock():
            if not self.ladder.settled:
                reply = await self._structured(request, request.schema, time.perf_counter())
                self.ladder.settle()
                return replace(reply, latency_s=time.perf_counter() - started)
        return await self._structured(request, request.schema, started)

    async def _structured(self, request: ChatRequest, schema: dict[str, Any], started: float) -> ChatReply:
        sent = 0
        method = self.ladder.method
        while True:
            sent += 1
            try:
                data = await self._post(self._body_for(request, (method, schema)), request)
            except EndpointStatusError as exc:
                if method == "none" or not is_unsupported(exc):
                    if sent > 1:
                        note_attempts(exc, sent)
                    raise
                method = self.ladder.step_down(method, exc)
                continue
            reply = self._reply(data, request, method, started)
            return reply if sent == 1 else replace(reply, attempts=sent)

    def _body_for(self, request: ChatRequest, structured: tuple[str, dict[str, Any]] | None) -> dict[str, Any]:
        body = {**self._body, "messages": [_wire(m) for m in request.messages]}
        if request.tools:
            body["tools"] = [_tool(t.name, t.description, t.parameters) for t in request.tools]
        if structured is None:
            return body
        method, schema = structured
        name = schema_name(schema)
        if method == "json_schema":
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": name, "schema": schema, "strict": False}}  # fmt: skip
        elif method == "json_mode":
            body["response_format"] = (
                {"type": "json_object", "schema": schema} if self._schema_in_json_mode else {"type": "json_object"}
            )
        elif method == "function_calling":
            body["tools"] = [_tool(name, str(schema.get("description") or f"Return the {name}."), schema)]
            body["tool_choice"] = {"type": "function", "function": {"name": name}}
        return body

    async def _post(self, body: dict[str, Any], request: ChatRequest) -> dict[str, Any]:
        content = json.dumps(body, ensure_ascii=False).encode()
        # the pool's read timeout covers the whole reply: a hard wall-clock guard
        reply = await self._pool().post("chat/completions", content, {PURPOSE_HEADER: request.purpose.value})
        if reply.status_code >= 400:
            response = reply.response()
            message, key = _error_message(response), self._headers["Authorization"].removeprefix("Bearer ")
            if len(key) >= MIN_SECRET_LENGTH:  # our own key, whatever its shape
                message = message.replace(key, MASK)
            raise EndpointStatusError(reply.status_code, message, response)
        try:
            data = json.loads(reply.content)
        except ValueError as exc:
            raise EndpointStatusError(502, f"the reply is not JSON: {reply.text[:200]!r}", reply.response()) from exc
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict):  # OpenRouter passes an upstream failure on as 200 + {"error": {"code": 429, ...}}
            code = error.get("code")
            status = code if isinstance(code, int) and 400 <= code <= 599 else 502
            raise EndpointStatusError(status, _error_text(error), reply.response())
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list) or not data["choices"]:
            raise EndpointStatusError(502, f"the reply has no choices: {reply.text[:200]!r}", reply.response())
        return data

    def _reply(self, data: dict[str, Any], request: ChatRequest, method: str | None, started: float) -> ChatReply:
        first = data["choices"][0]
        choice: dict[str, Any] = first if isinstance(first, dict) else {}
        message: dict[str, Any] = choice["message"] if isinstance(choice.get("message"), dict) else {}
        text = _text(message.get("content"))
        calls = _calls(message.get("tool_calls"))
        finish = choice.get("finish_reason")
        finish = str(finish) if finish else None
        parsed: dict[str, Any] | None = None
        if method == "function_calling" and calls:
            parsed = calls[0][1] if isinstance(calls[0][1], dict) else None
            text = json.dumps(parsed, ensure_ascii=False) if parsed is not None else str(calls[0][2])
        elif method is not None and method != "none":
            parsed = json_object_of(text.strip())
        if is_truncated(finish):
            parsed = None  # a cut-off reply may still parse; never trust it
        usage: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}
        reply = ChatReply(
            text=text, parsed=parsed,
            usage=Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)),
            latency_s=time.perf_counter() - started, finish_reason=finish, model=self.model_id,
        )  # fmt: skip
        if not request.tools:
            return reply
        # arguments that are not a JSON object are not run with made-up ones: dropped, as langchain does
        found = tuple(ToolCall(cid, name, args) for cid, args, _raw, name in calls if isinstance(args, dict))
        return replace(reply, tool_calls=found)


def _wire(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        calls = [{"id": c.id, "type": "function",
                  "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
                 for c in message.tool_calls]  # fmt: skip
        return {"role": "assistant", "content": message.content or None, "tool_calls": calls}
    return {"role": message.role, "content": message.content}


def _tool(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return ""


def _calls(raw: Any) -> list[tuple[str, Any, str, str]]:
    """Each tool call as (id, arguments parsed or None, arguments as sent, name)."""
    found = []
    for n, call in enumerate(raw if isinstance(raw, list) else [], 1):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments")
        sent = arguments if isinstance(arguments, str) else json.dumps(arguments)
        parsed = arguments if isinstance(arguments, dict) else json_object_of(sent.strip() or "{}")
        found.append((str(call.get("id") or f"call_{n}"), parsed, sent, str(function.get("name") or "")))
    return found


def _error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return _error_text(error)
    return json.dumps(body)[:300]


def _error_text(error: dict[str, Any]) -> str:
    """The message with the fields that say what failed (``param: response_format`` tells the
    structured-output ladder a method is unsupported), as the SDK's error text has them."""
    detail = {k: error[k] for k in ("type", "param", "code") if error.get(k) is not None}
    return f"{error.get('message') or 'error'}" + (f" {json.dumps(detail)}" if detail else "")
