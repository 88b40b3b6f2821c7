"""Which structured-output method an adapter asks its provider for, decided once per run.

The ladder, best first::

    json_schema -> json_mode -> function_calling -> none

* ``json_schema``: native JSON schema (OpenAI-like: ``response_format={"type": "json_schema", ...,
  "strict": False}``; Ollama: ``format=<schema>``; other providers: langchain's own wire format).
* ``json_mode``: JSON mode. A self-hosted OpenAI-compatible server also gets the schema,
  ``{"type": "json_object", "schema": {...}}`` (llama.cpp and vLLM constrain the output with it,
  others ignore it); Ollama gets ``format="json"``.
* ``function_calling``: one tool whose parameters are the schema, forced.
* ``none``: plain text; :mod:`verify.llm.structured` finds (and repairs) the JSON in it.

``auto`` (the default) starts at ``json_schema`` for OpenAI-like providers and Ollama, at
``function_calling`` for the others; ``extra_kwargs.structured_output_method`` pins the start.
A failure that says the method is not supported (:func:`is_unsupported`) moves one step down and
the same request is re-sent with the next method. Until one structured call has succeeded (a
pinned method is not probed), the adapter sends them one at a time, so the others go out with the
method found, together, instead of each failing once; calls that still fail with a method already
left behind (another event loop's) do not step again: one step, one log line, per switch
(``model judge: json_schema not supported by http://...; using json_mode from now on``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from typing import TYPE_CHECKING, Any

from verify.errors import ModelError
from verify.llm.adapters.langchain_messages import schema_name
from verify.llm.resilience import classify_error, redact

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["LADDER", "STRUCTURED_METHODS", "MethodLadder", "is_unsupported", "ladder_start", "structured_runnable"]

log = logging.getLogger(__name__)

LADDER = ("json_schema", "json_mode", "function_calling", "none")
#: The values of ``extra_kwargs.structured_output_method``.
STRUCTURED_METHODS = ("auto", *LADDER)

# HTTP statuses servers answer an unsupported request feature with (llama.cpp: 500; vLLM: 400)
_UNSUPPORTED_STATUSES = frozenset({400, 422, 500, 501})
_FEATURE_WORDS = ("response_format", "json_schema", "json_object", "schema", "tool", "function", "grammar")


def ladder_start(method: str, family: str) -> str:
    """The first method to try: ``method`` itself unless it is ``auto``."""
    if method != "auto":
        return method
    return "json_schema" if family in ("openai", "ollama") else "function_calling"


def _status(exc: BaseException) -> int | None:
    for error in _chain(exc):
        for source in (error, getattr(error, "response", None)):
            value = getattr(source, "status_code", None)
            if isinstance(value, int):
                return value
    return None


def _chain(exc: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in found and len(found) < 8:
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def is_unsupported(exc: BaseException) -> bool:
    """Whether ``exc`` says the structured-output method itself is not supported.

    That is an HTTP 400/422/500/501 whose message names the feature (``response_format``,
    ``json_schema``, ``tool``, ``grammar``...), or an error langchain raised locally, before any
    request (no HTTP status; e.g. a method the provider class does not offer). Transport errors,
    rate limits, authentication and other statuses are not.
    """
    if isinstance(exc, ModelError):
        return False
    status = _status(exc)
    if status is None:
        return classify_error(exc) == "permanent"
    if status not in _UNSUPPORTED_STATUSES:
        return False
    text = " ".join(str(e) for e in _chain(exc)).lower()
    return any(word in text for word in _FEATURE_WORDS)


class MethodLadder:
    """The structured-output method of one adapter: it starts at ``start`` and only steps down.

    ``model`` (the config id) and ``where`` (the URL or provider) only name things in the log line.
    """

    def __init__(self, start: str, *, model: str, where: str, pinned: bool = False) -> None:
        self._method = start
        self._settled = pinned  # a method the config names is not probed: calls go out at once
        self._lock = threading.Lock()  # the adapter may serve several event loops (threads)
        self._probe_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )
        self.model = model
        self.where = where

    @property
    def method(self) -> str:
        return self._method

    @property
    def settled(self) -> bool:
        """True once a structured call has succeeded: the method is known for the rest of the run."""
        return self._settled

    def settle(self) -> None:
        self._settled = True

    def probe_lock(self) -> asyncio.Lock:
        """The lock the running event loop's calls take one at a time until the method is settled."""
        loop = asyncio.get_running_loop()
        lock = self._probe_locks.get(loop)
        if lock is None:
            lock = self._probe_locks[loop] = asyncio.Lock()
        return lock

    def step_down(self, tried: str, exc: BaseException) -> str:
        """The method to re-send with after ``tried`` proved unsupported.

        Only the first call to report ``tried`` steps (and logs); calls that were in flight with
        it get the method already chosen.
        """
        with self._lock:
            if self._method == tried and tried != LADDER[-1]:
                self._method = LADDER[LADDER.index(tried) + 1]
                reason = " ".join(redact(str(exc), 160).split())
                log.warning(
                    "model %s: %s not supported by %s; using %s from now on (%s)",
                    self.model, tried, self.where, self._method, reason,
                )  # fmt: skip
            return self._method


def structured_runnable(
    llm: BaseChatModel, family: str, method: str, schema: dict[str, Any], *, schema_in_json_mode: bool
) -> Any:
    """The runnable that asks ``llm`` for ``schema`` with ``method`` (``llm`` itself for ``none``)."""
    if method == "none":
        return llm
    name = schema_name(schema)
    if method == "function_calling":
        tool = {
            "type": "function",
            "function": {"name": name, "description": str(schema.get("description") or f"Return the {name}."),
                         "parameters": schema},
        }  # fmt: skip
        return llm.bind_tools([tool], tool_choice=name)
    if family == "ollama":
        return llm.bind(format=schema if method == "json_schema" else "json")
    if family == "openai":
        if method == "json_schema":
            fmt: dict[str, Any] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": False},
            }
        else:
            fmt = {"type": "json_object", "schema": schema} if schema_in_json_mode else {"type": "json_object"}
        return llm.bind(response_format=fmt)
    # other providers: let langchain pick the wire format for this method
    return llm.with_structured_output(schema, method=method, include_raw=True)
