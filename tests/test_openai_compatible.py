"""The OpenAI-compatible adapter (our own HTTP client) against the simulated server on 127.0.0.1:
the same behaviour as the langchain adapter (tests/test_llm_port.py, tests/test_endpoint_negotiation.py)
on the wire, in its errors and in what it hands back, and when :func:`serves` lets langchain build instead."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from verify.config.models import CategoryRetryConfig, ModelConfig, RetryPolicy
from verify.errors import ModelError, ModelSetupError
from verify.llm.adapters.http_pool import HttpReply
from verify.llm.adapters.langchain import LangChainModel
from verify.llm.adapters.openai_compatible import EndpointStatusError, OpenAICompatibleModel, serves
from verify.llm.breaker import BreakerModel
from verify.llm.build import build_model
from verify.llm.cache import ResponseCache
from verify.llm.endpoints import EndpointUnreachable
from verify.llm.ports import ChatRequest, Message, Purpose, ToolCall, ToolSpec
from verify.llm.recording import RecordingModel
from verify.llm.resilience import RetryingModel, attempts_of, classify_error, retry_after_seconds
from verify.llm.simulated.brain import SimulatedRequest
from verify.llm.simulated.server import SimulatedServer, start_server
from verify.llm.structured import ask_structured
from verify.llm.tool_loop import Handled, run_tool_loop

NEGOTIATION_LOG = "verify.llm.adapters.negotiation"
KEY = "sk-local-secret-0123456789abcdefghij"


class Verdict(BaseModel):
    trait: str
    passed: bool
    score: int


VERDICT: dict[str, Any] = {"trait": "clarity", "passed": True, "score": 4}
SCHEMA = Verdict.model_json_schema()
PROMPT = (Message("system", "You are a judge."), Message("user", "Judge the clarity of: Paris is in France."))
STRUCTURED = ChatRequest(PROMPT, schema=SCHEMA, purpose=Purpose.RUBRIC_SINGLE)
PLAIN = ChatRequest(PROMPT, purpose=Purpose.ANSWER)
SEARCH = ToolSpec("search", "Search the web.", {"type": "object", "properties": {"query": {"type": "string"}},
                                                "required": ["query"]})  # fmt: skip


def says(text: str) -> Any:
    def reply(request: SimulatedRequest) -> str:
        return text

    return reply


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[SimulatedServer] = []

    def make(**options: Any) -> SimulatedServer:
        options.setdefault("reply", says(json.dumps(VERDICT)))
        server = start_server(**options)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


def endpoint(url: str, **fields: Any) -> ModelConfig:
    data: dict[str, Any] = {"id": "judge", "model_name": "local-model", "interface": "openai_endpoint",
                            "endpoint_base_url": url, "endpoint_api_key": KEY, "temperature": 0.0,
                            "request_timeout": 10.0}  # fmt: skip
    data.update(fields)
    return ModelConfig(**data)


def policy(**categories: tuple[int, float]) -> RetryPolicy:
    """Retries per category as (retries, backoff); the rest do not retry; no circuit breaker."""
    fields: dict[str, Any] = {n: CategoryRetryConfig(max_attempts=0)
                              for n in ("connection", "timeout", "rate_limit", "server_error")}  # fmt: skip
    for name, (retries, backoff) in categories.items():
        fields[name] = CategoryRetryConfig(max_attempts=retries, backoff_min=backoff, backoff_max=backoff)
    return RetryPolicy().model_copy(update=fields)


def formats(server: SimulatedServer) -> list[str]:
    out = []
    for entry in server.chat_requests:
        body = entry["json"]
        fmt = body.get("response_format")
        out.append(fmt["type"] if fmt else "tools" if body.get("tools") else "plain")
    return out


def headers(server: SimulatedServer) -> list[dict[str, str]]:
    return [{k.lower(): v for k, v in r["headers"].items()} for r in server.chat_requests]


def switches(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == NEGOTIATION_LOG]


class SleepRecorder:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


# -- plain text, the purpose header, usage -------------------------------------------------------------------


async def test_plain_text_reply_usage_and_body(serve: Any) -> None:
    server = serve(reply=says("Paris is the capital of France."))
    model = OpenAICompatibleModel(endpoint(server.url))
    reply = await model.complete(PLAIN)
    assert reply.text == "Paris is the capital of France." and reply.parsed is None
    assert reply.finish_reason == "stop" and reply.attempts == 1 and reply.tool_calls == ()
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens == len(reply.text) // 4 + 1
    assert reply.model == model.model_id and reply.latency_s > 0
    (entry,) = server.chat_requests
    assert entry["path"] == "/v1/chat/completions" and entry["status"] == 200
    body = entry["json"]
    assert body == {"model": "local-model", "temperature": 0.0,
                    "messages": [{"role": "system", "content": "You are a judge."},
                                 {"role": "user", "content": "Judge the clarity of: Paris is in France."}]}  # fmt: skip
    sent = headers(server)[0]
    assert sent["content-type"] == "application/json" and sent["x-verify-purpose"] == "answer"
    await model.aclose()


async def test_every_call_sends_its_purpose(serve: Any) -> None:
    seen: list[Purpose | None] = []

    def record(request: SimulatedRequest) -> str:
        seen.append(request.purpose)
        return json.dumps(VERDICT)

    server = serve(reply=record)
    await OpenAICompatibleModel(endpoint(server.url)).complete(PLAIN)
    await OpenAICompatibleModel(endpoint(server.url)).complete(STRUCTURED)
    tools = OpenAICompatibleModel(endpoint(server.url, extra_kwargs={"structured_output_method": "function_calling"}))
    await tools.complete(ChatRequest(PROMPT, schema=SCHEMA, purpose=Purpose.DJ_SCORE))
    await tools.complete(ChatRequest(PROMPT, purpose=Purpose.RUBRIC_GRADER, tools=(SEARCH,)))
    assert seen == [Purpose.ANSWER, Purpose.RUBRIC_SINGLE, Purpose.DJ_SCORE, Purpose.RUBRIC_GRADER]
    assert [h["x-verify-purpose"] for h in headers(server)] == ["answer", "rubric_single", "dj_score", "rubric_grader"]


async def test_max_tokens_is_sent_only_when_configured(serve: Any) -> None:
    server = serve()
    await OpenAICompatibleModel(endpoint(server.url)).complete(PLAIN)
    await OpenAICompatibleModel(endpoint(server.url)).complete(STRUCTURED)
    await OpenAICompatibleModel(endpoint(server.url, max_tokens=321)).complete(PLAIN)
    await OpenAICompatibleModel(endpoint(server.url, max_tokens=321)).complete(STRUCTURED)
    bodies = [r["json"] for r in server.chat_requests]
    assert all("max_tokens" not in b and "max_completion_tokens" not in b for b in bodies[:2])
    assert [b.get("max_tokens") for b in bodies[2:]] == [321, 321]


async def test_a_truncated_reply_is_never_parsed(serve: Any) -> None:
    text = json.dumps(VERDICT)
    server = serve(truncate_rate=1.0)
    model = OpenAICompatibleModel(endpoint(server.url))
    reply = await model.complete(STRUCTURED)
    assert reply.finish_reason == "length" and reply.parsed is None and reply.text == text[: len(text) // 2]
    # a cut-off reply whose first half still parses is not trusted either
    padded = serve(truncate_rate=1.0, reply=says(text + " " * (len(text) + 10)))
    whole = await OpenAICompatibleModel(endpoint(padded.url)).complete(STRUCTURED)
    assert whole.finish_reason == "length" and json.loads(whole.text) == VERDICT and whole.parsed is None
    # cut short by max_tokens, a reply that still happens to be valid JSON is not trusted either
    short = serve(reply=says(json.dumps({"a": "x" * 40})))
    cut = await OpenAICompatibleModel(endpoint(short.url, max_tokens=100)).complete(STRUCTURED)
    assert cut.finish_reason == "stop" and cut.parsed == {"a": "x" * 40}
    tiny = await OpenAICompatibleModel(endpoint(short.url, max_tokens=3)).complete(STRUCTURED)
    assert tiny.finish_reason == "length" and tiny.parsed is None
    result = await ask_structured(model, list(PROMPT), Verdict, purpose=Purpose.RUBRIC_SINGLE, max_parse_retries=1)
    assert result.value is None and result.error == "reply truncated (finish_reason=length)"


# -- structured output: json_schema, function calling and the ladder ---------------------------------------------


async def test_native_json_schema(serve: Any) -> None:
    server = serve()
    model = OpenAICompatibleModel(endpoint(server.url))
    assert model.structured_output == "json_schema"
    reply = await model.complete(STRUCTURED)
    assert reply.parsed == VERDICT and json.loads(reply.text) == VERDICT
    fmt = server.chat_requests[0]["json"]["response_format"]
    assert fmt == {"type": "json_schema", "json_schema": {"name": "Verdict", "schema": SCHEMA, "strict": False}}
    result = await ask_structured(model, list(PROMPT), Verdict, purpose=Purpose.RUBRIC_SINGLE, trait="clarity")
    assert result.value == Verdict(**VERDICT) and result.calls == 1 and result.usage.total_tokens > 0


async def test_prose_around_json_is_left_to_the_repair(serve: Any) -> None:
    prose = 'Let me think.\n```json\n{"trait": "clarity", "passed": true, "score": 3,}\n```\nDone.'
    server = serve(reply=says(prose))
    model = OpenAICompatibleModel(endpoint(server.url))
    reply = await model.complete(STRUCTURED)
    assert reply.parsed is None and reply.text == prose
    result = await ask_structured(model, list(PROMPT), Verdict, purpose=Purpose.RUBRIC_SINGLE)
    assert result.value == Verdict(trait="clarity", passed=True, score=3) and result.calls == 1


async def test_function_calling(serve: Any) -> None:
    server = serve()
    model = OpenAICompatibleModel(endpoint(server.url, extra_kwargs={"structured_output_method": "function_calling"}))
    reply = await model.complete(STRUCTURED)
    assert reply.parsed == VERDICT and json.loads(reply.text) == VERDICT
    assert reply.tool_calls == ()  # the forced tool is how the schema is asked for, not a tool the caller offered
    sent = server.chat_requests[0]["json"]
    assert sent["tools"] == [{"type": "function", "function": {"name": "Verdict", "description": "Return the Verdict.",
                                                               "parameters": SCHEMA}}]  # fmt: skip
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "Verdict"}}
    assert "response_format" not in sent


async def test_json_schema_rejected_steps_down_once_for_concurrent_calls(
    serve: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = serve(reject_json_schema=True)
    model = OpenAICompatibleModel(endpoint(server.url))
    with caplog.at_level(logging.WARNING, logger=NEGOTIATION_LOG):
        replies = await asyncio.gather(*(model.complete(STRUCTURED) for _ in range(6)))
        later = [await model.complete(STRUCTURED) for _ in range(3)]
    assert all(r.parsed == VERDICT for r in [*replies, *later])
    assert model.structured_output == "json_mode"
    (line,) = switches(caplog)
    assert line.startswith(f"model judge: json_schema not supported by {server.url}; using json_mode from now on")
    assert KEY not in caplog.text
    # the first call finds the method while the others wait for it: one refused request in all
    assert sorted(r.attempts for r in replies) == [1] * 5 + [2] and [r.attempts for r in later] == [1] * 3
    assert formats(server) == ["json_schema"] + ["json_object"] * 9
    assert [r["status"] for r in server.chat_requests] == [500] + [200] * 9
    # a self-hosted server gets the schema with JSON mode (llama.cpp and vLLM constrain with it)
    assert server.chat_requests[-1]["json"]["response_format"] == {"type": "json_object", "schema": SCHEMA}
    # the re-sent request still says which step asks
    assert {h["x-verify-purpose"] for h in headers(server)} == {"rubric_single"}


async def test_once_a_method_worked_structured_calls_go_at_once(serve: Any) -> None:
    server = serve(latency_ms=200)
    model = OpenAICompatibleModel(endpoint(server.url))
    assert not model.ladder.settled
    started = time.perf_counter()
    replies = await asyncio.gather(*(model.complete(STRUCTURED) for _ in range(5)))
    # the first call probes alone, the four queued behind it go out together: 0.4 s, not 1.0 s
    assert time.perf_counter() - started < 0.8 and all(r.parsed == VERDICT for r in replies)
    assert model.ladder.settled
    started = time.perf_counter()
    await asyncio.gather(*(model.complete(STRUCTURED) for _ in range(4)))
    assert time.perf_counter() - started < 0.6  # one at a time would take 0.8 s


@pytest.mark.parametrize(
    ("options", "method", "expected", "lines"),
    [
        ({"reject_json_schema": True, "reject_json_object": True}, "function_calling",
         ["json_schema", "json_object", "tools", "tools"], 2),
        ({"reject_json_schema": True, "reject_json_object": True, "no_tools": True}, "none",
         ["json_schema", "json_object", "tools", "plain", "plain"], 3),
    ],
)  # fmt: skip
async def test_the_ladder_goes_on_to_tools_and_plain_text(
    serve: Any, caplog: pytest.LogCaptureFixture, options: dict[str, bool], method: str, expected: list[str],
    lines: int,
) -> None:
    server = serve(**options)
    model = OpenAICompatibleModel(endpoint(server.url))
    with caplog.at_level(logging.WARNING, logger=NEGOTIATION_LOG):
        first = await ask_structured(model, list(PROMPT), Verdict, purpose=Purpose.RUBRIC_SINGLE)
        second = await model.complete(STRUCTURED)
    assert first.value == Verdict(**VERDICT) and first.calls == 1
    assert json.loads(second.text) == VERDICT and second.attempts == 1
    assert model.structured_output == method and formats(server) == expected
    assert len(switches(caplog)) == lines


async def test_a_transient_500_is_not_a_ladder_step(serve: Any) -> None:
    server = serve(fail_first=1, fail_status=500)
    model = RetryingModel(OpenAICompatibleModel(endpoint(server.url)), policy(server_error=(1, 0.0)))
    reply = await model.complete(STRUCTURED)
    assert reply.parsed == VERDICT and reply.attempts == 2
    assert formats(server) == ["json_schema", "json_schema"]
    assert isinstance(model.inner, OpenAICompatibleModel) and model.inner.structured_output == "json_schema"


async def test_an_unrelated_400_is_not_a_ladder_step(serve: Any) -> None:
    server = serve(fail_first=1, fail_status=400)
    model = OpenAICompatibleModel(endpoint(server.url))
    with pytest.raises(EndpointStatusError, match="simulated failure") as caught:
        await model.complete(STRUCTURED)
    assert caught.value.status_code == 400 and classify_error(caught.value) == "permanent"
    assert model.structured_output == "json_schema" and len(server.chat_requests) == 1


async def test_a_failed_step_down_counts_every_request(serve: Any) -> None:
    # json_schema refused (a step), then the JSON-mode request hits a 429: the error says 2 requests
    server = serve(reject_json_schema=True, fail_first=2, fail_status=429)
    model = OpenAICompatibleModel(endpoint(server.url))
    with pytest.raises(EndpointStatusError) as caught:
        await model.complete(STRUCTURED)
    assert caught.value.status_code == 429 and attempts_of(caught.value) == 2
    assert [r["status"] for r in server.chat_requests] == [500, 429]
    assert model.structured_output == "json_mode" and not model.ladder.settled


# -- tools -----------------------------------------------------------------------------------------------------------


async def test_tool_calls_round_trip(serve: Any) -> None:
    server = serve(reply=says(json.dumps({"query": "capital of France"})))
    model = OpenAICompatibleModel(endpoint(server.url))
    handled: list[ToolCall] = []

    async def handle(call: ToolCall) -> Handled:
        handled.append(call)
        return Handled(f"result {len(handled)}: Paris is the capital of France.")

    end = await run_tool_loop(model, PROMPT, (SEARCH,), handle, purpose=Purpose.RUBRIC_GRADER, rounds=2)
    assert end.reason == "rounds" and [c.name for c in handled] == ["search", "search"]
    assert all(c.arguments == {"query": "capital of France"} for c in handled)
    first, second = (r["json"] for r in server.chat_requests)
    assert first["tools"] == [{"type": "function", "function": {"name": "search", "description": "Search the web.",
                                                                "parameters": SEARCH.parameters}}]  # fmt: skip
    assert "tool_choice" not in first and "response_format" not in first
    # the model's call and its result go back on the wire the OpenAI way
    call_id = handled[0].id
    assert call_id and second["messages"][2:] == [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": call_id, "type": "function",
                         "function": {"name": "search", "arguments": '{"query": "capital of France"}'}}]},
        {"role": "tool", "tool_call_id": call_id, "content": "result 1: Paris is the capital of France."},
    ]  # fmt: skip
    assert second["tools"] == first["tools"]


async def test_a_tool_call_reply_and_a_plain_reply_to_tools(serve: Any) -> None:
    server = serve(reply=says(json.dumps({"query": "boiling point"})))
    model = OpenAICompatibleModel(endpoint(server.url))
    reply = await model.complete(ChatRequest(PROMPT, purpose=Purpose.ANSWER, tools=(SEARCH,)))
    (call,) = reply.tool_calls
    assert call.name == "search" and call.arguments == {"query": "boiling point"} and call.id.startswith("call_")
    assert reply.finish_reason == "tool_calls" and reply.parsed is None
    # offered two tools without a forced choice, the simulated server answers in text: no calls
    other = ToolSpec("lookup", "Look it up.", {"type": "object", "properties": {}})
    plain = await model.complete(ChatRequest(PROMPT, purpose=Purpose.ANSWER, tools=(SEARCH, other)))
    assert plain.tool_calls == () and plain.text == json.dumps({"query": "boiling point"})
    # a structured request that also offers tools is a tool-using turn: no response_format
    both = await model.complete(ChatRequest(PROMPT, schema=SCHEMA, purpose=Purpose.ANSWER, tools=(SEARCH,)))
    assert both.tool_calls and "response_format" not in server.chat_requests[-1]["json"]


# -- errors: statuses, Retry-After, refused connections, timeouts ---------------------------------------------------


async def test_429_is_a_rate_limit_with_its_retry_after(serve: Any) -> None:
    server = serve(fail_first=1, fail_status=429, retry_after_ms=30)
    model = OpenAICompatibleModel(endpoint(server.url))
    with pytest.raises(EndpointStatusError) as caught:
        await model.complete(PLAIN)
    error = caught.value
    assert error.status_code == 429 and error.response.status_code == 429
    assert classify_error(error) == "rate_limit" and retry_after_seconds(error) == 0.03
    assert str(error) == 'Error code: 429 - simulated failure 1 of the first 1 {"type": "requests", "code": "rate_limit_exceeded"}'
    sleep = SleepRecorder()
    again = serve(fail_first=1, fail_status=429, retry_after_ms=30)
    retrying = RetryingModel(OpenAICompatibleModel(endpoint(again.url)), policy(rate_limit=(2, 5.0)), sleep=sleep)
    reply = await retrying.complete(PLAIN)
    assert reply.attempts == 2 and sleep.delays == [0.03]  # the server's Retry-After, not the 5 s backoff
    assert [r["status"] for r in again.chat_requests] == [429, 200]


async def test_5xx_is_a_server_error_and_400_permanent(serve: Any) -> None:
    flaky = serve(fail_first=1, fail_status=500)
    model = RetryingModel(OpenAICompatibleModel(endpoint(flaky.url)), policy(server_error=(2, 0.0)))
    assert (await model.complete(PLAIN)).attempts == 2
    assert [r["status"] for r in flaky.chat_requests] == [500, 200]

    always = serve(rate_500=1.0)
    failing = RetryingModel(OpenAICompatibleModel(endpoint(always.url)), policy(server_error=(2, 0.0)))
    with pytest.raises(ModelError) as caught:
        await failing.complete(PLAIN)
    assert caught.value.category == "server_error" and attempts_of(caught.value) == 3
    assert len(always.chat_requests) == 3

    bad = serve(fail_first=5, fail_status=400)
    permanent = RetryingModel(OpenAICompatibleModel(endpoint(bad.url)),
                              policy(rate_limit=(3, 0.0), server_error=(3, 0.0)))  # fmt: skip
    with pytest.raises(ModelError) as caught:
        await permanent.complete(PLAIN)
    assert caught.value.category == "permanent" and len(bad.chat_requests) == 1


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_connection_refused_fails_fast_naming_the_url() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    direct = OpenAICompatibleModel(endpoint(url))
    with pytest.raises(EndpointUnreachable) as raw:
        await direct.complete(PLAIN)
    assert raw.value.local and raw.value.url == url
    model = RecordingModel(build_model(endpoint(url), policy=None))  # the default policy: 3 connection retries
    started = time.perf_counter()
    with pytest.raises(EndpointUnreachable) as caught:
        await model.complete(PLAIN)
    assert time.perf_counter() - started < 3.0
    assert str(caught.value) == f"cannot connect to {url} (connection refused): is the server running?"
    assert caught.value.category == "connection" and KEY not in str(caught.value)
    assert attempts_of(caught.value) == 2  # one quick retry on a loopback URL
    (record,) = model.records
    assert record.failed and record.attempts == 2


async def wait_for_close(server: SimulatedServer, seconds: float = 2.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.requests and server.requests[0].get("client_closed"):
            return True
        await asyncio.sleep(0.02)
    return False


async def test_a_timed_out_request_closes_its_connection(serve: Any) -> None:
    server = serve(latency_ms=5000)
    model = RetryingModel(OpenAICompatibleModel(endpoint(server.url, request_timeout=0.3)), policy())
    started = time.perf_counter()
    with pytest.raises(ModelError) as caught:
        await model.complete(PLAIN)
    # the request timeout fires, and the call's connection is closed
    assert caught.value.category == "timeout" and time.perf_counter() - started < 1.2
    assert await wait_for_close(server)  # the server saw the client go, long before its 5 s reply
    assert server.requests[0]["status"] is None


async def test_a_cancelled_request_closes_its_connection(serve: Any) -> None:
    server = serve(latency_ms=5000)
    task = asyncio.create_task(OpenAICompatibleModel(endpoint(server.url, request_timeout=30.0)).complete(PLAIN))
    while server.request_count == 0:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_for_close(server)


async def test_attempts_count_retries_and_the_cache_counts_none(serve: Any, tmp_path: Path) -> None:
    server = serve(fail_first=1, fail_status=503)
    built = build_model(endpoint(server.url, retry_policy=policy(server_error=(2, 0.0))),
                        cache=ResponseCache(tmp_path / "c.db"))  # fmt: skip
    model = RecordingModel(built)
    first = await model.complete(STRUCTURED)
    again = await model.complete(STRUCTURED)
    assert [r["status"] for r in server.chat_requests] == [503, 200]
    assert (first.attempts, again.attempts, again.cached) == (2, 0, True)
    assert [(r.attempts, r.cached) for r in model.records] == [(2, False), (0, True)]


# -- secrets -------------------------------------------------------------------------------------------------------


async def test_the_key_is_sent_but_never_in_model_id_or_errors(serve: Any) -> None:
    server = serve()
    model = OpenAICompatibleModel(endpoint(server.url))
    await model.complete(PLAIN)
    assert "authorization" not in headers(server)[0]  # the server records headers minus credentials...
    assert KEY not in model.model_id and KEY not in repr(vars(model).get("_body"))
    other = OpenAICompatibleModel(endpoint(server.url, endpoint_api_key="sk-another-key-0123456789abcdef"))
    assert other.model_id == model.model_id  # ...and the key is no part of what identifies the requests
    assert model.model_id.startswith("openai:local-model@")
    assert OpenAICompatibleModel(endpoint(server.url, temperature=0.7)).model_id != model.model_id

    echo = serve(echo_auth_rate=1.0)  # a server that quotes the Authorization header back in its 401
    with pytest.raises(EndpointStatusError) as raw:
        await OpenAICompatibleModel(endpoint(echo.url)).complete(PLAIN)
    assert raw.value.status_code == 401 and KEY not in str(raw.value)
    other_secret = "sk-proj-custom0123456789abcdefghij"  # a key-shaped credential in a header of ours
    quoted = OpenAICompatibleModel(endpoint(echo.url, extra_kwargs={"default_headers": {"X-Custom-Auth": other_secret}}))
    with pytest.raises(EndpointStatusError) as raw:
        await quoted.complete(PLAIN)
    assert "X-Custom-Auth" in str(raw.value) and other_secret not in str(raw.value) and KEY not in str(raw.value)
    built = build_model(endpoint(echo.url), policy=None)
    with pytest.raises(ModelError) as caught:
        await built.complete(PLAIN)
    assert caught.value.category == "permanent" and KEY not in str(caught.value)


async def test_our_own_key_is_masked_whatever_its_shape(serve: Any) -> None:
    plain_key = "localpass0123456789abcd"  # no sk- prefix, and quoted without "Bearer"

    def leaky(request: SimulatedRequest) -> str:
        raise RuntimeError(f"Incorrect API key provided: {plain_key}")

    server = serve(reply=leaky)
    with pytest.raises(EndpointStatusError) as raw:
        await OpenAICompatibleModel(endpoint(server.url, endpoint_api_key=plain_key)).complete(PLAIN)
    assert raw.value.status_code == 500 and "Incorrect API key provided" in str(raw.value)
    assert plain_key not in str(raw.value) and plain_key in raw.value.response.text


async def test_the_key_reaches_the_server(serve: Any) -> None:
    seen: list[str] = []
    server = serve(echo_auth_rate=1.0)
    try:
        await OpenAICompatibleModel(endpoint(server.url)).complete(PLAIN)
    except EndpointStatusError as exc:
        seen.append(exc.response.text)
    assert len(seen) == 1 and f"Bearer {KEY}" in seen[0]  # the server got it; only our messages drop it


# -- which adapter builds a model --------------------------------------------------------------------------------------


def test_serves_only_settings_it_can_send() -> None:
    url = "http://127.0.0.1:9/v1"
    assert serves(endpoint(url))
    assert serves(endpoint(url, extra_kwargs={"top_p": 0.9, "seed": 7, "model_kwargs": {"top_k": 20},
                                              "extra_body": {"min_p": 0.05}, "default_headers": {"X-Team": "a"},
                                              "structured_output_method": "json_mode"}))  # fmt: skip
    assert not serves(endpoint(url, extra_kwargs={"streaming": True}))  # only langchain-openai knows it
    assert not serves(endpoint(url, extra_kwargs={"top_p": 0.9, "http_client": "custom"}))
    assert not serves(ModelConfig(id="j", model_provider="openai", model_name="gpt-4.1-mini"))
    assert serves(ModelConfig(id="j", model_name="openai/gpt-4.1-mini", interface="openrouter"))


def test_build_model_chooses_the_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test-0123456789")
    url = "http://127.0.0.1:9/v1"
    no_breaker = RetryPolicy(breaker_failures=0)

    def adapter(config: ModelConfig) -> Any:
        model = build_model(config, policy=no_breaker)
        assert isinstance(model, RetryingModel)
        return model.inner

    assert isinstance(adapter(endpoint(url)), OpenAICompatibleModel)
    assert isinstance(adapter(endpoint(url, extra_kwargs={"streaming": True})), LangChainModel)
    routed = adapter(ModelConfig(id="j", model_name="openai/gpt-4.1-mini", interface="openrouter"))
    assert isinstance(routed, OpenAICompatibleModel) and routed.url == "https://openrouter.ai/api/v1"
    assert routed.model_id.startswith("openai:openai/gpt-4.1-mini@")  # the langchain adapter's id
    hosted = adapter(endpoint("https://api.openai.com/v1"))  # OpenAI itself: langchain-openai's per-model rules
    assert isinstance(hosted, LangChainModel)
    guarded = build_model(endpoint(url), policy=None)
    assert isinstance(guarded, RetryingModel) and isinstance(guarded.inner, BreakerModel)
    assert isinstance(guarded.inner.inner, OpenAICompatibleModel)


async def test_settings_the_protocol_has_a_place_for_are_sent(serve: Any) -> None:
    server = serve()
    extra = {"top_p": 0.5, "seed": 7, "model_kwargs": {"top_k": 20}, "extra_body": {"min_p": 0.05},
             "default_headers": {"X-Team": "blue"}}  # fmt: skip
    model = OpenAICompatibleModel(endpoint(server.url, extra_kwargs=extra))
    await model.complete(PLAIN)
    body = server.chat_requests[0]["json"]
    assert (body["top_p"], body["seed"], body["top_k"], body["min_p"]) == (0.5, 7, 20, 0.05)
    assert headers(server)[0]["x-team"] == "blue"
    assert model.model_id != OpenAICompatibleModel(endpoint(server.url)).model_id  # they change the requests


def test_setup_errors() -> None:
    with pytest.raises(ModelSetupError, match="OPENROUTER_API_KEY") as caught:
        OpenAICompatibleModel(ModelConfig(id="j", model_name="m", interface="openrouter"), api_key_env={})
    assert caught.value.hint and "OPENROUTER_API_KEY" in caught.value.hint
    with pytest.raises(ModelSetupError, match="structured_output_method"):
        OpenAICompatibleModel(endpoint("http://127.0.0.1:9/v1", extra_kwargs={"structured_output_method": "xml"}))


@pytest.mark.parametrize(
    ("url", "mode", "expected"),
    [
        ("http://127.0.0.1:8000", None, "http://127.0.0.1:8000/v1"),
        ("http://127.0.0.1:8000/v1/", None, "http://127.0.0.1:8000/v1"),
        ("http://127.0.0.1:8000/api", "raw", "http://127.0.0.1:8000/api"),
    ],
)
def test_endpoint_base_url(url: str, mode: str | None, expected: str) -> None:
    model = OpenAICompatibleModel(endpoint(url, extra_kwargs={"endpoint_base_url_mode": mode} if mode else None))
    assert model.url == expected


def test_one_adapter_across_event_loops(serve: Any) -> None:
    # pooled connections belong to the loop that opened them: each loop gets its own client
    server = serve()
    model = OpenAICompatibleModel(endpoint(server.url))
    for _ in range(3):
        assert asyncio.run(model.complete(PLAIN)).text
    assert asyncio.run(OpenAICompatibleModel(endpoint(server.url)).complete(STRUCTURED)).parsed == VERDICT
    assert [r["status"] for r in server.chat_requests] == [200] * 4


async def test_models_of_one_server_share_a_client_closed_by_the_last(serve: Any) -> None:
    server = serve()
    a = OpenAICompatibleModel(endpoint(server.url, id="a"))
    b = OpenAICompatibleModel(endpoint(server.url, id="b", temperature=0.5))
    await asyncio.gather(a.complete(PLAIN), b.complete(PLAIN))
    (client,) = set(a._open) | set(b._open)
    await a.aclose()
    assert not client.is_closed
    await b.aclose()
    assert client.is_closed
    assert (await a.complete(PLAIN)).text  # a closed client is replaced on the next call


async def test_calls_in_flight_each_get_a_connection_kept_alive_for_the_next(serve: Any) -> None:
    server = serve(latency_ms=100)
    model = OpenAICompatibleModel(endpoint(server.url))
    await asyncio.gather(*(model.complete(PLAIN) for _ in range(20)))
    (pool,) = model._open
    opened = set(pool.connections)
    assert len(opened) == 20  # one per call in flight, none waits for another's
    await asyncio.gather(*(model.complete(PLAIN) for _ in range(20)))
    assert pool.connections == opened  # all of them reused: no new connection
    await model.aclose()
    assert pool.is_closed and not pool.connections


def test_the_model_id_is_the_langchain_adapters_so_cached_replies_stay_valid() -> None:
    url = "http://127.0.0.1:9/v1"
    for fields in ({}, {"max_tokens": 50}, {"temperature": 0.7, "extra_kwargs": {"seed": 3}}):
        assert OpenAICompatibleModel(endpoint(url, **fields)).model_id == LangChainModel(endpoint(url, **fields)).model_id
    ids = {OpenAICompatibleModel(endpoint(url, max_tokens=n)).model_id for n in (None, 50, 4000)}
    assert len(ids) == 3  # a reply cached under one max_tokens is not served under another


async def test_an_error_inside_a_200_reply_keeps_its_status(serve: Any) -> None:
    # OpenRouter passes an upstream rate limit on as HTTP 200 with {"error": {"code": 429, ...}}
    server = serve()
    model = OpenAICompatibleModel(endpoint(server.url))
    body = {"error": {"message": "Provider returned error", "code": 429, "param": None}}

    class Pool:
        async def post(self, *_args: Any) -> HttpReply:
            return HttpReply(200, (("content-type", "application/json"),), json.dumps(body).encode(), server.url)

    model._pool = lambda: Pool()  # type: ignore[method-assign,assignment,return-value]
    with pytest.raises(EndpointStatusError) as caught:
        await model.complete(PLAIN)
    assert caught.value.status_code == 429 and classify_error(caught.value) == "rate_limit"
    assert "Provider returned error" in str(caught.value)
