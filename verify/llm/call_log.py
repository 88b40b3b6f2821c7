"""The audit trail of a run (``--log-calls FILE.jsonl``): one JSON line per model call.

:class:`LoggedModel` wraps a model at the port, outside the response cache, so every call a stage
makes is logged once: the task it was made for, the stage that made it, its purpose and trait, the
request (messages, the structured-output schema, the tools offered and the model's parameters), the
raw reply, how many requests it took (``attempts``, retries included; 0 when the cache answered),
when it started, how long it took, and its usage. A call that failed is logged with its error.

The task and the stage are not part of a request, so the runner and the pipeline name them in
context variables (:func:`calls_for_task`, :func:`calls_for_stage`); every asyncio task a stage
starts inherits them.

Every line is masked value by value (:func:`verify.secrets.mask_data`) before it is written: a
registered secret, a URL credential or a key-shaped string never reaches the file, and keys and
structure are never touched. One :class:`CallLog` owns the file: each line is written whole under a
lock and flushed, so concurrent calls never interleave and a crash loses at most the call in flight.
"""

from __future__ import annotations

import contextvars
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from verify.errors import UserError
from verify.files import refuse_clobber
from verify.llm.ports import ChatModel, ChatReply, ChatRequest, Message, ToolCall
from verify.llm.resilience import attempts_of
from verify.secrets import mask_data

if TYPE_CHECKING:
    from verify.config.models import ModelConfig

__all__ = ["CallLog", "LoggedModel", "calls_for_stage", "calls_for_task", "model_parameters"]

_TASK: contextvars.ContextVar[str | None] = contextvars.ContextVar("verify_call_task", default=None)
_STAGE: contextvars.ContextVar[str | None] = contextvars.ContextVar("verify_call_stage", default=None)

#: The model settings a line records as the call's parameters (the rest of a model config is
#: identity or inert); ``extra_kwargs`` holds what is passed on to the provider as given.
_PARAMETERS = ("id", "interface", "model_provider", "model_name", "temperature", "max_tokens", "request_timeout",
               "endpoint_base_url", "extra_kwargs")


@contextmanager
def calls_for_task(key: str) -> Iterator[None]:
    """Calls made inside this block are logged with the task key ``key``."""
    token = _TASK.set(key)
    try:
        yield
    finally:
        _TASK.reset(token)


@contextmanager
def calls_for_stage(name: str) -> Iterator[None]:
    """Calls made inside this block are logged with the stage ``name``."""
    token = _STAGE.set(name)
    try:
        yield
    finally:
        _STAGE.reset(token)


class CallLog:
    """The one writer of a call log: whole lines, appended under a lock and flushed one by one.

    An existing file is refused unless ``overwrite`` (replace it) or ``append`` (a resumed run
    goes on logging into it) is given.
    """

    def __init__(self, path: Path, *, overwrite: bool = False, append: bool = False) -> None:
        self.path = path
        if not append:
            refuse_clobber(path, "--log-calls", overwrite=overwrite)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._handle: IO[str] | None = path.open("a" if append else "w", encoding="utf-8")
        except OSError as exc:
            raise UserError(f"--log-calls {path}: cannot write it: {exc.strerror or exc}",
                            "pass a file in a writable folder") from None
        self._lock = threading.Lock()
        self.written = 0

    @classmethod
    def for_run(cls, path: Path | None, *, resume: bool, overwrite: bool) -> CallLog | None:
        """The log of a run (``None`` without ``path``): a resumed run appends to the one it had."""
        if path is None:
            return None
        return cls(path, overwrite=overwrite, append=resume and not overwrite and path.exists())

    @contextmanager
    def closed_on_error(self) -> Iterator[None]:
        """Close the log when the block raises (what would have used it was never built)."""
        try:
            yield
        except BaseException:
            self.close()
            raise

    def write(self, record: dict[str, Any]) -> None:
        """Append ``record`` as one masked JSON line (dropped once the log is closed)."""
        line = json.dumps(mask_data(record), ensure_ascii=False, default=str) + "\n"
        with self._lock:
            if self._handle is None:
                return
            self._handle.write(line)
            self._handle.flush()
            self.written += 1

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None


def model_parameters(config: ModelConfig) -> dict[str, Any]:
    """The settings of ``config`` a call is made with, as the log records them."""
    dumped = config.model_dump(mode="json", include=set(_PARAMETERS))
    return {name: dumped[name] for name in _PARAMETERS if dumped.get(name) is not None}


@dataclass
class LoggedModel:
    """Passes every request to ``inner`` and writes one line per call to ``log``."""

    inner: ChatModel
    log: CallLog
    parameters: dict[str, Any]

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    async def complete(self, request: ChatRequest) -> ChatReply:
        started_at = datetime.now(UTC).isoformat(timespec="milliseconds")
        started = time.perf_counter()
        try:
            reply = await self.inner.complete(request)
        except Exception as exc:
            self.log.write({**self._head(request, started_at, started), "attempts": attempts_of(exc),
                            "reply": None, "error": {"type": type(exc).__name__, "message": str(exc)}})
            raise
        self.log.write({**self._head(request, started_at, started), "attempts": reply.attempts,
                        "cached": reply.cached, "reply": _reply(reply), "error": None})
        return reply

    def _head(self, request: ChatRequest, started_at: str, started: float) -> dict[str, Any]:
        return {
            "task_key": _TASK.get(), "stage": _STAGE.get(), "purpose": request.purpose.value,
            "trait": request.trait, "replicate": request.replicate, "model_id": self.inner.model_id,
            "started_at": started_at, "duration_s": round(time.perf_counter() - started, 6),
            "request": {
                "messages": [_message(m) for m in request.messages], "schema": request.schema,
                "tools": [{"name": t.name, "description": t.description, "parameters": t.parameters}
                          for t in request.tools],
                "parameters": self.parameters,
            },
        }


def _message(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [_tool_call(c) for c in message.tool_calls]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    return out


def _tool_call(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "arguments": call.arguments}


def _reply(reply: ChatReply) -> dict[str, Any]:
    return {
        "text": reply.text, "parsed": reply.parsed, "finish_reason": reply.finish_reason, "model": reply.model,
        "tool_calls": [_tool_call(c) for c in reply.tool_calls], "latency_s": reply.latency_s,
        "usage": {"input_tokens": reply.usage.input_tokens, "output_tokens": reply.usage.output_tokens},
    }
