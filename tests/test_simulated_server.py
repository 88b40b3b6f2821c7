"""The simulated OpenAI-compatible server, driven by the real langchain-openai ChatOpenAI."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import openai
import pytest
from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from verify.llm.ports import Message, Purpose
from verify.llm.simulated import brain
from verify.llm.simulated.brain import SimulatedRequest
from verify.llm.simulated.server import SimulatedServer, start_server

VERDICT = {"passed": True, "score": 4, "reasoning": "the answer names Paris"}


class Verdict(BaseModel):
    """The judge's verdict on one trait."""

    passed: bool = Field(description="whether the trait holds")
    score: int = Field(description="1 to 5")
    reasoning: str = Field(description="why")


class Lenient(BaseModel):
    """All fields defaulted, so any JSON object (even the placeholder brain's {}) parses."""

    passed: bool = False
    note: str = ""


@dataclass
class FakeBrain:
    """A reply function for the server (instead of the brain): records each request, answers from the schema."""

    text: str = "a simulated answer"
    calls: list[SimulatedRequest] = field(default_factory=list)

    def __call__(self, request: SimulatedRequest) -> str:
        self.calls.append(request)
        return self.text if request.schema is None else json.dumps(VERDICT)


@pytest.fixture
def fake_brain() -> FakeBrain:
    return FakeBrain()


@pytest.fixture
def server() -> Iterator[SimulatedServer]:
    """A server answering with the real brain."""
    with start_server() as running:
        yield running


@pytest.fixture
def fake_server(fake_brain: FakeBrain) -> Iterator[SimulatedServer]:
    """A server answering with ``fake_brain``."""
    with start_server(reply=fake_brain) as running:
        yield running


def chat(server: SimulatedServer, **kwargs: Any) -> BaseChatModel:
    options: dict[str, Any] = {"max_retries": 0, **kwargs}
    return init_chat_model("openai:simulated-judge", base_url=server.url, api_key="sk-test", **options)


def post(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read())


def simple_body(text: str = "hello", **more: Any) -> dict[str, Any]:
    return {"model": "simulated-judge", "messages": [{"role": "user", "content": text}], **more}


# -- langchain-openai against the server --------------------------------------------------------


def test_plain_invoke_returns_the_brains_text(server: SimulatedServer) -> None:
    reply = chat(server).invoke("What is the capital of France?")
    expected = brain.reply(None, [Message("user", "What is the capital of France?")], None, brain.Faults())
    assert expected == brain.reply(Purpose.ANSWER, [Message("user", "What is the capital of France?")], None)
    assert reply.content == expected
    assert reply.response_metadata["finish_reason"] == "stop"
    assert reply.response_metadata["model_name"] == "simulated-judge"
    assert (
        reply.usage_metadata is not None and reply.usage_metadata["output_tokens"] == len(expected) // 4 + 1
    )
    assert server.request_count == 1
    assert server.requests[0]["json"]["stream"] is False  # langchain-openai says so explicitly


def test_invoke_converts_messages_and_hides_the_key(fake_server: SimulatedServer, fake_brain: FakeBrain) -> None:
    chat(fake_server).invoke([("system", "You are a judge."), ("human", "Q?"), ("ai", "A."), ("human", "Sure?")])
    (call,) = fake_brain.calls
    assert call.messages == (
        Message("system", "You are a judge."),
        Message("user", "Q?"),
        Message("assistant", "A."),
        Message("user", "Sure?"),
    )
    assert call.schema is None
    assert call.purpose is None  # a plain client sends no X-Verify-Purpose header
    headers = {k.lower() for k in fake_server.requests[0]["headers"]}
    assert "authorization" not in headers
    assert "sk-test" not in json.dumps(fake_server.requests)


def test_structured_output_json_schema(fake_server: SimulatedServer, fake_brain: FakeBrain) -> None:
    verdict = chat(fake_server).with_structured_output(Verdict, method="json_schema").invoke("judge this")
    assert verdict == Verdict.model_validate(VERDICT)
    schema = fake_brain.calls[0].schema
    assert schema is not None and schema["title"] == "Verdict"
    assert set(schema["properties"]) == {"passed", "score", "reasoning"}
    sent = fake_server.requests[0]["json"]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True


def test_structured_output_function_calling(fake_server: SimulatedServer, fake_brain: FakeBrain) -> None:
    verdict = chat(fake_server).with_structured_output(Verdict, method="function_calling").invoke("judge this")
    assert verdict == Verdict.model_validate(VERDICT)
    schema = fake_brain.calls[0].schema
    # the tool's parameters carry no title; the server names the schema after the forced tool
    assert schema is not None and schema["title"] == "Verdict"
    assert "reasoning" in schema["properties"]
    sent = fake_server.requests[0]["json"]
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "Verdict"}}


def test_structured_output_json_mode_replies_json(fake_server: SimulatedServer, fake_brain: FakeBrain) -> None:
    reply = chat(fake_server).bind(response_format={"type": "json_object"}).invoke("answer in json")
    assert json.loads(str(reply.content)) == {"content": fake_brain.text}  # free text wrapped into JSON
    assert fake_brain.calls[0].schema is None


def test_structured_output_with_the_real_brain(server: SimulatedServer) -> None:
    for method in ("json_schema", "function_calling"):
        result = chat(server).with_structured_output(Lenient, method=method).invoke("judge")
        assert isinstance(result, Lenient)


def test_streaming_text_and_tool_calls(fake_server: SimulatedServer, fake_brain: FakeBrain) -> None:
    fake_brain.text = "a reply long enough to arrive in several SSE chunks"
    model = chat(fake_server, stream_usage=True)
    chunks = list(model.stream("stream please"))
    assert len(chunks) > 3
    assert "".join(str(c.content) for c in chunks) == fake_brain.text
    assert fake_server.requests[-1]["json"]["stream"] is True
    verdict = list(model.with_structured_output(Verdict, method="function_calling").stream("judge"))[-1]
    assert verdict == Verdict.model_validate(VERDICT)


async def test_concurrent_async_calls(fake_brain: FakeBrain) -> None:
    with start_server(latency_ms=200, reply=fake_brain) as server:
        model = chat(server)
        await model.ainvoke("warm up")  # the first async call pays for client setup
        started = time.perf_counter()
        replies = await asyncio.gather(*(model.ainvoke(f"question {i}") for i in range(8)))
        elapsed = time.perf_counter() - started
    assert [r.content for r in replies] == [fake_brain.text] * 8
    assert elapsed < 8 * 0.2  # served in parallel threads
    assert server.request_count == 9


# -- faults -------------------------------------------------------------------------------------


def test_fail_first_429_is_retried_by_the_sdk(fake_brain: FakeBrain) -> None:
    with start_server(fail_first=2, fail_status=429, reply=fake_brain) as server:
        started = time.perf_counter()
        reply = chat(server, max_retries=2).invoke("hello")
        elapsed = time.perf_counter() - started
    assert reply.content == fake_brain.text
    assert server.request_count == 3
    assert [r["status"] for r in server.requests] == [429, 429, 200]
    assert [r["headers"]["x-stainless-retry-count"] for r in server.requests] == ["0", "1", "2"]
    assert elapsed < 1.0  # retry-after-ms: 10 keeps the SDK's backoff short
    assert len(fake_brain.calls) == 1  # failed requests never reach the brain


def test_fail_first_without_retries_raises_rate_limit_error() -> None:
    with start_server(fail_first=1) as server, pytest.raises(openai.RateLimitError):
        chat(server).invoke("hello")


def test_429_carries_retry_after_headers() -> None:
    with start_server(rate_429=1.0) as server:
        status, headers, body = post(server.url + "/chat/completions", simple_body())
    assert status == 429
    assert headers["Retry-After"] == "0" and headers["retry-after-ms"] == "10"
    assert body["error"]["code"] == "rate_limit_exceeded"


def test_500s_are_retried_then_surface(fake_brain: FakeBrain) -> None:
    with start_server(fail_first=1, fail_status=500, reply=fake_brain) as server:
        assert chat(server, max_retries=1).invoke("hello").content == fake_brain.text
        assert [r["status"] for r in server.requests] == [500, 200]
    with start_server(rate_500=1.0, reply=fake_brain) as server:
        with pytest.raises(openai.InternalServerError):
            chat(server, max_retries=1).invoke("hello")
        assert server.request_count == 2


def test_latency(fake_brain: FakeBrain) -> None:
    with start_server(latency_ms=300, reply=fake_brain) as server:
        started = time.perf_counter()
        chat(server).invoke("slow")
        assert time.perf_counter() - started >= 0.3


def test_truncation_gives_finish_reason_length(fake_brain: FakeBrain) -> None:
    fake_brain.text = "0123456789" * 4
    with start_server(truncate_rate=1.0, reply=fake_brain) as server:
        reply = chat(server).invoke("hello")
        assert reply.response_metadata["finish_reason"] == "length"
        assert reply.content == fake_brain.text[:20]
        raw = chat(server).with_structured_output(Verdict, method="function_calling", include_raw=True)
        result = raw.invoke("judge")
        assert isinstance(result, dict)
        assert result["raw"].response_metadata["finish_reason"] == "length"
        assert result["parsed"] is None  # half a JSON object does not parse


def test_max_tokens_cuts_the_reply(fake_brain: FakeBrain, fake_server: SimulatedServer) -> None:
    fake_brain.text = "word " * 100
    reply = chat(fake_server, max_tokens=5).invoke("hello")
    assert reply.response_metadata["finish_reason"] == "length"
    assert len(str(reply.content)) == 20


def test_reply_faults_reach_the_brain(fake_brain: FakeBrain) -> None:
    with start_server(malformed_rate=0.5, fabricate_rate=0.25, seed=7, reply=fake_brain) as server:
        chat(server).invoke("hello")
        chat(server).invoke("hello")  # the same body again: the brain decides, so the same faults
    expected = brain.Faults(malformed_json=0.5, fabricate_excerpts=0.25, seed=7)
    assert [call.faults for call in fake_brain.calls] == [expected, expected]


def test_malformed_json_from_the_real_brain_passes_through() -> None:
    schema = {"title": "Lenient", "type": "object", "properties": {"passed": {"type": "boolean"}}}
    body = simple_body(
        "judge",
        response_format={"type": "json_schema", "json_schema": {"name": "Lenient", "schema": schema}},
    )
    expected = brain.reply(None, [Message("user", "judge")], schema, brain.Faults(malformed_json=1.0, seed=3))
    assert expected != brain.reply(None, [Message("user", "judge")], schema, brain.Faults(seed=3))
    with start_server(malformed_rate=1.0, seed=3) as server:
        _, _, payload = post(server.url + "/chat/completions", body)
    assert payload["choices"][0]["message"]["content"] == expected


def test_fault_decisions_are_deterministic(fake_brain: FakeBrain) -> None:
    def statuses(seed: int) -> list[int]:
        with start_server(rate_429=0.5, seed=seed, reply=fake_brain) as server:
            return [post(server.url + "/chat/completions", simple_body(f"q{i}"))[0] for i in range(30)]

    run = statuses(3)
    assert run == statuses(3)
    assert run != statuses(4)
    assert 5 < run.count(429) < 25


def test_a_retried_request_gets_a_fresh_draw(fake_brain: FakeBrain) -> None:
    with start_server(rate_429=0.5, seed=1, reply=fake_brain) as server:
        codes = [post(server.url + "/chat/completions", simple_body("same"))[0] for _ in range(20)]
    assert {429, 200} <= set(codes)


def test_brain_errors_become_500() -> None:
    def broken(request: SimulatedRequest) -> str:
        raise RuntimeError("rule table missing")

    with start_server(reply=broken) as server:
        status, _, body = post(server.url + "/chat/completions", simple_body())
    assert status == 500 and "rule table missing" in body["error"]["message"]


def test_the_purpose_header_reaches_the_reply_function(fake_brain: FakeBrain, fake_server: SimulatedServer) -> None:
    url = fake_server.url + "/chat/completions"
    assert post(url, simple_body(), {"X-Verify-Purpose": "dj_reasoning"})[0] == 200
    assert post(url, simple_body())[0] == 200
    status, _, body = post(url, simple_body(), {"X-Verify-Purpose": "rubric"})
    assert status == 400 and "X-Verify-Purpose" in body["error"]["message"]
    assert [call.purpose for call in fake_brain.calls] == [Purpose.DJ_REASONING, None]
    # langchain-openai forwards per-call extra_headers to the server
    chat(fake_server).invoke("judge", extra_headers={"X-Verify-Purpose": "dj_score"})
    assert fake_brain.calls[-1].purpose is Purpose.DJ_SCORE


# -- plain HTTP ---------------------------------------------------------------------------------


def test_models_unknown_paths_and_bad_requests(server: SimulatedServer) -> None:
    with urllib.request.urlopen(server.url + "/models", timeout=10) as response:
        assert json.loads(response.read())["data"][0]["id"] == "simulated-judge"
    assert post(server.url + "/responses", simple_body())[0] == 404
    assert post(server.url + "/chat/completions", b"{not json")[0] == 400
    assert post(server.url + "/chat/completions", {"model": "m", "messages": []})[0] == 400
    bad_tool = simple_body(
        tools=[{"type": "function", "function": {"name": "A"}}],
        tool_choice={"type": "function", "function": {"name": "B"}},
    )
    assert post(server.url + "/chat/completions", bad_tool)[0] == 400
    assert [r["status"] for r in server.requests] == [200, 404, 400, 400, 400]


def test_payload_shape(server: SimulatedServer) -> None:
    status, _, body = post(
        server.url + "/chat/completions", simple_body(), {"Authorization": "Bearer secret"}
    )
    assert status == 200
    assert body["object"] == "chat.completion" and body["id"].startswith("chatcmpl-")
    assert body["choices"][0]["message"]["role"] == "assistant"
    assert set(body["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert "secret" not in json.dumps(server.requests)


def test_cli_serves_until_terminated() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "verify.llm.simulated", "serve", "--port", str(port), "--seed", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url == f"http://127.0.0.1:{port}/v1"
        status, _, body = post(url + "/chat/completions", simple_body())
        assert status == 200 and body["choices"][0]["finish_reason"] == "stop"
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert process.returncode == 0


def test_unrecorded_server_still_counts() -> None:
    server = start_server(record=False)
    post(server.url + "/chat/completions", simple_body())
    server.stop()
    server.stop()  # stopping twice is harmless
    assert server.requests == [] and server.request_count == 1


# -- latency that varies, and a capacity ------------------------------------------------------------------------


def test_latency_cv_draws_log_normal_latencies_around_the_median() -> None:
    import random
    import statistics

    from verify.llm.simulated.server import ServerOptions

    options = ServerOptions(latency_ms=100, latency_cv=0.5)
    rng = random.Random(3)
    draws = [options.latency_s(rng, 1) for _ in range(20_000)]
    assert 0.095 < statistics.median(draws) < 0.105
    assert 0.45 < statistics.stdev(draws) / statistics.fmean(draws) < 0.55
    assert ServerOptions(latency_ms=100).latency_s(rng, 1) == 0.1  # no cv: the fixed latency
    queued = ServerOptions(latency_ms=100, capacity=4)
    assert queued.latency_s(rng, 4) == 0.1 and queued.latency_s(rng, 8) == 0.2  # twice the capacity: twice as slow


def test_a_request_over_capacity_gets_429_when_asked(fake_brain: FakeBrain) -> None:
    with start_server(capacity=2, over_capacity="429", reply=fake_brain) as server:
        assert post(server.url + "/chat/completions", simple_body())[0] == 200
        server._in_flight = 2  # two requests being answered: a third is over capacity
        status, headers, body = post(server.url + "/chat/completions", simple_body())
        assert status == 429 and "at once" in body["error"]["message"] and headers["retry-after-ms"] == "10"
        server._in_flight = 0
        assert post(server.url + "/chat/completions", simple_body())[0] == 200
    with pytest.raises(ValueError, match="over_capacity"):
        start_server(over_capacity="drop")


def test_the_cli_takes_the_latency_and_capacity_options(capsys: pytest.CaptureFixture[str]) -> None:
    from verify.llm.simulated.__main__ import _parser

    args = _parser().parse_args(["serve", "--latency-ms", "100", "--latency-cv", "0.5", "--capacity", "32",
                                 "--over-capacity", "429"])  # fmt: skip
    assert (args.latency_cv, args.capacity, args.over_capacity) == (0.5, 32, "429")
    with pytest.raises(SystemExit):
        _parser().parse_args(["serve", "--over-capacity", "drop"])
