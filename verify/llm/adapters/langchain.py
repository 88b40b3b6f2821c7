"""The real :class:`~verify.llm.ports.ChatModel`: any langchain chat model built by ``init_chat_model``.

Interfaces (``ModelConfig.interface``):

* ``langchain``: ``init_chat_model(model_name, model_provider=...)``; the provider's integration
  package must be installed (``langchain-openai``, ``langchain-anthropic``, ``langchain-ollama``...).
* ``openai_endpoint``: any OpenAI-compatible server: ``endpoint_base_url`` (``/v1`` appended unless
  it is there already or ``extra_kwargs.endpoint_base_url_mode == "raw"``), ``endpoint_api_key``.
* ``openrouter``: ``https://openrouter.ai/api/v1`` with ``OPENROUTER_API_KEY``.

SDK retries are switched off (``max_retries=0``): :class:`verify.llm.resilience.RetryingModel` retries.
Credentials are read here and only here, from ``api_key_env`` (default ``os.environ``).
``max_tokens`` (Ollama: ``num_predict``) is sent only when the config sets it.

Structured output. When a request carries a schema, the adapter asks for it with the method its
:class:`~verify.llm.adapters.negotiation.MethodLadder` holds: ``json_schema``, ``json_mode``,
``function_calling`` or ``none``, stepping down once per run when the provider says a method is not
supported (see :mod:`verify.llm.adapters.negotiation`); ``structured_output`` is the method in use.
The adapter only *reads* the reply: ``parsed`` is set when the content (or the tool arguments)
is a JSON object; validation against the schema is :mod:`verify.llm.structured`'s job.

A refused connection becomes :class:`~verify.llm.endpoints.EndpointUnreachable` (one line naming the
URL). A call that runs past its timeout is cancelled, which closes its HTTP connection, so the
server can notice that nobody waits for the reply.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
import weakref
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from verify.errors import ModelSetupError
from verify.llm.adapters.langchain_messages import (
    endpoint_url,
    finish_reason_of,
    json_object_of,
    message_text,
    model_id,
    new_openai_async_client,
    own_anthropic_client,
    reply_from_finish_error,
    secret_value,
    to_langchain,
    tool_fields,
    usage_of,
    with_tools,
)
from verify.llm.adapters.negotiation import (
    STRUCTURED_METHODS,
    MethodLadder,
    is_unsupported,
    ladder_start,
    structured_runnable,
)
from verify.llm.endpoints import EndpointUnreachable, connection_refused
from verify.llm.extras import EXTRA_OF_PROVIDER, extra_for, missing_extra
from verify.llm.ports import PURPOSE_HEADER, ChatReply, ChatRequest
from verify.llm.resilience import note_attempts, redact
from verify.llm.structured import is_truncated

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage

    from verify.config.models import ModelConfig

__all__ = ["OPENROUTER_BASE_URL", "STRUCTURED_METHODS", "LangChainModel"]

log = logging.getLogger(__name__)

OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
_OLLAMA_DEFAULT_URL = "http://localhost:11434"

# providers whose chat class is ChatOpenAI: response_format json_schema goes straight to the SDK
_OPENAI_LIKE = frozenset({"openai", "azure_openai"})
_KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "google_genai": "GOOGLE_API_KEY",
    "mistralai": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "xai": "XAI_API_KEY",
    "together": "TOGETHER_API_KEY",
    "fireworks": "FIREWORKS_API_KEY",
    "cohere": "COHERE_API_KEY",
}
_PIP_PACKAGE = re.compile(r"pip install (?:-U )?([A-Za-z0-9_.\-\[\]]+)")


class LangChainModel:
    """A :class:`~verify.llm.ports.ChatModel` over ``langchain.chat_models.init_chat_model``."""

    def __init__(self, config: ModelConfig, *, api_key_env: Mapping[str, str] | None = None) -> None:
        self.config = config
        env: Mapping[str, str] = os.environ if api_key_env is None else api_key_env
        interface = config.interface
        extra = dict(config.extra_kwargs or {})
        method = str(extra.pop("structured_output_method", None) or "auto")
        base_url_mode = extra.pop("endpoint_base_url_mode", None)
        model_name = config.model_name
        if not model_name:
            raise ModelSetupError(
                f"model {config.id!r} has no model_name", "set model_name in the model config"
            )
        self.timeout: float | None = config.request_timeout
        kwargs: dict[str, Any] = {"temperature": config.temperature}
        base_url: str | None = None

        if interface == "openai_endpoint":
            provider = "openai"
            if not config.endpoint_base_url:
                raise ModelSetupError(
                    f"model {config.id!r}: interface openai_endpoint needs endpoint_base_url",
                    "set endpoint_base_url to the server's URL, e.g. http://localhost:8000/v1",
                )
            base_url = endpoint_url(config.endpoint_base_url, base_url_mode)
            kwargs["api_key"] = secret_value(config.endpoint_api_key) or extra.pop("api_key", None) or "none"
        elif interface == "openrouter":
            provider = "openai"
            base_url = OPENROUTER_BASE_URL
            kwargs["api_key"] = extra.pop("api_key", None) or self._require_env(env, "OPENROUTER_API_KEY")
        elif interface == "langchain":
            provider = (config.model_provider or "").strip()
            if not provider:
                raise ModelSetupError(
                    f"model {config.id!r}: interface langchain needs model_provider",
                    "set model_provider, e.g. openai, anthropic or ollama",
                )
            if provider == "anthropic":
                base_url = config.anthropic_base_url or extra.pop("base_url", None)
                key = secret_value(config.anthropic_api_key) or extra.pop("api_key", None)
                if key is None and base_url is None:
                    key = self._require_env(env, "ANTHROPIC_API_KEY")
                if key is not None:
                    kwargs["api_key"] = key
            elif provider in _KEY_ENV and "api_key" not in extra:
                base_url = extra.pop("base_url", None)
                env_name = _KEY_ENV[provider]
                key = env.get(env_name)
                if key:
                    kwargs["api_key"] = key
                elif base_url is not None:
                    kwargs["api_key"] = "none"  # a local or proxy endpoint may need no key
                elif provider == "openai":
                    raise self._missing_key(env_name)
                # other providers: a missing package is reported first, then their own key check
            else:
                base_url = extra.pop("base_url", None)
        else:
            raise ModelSetupError(
                f"model {config.id!r}: interface {interface!r} is not served by the langchain adapter",
                "use langchain, openai_endpoint or openrouter",
            )

        if provider == "ollama":
            if config.max_tokens is not None:
                kwargs["num_predict"] = config.max_tokens
            if self.timeout is not None:
                kwargs["client_kwargs"] = {"timeout": self.timeout}
        else:
            if config.max_tokens is not None:
                kwargs["max_tokens"] = config.max_tokens
            kwargs["max_retries"] = 0
            if self.timeout is not None:
                kwargs["timeout"] = self.timeout
        if base_url is not None:
            kwargs["base_url"] = base_url
        kwargs.update(extra)

        family = "openai" if provider in _OPENAI_LIKE else provider
        if method not in STRUCTURED_METHODS:
            raise ModelSetupError(
                f"model {config.id!r}: unknown structured_output_method {method!r}",
                f"use one of {', '.join(STRUCTURED_METHODS)}",
            )
        start = ladder_start(method, family)
        self.provider = provider
        self.model_name: str = model_name
        self.family = family
        self.base_url = base_url
        # the URL a refused connection is reported with (ChatOllama's default when none is set)
        self.url = base_url or (_OLLAMA_DEFAULT_URL if provider == "ollama" else None)
        self.ladder = MethodLadder(start, model=str(config.id), where=self.url or provider, pinned=method != "auto")
        # a self-hosted OpenAI-compatible server may constrain JSON mode with the schema (llama.cpp, vLLM)
        self._schema_in_json_mode = base_url is not None and base_url != OPENROUTER_BASE_URL
        self._kwargs = kwargs
        self._http_clients: list[Any] = []  # the async HTTP clients this adapter opened, closed by aclose()
        self._llm = self._init(model_name, provider, kwargs)  # built now: setup errors surface early
        self._llm_loop: asyncio.AbstractEventLoop | None = None
        self._loop_llms: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BaseChatModel] = (
            weakref.WeakKeyDictionary()
        )
        self._model_id = model_id(provider, config, base_url, extra, start)

    # -- construction ------------------------------------------------------------------------------

    def _missing_key(self, env_name: str) -> ModelSetupError:
        return ModelSetupError(
            f"model {self.config.id!r} needs an API key: {env_name} is not set",
            f"export {env_name}=... (or put it in your environment) and run again",
        )

    def _require_env(self, env: Mapping[str, str], env_name: str) -> str:
        value = env.get(env_name)
        if not value:
            raise self._missing_key(env_name)
        return value

    def _init(self, model_name: str, provider: str, kwargs: dict[str, Any]) -> BaseChatModel:
        try:
            from langchain.chat_models import init_chat_model
        except ImportError as exc:  # the provider SDKs are extras of verify-judge
            raise missing_extra(f"model {self.config.id!r} (provider {provider!r})", extra_for(provider)) from exc
        kwargs = dict(kwargs)
        own_client = provider in ("openai", "azure_openai") and "http_async_client" not in kwargs
        try:
            if own_client:
                kwargs["http_async_client"] = new_openai_async_client()
                self._http_clients.append(kwargs["http_async_client"])
            llm: BaseChatModel = init_chat_model(model_name, model_provider=provider, **kwargs)
        except ImportError as exc:
            if provider in EXTRA_OF_PROVIDER:
                raise missing_extra(f"model {self.config.id!r} (provider {provider!r})", extra_for(provider)) from exc
            match = _PIP_PACKAGE.search(str(exc))
            package = match.group(1).rstrip(".`'\"") if match else f"langchain-{provider.replace('_', '-')}"
            raise ModelSetupError(
                f"model {self.config.id!r}: provider {provider!r} needs the {package} package",
                f"pip install {package}",
            ) from exc
        except Exception as exc:
            text = str(exc)
            lowered = text.lower()
            if "credential" in lowered or "api_key" in lowered or "api key" in lowered:
                env_name = _KEY_ENV.get(provider, f"{provider.upper()}_API_KEY")
                raise self._missing_key(env_name) from exc
            if "unsupported" in lowered and "provider" in lowered:
                raise ModelSetupError(
                    f"model {self.config.id!r}: unknown model_provider {provider!r}",
                    "use a langchain provider key such as openai, anthropic or ollama",
                ) from exc
            raise ModelSetupError(
                f"model {self.config.id!r}: cannot build the {provider} chat model: {redact(text, 300)}"
            ) from exc
        if provider == "anthropic":
            http = own_anthropic_client(llm)
            if http is not None:
                self._http_clients.append(http)
        return llm

    async def aclose(self) -> None:
        """Close the HTTP clients this adapter opened (those of other, finished loops may fail)."""
        clients, self._http_clients = self._http_clients, []
        for client in clients:
            try:
                await client.aclose()
            except Exception as exc:  # noqa: BLE001 - a client of a closed loop is gone anyway
                log.debug("closing an HTTP client failed: %s", exc)

    def _llm_for_loop(self) -> BaseChatModel:
        """The chat model for the running event loop.

        langchain-openai and langchain-anthropic share one cached async HTTP client per
        (base_url, timeout) across the process, and its pooled connections belong to the loop that
        opened them: a second ``asyncio.run`` (or the next pytest test) then fails with "Event loop
        is closed". So each adapter owns its client, and each further event loop gets a fresh model.
        """
        loop = asyncio.get_running_loop()
        if self._llm_loop is None or self._llm_loop is loop:
            self._llm_loop = loop
            return self._llm
        llm = self._loop_llms.get(loop)
        if llm is None:
            llm = self._init(self.model_name, self.provider, self._kwargs)
            self._loop_llms[loop] = llm
        return llm

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def structured_output(self) -> str:
        """The structured-output method in use: json_schema, json_mode, function_calling or none."""
        return self.ladder.method

    # -- calls ---------------------------------------------------------------------------------------

    def _call_kwargs(self, request: ChatRequest) -> dict[str, Any]:
        """Per-call kwargs: OpenAI-like providers get the purpose as an ``X-Verify-Purpose`` header
        (langchain-openai passes ``extra_headers`` on to the SDK; the simulated server answers by it)."""
        if self.family != "openai":
            return {}
        return {"extra_headers": {PURPOSE_HEADER: str(request.purpose)}}

    async def _invoke(self, runnable: Any, messages: list[BaseMessage], kwargs: dict[str, Any]) -> Any:
        if self.timeout is None:
            return await runnable.ainvoke(messages, **kwargs)
        # a hard wall-clock guard on top of the SDK's own (per-read) timeout
        async with asyncio.timeout(self.timeout * 1.5 + 1.0):
            return await runnable.ainvoke(messages, **kwargs)

    async def complete(self, request: ChatRequest) -> ChatReply:
        try:
            return await self._complete(request)
        except Exception as exc:
            if self.url is not None and connection_refused(exc):
                raise EndpointUnreachable(self.url) from exc
            raise

    async def _complete(self, request: ChatRequest) -> ChatReply:
        messages = to_langchain(request.messages)
        started = time.perf_counter()
        llm = self._llm_for_loop()
        kwargs = self._call_kwargs(request)
        if request.schema is None or request.tools:  # free text, or a tool judge's turn (its tools bound)
            message = await self._invoke(with_tools(llm, request), messages, kwargs)
            return replace(self._reply(message, None, started), **tool_fields(message, request))
        if self.ladder.settled:
            return await self._structured(llm, messages, kwargs, request.schema, started)
        # Until one structured call has worked, calls go one at a time: the method is found by the
        # first, and the others are sent with it (all at once) instead of each failing on the old one.
        async with self.ladder.probe_lock():
            if not self.ladder.settled:
                reply = await self._structured(llm, messages, kwargs, request.schema, time.perf_counter())
                self.ladder.settle()
                return replace(reply, latency_s=time.perf_counter() - started)
        return await self._structured(llm, messages, kwargs, request.schema, started)

    async def _structured(
        self, llm: BaseChatModel, messages: list[BaseMessage], kwargs: dict[str, Any], schema: dict[str, Any],
        started: float,
    ) -> ChatReply:
        sent = 0
        method = self.ladder.method
        while True:
            runnable = structured_runnable(
                llm, self.family, method, schema, schema_in_json_mode=self._schema_in_json_mode
            )
            sent += 1
            try:
                result = await self._invoke(runnable, messages, kwargs)
            except Exception as exc:
                reply = reply_from_finish_error(exc, started, self.model_id)
                if reply is not None:
                    return replace(reply, attempts=sent)
                if method == "none" or not is_unsupported(exc):
                    if sent > 1:
                        note_attempts(exc, sent)
                    raise
                method = self.ladder.step_down(method, exc)
                continue
            if method == "none":
                reply = self._reply(result, None, started)
            elif isinstance(result, dict) and "raw" in result:  # with_structured_output(include_raw=True)
                parsed = result.get("parsed")
                reply = self._reply(result["raw"], parsed if isinstance(parsed, dict) else None, started)
            else:
                reply = self._reply(result, self._parsed_from(result), started)
            return reply if sent == 1 else replace(reply, attempts=sent)

    def _parsed_from(self, message: AIMessage) -> dict[str, Any] | None:
        calls = getattr(message, "tool_calls", None) or []
        if calls:
            args = calls[0].get("args")
            return args if isinstance(args, dict) else None
        return json_object_of(message_text(message).strip())

    def _reply(self, message: Any, parsed: dict[str, Any] | None, started: float) -> ChatReply:
        text = message_text(message)
        calls = getattr(message, "tool_calls", None) or []
        invalid = getattr(message, "invalid_tool_calls", None) or []
        if calls and parsed is not None:
            text = json.dumps(parsed, ensure_ascii=False)
        elif calls and not text.strip():
            text = json.dumps(calls[0].get("args"), ensure_ascii=False, default=str)
        elif invalid and not text.strip():
            text = str(invalid[0].get("args") or "")
        finish = finish_reason_of(message)
        if is_truncated(finish):
            parsed = None  # a cut-off reply may still parse; never trust it
        return ChatReply(
            text=text,
            parsed=parsed,
            usage=usage_of(message),
            latency_s=time.perf_counter() - started,
            finish_reason=finish,
            model=self.model_id,
        )
