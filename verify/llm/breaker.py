"""A circuit breaker per model server: stop sending calls to an endpoint that does not answer.

A server that accepts connections and never replies costs a whole ``request_timeout`` per
attempt, and every retry of every call pays it again: hours for a small run. So a
:class:`CircuitBreaker` counts the attempts in a row that timed out or could not connect, over
every call to its endpoint (retries and concurrent calls included). When the count reaches
``RetryPolicy.breaker_failures`` the breaker opens:

* **open**: calls are refused at once, without being sent, with
  :class:`~verify.llm.endpoints.EndpointNotAnswering` (category ``timeout`` or ``connection``, as
  the failures were, so the task is recorded as a retryable error that ``--resume`` runs again).
  Calls admitted earlier and still waiting are abandoned with the same error: a call may queue
  inside the adapter (the first structured calls to a server go one at a time) and would
  otherwise still be sent, each waiting out its whole timeout. One warning is logged when it opens.
* **half-open**: ``breaker_cooldown_seconds`` after it opened, one call (the probe) is let
  through while the others are still refused. A reply closes the breaker; another timeout or
  connection failure opens it for another cooldown.
* **closed**: calls go through; any reply resets the count.

A rate limit or a server error (429, 5xx) is an answer too: it resets the count and never trips
the breaker (those have their own retries). Other errors (a rejected request, a cancelled call)
say nothing about whether the server answers and leave the count as it is.

:class:`BreakerModel` puts a breaker in front of an adapter. It sits inside the concurrency
limits, so a call that queued for a slot is checked when it is about to be sent, not when it
started waiting. Breakers are shared by the models on one server, keyed by :func:`endpoint_of`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from verify.llm.adapters.langchain_messages import endpoint_url
from verify.llm.endpoints import EndpointNotAnswering, base_url_of, connection_refused, shown_url, url_key
from verify.llm.ports import ChatModel, ChatReply, ChatRequest
from verify.llm.resilience import classify_error, note_attempts

if TYPE_CHECKING:
    from verify.config.models import ErrorPatternConfig, ModelConfig

__all__ = ["BreakerModel", "CircuitBreaker", "Endpoint", "endpoint_of"]

log = logging.getLogger("verify")

#: categories of an attempt that got no answer at all
_NO_ANSWER = frozenset({"timeout", "connection"})
#: categories of an attempt the server did answer, just not with a reply
_ANSWERED = frozenset({"rate_limit", "server_error"})
_NOUNS = {"timeout": ("timeout", "timeouts"), "connection": ("connection failure", "connection failures")}


class Endpoint(NamedTuple):
    """Where a model's calls go: ``key`` groups the models that share a breaker, ``name`` is how
    messages show it (without credentials)."""

    key: str
    name: str


def endpoint_of(model: ModelConfig) -> Endpoint:
    """The server's URL when the config names one (the models on it share a breaker), else the
    hosted provider and model name (a provider's other models have breakers of their own)."""
    url = base_url_of(model)
    if url is not None:
        if model.interface == "openai_endpoint":  # named as the adapter sends to it, with its /v1
            url = endpoint_url(url, (model.extra_kwargs or {}).get("endpoint_base_url_mode"))
        return Endpoint(url_key(url), shown_url(url))
    provider = model.model_provider or model.interface
    return Endpoint(f"{model.interface}:{provider}:{model.model_name}", f"{provider}:{model.model_name}")


class CircuitBreaker:
    """The state of one endpoint: closed, open (calls refused) or half-open (one probe may go).

    ``opened`` counts the times it opened from closed, ``refused`` the calls it refused and
    ``abandoned`` those it cut short. ``pending`` holds the admitted calls still running (kept by
    :class:`BreakerModel`), so that opening can cut them short.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        failures: int = 3,
        cooldown: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if failures < 1:
            raise ValueError("a circuit breaker needs failures >= 1 (0 means: build none)")
        self.endpoint = endpoint
        self.failures = failures
        self.cooldown = cooldown
        self._clock = clock
        self._streak: Counter[str] = Counter()  # attempts in a row without an answer, per category
        self._why = ("", "timeout")  # what opened it, and the category its refusals get
        self._hint: str | None = None
        self._opened_at: float | None = None
        self._probing = False
        self.opened = 0
        self.refused = 0
        self.abandoned = 0
        self.pending: set[asyncio.Future[Any]] = set()
        self.cut: set[asyncio.Future[Any]] = set()  # pending calls cancelled by the opening

    @property
    def state(self) -> Literal["closed", "open", "half_open"]:
        if self._opened_at is None:
            return "closed"
        return "half_open" if self._cooled() else "open"

    def _cooled(self) -> bool:
        return self._opened_at is not None and self._clock() - self._opened_at >= self.cooldown

    def refusal(self, outcome: str = "call not sent") -> EndpointNotAnswering | None:
        """The error a call sent now would get, or ``None`` when it may go (this claims no probe)."""
        if self._opened_at is None or (self._cooled() and not self._probing):
            return None
        return self.error(outcome)

    def error(self, outcome: str) -> EndpointNotAnswering:
        """The error of a call that this breaker refused (or cut short), saying why."""
        error = EndpointNotAnswering(self.endpoint, *self._why, outcome=outcome, hint=self._hint)
        note_attempts(error, 0)  # nothing was sent
        return error

    def admit(self) -> bool:
        """Let one call be sent, or raise :class:`EndpointNotAnswering`; ``True`` when the call is
        the half-open probe (its outcome decides whether the breaker closes)."""
        error = self.refusal()
        if error is not None:
            self.refused += 1
            raise error
        if self._opened_at is None:
            return False
        self._probing = True
        log.info("endpoint %s: letting one call through to see whether it answers again", self.endpoint)
        return True

    def record(self, category: str | None, *, probe: bool, error: BaseException | None = None) -> None:
        """The outcome of an admitted call: ``None`` for a reply, else its error's category (and the
        error, whose kind the refusals then mention)."""
        if probe:
            self._probing = False
        if category is None or category in _ANSWERED:
            if self._opened_at is not None:
                log.info("endpoint %s answers again; calls to it are sent again", self.endpoint)
            self._streak.clear()
            self._opened_at = None
            return
        if category not in _NO_ANSWER:
            return
        self._streak[category] += 1
        if self._opened_at is None and self._streak.total() >= self.failures:
            self._opened_at = self._clock()
            self.opened += 1
            # every refusal tells the same story, so a run's report groups them into one line
            self._why = (self._what_failed(), category)
            refused = error is not None and connection_refused(error)
            self._hint = "connection refused: is the server running?" if refused else None
            log.warning(
                "endpoint %s is not answering (%s in a row): calls to it fail without being sent; "
                "one is let through every %g s to see whether it is back%s",
                self.endpoint, self._why[0], self.cooldown, f"; {self._hint}" if self._hint else "",
            )  # fmt: skip
            for call in self.pending - self.cut:  # they would each wait out the same timeout
                self.cut.add(call)
                call.cancel()
        elif probe:
            self._opened_at = self._clock()  # still no answer: wait out another cooldown
        # a call sent before the breaker opened that fails now only adds to the count

    def _what_failed(self) -> str:
        """``"3 timeouts"``, ``"2 timeouts and 1 connection failure"``."""
        parts = []
        for category, (one, many) in _NOUNS.items():
            n = self._streak[category]
            if n:
                parts.append(f"{n} {one if n == 1 else many}")
        return " and ".join(parts)


class BreakerModel:
    """Sends each call to ``inner`` only when ``breaker`` admits it, and tells the breaker how it went.

    ``patterns`` (``custom_error_patterns``) classify errors as :class:`RetryingModel` does.
    """

    def __init__(
        self, inner: ChatModel, breaker: CircuitBreaker, patterns: Sequence[ErrorPatternConfig] = ()
    ) -> None:
        self.inner = inner
        self.breaker = breaker
        self.patterns = tuple(patterns)

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    async def complete(self, request: ChatRequest) -> ChatReply:
        breaker = self.breaker
        probe = breaker.admit()
        # a task of its own, so that the breaker can cancel it without cancelling our caller
        call = asyncio.ensure_future(self.inner.complete(request))
        breaker.pending.add(call)
        outcome: str | None = "cancelled"  # until the call returns or raises
        failure: BaseException | None = None
        try:
            reply = await call
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if call not in breaker.cut or (task is not None and task.cancelling()):
                raise  # our caller was cancelled
            outcome = "abandoned"
            breaker.abandoned += 1
            error = breaker.error("call abandoned")
            note_attempts(error, 1)  # it may have been sent
            raise error from None
        except Exception as exc:
            outcome, failure = classify_error(exc, self.patterns), exc
            raise
        else:
            outcome = None
            return reply
        finally:
            breaker.pending.discard(call)
            breaker.cut.discard(call)
            breaker.record(outcome, probe=probe, error=failure)
