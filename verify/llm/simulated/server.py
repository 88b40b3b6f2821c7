"""An OpenAI-compatible HTTP server on 127.0.0.1 that answers with the simulated brain.

It serves ``POST /v1/chat/completions`` (plain, ``stream: true`` as SSE, ``response_format``
``json_schema`` / ``json_object``, forced tools) and ``GET /v1/models``, so the real OpenAI SDK and
langchain-openai can be driven offline::

    with start_server(rate_429=0.2, seed=1) as server:
        llm = init_chat_model("openai:simulated-judge", base_url=server.url, api_key="sk-test")

HTTP faults (429, 500, truncation) are drawn per request from ``seed``, a digest of the request
body and how many times that same body was seen before, so a run is reproducible under
concurrency while a retried request gets a fresh draw. Reply faults (malformed JSON, fabricated
excerpts, imperfections) are the brain's: it gets ``Faults(malformed_rate, fabricate_rate, seed,
imperfections)`` unchanged and decides by hashing the prompt, exactly as the in-process model
does. ``fail_first=N`` answers the first N chat requests with ``fail_status``.

Features can be switched off, like a smaller server (:func:`~verify.llm.simulated.wire.check_supported`):
``reject_json_schema``, ``reject_json_object``, ``no_tools``. While it sleeps out ``latency_ms`` the
server watches the connection: a client that gave up is recorded (``"client_closed": True``).

Latency can vary like a real provider's: with ``latency_cv`` each request's latency is drawn
log-normal with median ``latency_ms`` and that coefficient of variation (reproducibly, from the seed
and the request). With ``capacity=N`` the server serves N requests at once: beyond that, a request
arriving with M in flight takes M / N times longer (``over_capacity="queue"``, a server that queues:
throughput stays flat) or is answered 429 at once (``"429"``), so a best fixed worker count exists.

What to answer is decided by a reply function (``reply=``, a :data:`~verify.llm.simulated.brain.ReplyFunction`,
by default :func:`verify.llm.simulated.brain.respond`) that gets a typed
:class:`~verify.llm.simulated.brain.SimulatedRequest`: the purpose from the ``X-Verify-Purpose``
header (verify's langchain adapter sends it; ``None`` without it, and an unknown value is a 400),
the messages, the wanted schema and the reply faults. Tests pass their own reply function.
"""

from __future__ import annotations

import hashlib
import json
import random
import select
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from verify.llm.ports import PURPOSE_HEADER
from verify.llm.simulated import brain, echo
from verify.llm.simulated.imperfect import Imperfections
from verify.llm.simulated.options import OVER_CAPACITY, ServerOptions
from verify.llm.simulated.wire import (
    BadRequest,
    check_supported,
    is_json_text,
    purpose_from_header,
    request_messages,
    stream_pieces,
    wanted_reply,
)

_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_denied", None),
    404: ("invalid_request_error", "not_found"),
    429: ("requests", "rate_limit_exceeded"),
}
_HIDDEN_HEADERS = {"authorization", "api-key", "x-api-key"}


class SimulatedServer:
    """A running server. ``requests`` records every request (headers without credentials) as
    ``{"method", "path", "headers", "json", "status"}`` (plus ``"client_closed": True`` when the
    client went away before the reply), unless started with ``record=False``."""

    def __init__(
        self, options: ServerOptions, port: int = 0, reply: brain.ReplyFunction = brain.respond
    ) -> None:
        self.options = options
        self.reply: brain.ReplyFunction = reply
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._count = 0
        self._chat_count = 0
        self._seen: Counter[str] = Counter()
        self._in_flight = 0  # chat requests being answered, for ``capacity``
        self._stopped = False
        self._httpd = _HTTPServer(("127.0.0.1", port), _Handler)
        self._httpd.sim = self
        self.port: int = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="simulated-openai", daemon=True
        )
        self._thread.start()

    @property
    def request_count(self) -> int:
        """Requests received, recorded or not."""
        return self._count

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith("/chat/completions")]

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> SimulatedServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self._count += 1
            if self.options.record:
                self.requests.append(entry)

    def _next_attempt(self, body: bytes) -> tuple[int, str, int]:
        """(chat request index, body digest, times this body was seen before)."""
        digest = hashlib.sha256(body).hexdigest()
        with self._lock:
            index = self._chat_count
            self._chat_count += 1
            seen = self._seen[digest]
            self._seen[digest] += 1
        return index, digest, seen


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # many concurrent clients; the default backlog of 5 resets connections
    sim: SimulatedServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes; don't delay the body
    server: _HTTPServer
    server_version = "verify-simulated/1"

    _current: dict[str, Any] | None = None

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._entry(None)
        if self.path.rstrip("/").endswith("/models"):
            data = [{"id": "simulated-judge", "object": "model", "created": 0, "owned_by": "verify"}]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_error(404, f"unknown path {self.path}")

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._entry(None, raw=raw.decode("utf-8", "replace"))
            self._send_error(400, "request body is not valid JSON")
            return
        self._entry(body)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_error(404, f"unknown path {self.path}; this server serves /v1/chat/completions")
            return
        try:
            self._chat(raw, body)
        except BadRequest as fail:
            if fail.body is not None:
                self._send_json(fail.status, fail.body)
            else:
                self._send_error(fail.status, fail.message)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away mid-reply
        except Exception as exc:  # a bug or a brain failure: say so instead of dropping the connection
            self._send_error(500, f"simulated server error: {type(exc).__name__}: {exc}", "server_error")

    def _entry(self, body: Any, raw: str | None = None) -> dict[str, Any]:
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HIDDEN_HEADERS}
        entry: dict[str, Any] = {"method": self.command, "path": self.path, "headers": headers, "json": body}
        if raw is not None:
            entry["raw"] = raw
        entry["status"] = None
        self._current = entry
        self.server.sim._record(entry)
        return entry

    # -- the chat completion ---------------------------------------------------------------------

    def _chat(self, raw: bytes, body: Any) -> None:
        sim = self.server.sim
        opts = sim.options
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body["messages"]:
            raise BadRequest(400, "'messages' must be a non-empty list")
        index, digest, seen = sim._next_attempt(raw)
        rng = random.Random(f"{opts.seed}|{digest}|{seen}")
        draw_429, draw_500, draw_truncate = rng.random(), rng.random(), rng.random()
        check_supported(body, json_schema=not opts.reject_json_schema,
                        json_object=not opts.reject_json_object, tools=not opts.no_tools)  # fmt: skip
        with sim._lock:
            sim._in_flight += 1
            in_flight = sim._in_flight
        try:
            if opts.capacity and in_flight > opts.capacity and opts.over_capacity == "429":
                raise BadRequest(429, f"simulated-judge serves {opts.capacity} requests at once (simulated)")
            # its own generator: drawing from ``rng`` would move the draws of the faults below
            latency = opts.latency_s(random.Random(f"{opts.seed}|{digest}|{seen}|latency"), in_flight)
            if latency > 0 and not self._client_waits(latency):
                if self._current is not None:
                    self._current["client_closed"] = True
                self.close_connection = True
                return
        finally:
            with sim._lock:
                sim._in_flight -= 1
        if index < opts.fail_first:
            raise BadRequest(opts.fail_status, f"simulated failure {index + 1} of the first {opts.fail_first}")
        if draw_429 < opts.rate_429:
            raise BadRequest(429, "Rate limit reached for simulated-judge (simulated)")
        if draw_500 < opts.rate_500:
            raise BadRequest(500, "The server had an error while processing your request (simulated)")
        echo.refuse_some(self.headers.items(), opts.echo_auth_rate, rng.random())

        messages = request_messages(body["messages"])
        wanted = wanted_reply(body)
        faults = brain.Faults(
            malformed_json=opts.malformed_rate, fabricate_excerpts=opts.fabricate_rate, seed=opts.seed,
            imperfections=opts.imperfections,
        )
        purpose = purpose_from_header(self.headers.get(PURPOSE_HEADER))
        text = sim.reply(brain.SimulatedRequest(purpose, tuple(messages), wanted.schema, faults))
        if wanted.json_only and wanted.schema is None and not is_json_text(text):
            text = json.dumps({"content": text})

        finish = "stop" if wanted.tool is None or wanted.forced else "tool_calls"
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        if draw_truncate < opts.truncate_rate:
            text, finish = text[: len(text) // 2], "length"
        elif isinstance(limit, int) and limit > 0 and len(text) // 4 + 1 > limit:
            text, finish = text[: limit * 4], "length"

        model = str(body.get("model") or "simulated-judge")
        reply_id = f"chatcmpl-sim-{digest[:12]}-{seen}"
        message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
        if wanted.tool is not None:
            function = {"name": wanted.tool, "arguments": text}
            call = {"id": f"call_{digest[:16]}_{seen}", "type": "function", "function": function}
            message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": [call]}
        prompt_chars = sum(len(m.content) for m in messages)
        usage = {
            "prompt_tokens": prompt_chars // 4 + 1,
            "completion_tokens": len(text) // 4 + 1,
            "total_tokens": prompt_chars // 4 + 1 + len(text) // 4 + 1,
        }
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._send_stream(reply_id, model, message, finish, usage if include_usage else None)
            return
        payload = {
            "id": reply_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": usage,
            "system_fingerprint": "verify-simulated",
        }
        self._send_json(200, payload)

    def _client_waits(self, seconds: float) -> bool:
        """Sleep ``seconds``; False as soon as the client closes the connection (nothing else can
        arrive on it while its request is being answered, so readable means closed)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if select.select([self.connection], [], [], min(left, 0.05))[0]:
                try:
                    if self.connection.recv(1, socket.MSG_PEEK) == b"":
                        return False
                except OSError:
                    return False
        return True

    # -- responses -------------------------------------------------------------------------------

    def _send_json(self, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        if self._current is not None:
            self._current["status"] = status
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, status: int, message: str, error_type: str | None = None) -> None:
        kind, code = _ERROR_TYPES.get(
            status, ("server_error" if status >= 500 else "invalid_request_error", None)
        )
        extra: dict[str, str] = {}
        after = self.server.sim.options.retry_after_ms
        if (status == 429 or status >= 500) and after is not None:
            extra = {"Retry-After": str(int(after // 1000)), "retry-after-ms": str(int(after))}
        error = {"message": message, "type": error_type or kind, "param": None, "code": code}
        self._send_json(status, {"error": error}, extra)

    def _send_stream(
        self, reply_id: str, model: str, message: dict[str, Any], finish: str, usage: dict[str, int] | None
    ) -> None:
        if self._current is not None:
            self._current["status"] = 200
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        created = int(time.time())

        def chunk(delta: dict[str, Any] | None, finish_reason: str | None, **more: Any) -> None:
            choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
            event = {"id": reply_id, "object": "chat.completion.chunk", "created": created}
            event.update(model=model, choices=choices, **more)
            self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")

        chunk({"role": "assistant", "content": "" if message["content"] is not None else None}, None)
        if message.get("tool_calls"):
            call = message["tool_calls"][0]
            function = {"name": call["function"]["name"], "arguments": ""}
            head = {"index": 0, "id": call["id"], "type": "function", "function": function}
            chunk({"tool_calls": [head]}, None)
            for piece in stream_pieces(call["function"]["arguments"]):
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}, None)
        else:
            for piece in stream_pieces(message["content"]):
                chunk({"content": piece}, None)
        chunk({}, finish)
        if usage is not None:
            chunk(None, None, usage=usage)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def start_server(
    *,
    port: int = 0,
    latency_ms: float = 0,
    rate_429: float = 0,
    rate_500: float = 0,
    malformed_rate: float = 0,
    fabricate_rate: float = 0,
    truncate_rate: float = 0,
    fail_first: int = 0,
    fail_status: int = 429,
    seed: int = 0,
    retry_after_ms: float | None = 10.0,
    record: bool = True,
    reply: brain.ReplyFunction = brain.respond,
    imperfections: Imperfections | None = None,
    reject_json_schema: bool = False,
    reject_json_object: bool = False,
    no_tools: bool = False, echo_auth_rate: float = 0,
    latency_cv: float = 0, capacity: int | None = None, over_capacity: str = "queue",
) -> SimulatedServer:
    """Start the server in a daemon thread on 127.0.0.1 (``port=0`` picks a free port).

    ``retry_after_ms`` sets the ``retry-after-ms`` header on 429/5xx answers (``Retry-After`` is
    that in whole seconds), which keeps the OpenAI SDK's retry wait short; ``None`` sends neither.
    ``reply`` answers each chat request that gets past the HTTP faults (default: the brain);
    ``imperfections`` makes the brain an imperfect judge; ``echo_auth_rate``: see ``simulated/echo.py``;
    ``latency_cv``, ``capacity`` and ``over_capacity``: see the module docstring.
    """
    if over_capacity not in OVER_CAPACITY:
        raise ValueError(f"over_capacity must be one of {', '.join(OVER_CAPACITY)}, got {over_capacity!r}")
    options = ServerOptions(
        latency_ms=latency_ms, rate_429=rate_429, rate_500=rate_500, malformed_rate=malformed_rate,
        fabricate_rate=fabricate_rate, truncate_rate=truncate_rate, fail_first=fail_first, fail_status=fail_status,
        seed=seed, retry_after_ms=retry_after_ms, record=record, imperfections=imperfections or Imperfections(),
        reject_json_schema=reject_json_schema, reject_json_object=reject_json_object, no_tools=no_tools,
        echo_auth_rate=echo_auth_rate, latency_cv=latency_cv, capacity=capacity, over_capacity=over_capacity,
    )  # fmt: skip
    return SimulatedServer(options, port, reply)


def serve_forever(*, port: int = 0, **options: Any) -> None:
    """Run the server until interrupted (Ctrl-C); print its base URL first, alone on a line.

    ``options`` are :func:`start_server`'s. Requests are not recorded, so a long-running server does
    not grow.
    """
    server = start_server(port=port, **{**options, "record": False})
    print(server.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
