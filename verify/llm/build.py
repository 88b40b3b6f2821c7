"""Build the :class:`~verify.llm.ports.ChatModel` a :class:`~verify.config.verification.ModelConfig` describes.

The chain (outermost first)::

    [LoggedModel ->] CachedModel -> RetryingModel -> LimitedModel (endpoint) -> LimitedModel (run)
        -> BreakerModel -> adapter

so a cache hit costs neither a retry budget nor a concurrency slot, and a call that is
sleeping out a backoff does not hold a slot (the limits count requests in flight). A call waits
for its endpoint's slot before it takes one of the run's, so a busy local server does not hold
slots that calls to other servers could use. The endpoint's circuit breaker checks each attempt
once it has its slots, right before it is sent.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from typing import TYPE_CHECKING

from verify.config.models import RetryPolicy
from verify.errors import ModelError
from verify.llm.adaptive import AdaptiveLimit, AdaptiveModel
from verify.llm.breaker import BreakerModel, CircuitBreaker, endpoint_of
from verify.llm.ports import ChatModel, ChatReply, ChatRequest, Purpose, Usage
from verify.llm.resilience import LimitedModel, RetryingModel

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from verify.config.models import ErrorPatternConfig, ModelConfig
    from verify.llm.cache import ResponseCache
    from verify.llm.call_log import CallLog

__all__ = ["CountingModel", "build_model"]


def build_model(
    config: ModelConfig,
    *,
    cache: ResponseCache | None = None,
    limiter: asyncio.Semaphore | None = None,
    endpoint_limiter: asyncio.Semaphore | None = None,
    policy: RetryPolicy | None = None,
    request_timeout: float | None = None,
    api_key_env: Mapping[str, str] | None = None,
    adapter_factory: Callable[[ModelConfig], ChatModel] | None = None,
    error_patterns: Sequence[ErrorPatternConfig] = (),
    breaker: CircuitBreaker | None = None,
    adaptive: AdaptiveLimit | None = None,
    call_log: CallLog | None = None,
    seed: int = 0,
) -> ChatModel:
    """The adapter for ``config.interface`` (or ``adapter_factory``'s), wrapped in retry, limiters and cache.

    ``limiter`` is the run's limit on calls in flight, ``endpoint_limiter`` the one of the
    model's server (``ModelConfig.max_concurrent_requests``, shared by models on one endpoint).
    ``policy`` and ``request_timeout`` are the run's defaults: the model's own
    ``retry_policy`` / ``request_timeout`` win when set (karenina stamps them the same way);
    with neither, karenina's default RetryPolicy and the SDK's timeout apply. ``breaker`` is the
    circuit breaker of the model's server (shared by the models on it); without one the model gets
    its own, unless the policy's ``breaker_failures`` is 0. ``adaptive`` is the server's limit found
    while the run goes (:mod:`verify.llm.adaptive`), when the run leaves concurrency to verify: it sits
    inside the retries, so a backoff holds no slot and every attempt tells it how the server coped.
    ``call_log``: every call is logged there (outside the cache, so a cached reply is logged too).
    ``seed``: the run's seed, for the randomness verify owns (the simulated model's draws unless its
    ``extra_kwargs`` set a seed, and the retries' jitter). ``manual`` has no live model and raises
    :class:`ModelError`.
    """
    interface = config.interface
    if config.request_timeout is None and request_timeout is not None:
        config = config.model_copy(update={"request_timeout": request_timeout})
    model: ChatModel
    if interface == "manual":
        raise ModelError("manual interface has no live model", "permanent")
    if adapter_factory is not None:  # a fake or the caller's own client: same chain as ours
        model = adapter_factory(config)
    elif interface == "simulated":
        from verify.llm.simulated.model import SimulatedModel

        model = SimulatedModel(config, seed=seed)
    else:
        from verify.llm.adapters.openai_compatible import OpenAICompatibleModel, serves

        if serves(config):  # an OpenAI-compatible server: our own client, no langchain import
            model = OpenAICompatibleModel(config, api_key_env=api_key_env)
        else:
            from verify.llm.adapters.langchain import LangChainModel

            model = LangChainModel(config, api_key_env=api_key_env)
    policy = config.retry_policy or policy or RetryPolicy()
    if breaker is None and policy.breaker_failures:
        failures, cooldown = policy.breaker_failures, policy.breaker_cooldown_seconds
        breaker = CircuitBreaker(endpoint_of(config).name, failures=failures, cooldown=cooldown)
    if breaker is not None:
        model = BreakerModel(model, breaker, error_patterns)
    if limiter is not None:
        model = LimitedModel(model, limiter)
    if endpoint_limiter is not None:
        model = LimitedModel(model, endpoint_limiter)
    if adaptive is not None:
        model = AdaptiveModel(model, adaptive)
    model = RetryingModel(model, policy, patterns=error_patterns, breaker=breaker, rng=random.Random(seed))
    if cache is not None:
        from verify.llm.cache import CachedModel

        model = CachedModel(model, cache)
    if call_log is not None:
        from verify.llm.call_log import LoggedModel, model_parameters

        model = LoggedModel(model, call_log, model_parameters(config))
    return model


class CountingModel:
    """Counts calls, usage and calls per purpose of ``inner`` (for tests and benchmarks)."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.calls = 0
        self.cached_calls = 0
        self.failures = 0
        self.usage = Usage()
        self.latency_s = 0.0
        self.by_purpose: Counter[Purpose] = Counter()
        self.requests: list[ChatRequest] = []

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    async def complete(self, request: ChatRequest) -> ChatReply:
        self.calls += 1
        self.by_purpose[request.purpose] += 1
        self.requests.append(request)
        try:
            reply = await self.inner.complete(request)
        except Exception:
            self.failures += 1
            raise
        self.usage = self.usage + reply.usage
        self.latency_s += reply.latency_s
        if reply.cached:
            self.cached_calls += 1
        return reply
