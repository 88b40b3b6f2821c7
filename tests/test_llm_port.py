"""The LLM port: retries and limits (fakes), the langchain adapter (real langchain-openai against
the simulated OpenAI-compatible server on 127.0.0.1), and the model factory."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest
from pydantic import BaseModel, Field

from verify.config.models import CategoryRetryConfig, ModelConfig, RetryPolicy
from verify.errors import ModelError, ModelSetupError
from verify.llm.adapters.langchain import LangChainModel
from verify.llm.adapters.openai_compatible import OpenAICompatibleModel
from verify.llm.breaker import BreakerModel
from verify.llm.build import CountingModel, build_model
from verify.llm.cache import CachedModel, ResponseCache
from verify.llm.ports import ChatModel, ChatReply, ChatRequest, Message, Purpose, Usage
from verify.llm.resilience import (
    LimitedModel,
    RetryingModel,
    backoff_for,
    classify_error,
    retry_after_seconds,
)
from verify.llm.simulated.brain import ReplyFunction, SimulatedRequest
from verify.llm.simulated.server import SimulatedServer, start_server
from verify.llm.structured import ask_structured, ask_text

# -- fakes ---------------------------------------------------------------------------------------


class FakeResponse:
    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        self.status_code = status
        self.headers = httpx2.Headers(headers or {})


class RateLimitError(Exception):
    """Looks like openai/anthropic RateLimitError: matched by class name, not imported."""

    def __init__(self, message: str, retry_after: str | None = None) -> None:
        super().__init__(message)
        self.status_code = 429
        self.response = FakeResponse(429, {"retry-after": retry_after} if retry_after else {})


class StatusError(Exception):
    def __init__(self, status: int, message: str = "error") -> None:
        super().__init__(message)
        self.status_code = status
        self.response = FakeResponse(status)


@dataclass
class ScriptedModel:
    """Raises or returns scripted items in order; then keeps returning ``default``."""

    script: list[Exception | ChatReply] = field(default_factory=list)
    default: ChatReply = field(
        default_factory=lambda: ChatReply(text="ok", usage=Usage(3, 1), finish_reason="stop")
    )
    calls: int = 0
    model_id: str = "scripted:fake"

    async def complete(self, request: ChatRequest) -> ChatReply:
        self.calls += 1
        item = self.script.pop(0) if self.script else self.default
        if isinstance(item, Exception):
            raise item
        return item


class SleepRecorder:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def policy(**categories: tuple[int, float, float]) -> RetryPolicy:
    """A RetryPolicy with the given (retries, backoff_min, backoff_max); others retry 0 times."""
    fields = {
        name: CategoryRetryConfig(max_attempts=0)
        for name in ("connection", "timeout", "rate_limit", "server_error")
    }
    for name, (retries, low, high) in categories.items():
        fields[name] = CategoryRetryConfig(max_attempts=retries, backoff_min=low, backoff_max=high)
    return RetryPolicy().model_copy(update=fields)


REQ = ChatRequest((Message("user", "hi"),), purpose=Purpose.ANSWER)


# -- classification ----------------------------------------------------------------------------------


def _wrapped() -> Exception:
    try:
        try:
            raise ConnectionResetError("peer reset")
        except ConnectionResetError as inner:
            raise ValueError("langchain wrapper") from inner
    except ValueError as outer:
        return outer


@pytest.mark.parametrize(
    ("exc", "category"),
    [
        (RateLimitError("slow down"), "rate_limit"),
        (StatusError(429), "rate_limit"),
        (StatusError(529), "rate_limit"),
        (StatusError(500), "server_error"),
        (StatusError(503), "server_error"),
        (StatusError(408), "timeout"),
        (StatusError(400), "permanent"),
        (StatusError(401), "permanent"),
        (TimeoutError(), "timeout"),
        (ConnectionRefusedError(), "connection"),
        (httpx2.ConnectError("refused"), "connection"),
        (httpx2.ReadTimeout("slow"), "timeout"),
        (_wrapped(), "connection"),
        (ModelError("x", "server_error"), "server_error"),
        (ValueError("bad schema"), "permanent"),
        (RuntimeError("Rate limit reached for gpt"), "rate_limit"),
    ],
)
def test_classify_error(exc: Exception, category: str) -> None:
    assert classify_error(exc) == category


def test_classify_real_sdk_errors() -> None:
    import openai

    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    rate = openai.RateLimitError("limited", response=httpx2.Response(429, request=request), body=None)
    bad = openai.BadRequestError("bad", response=httpx2.Response(400, request=request), body=None)
    server = openai.InternalServerError("oops", response=httpx2.Response(502, request=request), body=None)
    assert classify_error(rate) == "rate_limit"
    assert classify_error(bad) == "permanent"
    assert classify_error(server) == "server_error"
    assert classify_error(openai.APITimeoutError(request=request)) == "timeout"
    assert classify_error(openai.APIConnectionError(request=request)) == "connection"


def test_retry_after_parsing() -> None:
    assert retry_after_seconds(RateLimitError("x", "7")) == 7.0
    assert retry_after_seconds(RateLimitError("x")) is None
    ms = StatusError(429)
    ms.response.headers = httpx2.Headers({"retry-after-ms": "250", "retry-after": "9"})
    assert retry_after_seconds(ms) == 0.25
    date = StatusError(503)
    date.response.headers = httpx2.Headers({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})
    assert retry_after_seconds(date) == 0.0  # in the past
    assert retry_after_seconds(ValueError()) is None


# -- RetryingModel ---------------------------------------------------------------------------------


async def test_rate_limit_honours_retry_after_then_succeeds() -> None:
    inner = ScriptedModel([RateLimitError("429", "7"), RateLimitError("429", "7")])
    sleep = SleepRecorder()
    model = RetryingModel(inner, policy(rate_limit=(5, 1.0, 30.0)), sleep=sleep)
    reply = await model.complete(REQ)
    assert reply.text == "ok"
    assert inner.calls == 3
    assert sleep.delays == [7.0, 7.0]
    assert model.retries_used["rate_limit"] == 2
    assert model.model_id == "scripted:fake"


async def test_retry_after_is_capped() -> None:
    inner = ScriptedModel([RateLimitError("429", "3600")])
    sleep = SleepRecorder()
    model = RetryingModel(inner, policy(rate_limit=(1, 1.0, 2.0)), sleep=sleep, max_retry_after=45.0)
    await model.complete(REQ)
    assert sleep.delays == [45.0]


async def test_exponential_backoff_with_full_jitter() -> None:
    inner = ScriptedModel([StatusError(503)] * 5)
    sleep = SleepRecorder()
    model = RetryingModel(inner, policy(server_error=(5, 1.0, 5.0)), sleep=sleep, rng=random.Random(1))
    await model.complete(REQ)
    ceilings = [1.0, 2.0, 4.0, 5.0, 5.0]
    assert len(sleep.delays) == 5
    assert all(0.0 <= d <= c for d, c in zip(sleep.delays, ceilings, strict=True))
    expected_rng = random.Random(1)
    assert sleep.delays == [expected_rng.uniform(0, c) for c in ceilings]


async def test_no_jitter_sleeps_the_backoff_itself() -> None:
    inner = ScriptedModel([StatusError(500)] * 3)
    sleep = SleepRecorder()
    no_jitter = policy(server_error=(3, 0.5, 1.5)).model_copy(update={"jitter": False})
    await RetryingModel(inner, no_jitter, sleep=sleep).complete(REQ)
    assert sleep.delays == [0.5, 1.0, 1.5]


async def test_budget_exhausted_raises_model_error_without_the_key() -> None:
    inner = ScriptedModel([RateLimitError("Incorrect key sk-proj-SECRETSECRET123 rate limited")] * 10)
    sleep = SleepRecorder()
    model = RetryingModel(inner, policy(rate_limit=(2, 0.01, 0.02)), sleep=sleep)
    with pytest.raises(ModelError) as caught:
        await model.complete(REQ)
    error = caught.value
    assert error.category == "rate_limit"
    assert inner.calls == 3 and len(sleep.delays) == 2
    assert "SECRETSECRET123" not in str(error)
    assert "gave up after 2 retries" in str(error) and "scripted:fake" in str(error)
    assert model.retries_used["rate_limit"] == 2 and model.failures == {"rate_limit": 1}


async def test_permanent_error_is_not_retried() -> None:
    inner = ScriptedModel([StatusError(400, "invalid request: messages too long")])
    sleep = SleepRecorder()
    model = RetryingModel(inner, policy(rate_limit=(5, 1, 2), server_error=(5, 1, 2)), sleep=sleep)
    with pytest.raises(ModelError) as caught:
        await model.complete(REQ)
    assert caught.value.category == "permanent"
    assert inner.calls == 1 and sleep.delays == []


async def test_budgets_are_per_category_and_per_call() -> None:
    inner = ScriptedModel([StatusError(500), TimeoutError(), StatusError(500)])
    sleep = SleepRecorder()
    model = RetryingModel(inner, policy(server_error=(2, 0, 0), timeout=(1, 0, 0)), sleep=sleep)
    await model.complete(REQ)
    assert inner.calls == 4
    inner.script = [StatusError(500), StatusError(500)]
    await model.complete(REQ)  # a fresh budget for the next call
    assert model.retries_used == {"connection": 0, "timeout": 1, "rate_limit": 0, "server_error": 4}
    assert model.budgets() == {"connection": 0, "timeout": 1, "rate_limit": 0, "server_error": 2}


async def test_setup_errors_pass_through_unchanged() -> None:
    setup = ModelSetupError("needs OPENAI_API_KEY", "export it")
    model = RetryingModel(ScriptedModel([setup]), None, sleep=SleepRecorder())
    with pytest.raises(ModelSetupError) as caught:
        await model.complete(REQ)
    assert caught.value is setup and caught.value.__cause__ is None


def test_default_policy_matches_karenina() -> None:
    assert backoff_for(None, "rate_limit").retries == 5
    assert backoff_for(None, "timeout").backoff_max == 30.0
    assert backoff_for(RetryPolicy(), "permanent").retries == 0


# -- LimitedModel and CountingModel ------------------------------------------------------------------


@dataclass
class SlowModel:
    model_id: str = "slow"
    active: int = 0
    peak: int = 0

    async def complete(self, request: ChatRequest) -> ChatReply:
        self.active += 1
        self.peak = max(self.peak, self.active)
        await asyncio.sleep(0.01)
        self.active -= 1
        return ChatReply(text=request.purpose, usage=Usage(2, 1))


async def test_one_global_limit_across_models() -> None:
    semaphore = asyncio.Semaphore(3)
    inner = SlowModel()
    a, b = LimitedModel(inner, semaphore), LimitedModel(inner, semaphore)
    await asyncio.gather(*(m.complete(REQ) for m in [a, b] * 10))
    assert inner.peak == 3


async def test_counting_model() -> None:
    counting = CountingModel(SlowModel())
    await asyncio.gather(
        counting.complete(ChatRequest(REQ.messages, purpose=Purpose.ANSWER)),
        counting.complete(ChatRequest(REQ.messages, purpose=Purpose.RUBRIC_SINGLE)),
        counting.complete(ChatRequest(REQ.messages, purpose=Purpose.RUBRIC_SINGLE)),
    )
    assert counting.calls == 3 and counting.usage == Usage(6, 3)
    assert counting.by_purpose == {Purpose.ANSWER: 1, Purpose.RUBRIC_SINGLE: 2}


# -- factory ---------------------------------------------------------------------------------------


def endpoint_config(url: str, **overrides: Any) -> ModelConfig:
    fields: dict[str, Any] = {
        "id": "judge",
        "model_provider": "openai",
        "model_name": "simulated-judge",
        "interface": "openai_endpoint",
        "endpoint_base_url": url,
        "temperature": 0.0,
        "max_tokens": 2048,
        "request_timeout": 10.0,
    }
    fields.update(overrides)
    return ModelConfig(**fields)


def test_build_model_chain(tmp_path: Any) -> None:
    config = endpoint_config("http://127.0.0.1:9/v1")
    model = build_model(
        config, cache=ResponseCache(tmp_path / "c.db"), limiter=asyncio.Semaphore(2), policy=None
    )
    assert isinstance(model, CachedModel)
    retry = model.inner
    assert isinstance(retry, RetryingModel)
    assert isinstance(retry.inner, LimitedModel)
    assert isinstance(retry.inner.inner, BreakerModel)  # the endpoint's circuit breaker, right before the adapter
    assert isinstance(retry.inner.inner.inner, OpenAICompatibleModel)  # an OpenAI-compatible server: our own client
    assert retry.breaker is retry.inner.inner.breaker
    assert model.model_id == retry.inner.inner.inner.model_id
    bare = build_model(config, cache=None, limiter=None, policy=None)
    assert isinstance(bare, RetryingModel) and isinstance(bare.inner, BreakerModel)
    assert isinstance(bare.inner.inner, OpenAICompatibleModel)
    unguarded = build_model(config, cache=None, limiter=None, policy=RetryPolicy(breaker_failures=0))
    assert isinstance(unguarded, RetryingModel) and isinstance(unguarded.inner, OpenAICompatibleModel)


def test_build_model_manual_has_no_live_model() -> None:
    config = ModelConfig(id="manual", model_name="manual", interface="manual", manual_traces={"q": "a"})
    with pytest.raises(ModelError, match="manual interface has no live model"):
        build_model(config, cache=None, limiter=None, policy=None)


async def test_build_model_simulated() -> None:
    config = ModelConfig(id="sim", model_provider="simulated", model_name="judge", interface="simulated")
    model = build_model(config, cache=None, limiter=None, policy=None)
    assert isinstance(model, ChatModel)
    assert "simulated" in model.model_id
    reply = await model.complete(REQ)
    assert reply.text


# -- LangChainModel setup ------------------------------------------------------------------------------


def test_missing_openai_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = ModelConfig(id="j", model_provider="openai", model_name="gpt-4.1-mini")
    with pytest.raises(ModelSetupError, match="OPENAI_API_KEY") as caught:
        LangChainModel(config)
    assert caught.value.hint and "OPENAI_API_KEY" in caught.value.hint
    with pytest.raises(ModelSetupError, match="OPENAI_API_KEY"):
        build_model(config, cache=None, limiter=None, policy=None)


def test_missing_anthropic_and_openrouter_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    anthropic = ModelConfig(id="j", model_provider="anthropic", model_name="claude-sonnet-4-5")
    with pytest.raises(ModelSetupError, match="ANTHROPIC_API_KEY"):
        LangChainModel(anthropic)
    router = ModelConfig(id="j", model_provider="openai", model_name="x/y", interface="openrouter")
    with pytest.raises(ModelSetupError, match="OPENROUTER_API_KEY"):
        LangChainModel(router)


def test_keys_come_from_api_key_env_and_stay_out_of_the_id() -> None:
    env = {"OPENAI_API_KEY": "sk-test-abcdefghijklmnop"}
    model = LangChainModel(
        ModelConfig(id="j", model_provider="openai", model_name="gpt-4.1-mini"), api_key_env=env
    )
    assert model.model_id.startswith("openai:gpt-4.1-mini@")
    assert "sk-test" not in model.model_id
    with pytest.raises(ModelSetupError, match="OPENAI_API_KEY"):
        LangChainModel(
            ModelConfig(id="j", model_provider="openai", model_name="gpt-4.1-mini"), api_key_env={}
        )
    other = LangChainModel(
        ModelConfig(id="j", model_provider="openai", model_name="gpt-4.1-mini", temperature=0.7),
        api_key_env=env,
    )
    assert other.model_id != model.model_id


def test_missing_integration_package_names_it() -> None:
    config = ModelConfig(id="j", model_provider="groq", model_name="llama-3.1-8b")
    with pytest.raises(ModelSetupError, match="langchain-groq") as caught:
        LangChainModel(config, api_key_env={"GROQ_API_KEY": "x"})
    assert caught.value.hint == "pip install langchain-groq"


@pytest.mark.parametrize(
    ("url", "mode", "expected"),
    [
        ("http://127.0.0.1:8000", None, "http://127.0.0.1:8000/v1"),
        ("http://127.0.0.1:8000/", None, "http://127.0.0.1:8000/v1"),
        ("http://127.0.0.1:8000/v1", None, "http://127.0.0.1:8000/v1"),
        ("http://127.0.0.1:8000/api", "raw", "http://127.0.0.1:8000/api"),
    ],
)
def test_endpoint_base_url(url: str, mode: str | None, expected: str) -> None:
    extra = {"endpoint_base_url_mode": mode} if mode else None
    model = LangChainModel(endpoint_config(url, extra_kwargs=extra))
    assert model.base_url == expected
    assert model.structured_output == "json_schema"


def test_unknown_structured_method_is_a_setup_error() -> None:
    with pytest.raises(ModelSetupError, match="structured_output_method"):
        LangChainModel(
            endpoint_config("http://127.0.0.1:1/v1", extra_kwargs={"structured_output_method": "xml"})
        )


# -- HTTP: the real langchain-openai adapter against the simulated server ----------------------------


class Verdict(BaseModel):
    trait: str
    passed: bool
    score: int = Field(ge=0, le=5)


VERDICT: dict[str, Any] = {"trait": "clarity", "passed": True, "score": 4}
PROMPT = [Message("system", "You are a judge."), Message("user", "Judge the clarity of: Paris is in France.")]
PLAIN = ChatRequest(tuple(PROMPT), purpose=Purpose.ANSWER)
STRUCTURED = ChatRequest(tuple(PROMPT), schema=Verdict.model_json_schema(), purpose=Purpose.RUBRIC_SINGLE)


def fast(**categories: tuple[int, float, float]) -> RetryPolicy:
    return policy(**categories)


@pytest.fixture
def server_factory() -> Iterator[Any]:
    servers: list[SimulatedServer] = []

    def make(**options: Any) -> SimulatedServer:
        server = start_server(**options)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


def says(text: str) -> ReplyFunction:
    """A reply function for the simulated server that always answers ``text``."""

    def reply(request: SimulatedRequest) -> str:
        return text

    return reply


async def test_http_plain_text(server_factory: Any) -> None:
    server = server_factory()
    model = LangChainModel(endpoint_config(server.url))
    reply = await model.complete(PLAIN)
    assert reply.text
    assert reply.finish_reason == "stop"
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0
    assert reply.model == model.model_id and reply.latency_s > 0
    sent = server.chat_requests[0]["json"]
    assert sent["model"] == "simulated-judge"
    assert sent["temperature"] == 0.0 and sent.get("max_tokens", sent.get("max_completion_tokens")) == 2048
    assert "response_format" not in sent and "tools" not in sent
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]
    text = await ask_text(model, PROMPT, purpose=Purpose.ANSWER)
    assert text.text == reply.text and text.calls == 1


async def test_http_sends_the_purpose_header(server_factory: Any) -> None:
    seen: list[SimulatedRequest] = []

    def record(request: SimulatedRequest) -> str:
        seen.append(request)
        return json.dumps(VERDICT)

    server = server_factory(reply=record)
    await LangChainModel(endpoint_config(server.url)).complete(PLAIN)  # plain call
    await LangChainModel(endpoint_config(server.url)).complete(STRUCTURED)  # response_format
    tools = LangChainModel(endpoint_config(server.url, extra_kwargs={"structured_output_method": "function_calling"}))
    await tools.complete(ChatRequest(tuple(PROMPT), schema=Verdict.model_json_schema(), purpose=Purpose.DJ_SCORE))
    assert [r.purpose for r in seen] == [Purpose.ANSWER, Purpose.RUBRIC_SINGLE, Purpose.DJ_SCORE]
    sent = [{k.lower(): v for k, v in r["headers"].items()} for r in server.chat_requests]
    assert [h["x-verify-purpose"] for h in sent] == ["answer", "rubric_single", "dj_score"]


async def test_http_native_json_schema(server_factory: Any) -> None:
    server = server_factory(reply=says(json.dumps(VERDICT)))
    model = LangChainModel(endpoint_config(server.url))
    result = await ask_structured(model, PROMPT, Verdict, purpose=Purpose.RUBRIC_SINGLE, trait="clarity")
    assert result.value == Verdict(**VERDICT)
    assert result.calls == 1 and result.usage.total_tokens > 0
    fmt = server.chat_requests[0]["json"]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Verdict" and fmt["json_schema"]["strict"] is False
    assert fmt["json_schema"]["schema"] == Verdict.model_json_schema()
    reply = await model.complete(STRUCTURED)
    assert reply.parsed == VERDICT


async def test_http_function_calling(server_factory: Any) -> None:
    server = server_factory(reply=says(json.dumps(VERDICT)))
    model = LangChainModel(
        endpoint_config(server.url, extra_kwargs={"structured_output_method": "function_calling"})
    )
    reply = await model.complete(STRUCTURED)
    assert reply.parsed == VERDICT and json.loads(reply.text) == VERDICT
    sent = server.chat_requests[0]["json"]
    assert sent["tools"][0]["function"]["name"] == "Verdict"
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "Verdict"}}


async def test_http_json_fallback_with_repair(server_factory: Any) -> None:
    prose = 'Let me think.\n```json\n{"trait": "clarity", "passed": true, "score": 3,}\n```\nDone.'
    server = server_factory(reply=says(prose))
    model = LangChainModel(endpoint_config(server.url))
    reply = await model.complete(STRUCTURED)
    assert reply.parsed is None and reply.text == prose
    result = await ask_structured(model, PROMPT, Verdict, purpose=Purpose.RUBRIC_SINGLE)
    assert result.value == Verdict(trait="clarity", passed=True, score=3)
    assert result.calls == 1


async def test_http_429_retried_with_backoff(server_factory: Any) -> None:
    server = server_factory(fail_first=2, fail_status=429, retry_after_ms=None)
    sleep = SleepRecorder()

    async def recording_sleep(delay: float) -> None:
        await sleep(delay)
        await asyncio.sleep(delay)

    model = RetryingModel(
        LangChainModel(endpoint_config(server.url)), fast(rate_limit=(3, 0.02, 0.1)), sleep=recording_sleep
    )
    started = time.perf_counter()
    reply = await model.complete(PLAIN)
    elapsed = time.perf_counter() - started
    assert reply.text
    assert len(server.chat_requests) == 3
    assert [r["status"] for r in server.chat_requests] == [429, 429, 200]
    assert model.retries_used["rate_limit"] == 2
    assert len(sleep.delays) == 2 and 0 <= sleep.delays[0] <= 0.02 and 0 <= sleep.delays[1] <= 0.04
    assert elapsed < 5.0


async def test_http_429_retry_after_header_is_honoured(server_factory: Any) -> None:
    server = server_factory(fail_first=1, fail_status=429, retry_after_ms=30)
    sleep = SleepRecorder()
    model = RetryingModel(
        LangChainModel(endpoint_config(server.url)), fast(rate_limit=(2, 5.0, 30.0)), sleep=sleep
    )
    await model.complete(PLAIN)
    assert sleep.delays == [0.03]


async def test_http_500_retried_then_exhausted(server_factory: Any) -> None:
    server = server_factory(fail_first=1, fail_status=500)
    model = RetryingModel(LangChainModel(endpoint_config(server.url)), fast(server_error=(2, 0.01, 0.02)))
    assert (await model.complete(PLAIN)).text
    assert [r["status"] for r in server.chat_requests] == [500, 200]

    always = server_factory(rate_500=1.0)
    failing = RetryingModel(LangChainModel(endpoint_config(always.url)), fast(server_error=(2, 0.01, 0.02)))
    with pytest.raises(ModelError) as caught:
        await failing.complete(PLAIN)
    assert caught.value.category == "server_error"
    assert len(always.chat_requests) == 3


async def test_http_400_is_permanent(server_factory: Any) -> None:
    server = server_factory(fail_first=5, fail_status=400)
    model = RetryingModel(
        LangChainModel(endpoint_config(server.url)), fast(rate_limit=(3, 0, 0), server_error=(3, 0, 0))
    )
    with pytest.raises(ModelError) as caught:
        await model.complete(PLAIN)
    assert caught.value.category == "permanent"
    assert len(server.chat_requests) == 1


async def test_http_timeout_is_retried_then_fails(server_factory: Any) -> None:
    server = server_factory(latency_ms=800)
    config = endpoint_config(server.url, request_timeout=0.2)
    model = RetryingModel(LangChainModel(config), fast(timeout=(1, 0.01, 0.01)))
    started = time.perf_counter()
    with pytest.raises(ModelError) as caught:
        await model.complete(PLAIN)
    elapsed = time.perf_counter() - started
    assert caught.value.category == "timeout"
    assert model.retries_used["timeout"] == 1
    assert len(server.chat_requests) == 2
    assert elapsed < 2.0


async def test_http_connection_refused(server_factory: Any) -> None:
    server = server_factory()
    url = server.url
    server.stop()
    model = RetryingModel(LangChainModel(endpoint_config(url)), fast(connection=(1, 0.0, 0.0)))
    with pytest.raises(ModelError) as caught:
        await model.complete(PLAIN)
    assert caught.value.category == "connection"


async def test_http_unparseable_replies(server_factory: Any) -> None:
    server = server_factory(reply=says("I refuse to produce JSON; the answer seems fine overall."))
    model = LangChainModel(endpoint_config(server.url))
    result = await ask_structured(model, PROMPT, Verdict, purpose=Purpose.RUBRIC_SINGLE, max_parse_retries=2)
    assert result.value is None
    assert result.error == "no JSON object found in the reply"
    assert result.raw_text == "I refuse to produce JSON; the answer seems fine overall."
    assert result.calls == 3 and len(server.chat_requests) == 3
    last = server.chat_requests[-1]["json"]["messages"]
    assert last[-2]["role"] == "assistant" and "no JSON object" in last[-1]["content"]


async def test_http_truncated_reply_is_not_repaired(server_factory: Any) -> None:
    server = server_factory(truncate_rate=1.0, reply=says(json.dumps(VERDICT)))
    model = LangChainModel(endpoint_config(server.url))
    reply = await model.complete(STRUCTURED)
    assert reply.finish_reason == "length" and reply.parsed is None
    assert reply.text == json.dumps(VERDICT)[: len(json.dumps(VERDICT)) // 2]
    result = await ask_structured(model, PROMPT, Verdict, purpose=Purpose.RUBRIC_SINGLE, max_parse_retries=1)
    assert result.value is None and result.error == "reply truncated (finish_reason=length)"


async def test_http_full_chain_with_cache(server_factory: Any, tmp_path: Any) -> None:
    server = server_factory(fail_first=1, fail_status=503, reply=says(json.dumps(VERDICT)))
    config = endpoint_config(server.url, retry_policy=fast(server_error=(2, 0.0, 0.0)))
    model = build_model(
        config, cache=ResponseCache(tmp_path / "c.db"), limiter=asyncio.Semaphore(2), policy=None
    )
    first = await ask_structured(model, PROMPT, Verdict, purpose=Purpose.RUBRIC_SINGLE)
    second = await ask_structured(model, PROMPT, Verdict, purpose=Purpose.RUBRIC_SINGLE)
    assert first.value == second.value == Verdict(**VERDICT)
    assert len(server.chat_requests) == 2  # one 503, one answer, then the cache
    assert isinstance(model, CachedModel) and (model.hits, model.misses) == (1, 1)


async def test_http_unsupported_response_format_steps_down(server_factory: Any) -> None:
    # like llama.cpp's server: HTTP 500 on response_format json_schema, json_object works
    server = server_factory(reject_json_schema=True, reply=says(json.dumps(VERDICT)))
    model = LangChainModel(endpoint_config(server.url))
    result = await ask_structured(model, PROMPT, Verdict, purpose=Purpose.RUBRIC_SINGLE)
    assert result.value == Verdict(**VERDICT) and result.calls == 1
    sent = [r["json"]["response_format"]["type"] for r in server.chat_requests]
    assert sent == ["json_schema", "json_object"]
    assert model.structured_output == "json_mode"
    await model.complete(STRUCTURED)
    assert server.chat_requests[-1]["json"]["response_format"]["type"] == "json_object"
    # the re-sent request still says which step asks
    sent = [{k.lower(): v for k, v in r["headers"].items()} for r in server.chat_requests]
    assert [h.get("x-verify-purpose") for h in sent] == ["rubric_single"] * 3


async def test_http_an_unrelated_400_is_not_a_ladder_step(server_factory: Any) -> None:
    server = server_factory(fail_first=1, fail_status=400, reply=says(json.dumps(VERDICT)))
    model = LangChainModel(endpoint_config(server.url))
    with pytest.raises(Exception, match="simulated failure"):
        await model.complete(STRUCTURED)
    assert model.structured_output == "json_schema" and len(server.chat_requests) == 1


def test_one_adapter_across_event_loops(server_factory: Any) -> None:
    # langchain-openai caches one async HTTP client per (base_url, timeout) for the whole process;
    # its pooled connections die with the loop that opened them.
    server = server_factory()
    config = endpoint_config(server.url)
    model = LangChainModel(config)
    request = PLAIN
    for _ in range(3):
        assert asyncio.run(model.complete(request)).text
    assert asyncio.run(LangChainModel(config).complete(request)).text
    assert [r["status"] for r in server.chat_requests] == [200] * 4


def test_build_model_resolves_policy_and_timeout() -> None:
    run_policy = policy(rate_limit=(1, 0, 0))
    own_policy = policy(rate_limit=(7, 0, 0))
    plain = endpoint_config("http://127.0.0.1:9/v1", request_timeout=None)
    model = build_model(plain, cache=None, limiter=None, policy=run_policy, request_timeout=42.0)
    assert isinstance(model, RetryingModel) and isinstance(model.inner, BreakerModel)
    assert isinstance(model.inner.inner, OpenAICompatibleModel)
    assert model.budgets()["rate_limit"] == 1 and model.inner.inner.timeout == 42.0
    own = endpoint_config("http://127.0.0.1:9/v1", request_timeout=5.0, retry_policy=own_policy)
    model = build_model(own, cache=None, limiter=None, policy=run_policy, request_timeout=42.0)
    assert isinstance(model, RetryingModel) and isinstance(model.inner, BreakerModel)
    assert isinstance(model.inner.inner, OpenAICompatibleModel)
    assert model.budgets()["rate_limit"] == 7 and model.inner.inner.timeout == 5.0
