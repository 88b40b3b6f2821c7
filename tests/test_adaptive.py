"""The adaptive limit on one server's calls in flight (verify/llm/adaptive.py): its throughput hill-climbing and AIMD back-off (driven by simulated servers under a fake clock),
its waiters, the wrapper that feeds it, its wiring in Services, and whole runs through
``run_verification`` that leave ``async_max_workers`` unset, against fakes at the ChatModel port."""

from __future__ import annotations

import asyncio
import heapq
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
from fakes import ScriptedModel, honest

from verify.benchmark.jsonld import Benchmark
from verify.benchmark.question import Question
from verify.benchmark.traits import LLMTrait, Rubric
from verify.config.models import CategoryRetryConfig, ModelConfig, RetryPolicy
from verify.config.verification import VerificationConfig
from verify.llm.adaptive import CEILING, START, AdaptiveLimit, AdaptiveModel
from verify.llm.ports import ChatModel, ChatReply, ChatRequest, Message, Purpose, Usage
from verify.llm.resilience import RetryingModel
from verify.run import runner, services
from verify.run.runner import run_verification
from verify.run.services import Services

REQ = ChatRequest((Message("user", "hi"),), purpose=Purpose.ANSWER)


async def settle(rounds: int = 5) -> None:
    """Let every ready task run until it blocks."""
    for _ in range(rounds):
        await asyncio.sleep(0)


async def until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(0.005)


async def taker(limit: AdaptiveLimit, got: list[str], name: str) -> None:
    await limit.acquire()
    got.append(name)


class TooBusy(Exception):
    """What a provider SDK raises on HTTP 429: a status and a response whose headers say how long to wait."""

    def __init__(self, retry_after_ms: str | None = "5", status: int = 429) -> None:
        super().__init__(f"Error code: {status} - too busy")
        self.status_code = status
        headers = {"retry-after-ms": retry_after_ms} if retry_after_ms is not None else {}
        self.response = SimpleNamespace(status_code=status, headers=headers)


# -- the arithmetic ---------------------------------------------------------------------------------------------


def test_start_ceiling_and_floor() -> None:
    limit = AdaptiveLimit("http://127.0.0.1:8000")
    assert (limit.limit, limit.ceiling, limit.history, limit.in_flight) == (START, CEILING, [START], 0)
    assert limit.slow_start and limit.overloads == 0
    assert AdaptiveLimit("x", start=50, ceiling=3).limit == 3
    assert AdaptiveLimit("x", ceiling=0).limit == 1 == AdaptiveLimit("x", start=0).limit


class Clock:
    """A fake monotonic clock: the simulations below move it, the limit reads it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass(frozen=True)
class Simulated:
    """What a simulated run gave: calls answered per simulated second, and calls refused."""

    throughput: float
    refused: int


def simulate(limit: AdaptiveLimit, clock: Clock, calls: int, *, cv: float = 0.5, capacity: int | None = None,
             refuse: bool = False, slow_client: float = 0.0, seed: int = 1) -> Simulated:  # fmt: skip
    """Callers that always want more calls than the limit gives, against a server whose latency is
    log-normal (median 100 ms, coefficient of variation ``cv``), in simulated time. Beyond ``capacity``
    calls in flight the server either queues (each call slower by in-flight / capacity, so the
    throughput stays flat) or, with ``refuse``, answers 429 at once. ``slow_client`` adds a random stall
    of that mean (seconds, exponential) to every call: a client that waits for a busy core."""
    rng = random.Random(seed)
    sigma = math.sqrt(math.log(1 + cv * cv))
    pending: list[tuple[float, int, int, bool]] = []
    answered = refused = sent = 0
    while answered < calls and sent < 20 * calls:  # a limit that never backs off is refused for ever
        while (ticket := limit.try_acquire()) is not None:
            sent += 1
            over = capacity is not None and limit.in_flight > capacity
            latency = 0.1 * rng.lognormvariate(0, sigma) + (rng.expovariate(1 / slow_client) if slow_client else 0.0)
            if over and not refuse:
                latency *= limit.in_flight / capacity  # type: ignore[operator]
            heapq.heappush(pending, (clock.now + (0.001 if over and refuse else latency), sent, ticket, over and refuse))
        clock.now, _, ticket, refusal = heapq.heappop(pending)
        limit.release()
        if refusal:
            refused += 1
            limit.overloaded(None, ticket)
        else:
            answered += 1
            limit.succeeded()
    return Simulated(answered / clock.now, refused)


def test_an_unfilled_limit_does_not_grow() -> None:
    clock = Clock()
    limit = AdaptiveLimit("x", start=4, clock=clock)
    for _ in range(200):  # one call at a time: four slots are never all used
        limit.try_acquire()
        clock.now += 0.01
        limit.release()
        limit.succeeded()
    assert limit.limit == 4 and limit.history == [4] and limit.throughputs == []


def test_it_doubles_while_throughput_rises_with_it() -> None:
    clock = Clock()
    limit = AdaptiveLimit("x", clock=clock)
    simulate(limit, clock, 3000, capacity=100)
    assert limit.history[:4] == [16, 32, 64, 128]  # each doubling nearly doubled the throughput
    rates = dict(limit.throughputs)
    assert rates[32] > 1.5 * rates[16] and rates[64] > 1.5 * rates[32]


def test_it_stops_growing_where_throughput_plateaus() -> None:
    clock = Clock()
    limit = AdaptiveLimit("x", clock=clock)
    run = simulate(limit, clock, 20_000, capacity=40)
    assert not limit.slow_start and limit.overloads == 0
    # doubling 32 to 64 gained 40/32 at best: it settles near 40 and later tries only a quarter more
    assert limit.history[:3] == [16, 32, 64] and 36 <= limit.history[3] <= 44
    assert max(limit.history[3:]) < 64 and 36 <= limit.limit < 64
    assert run.throughput >= 0.85 * 40 / 0.1  # the best fixed limit: 40 calls per 100 ms


@pytest.mark.parametrize("cv", [0.5, 1.0])
def test_latency_jitter_does_not_hold_the_growth(cv: float) -> None:
    clock = Clock()
    limit = AdaptiveLimit("x", clock=clock)
    simulate(limit, clock, 3000, cv=cv)
    # calls five times slower than the fastest are common at cv 1: the old rule stopped at 16
    assert limit.history == [16, 32, 64, 128, 256] and limit.limit == CEILING


def test_a_busy_client_does_not_hold_the_growth() -> None:
    clock = Clock()
    limit = AdaptiveLimit("x", clock=clock)
    simulate(limit, clock, 3000, slow_client=0.05)  # stalls of 50 ms on average, some of 200 ms
    assert limit.history == [16, 32, 64, 128, 256]


def test_a_429_halves_it_and_probes_then_add_a_quarter() -> None:
    clock = Clock()
    limit = AdaptiveLimit("x", clock=clock)
    run = simulate(limit, clock, 5000, capacity=40, refuse=True)
    assert run.refused >= 1 and limit.overloads == run.refused
    assert limit.history[:6] == [16, 32, 64, 32, 40, 50]  # 64 was refused: halved, then +8, +10
    assert max(limit.history[2:]) <= 64 and limit.cuts < run.refused  # a burst cuts once


def test_a_burst_of_refusals_of_calls_sent_under_one_limit_cuts_it_once() -> None:
    limit = AdaptiveLimit("x", start=16)
    sent_at = limit.cuts
    for _ in range(8):  # eight calls sent before the first refusal came back, all refused
        limit.overloaded(None, sent_at)
    assert limit.limit == 8 and limit.history == [16, 8] and limit.overloads == 8
    limit.overloaded(None, limit.cuts)  # a call sent under the new limit and refused: cut again
    assert limit.limit == 4


def test_overloads_halve_down_to_one_and_it_never_passes_its_ceiling() -> None:
    limit = AdaptiveLimit("x", start=12)
    for _ in range(6):
        limit.overloaded(None)
    assert limit.limit == 1 and limit.history == [12, 6, 3, 1] and limit.overloads == 6
    clock = Clock()
    capped = AdaptiveLimit("x", start=2, ceiling=5, clock=clock)
    simulate(capped, clock, 500)
    assert capped.history[:3] == [2, 4, 5] and max(capped.history) == 5  # doubling 4 stops at 5


async def test_retry_after_holds_every_new_call() -> None:
    limit = AdaptiveLimit("x")
    limit.overloaded(0.15)
    started = time.monotonic()
    await limit.acquire()
    assert time.monotonic() - started >= 0.14
    limit.release()
    limit.overloaded(None)  # no Retry-After: halve only
    started = time.monotonic()
    await limit.acquire()
    assert time.monotonic() - started < 0.05
    limit.release()
    limit.overloaded(3600)  # a server asking for an hour is held a minute at most
    assert 59 < limit._hold_until - time.monotonic() <= 60
    limit.overloaded(0.01)  # a shorter Retry-After does not end a longer hold
    assert limit._hold_until - time.monotonic() > 59


# -- waiters --------------------------------------------------------------------------------------------------


async def test_waiters_get_freed_slots_in_order() -> None:
    limit = AdaptiveLimit("x", start=2)
    got: list[str] = []
    tasks = [asyncio.create_task(taker(limit, got, name)) for name in "abcde"]
    await settle()
    assert got == ["a", "b"] and limit.in_flight == 2 and limit.peak_in_flight == 2
    limit.release()
    await settle()
    assert got == ["a", "b", "c"] and limit.in_flight == 2
    limit._set(3)  # the limit grows to 3 and the next waiter goes at once
    await settle()
    assert got == ["a", "b", "c", "d"] and limit.in_flight == 3
    for _ in range(4):
        limit.release()
        await settle()
    await asyncio.gather(*tasks)
    assert got == list("abcde") and limit.in_flight == 0 and limit.peak_in_flight == 3


async def test_a_newcomer_does_not_jump_the_queue() -> None:
    limit = AdaptiveLimit("x", start=2)
    got: list[str] = []
    await limit.acquire()
    await limit.acquire()
    queued = [asyncio.create_task(taker(limit, got, name)) for name in ("b", "c")]
    await settle()
    late = asyncio.create_task(taker(limit, got, "late"))  # a newcomer, about to run...
    limit.release()  # ...as the freed slot is handed to b: with c still queued, it queues behind c
    await settle()
    assert got == ["b"] and limit.in_flight == 2
    limit.release()
    await settle()
    assert got == ["b", "c"]
    limit.release()
    await asyncio.gather(*queued, late)
    assert got == ["b", "c", "late"]


async def test_a_cancelled_waiter_leaks_no_slot() -> None:
    limit = AdaptiveLimit("x", start=1)
    got: list[str] = []
    await limit.acquire()
    b = asyncio.create_task(taker(limit, got, "b"))
    c = asyncio.create_task(taker(limit, got, "c"))
    await settle()
    b.cancel()  # cancelled while queued
    await settle()
    assert b.cancelled() and len(limit._waiters) == 1
    limit.release()
    await asyncio.wait_for(c, 1.0)
    assert got == ["c"] and limit.in_flight == 1
    limit.release()
    assert limit.in_flight == 0


async def test_a_waiter_cancelled_after_its_turn_came_passes_it_on() -> None:
    limit = AdaptiveLimit("x", start=1)
    got: list[str] = []
    await limit.acquire()
    b = asyncio.create_task(taker(limit, got, "b"))
    c = asyncio.create_task(taker(limit, got, "c"))
    await settle()
    limit.release()  # b is handed the slot...
    b.cancel()  # ...and cancelled before it could run: c must get the slot instead
    await asyncio.wait_for(c, 1.0)
    assert b.cancelled() and got == ["c"] and limit.in_flight == 1
    limit.release()
    assert limit.in_flight == 0 and not limit._waiters


async def test_waiters_queued_through_a_retry_after_hold_all_get_through() -> None:
    limit = AdaptiveLimit("x", start=1)
    got: list[str] = []
    await limit.acquire()
    waiters = [asyncio.create_task(taker(limit, got, name)) for name in "bcd"]
    await settle()
    limit.overloaded(0.05)  # the call in flight was told to wait 50 ms...
    limit.release()  # ...and gives its slot back: the queued calls go once the hold is over
    for n in range(1, 4):
        await asyncio.wait_for(until(lambda n=n: len(got) == n), 1.0)
        assert limit.in_flight == 1
        limit.release()
    await asyncio.gather(*waiters)
    assert sorted(got) == ["b", "c", "d"] and limit.in_flight == 0


async def test_calls_queued_behind_a_429_at_a_limit_of_one_all_finish() -> None:
    busy = [TooBusy("20")]

    class BusyOnce:
        model_id = "busy-once"

        async def complete(self, request: ChatRequest) -> ChatReply:
            await asyncio.sleep(0.01)
            if busy:
                raise busy.pop()
            return ChatReply(text="ok", usage=Usage(1, 1))

    limit = AdaptiveLimit("x", start=1)
    retry = RetryPolicy(rate_limit=CategoryRetryConfig(max_attempts=3, backoff_min=0.0, backoff_max=0.0))
    model = RetryingModel(AdaptiveModel(BusyOnce(), limit), retry)
    replies = await asyncio.wait_for(asyncio.gather(*(model.complete(REQ) for _ in range(4))), 2.0)
    assert [r.text for r in replies] == ["ok"] * 4 and sorted(r.attempts for r in replies) == [1, 1, 1, 2]
    assert limit.overloads == 1 and limit.in_flight == 0


async def test_a_waiter_cancelled_during_a_hold_leaks_no_slot() -> None:
    limit = AdaptiveLimit("x", start=1)
    limit.overloaded(0.05)
    got: list[str] = []
    held = asyncio.create_task(taker(limit, got, "held"))
    await settle()
    held.cancel()
    await settle()
    assert held.cancelled() and limit.in_flight == 0
    await asyncio.wait_for(limit.acquire(), 1.0)
    assert limit.in_flight == 1


# -- the wrapper ------------------------------------------------------------------------------------------------


class Server:
    """A fake model server at the port: ``latency`` per call, and over ``capacity`` calls at once it
    answers 429 with a ``retry-after-ms``. It counts calls in flight (the refused one included)."""

    def __init__(self, latency: float = 0.02, capacity: int | None = None, retry_after_ms: str = "5") -> None:
        self.latency = latency
        self.capacity = capacity
        self.retry_after_ms = retry_after_ms
        self.active = 0
        self.peak = 0
        self.calls = 0
        self.refused = 0
        self.peak_after_refusal = 0  # among calls that arrived after the first 429

    def model(self, config: ModelConfig | None = None) -> ChatModel:
        return ScriptedServerModel(self)


class ScriptedServerModel:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.scripted = ScriptedModel(honest)

    @property
    def model_id(self) -> str:
        return "fake:server"

    async def complete(self, request: ChatRequest) -> ChatReply:
        server = self.server
        server.calls += 1
        server.active += 1
        server.peak = max(server.peak, server.active)
        if server.refused:
            server.peak_after_refusal = max(server.peak_after_refusal, server.active)
        try:
            if server.capacity is not None and server.active > server.capacity:
                server.refused += 1
                raise TooBusy(server.retry_after_ms)
            await asyncio.sleep(server.latency)
            return await self.scripted.complete(request)
        finally:
            server.active -= 1


class Failing:
    model_id = "failing"

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def complete(self, request: ChatRequest) -> ChatReply:
        raise self.error


async def test_the_wrapper_holds_a_slot_per_call_and_reports_successes() -> None:
    server = Server(latency=0.01)
    limit = AdaptiveLimit("x", start=2, ceiling=3)
    model = AdaptiveModel(server.model(), limit)
    assert model.model_id == "fake:server"
    replies = await asyncio.gather(*(model.complete(REQ) for _ in range(40)))
    assert all(r.text for r in replies)  # a window of 32 answers at 2: worth trying 4, capped at 3
    assert server.peak == 3 and limit.peak_in_flight == 3 and limit.in_flight == 0
    assert limit.history == [2, 3]


@pytest.mark.parametrize(
    ("error", "overload", "hold"),
    [
        (TooBusy("250"), True, 0.25),
        (TooBusy(None), True, None),
        (TooBusy("100", status=529), True, 0.1),  # Anthropic's "overloaded"
        (TooBusy("100", status=503), True, 0.1),
        (RuntimeError("The server is overloaded, try later"), True, None),
        (TooBusy("100", status=500), False, None),
        (TooBusy(None, status=400), False, None),
        (TimeoutError(), True, None),  # a server that could not keep up
    ],
)
async def test_overloads_halve_the_limit_other_errors_do_not(
    error: Exception, overload: bool, hold: float | None
) -> None:
    limit = AdaptiveLimit("x", start=8)
    model = AdaptiveModel(Failing(error), limit)
    with pytest.raises(type(error)):
        await model.complete(REQ)
    assert limit.in_flight == 0
    assert (limit.limit, limit.overloads) == ((4, 1) if overload else (8, 0))
    held = limit._hold_until - time.monotonic()
    if hold is None:
        assert held <= 0
    else:
        assert hold - 0.05 < held <= hold


async def test_a_call_cancelled_in_flight_gives_its_slot_back() -> None:
    limit = AdaptiveLimit("x", start=1)
    model = AdaptiveModel(Server(latency=5.0).model(), limit)
    first = asyncio.create_task(model.complete(REQ))
    second = asyncio.create_task(model.complete(REQ))
    await settle()
    assert limit.in_flight == 1 and len(limit._waiters) == 1
    first.cancel()
    second.cancel()
    await asyncio.gather(first, second, return_exceptions=True)
    assert limit.in_flight == 0 and limit.limit == 1 and limit.history == [1]


async def test_retries_sit_outside_the_limit_and_every_attempt_tells_it() -> None:
    server = Server(latency=0.01, capacity=2)
    limit = AdaptiveLimit("x", start=4)
    retry = RetryPolicy(rate_limit=CategoryRetryConfig(max_attempts=10, backoff_min=0.0, backoff_max=0.0))
    model = RetryingModel(AdaptiveModel(server.model(), limit), retry)
    replies = await asyncio.gather(*(model.complete(REQ) for _ in range(16)))
    assert all(r.text for r in replies) and server.refused >= 1
    assert limit.overloads == server.refused and limit.history[:2] == [4, 2] and limit.in_flight == 0
    assert sum(r.attempts for r in replies) == 16 + server.refused


# -- wiring: Services and the runner ------------------------------------------------------------------------------


def judge(url: str | None = None, **fields: Any) -> dict[str, Any]:
    if url is None:
        return {"id": "judge", "model_name": "sim-judge", "interface": "simulated", **fields}
    return {"id": "judge", "model_name": "local", "interface": "openai_endpoint", "endpoint_base_url": url, **fields}


def chain(model: Any) -> list[Any]:
    layers = []
    while model is not None:
        layers.append(model)
        model = getattr(model, "inner", None)
    return layers


async def test_services_give_each_server_one_adaptive_limit_only_when_workers_are_unset() -> None:
    url = "http://127.0.0.1:9/v1"
    answerer = judge(url, id="answerer", max_concurrent_requests=6)
    config = VerificationConfig.model_validate({"answering_models": [answerer], "parsing_models": [judge(url + "/")],
                                                "max_concurrent_requests": 40})  # fmt: skip
    assert config.async_max_workers is None
    made = Services(config, None, Server().model)
    a, j = made.model(config.answering_models[0]), made.model(config.parsing_models[0])
    (limit,) = made.adaptive.values() if made.adaptive else ()
    assert limit.ceiling == 6  # the smallest cap the config gives this server
    adaptive = [[m for m in chain(built) if isinstance(m, AdaptiveModel)] for built in (a, j)]
    assert [[m.limit for m in found] for found in adaptive] == [[limit], [limit]]  # one server, one limit
    other = Services(config.model_copy(update={"max_concurrent_requests": None, "parsing_models": [
        ModelConfig(**judge())]}), None, Server().model)  # fmt: skip
    other.model(other.config.parsing_models[0])
    assert other.adaptive is not None and [x.ceiling for x in other.adaptive.values()] == [CEILING]

    for fixed in ({"async_max_workers": 2}, {"async_enabled": False}):
        pinned = Services(config.model_copy(update=fixed), None, Server().model)
        built = pinned.model(config.parsing_models[0])
        assert pinned.adaptive is None and not any(isinstance(m, AdaptiveModel) for m in chain(built))


TRAITS = [
    LLMTrait(name="clarity", kind="score", min_score=1, max_score=5, description="The response is clear"),
    LLMTrait(name="mentions_safety", kind="boolean", min_score=0, max_score=1,
             description="The response mentions safety precautions"),
]  # fmt: skip


def benchmark(n: int) -> tuple[Benchmark, dict[str, dict[str, str]]]:
    questions = [Question(id=f"q{i:02d}", text=f"How does process {i} work?", raw_answer="A reference answer.",
                          finished=True) for i in range(n)]  # fmt: skip
    answers = {"*": {q.id: f"Process {i} works because heat drives it step by step. Wear gloves for safety: "
                           "burns are a real risk. It is explained clearly, in steps." for i, q in enumerate(questions)}}
    return Benchmark(name="adaptive", global_rubric=Rubric(traits=TRAITS), questions=questions), answers


def deep_config(**fields: Any) -> VerificationConfig:
    data: dict[str, Any] = {
        "answering_models": [{"id": "answerer", "model_name": "sim-answerer", "interface": "simulated"}],
        "parsing_models": [judge()], "evaluation_mode": "rubric_only", "deep_judgment_rubric_mode": "enable_all",
    }  # fmt: skip
    data.update(fields)
    return VerificationConfig.model_validate(data)


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> list[AdaptiveLimit]:
    """Every AdaptiveLimit the run's Services make."""
    made: list[AdaptiveLimit] = []

    class Recorded(AdaptiveLimit):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(services, "AdaptiveLimit", Recorded)
    return made


def the_judges(limits: list[AdaptiveLimit]) -> AdaptiveLimit:
    """The limit of the judge's server (the answerer's, whose answers are recorded, takes no calls)."""
    (used,) = [limit for limit in limits if limit.peak_in_flight]
    assert len(limits) == 2 and used.name == "simulated:sim-judge:judge"
    return used


def all_judged(outcome: Any, questions: int) -> None:
    assert len(outcome.results) == questions and outcome.summary.coverage == 1.0
    for result in outcome.results:
        assert result.metadata.errors == [] and result.verdict == "judged"  # rubric_only, no pass rule
        assert result.rubric is not None and set(result.rubric.trait_status) == {"clarity", "mentions_safety"}
        assert all(o.status == "scored" for o in result.rubric.trait_status.values())


def test_unset_workers_let_many_calls_go_at_once(limits: list[AdaptiveLimit]) -> None:
    bench, answers = benchmark(20)
    server = Server(latency=0.02)
    outcome = run_verification(bench, deep_config(), answers=answers, adapter_factory=server.model)
    all_judged(outcome, 20)
    assert server.calls == 20 * 2 * 3  # excerpts, reasoning and score per trait
    limit = the_judges(limits)
    # far beyond karenina's 2 questions at a time (at most 2 x 2 calls at once): every question at once
    assert runner.AUTO_TASKS >= 20 and server.peak >= 20
    assert limit.peak_in_flight == server.peak and limit.in_flight == 0 and limit.limit > START


def test_given_workers_bound_the_calls_as_before(limits: list[AdaptiveLimit]) -> None:
    bench, answers = benchmark(20)
    server = Server(latency=0.005)
    outcome = run_verification(bench, deep_config(async_max_workers=2), answers=answers, adapter_factory=server.model)
    all_judged(outcome, 20)
    assert limits == [] and 2 <= server.peak <= 2 * len(TRAITS)  # two questions, their traits side by side


def test_a_server_that_says_429_over_its_capacity_is_found(limits: list[AdaptiveLimit]) -> None:
    capacity = 4
    bench, answers = benchmark(20)
    server = Server(latency=0.02, capacity=capacity, retry_after_ms="5")
    retry = RetryPolicy(rate_limit=CategoryRetryConfig(max_attempts=20, backoff_min=0.01, backoff_max=0.05))
    started = time.perf_counter()
    outcome = run_verification(bench, deep_config(retry_policy=retry), answers=answers, adapter_factory=server.model)
    elapsed = time.perf_counter() - started
    all_judged(outcome, 20)
    limit = the_judges(limits)
    assert server.refused >= 1 and limit.overloads == server.refused
    halved = [(a, b) for a, b in zip(limit.history, limit.history[1:], strict=False) if b == max(1, a // 2)]
    assert halved, limit.history
    # once the server said 429, calls in flight stay near its capacity (at most one over, when the limit probes)
    assert server.peak_after_refusal <= capacity + 1
    assert server.calls == 20 * 2 * 3 + server.refused and limit.in_flight == 0
    assert elapsed < 10.0
