"""What a run shares between its tasks: one live model per model config, the response cache, the
concurrency limits (the run's, and one per model server), one circuit breaker per model server and
the search ports. Built before any task runs, closed when the run ends."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verify.errors import ConfigError
from verify.llm.adaptive import CEILING, AdaptiveLimit
from verify.llm.breaker import CircuitBreaker, endpoint_of
from verify.llm.endpoints import base_url_of, url_key
from verify.llm.ports import ChatModel, Search
from verify.run.tasks import canonical

if TYPE_CHECKING:
    from verify.config.models import ModelConfig, RetryPolicy
    from verify.config.verification import VerificationConfig
    from verify.llm.cache import ResponseCache
    from verify.llm.call_log import CallLog

__all__ = [
    "AdapterFactory", "Services", "endpoint_breakers", "endpoint_key", "endpoint_limiters", "search_port",
]

#: Builds the innermost model (the adapter) for a model config; the run always wraps it in the
#: same cache -> retry -> limit chain as the adapters verify builds itself.
AdapterFactory = Callable[["ModelConfig"], ChatModel]


def search_port(tool: Any, cache: ResponseCache | None) -> Search:
    """The search for ``tool`` ("tavily", "simulated" or a callable), with results cached."""
    from verify.llm.adapters.tavily import make_search
    from verify.llm.cache import CachedSearch

    tool_id = tool if isinstance(tool, str) else getattr(tool, "__qualname__", repr(tool))
    # API keys are read here, at the edge, never inside the config model.
    return CachedSearch(make_search(tool, api_key=os.environ.get("TAVILY_API_KEY")), cache, tool_id=tool_id)


def endpoint_key(model: ModelConfig) -> str:
    """The server ``model`` is served by: its endpoint URL (without a trailing ``/`` or ``/v1``),
    else the model itself."""
    url = base_url_of(model)
    return url_key(url) if url is not None else canonical(model)


def endpoint_limiters(models: Iterable[ModelConfig]) -> dict[str, asyncio.Semaphore]:
    """One semaphore per server that a model caps (``max_concurrent_requests``): models served by
    the same endpoint share it, sized by the smallest cap among them."""
    caps: dict[str, int] = {}
    for model in models:
        cap = model.max_concurrent_requests
        if cap is not None:
            key = endpoint_key(model)
            caps[key] = min(cap, caps.get(key, cap))
    return {key: asyncio.Semaphore(cap) for key, cap in caps.items()}


def endpoint_breakers(models: Iterable[ModelConfig], policy: RetryPolicy) -> dict[str, CircuitBreaker]:
    """One circuit breaker per server (:func:`~verify.llm.breaker.endpoint_of`): models served by the
    same endpoint share it, with the strictest settings among them (fewest failures, longest
    cooldown). ``policy`` is the run's; a model whose own policy sets ``breaker_failures=0`` gets none."""
    found: dict[str, tuple[str, int, float]] = {}
    for model in models:
        own = model.retry_policy or policy
        if model.interface == "manual" or not own.breaker_failures:
            continue
        key, name = endpoint_of(model)
        _, failures, cooldown = found.get(key, (name, own.breaker_failures, own.breaker_cooldown_seconds))
        found[key] = (name, min(failures, own.breaker_failures), max(cooldown, own.breaker_cooldown_seconds))
    return {key: CircuitBreaker(name, failures=n, cooldown=s) for key, (name, n, s) in found.items()}


class Services:
    """One live model per model config, built on first use and shared by all tasks."""

    def __init__(
        self, config: VerificationConfig, cache_dir: Path | None, adapter_factory: AdapterFactory | None,
        call_log: CallLog | None = None,
    ) -> None:
        self.config = config
        self.call_log = call_log
        self.adapter_factory = adapter_factory
        self.built: dict[str, ChatModel] = {}
        self.cache: ResponseCache | None = None
        if cache_dir is not None:
            from verify.llm.cache import ResponseCache

            try:
                self.cache = ResponseCache(Path(cache_dir) / "responses.sqlite")
            except OSError as exc:
                raise ConfigError(
                    f"cache folder {cache_dir}: {exc.strerror or exc}", "pass another --cache-dir, or --no-cache"
                ) from None
        limit = config.max_concurrent_requests
        self.limiter = asyncio.Semaphore(limit) if limit else None
        models = [*config.answering_models, *config.parsing_models]
        self.endpoint_limiters = endpoint_limiters(models)
        self.breakers = endpoint_breakers(models, config.retry_policy)
        self.configs: dict[str, ModelConfig] = {}
        # no async_max_workers: every task may start, and each server's calls in flight are found
        # while the run goes (verify/llm/adaptive.py), under the fixed caps the config gives
        self.adaptive: dict[str, AdaptiveLimit] | None = (
            {} if config.async_enabled and config.async_max_workers is None else None
        )

    def judge_variant(self, judge: ModelConfig, name: str | None, provider: str | None,
                      temperature: float | None) -> ChatModel:
        """``judge`` with a trait's own model name, provider or temperature (a letta grader's
        ``model``/``temperature``, a Docent judge's ``judge_model``): same interface, endpoint and
        credentials, built and cached like every model of the run."""
        given = {"model_name": name, "model_provider": provider, "temperature": temperature}
        variant = judge.model_copy(update={k: v for k, v in given.items() if v is not None})
        # its own id: models are built once per interface, name and id, and temperature is not in that
        variant.id = f"{judge.id}+{variant.model_provider}:{variant.model_name}@{variant.temperature}"
        built = self.model(variant)
        assert built is not None  # a judge is never the manual interface
        return built

    def model(self, model: ModelConfig) -> ChatModel | None:
        """The live model of ``model`` (``None`` for the manual interface, which only replays)."""
        key = canonical(model)
        if key not in self.built:
            if model.interface == "manual":
                return None
            from verify.llm.build import build_model

            self.built[key] = build_model(
                model, cache=self.cache, limiter=self.limiter, policy=self.config.retry_policy,
                endpoint_limiter=self.endpoint_limiters.get(endpoint_key(model)),
                request_timeout=self.config.request_timeout, adapter_factory=self.adapter_factory,
                error_patterns=self.config.custom_error_patterns,
                breaker=self.breakers.get(endpoint_of(model).key), adaptive=self._adaptive_limit(model),
                call_log=self.call_log, seed=self.config.seed,
            )
            self.configs[key] = model
        return self.built[key]

    def _adaptive_limit(self, model: ModelConfig) -> AdaptiveLimit | None:
        if self.adaptive is None:
            return None
        key = endpoint_key(model)
        limit = self.adaptive.get(key)
        if limit is None:
            models = [*self.config.answering_models, *self.config.parsing_models, model]
            given = [self.config.max_concurrent_requests, *(m.max_concurrent_requests for m in models
                                                            if endpoint_key(m) == key)]  # fmt: skip
            caps = [c for c in given if c]
            limit = self.adaptive[key] = AdaptiveLimit(key, ceiling=min([CEILING, *caps]))
        return limit

    def structured_output_methods(self) -> dict[str, str]:
        """``{model id: structured-output method}`` of the built models whose adapter says which
        method it uses (``structured_output``: json_schema, json_mode, function_calling or none)."""
        methods: dict[str, str] = {}
        for key, built in self.built.items():
            layer: Any = built
            while layer is not None and not isinstance(getattr(layer, "structured_output", None), str):
                layer = getattr(layer, "inner", None)  # walk the wrapper chain down to the adapter
            if layer is not None:
                model_id = self.configs[key].id
                methods[key if model_id is None or model_id in methods else model_id] = layer.structured_output
        return methods

    def rubric_search(self) -> Search:
        return search_port(self.config.deep_judgment_rubric_search_tool, self.cache)

    def template_search(self) -> Search | None:
        """The search for template deep judgment (``deep_judgment_search_tool``), when it may run."""
        config = self.config
        if not config.template_enabled or config.deep_judgment_mode != "full" or not config.deep_judgment_search_enabled:
            return None
        return search_port(config.deep_judgment_search_tool, self.cache)

    async def close(self) -> None:
        """Close the HTTP clients of the adapters verify built, and the cache."""
        for built in self.built.values():
            layer: Any = built
            while layer is not None:  # walk the wrapper chain down to the adapter
                if self.adapter_factory is not None and getattr(layer, "inner", None) is None:
                    break  # an injected adapter belongs to the caller
                closer = getattr(layer, "aclose", None)
                if closer is not None:
                    await closer()
                layer = getattr(layer, "inner", None)
        if self.cache is not None:
            self.cache.close()
        if self.call_log is not None:
            self.call_log.close()
