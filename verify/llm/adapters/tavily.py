"""Search adapters: Tavily (real web search), a wrapped user callable, and the ``make_search`` factory.

:class:`TavilySearch` always needs an explicit key: tavily-python 0.8 quietly runs in *keyless* mode
(queries sent to the public API) when the key is missing, which a verification tool that handles
user data must never do. The client has no retries, so this module retries 429s, 5xx, timeouts and
connection errors itself, with exponential backoff and jitter.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import random
from collections.abc import Callable, Iterable
from typing import Any

import httpx

from verify.errors import ConfigError, ModelSetupError, SearchError
from verify.llm.extras import import_extra
from verify.llm.ports import Search, SearchHit

_MAX_RETRY_AFTER_S = 60.0


class TavilySearch:
    """The Search port over Tavily's ``/search`` endpoint (``api_base_url`` points it elsewhere).

    Queries longer than ``max_query_chars`` (Tavily's limit is 400) are cut at a word boundary.
    """

    def __init__(
        self,
        api_key: str,
        *,
        api_base_url: str | None = None,
        max_results: int = 3,
        search_depth: str = "basic",
        timeout: float = 30,
        max_attempts: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        max_query_chars: int = 400,
    ) -> None:
        if not isinstance(api_key, str) or not api_key.strip():
            raise ModelSetupError(
                "Tavily search needs an API key: set TAVILY_API_KEY or pass api_key",
                hint="get a key at https://tavily.com, or use the 'simulated' search tool offline",
            )
        self._api_key = api_key.strip()
        self.api_base_url = api_base_url
        self.max_results = max_results
        self.search_depth = search_depth
        self.timeout = timeout
        self.max_attempts = max(1, max_attempts)
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.max_query_chars = max_query_chars
        self.calls = 0

    def __repr__(self) -> str:
        base = self.api_base_url or "https://api.tavily.com"
        return f"TavilySearch(api_base_url={base!r}, max_results={self.max_results}, search_depth={self.search_depth!r})"

    async def search(self, query: str) -> list[SearchHit]:
        self.calls += 1
        query = _shorten(query, self.max_query_chars)
        last = "no attempt made"
        tavily = import_extra("tavily", "Tavily web search", "tavily")  # an extra: imported only when searching
        async with tavily.AsyncTavilyClient(api_key=self._api_key, api_base_url=self.api_base_url) as client:
            if getattr(client, "_keyless", False):  # never send user data to the keyless public API
                raise ModelSetupError(
                    "Tavily client fell into keyless mode; refusing to search without a key"
                )
            for attempt in range(1, self.max_attempts + 1):
                try:
                    response = await client.search(
                        query,
                        search_depth=self.search_depth,
                        max_results=self.max_results,
                        timeout=self.timeout,
                    )
                except Exception as exc:
                    retry, reason = _classify(exc)
                    reason = self._scrub(reason)
                    if not retry:
                        raise SearchError(f"Tavily search failed: {reason}") from exc
                    last = reason
                    if attempt < self.max_attempts:
                        await asyncio.sleep(self._delay(attempt, exc))
                    continue
                return _hits_from_tavily(response, self.max_results)
        raise SearchError(f"Tavily search failed after {self.max_attempts} attempts: {last}")

    def _delay(self, attempt: int, exc: BaseException) -> float:
        retry_after = getattr(exc, "retry_after_seconds", None)
        if isinstance(retry_after, int | float) and retry_after >= 0:
            return min(float(retry_after), _MAX_RETRY_AFTER_S)
        base = min(self.backoff_s * 2 ** (attempt - 1), self.max_backoff_s)
        return float(base * random.uniform(0.5, 1.0))

    def _scrub(self, text: str) -> str:
        return text.replace(self._api_key, "[redacted]")


def _classify(exc: BaseException) -> tuple[bool, str]:
    """(worth retrying, what happened) for an exception from the Tavily client."""
    from tavily.errors import BadRequestError, ForbiddenError, InvalidAPIKeyError, UsageLimitExceededError
    from tavily.errors import TimeoutError as TavilyTimeoutError

    detail = str(exc).strip()
    suffix = f": {detail}" if detail else ""
    if isinstance(exc, UsageLimitExceededError):
        return True, f"rate limited (HTTP 429){suffix}"
    if isinstance(exc, TavilyTimeoutError | httpx.TimeoutException):
        return True, f"timed out{suffix}"
    if isinstance(exc, httpx.TransportError):
        return True, f"connection error ({type(exc).__name__}){suffix}"
    if isinstance(exc, json.JSONDecodeError):
        return True, "the reply was not valid JSON"
    if isinstance(exc, InvalidAPIKeyError):
        return False, "the API key was rejected (HTTP 401); check TAVILY_API_KEY"
    if isinstance(exc, BadRequestError):
        return False, f"bad request (HTTP 400){suffix}"
    if isinstance(exc, ForbiddenError):
        return False, f"forbidden: plan or usage limit reached (HTTP 403/432/433){suffix}"
    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        return status >= 500 or status == 408, f"HTTP {status} from {exc.request.url}"
    return False, f"{type(exc).__name__}{suffix}"


def _shorten(query: str, limit: int) -> str:
    query = " ".join(query.split())
    if len(query) <= limit:
        return query
    cut = query[:limit]
    space = cut.rfind(" ")
    return cut[:space] if space > limit // 2 else cut


def _hits_from_tavily(response: Any, max_results: int) -> list[SearchHit]:
    results = response.get("results") if isinstance(response, dict) else None
    return normalize_hits(results or [])[:max_results]


def normalize_hits(items: Any) -> list[SearchHit]:
    """Turn what a search returned into hits, skipping items without content.

    Accepts one string, a Tavily-style ``{"results": [...]}`` dict, or an iterable of strings,
    ``{"content"|"text"|"snippet", "title", "url"}`` dicts and :class:`SearchHit` objects.
    """
    if items is None:
        return []
    if isinstance(items, str | SearchHit):
        items = [items]
    elif isinstance(items, dict):
        items = items.get("results", [items])
    if not isinstance(items, Iterable):
        raise SearchError(f"search returned {type(items).__name__}, expected a list of results")
    hits: list[SearchHit] = []
    for item in items:
        if isinstance(item, SearchHit):
            hit = item
        elif isinstance(item, str):
            hit = SearchHit(content=item)
        elif isinstance(item, dict):
            content = next((item[k] for k in ("content", "text", "snippet") if item.get(k)), "")
            title, url = item.get("title"), item.get("url")
            hit = SearchHit(
                content=str(content),
                title=None if title is None else str(title),
                url=None if url is None else str(url),
            )
        else:
            raise SearchError(
                f"search returned an item of type {type(item).__name__}; expected str, dict or SearchHit"
            )
        if hit.content and hit.content.strip():
            hits.append(hit)
    return hits


class CallableSearch:
    """The Search port over a user function ``fn(query) -> results`` (sync or async).

    LangChain tools work too (``ainvoke`` / ``invoke``). Sync functions run in a worker thread.
    Results are normalised by :func:`normalize_hits`; an exception becomes :class:`SearchError`.
    """

    def __init__(self, fn: Callable[[str], Any] | Any, *, name: str | None = None) -> None:
        self.fn = fn
        self.name = name or getattr(fn, "name", None) or getattr(fn, "__name__", None) or type(fn).__name__
        self.calls = 0

    def __repr__(self) -> str:
        return f"CallableSearch({self.name!r})"

    async def search(self, query: str) -> list[SearchHit]:
        self.calls += 1
        try:
            result = await self._call(query)
            return normalize_hits(result)
        except SearchError:
            raise
        except Exception as exc:
            raise SearchError(f"search function {self.name!r} failed: {type(exc).__name__}: {exc}") from exc

    async def _call(self, query: str) -> Any:
        fn = self.fn
        if hasattr(fn, "ainvoke"):
            return await fn.ainvoke(query)
        if hasattr(fn, "invoke") and not callable(fn):
            return await asyncio.to_thread(fn.invoke, query)
        if inspect.iscoroutinefunction(fn):
            return await fn(query)
        result = await asyncio.to_thread(fn, query)
        if inspect.isawaitable(result):
            result = await result
        return result


def make_search(
    tool: str | Search | Callable[[str], Any],
    *,
    api_key: str | None = None,
    api_base_url: str | None = None,
    max_results: int = 3,
) -> Search:
    """Build the Search for a configured tool: ``"tavily"``, ``"simulated"``, a Search or a callable.

    For ``"tavily"`` the key is ``api_key`` or else ``TAVILY_API_KEY``; without one this raises
    :class:`ModelSetupError` (never keyless mode).
    """
    if isinstance(tool, str):
        name = tool.strip().lower()
        if name == "tavily":
            key = api_key or os.environ.get("TAVILY_API_KEY") or ""
            return TavilySearch(key, api_base_url=api_base_url, max_results=max_results)
        if name == "simulated":
            from verify.llm.simulated.search import SimulatedSearch

            return SimulatedSearch(k=max_results)
        raise ConfigError(
            f"unknown search tool {tool!r}", hint="use 'tavily', 'simulated' or a Python callable"
        )
    if isinstance(tool, Search):
        return tool
    if callable(tool) or hasattr(tool, "ainvoke") or hasattr(tool, "invoke"):
        return CallableSearch(tool)
    raise ConfigError(
        f"search tool must be 'tavily', 'simulated' or a callable, got {type(tool).__name__}",
        hint="pass a function that takes a query string and returns a list of results",
    )
