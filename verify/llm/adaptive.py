"""How many calls one server gets at once when nobody said: found while the run goes.

When a run does not set ``async_max_workers`` (a karenina preset that sets it keeps karenina's
meaning: that many questions at a time), every task may start and each server's calls in flight
are limited by an :class:`AdaptiveLimit`, additive-increase / multiplicative-decrease as TCP does:

* it starts at :data:`START` calls and, while calls succeed, doubles once per round of calls (slow
  start) until the first sign of overload, then grows by one per round (a round: as many successes
  as the limit);
* a rate limit, an overload (429, 529, 503, "overloaded") or a timed-out call halves it, once per
  burst (refusals of calls sent before the cut do not cut again), and a ``Retry-After`` holds every
  new call to that server until it has passed (a minute at most);
* it grows only while the calls fill it (a limit nobody uses is not evidence the server copes);
* it stops growing while calls take more than twice the fastest latency seen (the server queues
  them rather than serving them at once: a local server that never says 429);
* it never exceeds its ceiling (the run's ``max_concurrent_requests`` and the model's own cap still
  apply on top of it, as fixed limits) and never falls below one.
"""

from __future__ import annotations

import asyncio
import collections
import time
from typing import TYPE_CHECKING

from verify.llm.resilience import classify_error, retry_after_seconds

if TYPE_CHECKING:
    from verify.llm.ports import ChatModel, ChatReply, ChatRequest

__all__ = ["CEILING", "START", "AdaptiveLimit", "AdaptiveModel"]

START = 16
CEILING = 256
_SLOW = 2.0  # a call this many times slower than the fastest seen means the server is queueing
_SAMPLES = 5  # successes seen before latency may hold the growth


def _overload(exc: BaseException) -> bool:
    # a timed-out call is a server that could not keep up (a local one queues rather than says 429)
    if classify_error(exc) in ("rate_limit", "timeout"):
        return True
    status = getattr(exc, "status_code", None) or getattr(getattr(exc, "response", None), "status_code", None)
    return status == 503


class AdaptiveLimit:
    """The calls in flight one server gets. ``name`` only names it in ``history``."""

    def __init__(self, name: str, *, start: int = START, ceiling: int = CEILING) -> None:
        self.name = name
        self.ceiling = max(1, ceiling)
        self.limit = max(1, min(start, self.ceiling))
        self.in_flight = 0
        self.peak_in_flight = 0
        self.slow_start = True
        self.overloads = 0
        self.cuts = 0  # decreases so far: an overload of a call sent before the last cut cuts no more
        self._busy = False  # the limit was reached since it last grew: growing it can help
        self._successes = 0
        self._fastest: float | None = None
        self._samples = 0
        self._hold_until = 0.0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self.history: list[int] = [self.limit]  # every value the limit took, for benchmarks and tests

    async def acquire(self) -> int:
        """Wait for a slot; returns the number of cuts so far (pass it to :meth:`overloaded`)."""
        while True:
            wait = self._hold_until - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
                self._wake()  # the calls queued meanwhile: nothing else wakes them when the hold ends
                continue
            if self.in_flight < self.limit and not self._waiters:
                break
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(future)
            try:
                await future
            except asyncio.CancelledError:
                if future in self._waiters:
                    self._waiters.remove(future)
                elif future.done() and not future.cancelled():
                    self._wake()  # it was handed a turn it will not use: pass it on
                raise
            if self.in_flight < self.limit and self._hold_until <= time.monotonic():
                break
            # woken, but the limit fell, a hold began or a newcomer took the slot: queue again
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        self._busy = self._busy or self.in_flight >= self.limit
        return self.cuts

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        free = self.limit - self.in_flight
        while free > 0 and self._waiters:
            future = self._waiters.popleft()
            if not future.done():
                future.set_result(None)
                free -= 1

    def succeeded(self, latency: float) -> None:
        self._samples += 1
        if self._fastest is None or latency < self._fastest:
            self._fastest = latency
        if self._samples > _SAMPLES and latency > _SLOW * self._fastest + 0.005:
            return  # queueing at the server: hold the limit where it is
        if not self._busy:
            return  # the calls do not fill the limit: a higher one would not be tested by them
        if self.slow_start:
            self._set(self.limit + 1)  # +1 per success: doubles per round
            return
        self._successes += 1
        if self._successes >= self.limit:
            self._successes = 0
            self._set(self.limit + 1)

    def overloaded(self, retry_after: float | None, sent_at: int | None = None) -> None:
        """A call was refused for overload. ``sent_at`` is what :meth:`acquire` returned for it: a
        burst of refusals of calls sent under the old limit cuts it once, as TCP halves once per
        round trip."""
        self.overloads += 1
        self.slow_start = False
        self._successes = 0
        if sent_at is None or sent_at == self.cuts:
            self.cuts += 1
            self._set(self.limit // 2)
        if retry_after:
            self._hold_until = max(self._hold_until, time.monotonic() + min(retry_after, 60.0))

    def _set(self, value: int) -> None:
        value = max(1, min(value, self.ceiling))
        if value != self.limit:
            self._busy = self._busy and value < self.limit
            self.limit = value
            self.history.append(value)
            self._wake()


class AdaptiveModel:
    """Takes a slot of ``limit`` for each attempt of ``inner`` and tells the limit how it went."""

    def __init__(self, inner: ChatModel, limit: AdaptiveLimit) -> None:
        self.inner = inner
        self.limit = limit

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    async def complete(self, request: ChatRequest) -> ChatReply:
        sent_at = await self.limit.acquire()
        started = time.perf_counter()
        try:
            reply = await self.inner.complete(request)
        except Exception as exc:
            if _overload(exc):
                self.limit.overloaded(retry_after_seconds(exc), sent_at)
            raise
        finally:
            self.limit.release()
        self.limit.succeeded(time.perf_counter() - started)
        return reply
