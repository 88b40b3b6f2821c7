"""Retries and concurrency limits, as :class:`~verify.llm.ports.ChatModel` wrappers.

The wrapper chain built by :func:`verify.llm.build.build_model` is::

    CachedModel -> RetryingModel -> LimitedModel (endpoint) -> LimitedModel (run)
        -> BreakerModel -> adapter

* the cache is outermost, so a hit costs no retry budget and no concurrency slot;
* the limiter sits *inside* the retry loop, so it counts requests in flight: a call that is
  sleeping out a backoff does not hold a slot that another call could use;
* the circuit breaker (:mod:`verify.llm.breaker`) sees every attempt, just before it is sent.

Errors are classified into ``connection``, ``timeout``, ``rate_limit``, ``server_error`` or
``permanent`` by class name (walking the MRO and the ``__cause__`` chain) and by HTTP status
code, so no provider SDK has to be imported here. A :class:`~verify.errors.ModelError` raised
by an inner model keeps its own category (the simulated model uses this to inject faults).

An adapter that finds nothing listening at its URL raises :class:`EndpointUnreachable`, one line
naming the URL; on a loopback URL it is retried at most once, quickly (a local server that is not
running will not start by itself). Requests are counted: a reply's ``attempts`` is set to the
requests of every try, and an error that gives up carries them too (:func:`attempts_of`). A call
refused by an open circuit breaker (:class:`EndpointNotAnswering`) is not retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from verify.config.models import ErrorPatternConfig, RetryPolicy
from verify.errors import TRANSIENT_CATEGORIES, ModelError
from verify.llm.endpoints import EndpointNotAnswering, EndpointUnreachable
from verify.llm.ports import ChatModel, ChatReply, ChatRequest
from verify.secrets import redact

if TYPE_CHECKING:
    from verify.llm.breaker import CircuitBreaker

__all__ = [
    "Backoff",
    "LimitedModel",
    "RetryingModel",
    "attempts_of",
    "backoff_for",
    "classify_error",
    "note_attempts",
    "redact",
    "retry_after_seconds",
]

log = logging.getLogger(__name__)


# Class names, checked most-specific first along the MRO (APITimeoutError subclasses
# APIConnectionError in the OpenAI SDK, so the first match wins).
_NAME_CATEGORY: dict[str, str] = {
    "RateLimitError": "rate_limit",
    "OverloadedError": "rate_limit",
    "TooManyRequests": "rate_limit",
    "APITimeoutError": "timeout",
    "TimeoutException": "timeout",  # httpx / httpx2 base of every timeout
    "ReadTimeout": "timeout",
    "WriteTimeout": "timeout",
    "ConnectTimeout": "timeout",
    "PoolTimeout": "timeout",
    "RequestTimeoutError": "timeout",
    "DeadlineExceededError": "timeout",
    "GatewayTimeoutError": "timeout",
    "TimeoutError": "timeout",  # builtin, also asyncio.TimeoutError
    "APIConnectionError": "connection",
    "ConnectError": "connection",
    "RemoteProtocolError": "connection",
    "ReadError": "connection",
    "WriteError": "connection",
    "NetworkError": "connection",
    "ConnectionError": "connection",  # builtin and its subclasses (refused, reset, aborted)
    "ServerDisconnectedError": "connection",
    "InternalServerError": "server_error",
    "ServiceUnavailableError": "server_error",
    "HTTPNotImplementedError": "permanent",
    "AuthenticationError": "permanent",
    "PermissionDeniedError": "permanent",
    "BadRequestError": "permanent",
    "NotFoundError": "permanent",
    "UnprocessableEntityError": "permanent",
}

_MESSAGE_HINTS: tuple[tuple[str, str], ...] = (
    ("rate limit", "rate_limit"),
    ("too many requests", "rate_limit"),
    ("overloaded", "rate_limit"),
    ("timed out", "timeout"),
    ("timeout", "timeout"),
    ("connection refused", "connection"),
    ("connection reset", "connection"),
    ("connection error", "connection"),
    ("server disconnected", "connection"),
)


def _status_category(status: int) -> str | None:
    if status == 429 or status == 529:
        return "rate_limit"
    if status == 408:
        return "timeout"
    if status >= 500:
        return "server_error"
    if 400 <= status < 500:
        return "permanent"
    return None


def _status_code(exc: BaseException) -> int | None:
    for attr in ("status_code", "status", "http_status"):
        value = getattr(exc, attr, None)
        if isinstance(value, int) and 100 <= value <= 599:
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


def _classify_one(exc: BaseException) -> str | None:
    if isinstance(exc, ModelError):
        return exc.category
    for cls in type(exc).__mro__:
        category = _NAME_CATEGORY.get(cls.__name__)
        if category is not None:
            if category == "permanent":
                # a 4xx class name is only as good as its status; trust the status when present
                status = _status_code(exc)
                return (_status_category(status) or category) if status is not None else category
            return category
    status = _status_code(exc)
    if status is not None:
        return _status_category(status)
    return None


def classify_error(exc: BaseException, patterns: Sequence[ErrorPatternConfig] = ()) -> str:
    """Return ``connection``, ``timeout``, ``rate_limit``, ``server_error`` or ``permanent``.

    ``patterns`` (``custom_error_patterns``) are tried first, in order, on the error and its causes:
    ``type_name`` matches a class name in the error's MRO, ``message_substring`` its message.
    """
    for rule in patterns:
        if _matches(rule, exc):
            return rule.category
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 8:
        seen.add(id(current))
        category = _classify_one(current)
        if category is not None:
            return category
        current = current.__cause__ or current.__context__
    text = str(exc).lower()
    for needle, category in _MESSAGE_HINTS:
        if needle in text:
            return category
    return "permanent"


def _matches(rule: ErrorPatternConfig, exc: BaseException) -> bool:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain and len(chain) < 8:
        chain.append(current)
        current = current.__cause__ or current.__context__
    if rule.match_type == "type_name":
        return any(rule.pattern == cls.__name__ for e in chain for cls in type(e).__mro__)
    return any(rule.pattern in str(e) for e in chain)


def retry_after_seconds(exc: BaseException) -> float | None:
    """The server's Retry-After (``retry-after-ms`` or ``retry-after``: seconds or HTTP date)."""
    direct = getattr(exc, "retry_after", None)
    if isinstance(direct, int | float) and direct >= 0:
        return float(direct)
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
        raw = headers.get("retry-after")
    except Exception:  # noqa: BLE001 - odd header containers must never break a retry
        return None
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except (TypeError, ValueError):
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(raw))
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


_ATTEMPTS_ATTR = "verify_attempts"


def note_attempts(exc: BaseException, attempts: int) -> None:
    """Record on ``exc`` how many requests the failed call made (read back by :func:`attempts_of`)."""
    with contextlib.suppress(AttributeError):  # an exception type with __slots__ keeps the default
        setattr(exc, _ATTEMPTS_ATTR, attempts)


def attempts_of(exc: BaseException) -> int:
    """How many requests a failed call made: what a layer noted on it, else 1."""
    value = getattr(exc, _ATTEMPTS_ATTR, None)
    return value if isinstance(value, int) else 1


_QUICK_RETRY_S = 0.25


@dataclass(frozen=True)
class Backoff:
    """Budget and backoff of one error category."""

    retries: int
    backoff_min: float
    backoff_max: float
    multiplier: float = 2.0
    jitter: bool = True

    def delay(self, attempt: int, rng: random.Random) -> float:
        """``min(backoff_min * multiplier**attempt, backoff_max)``, full-jittered: uniform(0, that)."""
        ceiling = min(self.backoff_min * self.multiplier**attempt, self.backoff_max)
        if ceiling <= 0:
            return 0.0
        return rng.uniform(0.0, ceiling) if self.jitter else ceiling


_NO_RETRY = Backoff(0, 0.0, 0.0)


def backoff_for(policy: RetryPolicy | None, category: str) -> Backoff:
    """One category's budget and backoff; ``None`` means ``RetryPolicy()`` (karenina's defaults).

    ``permanent`` and unknown categories never retry.
    """
    if category not in TRANSIENT_CATEGORIES:
        return _NO_RETRY
    if policy is None:
        policy = RetryPolicy()
    section = policy.for_category(category)
    return Backoff(
        retries=section.max_attempts,
        backoff_min=section.backoff_min,
        backoff_max=section.backoff_max,
        multiplier=section.backoff_multiplier,
        jitter=policy.jitter,
    )


class RetryingModel:
    """Retries transient failures of ``inner`` with per-category budgets (fresh for each call).

    Permanent errors and exhausted budgets raise :class:`ModelError` whose message names the
    model, the category and the last error (credentials redacted); an :class:`EndpointUnreachable`
    is raised as it is, and so is an :class:`EndpointNotAnswering`. With ``breaker`` (the one in
    front of the adapter), a retry that it would refuse is given up at once instead of after its
    backoff. ``retries_used`` counts the retries spent per category over the wrapper's life;
    ``delays`` lists every sleep taken. A reply's ``attempts`` (and, via :func:`attempts_of`, the
    final error's) count the requests of every try.
    """

    def __init__(
        self,
        inner: ChatModel,
        policy: RetryPolicy | None,
        *,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        rng: random.Random | None = None,
        max_retry_after: float = 60.0,
        patterns: Sequence[ErrorPatternConfig] = (),
        breaker: CircuitBreaker | None = None,
    ) -> None:
        if policy is None:
            policy = RetryPolicy()
        self.inner = inner
        self.breaker = breaker
        self.patterns = tuple(patterns)
        self.policy: RetryPolicy = policy
        self._sleep = sleep
        self._rng = rng if rng is not None else random.Random(0)
        self.max_retry_after = max_retry_after
        self.retries_used: dict[str, int] = dict.fromkeys(TRANSIENT_CATEGORIES, 0)
        self.failures: dict[str, int] = {}
        self.delays: list[float] = []

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def budgets(self) -> dict[str, int]:
        """Retries allowed per category for one call."""
        return {category: backoff_for(self.policy, category).retries for category in TRANSIENT_CATEGORIES}

    async def complete(self, request: ChatRequest) -> ChatReply:
        used: dict[str, int] = {}
        sent = 0  # requests made by the failed tries
        while True:
            try:
                reply = await self.inner.complete(request)
            except Exception as exc:  # noqa: BLE001 - classified below; permanent ones re-raised
                category = classify_error(exc, self.patterns)
                error: BaseException = exc
            else:
                return reply if sent == 0 else replace(reply, attempts=sent + reply.attempts)
            sent += attempts_of(error)
            backoff = self._backoff(error, category)
            attempt = used.get(category, 0)
            give_up = category not in TRANSIENT_CATEGORIES or attempt >= backoff.retries
            # a retry the breaker would refuse is given up now, not after its backoff
            refused = self.breaker.refusal("retry not sent") if self.breaker is not None and not give_up else None
            if give_up or refused is not None:
                self.failures[category] = self.failures.get(category, 0) + 1
                final = self._final_error(error, category, attempt)
                if refused is not None and not isinstance(error, EndpointUnreachable):  # that one says more
                    final = refused
                note_attempts(final, sent)
                if final is error:
                    raise error
                raise final from error
            used[category] = attempt + 1
            self.retries_used[category] = self.retries_used.get(category, 0) + 1
            delay = backoff.delay(attempt, self._rng)
            hinted = retry_after_seconds(error)
            if hinted is not None:
                delay = min(hinted, self.max_retry_after)
            self.delays.append(delay)
            log.info(
                "%s: %s error (retry %d/%d in %.2fs): %s",
                self.model_id,
                category,
                attempt + 1,
                backoff.retries,
                delay,
                redact(str(error), 200),
            )
            await self._sleep(delay)

    def _backoff(self, error: BaseException, category: str) -> Backoff:
        backoff = backoff_for(self.policy, category)
        if isinstance(error, EndpointNotAnswering):
            return _NO_RETRY
        if isinstance(error, EndpointUnreachable) and error.local:
            return Backoff(min(backoff.retries, 1), _QUICK_RETRY_S, _QUICK_RETRY_S, jitter=False)
        return backoff

    def _final_error(self, error: BaseException, category: str, retries: int) -> ModelError:
        if isinstance(error, EndpointUnreachable | EndpointNotAnswering) or (
            isinstance(error, ModelError) and category == "permanent"
        ):
            return error
        detail = redact(f"{type(error).__name__}: {error}")
        if category in TRANSIENT_CATEGORIES:
            message = f"{self.model_id}: {category} error, gave up after {retries} retries: {detail}"
        else:
            message = f"{self.model_id}: {detail}"
        return ModelError(message, category)


class LimitedModel:
    """Holds one slot of a shared semaphore while ``inner`` runs (the run's limit, or one server's)."""

    def __init__(self, inner: ChatModel, semaphore: asyncio.Semaphore) -> None:
        self.inner = inner
        self.semaphore = semaphore
        self.in_flight = 0
        self.peak_in_flight = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    async def complete(self, request: ChatRequest) -> ChatReply:
        async with self.semaphore:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            try:
                return await self.inner.complete(request)
            finally:
                self.in_flight -= 1
