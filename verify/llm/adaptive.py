"""How many calls one server gets at once when nobody said: found while the run goes.

When a run does not set ``async_max_workers`` (a karenina preset that sets it keeps karenina's
meaning: that many questions at a time), every task may start and each server's calls in flight
are limited by an :class:`AdaptiveLimit`. It climbs the hill of throughput (calls completed per
second), never of latency: a judge whose latency varies, or a client slowed by a busy machine,
makes each call slower but does not tell whether more calls at once would finish more per second.
Only measuring that does.

* It starts at :data:`START` calls. Throughput is measured over a window of completed calls (at
  least :data:`WINDOW`, and twice the limit) that begins once the callers fill the limit, so it
  measures what the server gives, not what the callers ask.
* After a window it tries a higher limit: double while in slow start, a quarter more after it. A
  window at the higher limit keeps it when throughput rose by at least half of what the raise
  could give at best (doubling the calls at best doubles the throughput; needing half of it
  keeps the noise of one window of jittery calls from deciding). Otherwise throughput has
  plateaued: the limit settles at the calls in flight the measured gain accounts for (the old
  limit times the gain, between the two limits), slow start ends, and it rests a few windows
  before it tries again.
* A rate limit, an overload (429, 529, 503, "overloaded") or a timed-out call halves it, once per
  burst (refusals of calls sent before the cut do not cut again), and a ``Retry-After`` holds every
  new call to that server until it has passed (a minute at most). Slow start ends there too.
* It never exceeds its ceiling (the run's ``max_concurrent_requests`` and the model's own cap still
  apply on top of it, as fixed limits) and never falls below one.

The clock is injected (``clock=``), so tests drive the limit with synthetic completions.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from verify.llm.resilience import classify_error, retry_after_seconds

if TYPE_CHECKING:
    from verify.llm.ports import ChatModel, ChatReply, ChatRequest

__all__ = ["CEILING", "START", "WINDOW", "AdaptiveLimit", "AdaptiveModel"]

START = 16
CEILING = 256
WINDOW = 32  # fewest completions in one throughput measurement: fewer, and latency jitter decides
_REST = 4  # windows at a settled limit before it tries a higher one again
_PROBE = 0.25  # after slow start, a raise adds this fraction of the limit (at least one call)
_NEEDED = 0.5  # a raise is kept when throughput rose by this fraction of the most it could


def _overload(exc: BaseException) -> bool:
    # a timed-out call is a server that could not keep up (a local one queues rather than says 429)
    if classify_error(exc) in ("rate_limit", "timeout"):
        return True
    status = getattr(exc, "status_code", None) or getattr(getattr(exc, "response", None), "status_code", None)
    return status == 503


class AdaptiveLimit:
    """The calls in flight one server gets. ``name`` only names it in ``history``; ``clock`` is the
    monotonic clock throughput and ``Retry-After`` holds are measured with."""

    def __init__(
        self, name: str, *, start: int = START, ceiling: int = CEILING, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.name = name
        self.ceiling = max(1, ceiling)
        self.limit = max(1, min(start, self.ceiling))
        self.in_flight = 0
        self.peak_in_flight = 0
        self.slow_start = True
        self.overloads = 0
        self.cuts = 0  # decreases so far: an overload of a call sent before the last cut cuts no more
        self.history: list[int] = [self.limit]  # every value the limit took, for benchmarks and tests
        self.throughputs: list[tuple[int, float]] = []  # (limit, calls per second) of every window
        self._clock = clock
        self._hold_until = 0.0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._window_start: float | None = None  # None: the callers have not filled the limit yet
        self._window_done = 0
        self._base: tuple[int, float] | None = None  # (limit, throughput) a raise is compared with
        self._rest = 0  # windows left before the next raise
        self._stale = 0  # calls sent under the previous limit still to come back

    async def acquire(self) -> int:
        """Wait for a slot; returns the number of cuts so far (pass it to :meth:`overloaded`)."""
        while True:
            wait = self._hold_until - self._clock()
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
            if self.in_flight < self.limit and self._hold_until <= self._clock():
                break
            # woken, but the limit fell, a hold began or a newcomer took the slot: queue again
        self._take()
        return self.cuts

    def try_acquire(self) -> int | None:
        """Take a slot if one is free now and nobody queues for it (what :meth:`acquire` returns),
        else ``None``, without waiting."""
        if self._hold_until > self._clock() or self.in_flight >= self.limit or self._waiters:
            return None
        self._take()
        return self.cuts

    def _take(self) -> None:
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        if self.in_flight >= self.limit and self._window_start is None and not self._stale:
            # the callers fill the limit and the calls sent under the previous one are back (they
            # waited less at a queueing server): from now on completions measure this limit
            self._window_start = self._clock()
            self._window_done = 0

    def release(self) -> None:
        self.in_flight -= 1
        self._stale = max(0, self._stale - 1)
        self._wake()

    def _wake(self) -> None:
        free = self.limit - self.in_flight
        while free > 0 and self._waiters:
            future = self._waiters.popleft()
            if not future.done():
                future.set_result(None)
                free -= 1

    def succeeded(self) -> None:
        """A call came back answered: it counts in the window under way, if one is."""
        if self._window_start is None:
            return
        self._window_done += 1
        if self._window_done < max(WINDOW, 2 * self.limit):
            return
        elapsed = self._clock() - self._window_start
        self._window_start = None  # the next window opens when the callers fill the limit again
        if elapsed > 0:
            self._measured(self._window_done / elapsed)

    def _measured(self, rate: float) -> None:
        self.throughputs.append((self.limit, rate))
        base = self._base
        if base is not None and self.limit > base[0]:  # a window at a raised limit: did it pay?
            best = self.limit / base[0]
            gain = rate / base[1]
            if gain >= 1 + _NEEDED * (best - 1):
                self._base = (self.limit, rate)
                self._raise()
                return
            # a plateau. Out of slow start the limit goes back (a small raise that did not pay); in it,
            # to the calls in flight the gain accounts for (doubling 40 calls against a server that
            # serves 70 at once gains 1.75: too little to keep 80, and going back to 40 would lose
            # much). Then it rests before it tries again.
            settled = round(base[0] * min(max(gain, 1.0), best)) if self.slow_start else base[0]
            self.slow_start = False
            self._rest = _REST
            self._base = None
            self._set(settled)
            return
        if base is not None and base[0] == self.limit and self._rest < _REST:
            # resting at a settled limit: its throughput is the mean of its windows, steadier than one
            rate = (base[1] * (_REST - self._rest) + rate) / (_REST - self._rest + 1)
        self._base = (self.limit, rate)
        if self._rest > 0:
            self._rest -= 1
        else:
            self._raise()

    def _raise(self) -> None:
        self._set(self.limit + (self.limit if self.slow_start else max(1, int(self.limit * _PROBE))))

    def overloaded(self, retry_after: float | None, sent_at: int | None = None) -> None:
        """A call was refused for overload. ``sent_at`` is what :meth:`acquire` returned for it: a
        burst of refusals of calls sent under the old limit cuts it once, as TCP halves once per
        round trip."""
        self.overloads += 1
        self.slow_start = False
        if sent_at is None or sent_at == self.cuts:
            self.cuts += 1
            self._base = None  # throughput measured before the cut says nothing of the new limit
            self._rest = 0
            self._window_start = None
            self._set(self.limit // 2)
        if retry_after:
            self._hold_until = max(self._hold_until, self._clock() + min(retry_after, 60.0))

    def _set(self, value: int) -> None:
        value = max(1, min(value, self.ceiling))
        if value != self.limit:
            self.limit = value
            self.history.append(value)
            self._window_start = None  # a window measures one limit
            self._stale = self.in_flight
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
        try:
            reply = await self.inner.complete(request)
        except Exception as exc:
            if _overload(exc):
                self.limit.overloaded(retry_after_seconds(exc), sent_at)
            raise
        finally:
            self.limit.release()
        self.limit.succeeded()
        return reply
