"""The circuit breaker per endpoint: after N attempts in a row without an answer, calls fail fast
without being sent; a probe after the cooldown decides whether they go again. Unit tests on a fake
clock, then whole runs against a server that accepts connections and never answers."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from verify.benchmark.jsonld import load_benchmark
from verify.config.models import ModelConfig, RetryPolicy
from verify.config.verification import VerificationConfig
from verify.errors import ModelError
from verify.llm.breaker import BreakerModel, CircuitBreaker, endpoint_of
from verify.llm.endpoints import EndpointNotAnswering, EndpointUnreachable
from verify.llm.ports import ChatReply, ChatRequest, Message, Purpose, Usage
from verify.llm.resilience import RetryingModel, attempts_of
from verify.run.runner import run_verification
from verify.run.services import Services

ROOT = Path(__file__).resolve().parents[1]
URL = "http://127.0.0.1:9999/v1"
REQUEST = ChatRequest((Message("user", "Is Paris in France?"),), purpose=Purpose.ANSWER)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Scripted:
    """Plays one outcome per call (an exception is raised, anything else answers); counts calls."""

    model_id = "scripted"

    def __init__(self, *outcomes: Any) -> None:
        self.outcomes = list(outcomes)
        self.calls = 0

    async def complete(self, request: ChatRequest) -> ChatReply:
        self.calls += 1
        outcome = self.outcomes.pop(0) if self.outcomes else "ok"
        await asyncio.sleep(0)  # in flight: concurrent calls are all sent before the first fails
        if isinstance(outcome, BaseException):
            raise outcome
        if isinstance(outcome, asyncio.Event):
            await outcome.wait()
        return ChatReply(text="ok", usage=Usage(1, 1))


class Status(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


def timeouts(n: int) -> list[Exception]:
    return [TimeoutError("Request timed out.") for _ in range(n)]


def guarded(*outcomes: Any, failures: int = 3, cooldown: float = 60.0) -> tuple[BreakerModel, Scripted, Clock]:
    clock = Clock()
    inner = Scripted(*outcomes)
    return BreakerModel(inner, CircuitBreaker(URL, failures=failures, cooldown=cooldown, clock=clock)), inner, clock


async def outcomes(model: Any, calls: int) -> list[str]:
    """``ok``, or the category of the error, of ``calls`` calls in a row (``refused`` when not sent)."""
    seen = []
    for _ in range(calls):
        try:
            await model.complete(REQUEST)
        except EndpointNotAnswering:
            seen.append("refused")
        except Exception as exc:  # noqa: BLE001
            seen.append(type(exc).__name__)
        else:
            seen.append("ok")
    return seen


async def settle() -> None:
    """Let the tasks started so far run until they wait."""
    for _ in range(5):
        await asyncio.sleep(0)


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and r.name == "verify"]


# -- the breaker alone --------------------------------------------------------------------------------------


async def test_three_timeouts_in_a_row_open_it_and_later_calls_are_not_sent(caplog: pytest.LogCaptureFixture) -> None:
    model, inner, _ = guarded(*timeouts(3))
    with caplog.at_level(logging.INFO, logger="verify"):
        assert await outcomes(model, 3) == ["TimeoutError"] * 3
        with pytest.raises(EndpointNotAnswering) as caught:
            await model.complete(REQUEST)
        assert await outcomes(model, 5) == ["refused"] * 5
    assert inner.calls == 3  # nothing was sent once it opened
    assert str(caught.value) == f"endpoint {URL} is not answering (3 timeouts in a row); call not sent"
    assert caught.value.category == "timeout" and isinstance(caught.value, ModelError)
    assert attempts_of(caught.value) == 0
    assert warnings_of(caplog) == [
        f"endpoint {URL} is not answering (3 timeouts in a row): calls to it fail without being sent; "
        "one is let through every 60 s to see whether it is back"
    ]  # once, not once per refused call
    assert (model.breaker.state, model.breaker.opened, model.breaker.refused) == ("open", 1, 6)


async def test_connection_failures_open_it_with_their_own_category() -> None:
    model, _, _ = guarded(ConnectionResetError("Connection reset by peer"), *timeouts(1),
                          EndpointUnreachable(URL))  # fmt: skip
    await outcomes(model, 3)
    with pytest.raises(EndpointNotAnswering) as caught:
        await model.complete(REQUEST)
    assert caught.value.category == "connection"  # the last failure's: a retryable task error either way
    assert str(caught.value) == (
        f"endpoint {URL} is not answering (1 timeout and 2 connection failures in a row); call not sent "
        "(connection refused: is the server running?)"  # what the last failure suggests
    )


async def test_any_reply_resets_the_count() -> None:
    model, inner, _ = guarded(*timeouts(2), "ok", *timeouts(2), "ok", *timeouts(2))
    two = ["TimeoutError"] * 2
    assert await outcomes(model, 8) == [*two, "ok", *two, "ok", *two]
    assert model.breaker.state == "closed" and inner.calls == 8


async def test_rate_limits_and_server_errors_do_not_trip_it() -> None:
    answered = [Status(429), Status(503), ModelError("slow down", "rate_limit"), Status(500)] * 3
    model, inner, _ = guarded(*answered, *timeouts(2), Status(429), *timeouts(2))
    await outcomes(model, len(answered) + 5)
    assert model.breaker.state == "closed" and inner.calls == len(answered) + 5  # a 429 is an answer too


async def test_other_errors_leave_the_count_as_it_is() -> None:
    model, _, _ = guarded(*timeouts(2), ValueError("bad schema"), *timeouts(1))
    assert await outcomes(model, 5) == ["TimeoutError"] * 2 + ["ValueError", "TimeoutError", "refused"]


async def test_after_the_cooldown_one_probe_goes_and_a_reply_closes_it(caplog: pytest.LogCaptureFixture) -> None:
    gate = asyncio.Event()
    model, inner, clock = guarded(*timeouts(3), gate)
    await outcomes(model, 3)
    clock.now = 59.9
    assert await outcomes(model, 1) == ["refused"] and model.breaker.state == "open"
    clock.now = 60.0
    assert model.breaker.state == "half_open"
    with caplog.at_level(logging.INFO, logger="verify"):
        probe = asyncio.create_task(model.complete(REQUEST))
        await settle()
        assert inner.calls == 4
        assert await outcomes(model, 3) == ["refused"] * 3  # only the probe goes while it is out
        gate.set()
        assert (await probe).text == "ok"
    assert model.breaker.state == "closed"
    assert await outcomes(model, 3) == ["ok"] * 3 and inner.calls == 7
    assert f"endpoint {URL} answers again; calls to it are sent again" in caplog.messages


async def test_a_failed_probe_opens_it_for_another_cooldown(caplog: pytest.LogCaptureFixture) -> None:
    model, inner, clock = guarded(*timeouts(4), cooldown=10.0)
    with caplog.at_level(logging.INFO, logger="verify"):
        await outcomes(model, 3)
        clock.now = 10.0
        assert await outcomes(model, 2) == ["TimeoutError", "refused"]  # the probe, then a refusal
        clock.now = 19.9
        assert await outcomes(model, 1) == ["refused"]
        clock.now = 20.0
        assert await outcomes(model, 1) == ["ok"]
    assert inner.calls == 5 and model.breaker.opened == 1
    assert len(warnings_of(caplog)) == 1  # re-opening after a probe is not news


async def test_a_cancelled_probe_lets_the_next_call_probe() -> None:
    gate = asyncio.Event()
    model, inner, clock = guarded(*timeouts(3), gate)
    await outcomes(model, 3)
    clock.now = 60.0
    probe = asyncio.create_task(model.complete(REQUEST))
    await settle()
    probe.cancel()
    with pytest.raises(asyncio.CancelledError):
        await probe
    assert await outcomes(model, 1) == ["ok"] and inner.calls == 5


async def test_calls_still_waiting_when_it_opens_are_abandoned() -> None:
    gate = asyncio.Event()  # never set: like a request queued behind the others, or hanging
    model, inner, _ = guarded(*timeouts(3), gate, gate)
    results = await asyncio.gather(*(model.complete(REQUEST) for _ in range(5)), return_exceptions=True)
    assert [type(r).__name__ for r in results] == ["TimeoutError"] * 3 + ["EndpointNotAnswering"] * 2
    cut = results[3]
    assert isinstance(cut, EndpointNotAnswering) and cut.category == "timeout"
    assert str(cut) == f"endpoint {URL} is not answering (3 timeouts in a row); call abandoned"
    assert attempts_of(cut) == 1 and inner.calls == 5
    assert (model.breaker.abandoned, model.breaker.pending, model.breaker.cut) == (2, set(), set())


async def test_cancelling_the_caller_still_cancels() -> None:
    gate = asyncio.Event()
    model, _, _ = guarded(gate)
    call = asyncio.create_task(model.complete(REQUEST))
    await settle()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert model.breaker.state == "closed" and model.breaker.pending == set()


def test_zero_failures_is_no_breaker_and_the_settings_are_validated() -> None:
    assert (RetryPolicy().breaker_failures, RetryPolicy().breaker_cooldown_seconds) == (3, 60.0)
    with pytest.raises(ValueError, match="failures >= 1"):
        CircuitBreaker(URL, failures=0)
    with pytest.raises(ValidationError):
        RetryPolicy(breaker_failures=-1)
    with pytest.raises(ValidationError):
        RetryPolicy(breaker_cooldown_seconds=0)


# -- with retries -------------------------------------------------------------------------------------------


def no_backoff(timeout_retries: int = 3, breaker_failures: int = 3) -> RetryPolicy:
    fields = {"max_attempts": timeout_retries, "backoff_min": 1.0, "backoff_max": 1.0}
    return RetryPolicy.model_validate({"timeout": fields, "jitter": False, "breaker_failures": breaker_failures})


async def test_a_retry_the_breaker_would_refuse_is_given_up_without_its_backoff() -> None:
    slept: list[float] = []

    async def sleep(delay: float) -> None:
        slept.append(delay)

    model, inner, _ = guarded(*timeouts(10))
    retrying = RetryingModel(model, no_backoff(), sleep=sleep, breaker=model.breaker)
    with pytest.raises(EndpointNotAnswering) as caught:
        await retrying.complete(REQUEST)
    assert inner.calls == 3 and slept == [1.0, 1.0]  # the third retry was neither slept for nor sent
    assert str(caught.value) == f"endpoint {URL} is not answering (3 timeouts in a row); retry not sent"
    assert caught.value.category == "timeout" and attempts_of(caught.value) == 3
    assert isinstance(caught.value.__cause__, TimeoutError)
    unguarded = Scripted(*timeouts(10))
    with pytest.raises(ModelError, match="gave up after 3 retries"):
        await RetryingModel(unguarded, no_backoff(), sleep=sleep).complete(REQUEST)
    assert unguarded.calls == 4


async def test_concurrent_calls_count_together_and_pending_retries_are_not_sent() -> None:
    model, inner, _ = guarded(*timeouts(20))
    retrying = RetryingModel(model, no_backoff(), sleep=lambda _: asyncio.sleep(0))
    results = await asyncio.gather(*(retrying.complete(REQUEST) for _ in range(4)), return_exceptions=True)
    assert inner.calls == 4  # four first attempts; every retry found the breaker open
    assert all(isinstance(r, EndpointNotAnswering) and r.category == "timeout" for r in results)
    assert [attempts_of(r) for r in results if isinstance(r, BaseException)] == [1, 1, 1, 1]


# -- one breaker per endpoint -------------------------------------------------------------------------------


def endpoint_model(model_id: str, url: str, **fields: Any) -> dict[str, Any]:
    return {"id": model_id, "model_name": "local", "interface": "openai_endpoint", "endpoint_base_url": url,
            "endpoint_api_key": "sk-secret-0123456789abcdef", **fields}  # fmt: skip


async def test_models_on_one_server_share_one_breaker() -> None:
    secret = "http://user:hunter2@127.0.0.1:9999/v1?key=abc"
    hosted = {"id": "hosted", "model_provider": "openai", "model_name": "gpt-4.1-mini"}
    once = {"timeout": {"max_attempts": 0}}
    no_breaker = endpoint_model("free", "http://127.0.0.1:8000", retry_policy=once | {"breaker_failures": 0})
    config = VerificationConfig.model_validate({
        "answering_models": [endpoint_model("answerer", secret), hosted],
        "parsing_models": [endpoint_model("judge", "http://USER:hunter2@127.0.0.1:9999/"), no_breaker],
        "retry_policy": once, "async_max_workers": 2,  # fixed concurrency: no adaptive layer in the chain
    })  # fmt: skip
    inners: dict[str, Scripted] = {}

    def factory(model: ModelConfig) -> Scripted:
        inners[str(model.id)] = Scripted(*timeouts(5))
        return inners[str(model.id)]

    services = Services(config, None, factory)
    answerer, _, judge, free = (services.model(m) for m in [*config.answering_models, *config.parsing_models])
    assert sorted(services.breakers) == ["http://127.0.0.1:9999", "langchain:openai:gpt-4.1-mini"]
    assert endpoint_of(config.answering_models[1]).name == "openai:gpt-4.1-mini"
    assert isinstance(free, RetryingModel) and free.inner is inners["free"]  # breaker_failures=0: none
    assert await outcomes(answerer, 2) == ["ModelError"] * 2
    assert await outcomes(judge, 2) == ["ModelError", "refused"]  # the third in a row, then a refusal
    assert inners["answerer"].calls + inners["judge"].calls == 3
    with pytest.raises(EndpointNotAnswering) as caught:
        await answerer.complete(REQUEST)
    assert str(caught.value).startswith("endpoint http://127.0.0.1:9999/v1 is not answering")
    assert "hunter2" not in str(caught.value) and "key=abc" not in str(caught.value)
    assert await outcomes(free, 1) == ["ModelError"]  # another server, no breaker


# -- whole runs against a server that accepts connections and never answers ----------------------------------


class DeadServer:
    """Accepts TCP connections on 127.0.0.1 and reads the requests, never answering; counts both."""

    def __init__(self) -> None:
        self.connections = 0
        self.requests = 0
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self.thread.start()
        ready.wait(5)
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()
        server.close()
        self.loop.run_until_complete(server.wait_closed())
        self.loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while data := await reader.read(65536):
                self.requests += data.count(b"POST /")
        finally:
            writer.close()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture
def dead_server() -> Iterator[DeadServer]:
    server = DeadServer()
    yield server
    server.stop()


def dead_run(url: str, breaker_failures: int, *, replicates: int, timeout: float) -> tuple[Any, float]:
    """The demo's 4 questions x ``replicates`` tasks, judged by a model at ``url``, with the default 3
    timeout retries (backoff shortened) and at most 4 calls in flight."""
    judge = endpoint_model("judge", url, request_timeout=timeout)
    answerer = {"id": "model-a", "interface": "simulated", "model_provider": "simulated", "model_name": "sim"}
    policy = {"timeout": {"max_attempts": 3, "backoff_min": 0.01, "backoff_max": 0.05},
              "breaker_failures": breaker_failures}  # fmt: skip
    config = VerificationConfig.model_validate({
        "answering_models": [answerer], "parsing_models": [judge], "evaluation_mode": "rubric_only",
        "replicate_count": replicates, "async_max_workers": 4, "max_concurrent_requests": 4, "retry_policy": policy,
    })  # fmt: skip
    answers = json.loads((ROOT / "verify" / "examples" / "demo" / "answers.json").read_text())
    started = time.perf_counter()
    outcome = run_verification(load_benchmark(ROOT / "verify" / "examples" / "demo" / "demo.jsonld"), config,
                               answers=answers, keep_results=True)  # fmt: skip
    return outcome, time.perf_counter() - started


def test_a_dead_endpoint_costs_a_few_attempts_not_tasks_times_attempts(
    dead_server: DeadServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="verify"):
        outcome, elapsed = dead_run(dead_server.url, breaker_failures=3, replicates=5, timeout=0.3)
    assert outcome.tasks == 20 and len(outcome.results) == 20
    # 3 failures open it, and calls still waiting then are abandoned: 3 requests, at most 3 + the 4 in flight
    assert dead_server.requests == dead_server.connections <= 3 + 4
    assert elapsed < 10  # without it: about 180 requests, one at a time (the ladder never settles), ~55 s
    for result in outcome.results:  # a retryable error, so --resume runs every task again
        failure = result.metadata.failure
        assert failure is not None and (failure.category, failure.group) == ("timeout", "retry")
    opened = [m for m in warnings_of(caplog) if "is not answering" in m]
    assert len(opened) == 1 and "sk-secret" not in caplog.text


def test_without_the_breaker_every_attempt_of_every_call_is_sent(dead_server: DeadServer) -> None:
    outcome, _ = dead_run(dead_server.url, breaker_failures=0, replicates=1, timeout=0.15)
    assert outcome.tasks == 4 and all(r.metadata.failure is not None for r in outcome.results)
    assert dead_server.connections >= 4 * 4  # each task's calls, every one sent 4 times (3 retries)
