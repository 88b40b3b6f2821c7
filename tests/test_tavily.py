"""Search adapters: Tavily against a loopback fake, CallableSearch, make_search and SimulatedSearch."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from tavily.errors import TavilyKeylessLimitError

from verify.errors import ConfigError, ModelSetupError, SearchError, UserError
from verify.llm.adapters.tavily import CallableSearch, TavilySearch, make_search, normalize_hits
from verify.llm.ports import Search, SearchHit
from verify.llm.simulated.search import SimulatedSearch

KEY = "tvly-secret-0123456789"
RESULTS = {
    "query": "capital of France",
    "answer": None,
    "images": [],
    "results": [
        {
            "title": "Paris",
            "url": "https://en.wikipedia.org/wiki/Paris",
            "content": "Paris is the capital of France.",
            "score": 0.9,
        },
        {"title": "Empty", "url": "https://example.org/empty", "content": "", "score": 0.5},
        {
            "title": "France",
            "url": "https://en.wikipedia.org/wiki/France",
            "content": "France is in Europe.",
            "score": 0.4,
        },
    ],
    "response_time": 0.1,
}


class FakeTavily:
    """A loopback Tavily: POST /search answers from a script of (status, body, delay) then RESULTS."""

    def __init__(self, script: list[tuple[int, Any, float]] | None = None) -> None:
        self.script = list(script or [])
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                fake.requests.append({"path": self.path, "headers": dict(self.headers), "json": body})
                status, payload, delay = fake.script.pop(0) if fake.script else (200, RESULTS, 0.0)
                time.sleep(delay)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (timeout test)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake_tavily() -> Iterator[FakeTavily]:
    fake = FakeTavily()
    yield fake
    fake.stop()


def tavily(url: str, **kwargs: Any) -> TavilySearch:
    return TavilySearch(KEY, api_base_url=url, backoff_s=0.0, **kwargs)


def error(status: int, detail: str, delay: float = 0.0) -> tuple[int, Any, float]:
    return status, {"detail": {"error": detail}}, delay


# -- TavilySearch -------------------------------------------------------------------------------


async def test_tavily_maps_results_and_sends_the_key(fake_tavily: FakeTavily) -> None:
    hits = await tavily(fake_tavily.url, max_results=5).search("capital of France")
    assert hits == [
        SearchHit("Paris is the capital of France.", "Paris", "https://en.wikipedia.org/wiki/Paris"),
        SearchHit("France is in Europe.", "France", "https://en.wikipedia.org/wiki/France"),
    ]
    [request] = fake_tavily.requests
    assert request["path"] == "/search"
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    assert "X-Tavily-Access-Mode" not in request["headers"]  # not keyless
    assert request["json"] == {"query": "capital of France", "search_depth": "basic", "max_results": 5}


async def test_tavily_cuts_hits_to_max_results(fake_tavily: FakeTavily) -> None:
    assert len(await tavily(fake_tavily.url, max_results=1).search("q")) == 1


async def test_tavily_retries_429_then_succeeds() -> None:
    fake = FakeTavily([error(429, "rate limited"), error(429, "rate limited")])
    try:
        hits = await tavily(fake.url).search("capital of France")
    finally:
        fake.stop()
    assert hits[0].title == "Paris"
    assert len(fake.requests) == 3


async def test_tavily_retries_5xx_then_gives_up() -> None:
    fake = FakeTavily([error(502, "bad gateway")] * 3)
    try:
        with pytest.raises(SearchError, match="after 3 attempts: HTTP 502"):
            await tavily(fake.url).search("q")
    finally:
        fake.stop()
    assert len(fake.requests) == 3


async def test_tavily_401_is_permanent_and_hides_the_key() -> None:
    fake = FakeTavily([error(401, f"invalid key {KEY}")])
    try:
        with pytest.raises(SearchError) as caught:
            await tavily(fake.url).search("q")
    finally:
        fake.stop()
    assert "API key was rejected" in str(caught.value)
    assert KEY not in str(caught.value)
    assert len(fake.requests) == 1


async def test_tavily_400_is_permanent_and_scrubs_the_key() -> None:
    fake = FakeTavily([error(400, f"bad query for key {KEY}")])
    try:
        with pytest.raises(SearchError, match="bad request") as caught:
            await tavily(fake.url).search("q")
    finally:
        fake.stop()
    assert KEY not in str(caught.value) and "[redacted]" in str(caught.value)
    assert len(fake.requests) == 1


async def test_tavily_retries_timeouts() -> None:
    fake = FakeTavily([(200, RESULTS, 1.0)])
    try:
        hits = await tavily(fake.url, timeout=0.2).search("q")
    finally:
        fake.stop()
    assert hits and len(fake.requests) == 2


async def test_tavily_connection_errors_are_retried_then_raised() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    search = tavily(f"http://127.0.0.1:{port}")
    with pytest.raises(SearchError, match="after 3 attempts: connection error") as caught:
        await search.search("q")
    assert KEY not in str(caught.value)
    assert search.calls == 1


async def test_tavily_shortens_long_queries(fake_tavily: FakeTavily) -> None:
    await tavily(fake_tavily.url).search("word " * 200)
    sent = fake_tavily.requests[0]["json"]["query"]
    assert len(sent) <= 400 and sent.endswith("word")


def test_tavily_honours_retry_after() -> None:
    search = TavilySearch(KEY, backoff_s=5.0)
    limited = TavilyKeylessLimitError("slow down", retry_after_seconds=2)
    assert search._delay(1, limited) == 2.0
    assert 2.5 <= search._delay(1, RuntimeError()) <= 5.0


@pytest.mark.parametrize("key", ["", "   "])
def test_tavily_needs_a_key(key: str) -> None:
    with pytest.raises(ModelSetupError, match="Tavily search needs an API key") as caught:
        TavilySearch(key)
    assert isinstance(caught.value, UserError)


def test_repr_hides_the_key() -> None:
    assert KEY not in repr(TavilySearch(KEY))


# -- make_search --------------------------------------------------------------------------------


def test_make_search_tavily_reads_the_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    with pytest.raises(ModelSetupError, match="TAVILY_API_KEY"):
        make_search("tavily", api_key=None)
    monkeypatch.setenv("TAVILY_API_KEY", KEY)
    assert isinstance(make_search("Tavily", api_key=None), TavilySearch)
    assert isinstance(make_search("tavily", api_key="tvly-other"), TavilySearch)


def test_make_search_other_tools() -> None:
    assert isinstance(make_search("simulated", api_key=None), SimulatedSearch)
    existing = SimulatedSearch()
    assert make_search(existing, api_key=None) is existing
    assert isinstance(make_search(lambda q: [q], api_key=None), CallableSearch)
    with pytest.raises(ConfigError, match="unknown search tool"):
        make_search("bing", api_key=None)
    with pytest.raises(ConfigError):
        make_search(42, api_key=None)  # type: ignore[arg-type]


# -- CallableSearch -----------------------------------------------------------------------------


async def test_callable_search_sync_function() -> None:
    seen: list[str] = []

    def lookup(query: str) -> list[Any]:
        seen.append(query)
        return [
            "plain text",
            {"content": "from a dict", "title": "T", "url": "https://x"},
            {"title": "no content"},
        ]

    search = make_search(lookup, api_key=None)
    assert isinstance(search, Search)
    assert await search.search("q1") == [SearchHit("plain text"), SearchHit("from a dict", "T", "https://x")]
    assert seen == ["q1"]


async def test_callable_search_async_function() -> None:
    async def lookup(query: str) -> list[SearchHit]:
        return [SearchHit(f"about {query}", "title"), SearchHit("  ")]

    assert await CallableSearch(lookup).search("BCL2") == [SearchHit("about BCL2", "title")]


async def test_callable_search_wraps_failures() -> None:
    def broken(query: str) -> list[str]:
        raise RuntimeError("backend down")

    with pytest.raises(SearchError, match="'broken' failed: RuntimeError: backend down"):
        await CallableSearch(broken).search("q")
    with pytest.raises(SearchError, match="item of type int"):
        await CallableSearch(lambda q: [1, 2]).search("q")


async def test_callable_search_accepts_langchain_style_tools() -> None:
    class Tool:
        name = "my_tool"

        async def ainvoke(self, query: str) -> dict[str, Any]:
            return {"results": [{"content": f"result for {query}"}]}

    search = make_search(Tool(), api_key=None)  # type: ignore[arg-type]
    assert await search.search("q") == [SearchHit("result for q")]


def test_normalize_hits_shapes() -> None:
    assert normalize_hits(None) == []
    assert normalize_hits("one") == [SearchHit("one")]
    assert normalize_hits({"content": "c", "url": "u"}) == [SearchHit("c", None, "u")]
    assert normalize_hits([{"text": "t"}, {"snippet": "s"}]) == [SearchHit("t"), SearchHit("s")]


# -- SimulatedSearch ----------------------------------------------------------------------------


async def test_simulated_search_returns_relevant_snippets() -> None:
    search = SimulatedSearch()
    hits = await search.search("What is the capital of France?")
    assert hits[0].content == "Paris is the capital and most populous city of France."
    assert hits[0].url is not None and hits[0].url.startswith("simulated://corpus/")
    assert len(hits) <= 3
    bcl2 = await search.search("BCL2 inhibits apoptosis")
    assert "BCL2" in bcl2[0].content and "apoptotic" in bcl2[0].content
    boiling = await search.search("boiling point of water in Celsius")
    assert "100 degrees Celsius" in boiling[0].content
    assert await search.search("capital of France") == await SimulatedSearch().search("capital of France")
    assert await search.search("zzzz qqqq") == []
    assert search.calls == 5 and search.queries[0] == "What is the capital of France?"


async def test_simulated_search_fail_mode() -> None:
    search = SimulatedSearch(fail=True)
    with pytest.raises(SearchError):
        await search.search("anything")
    assert search.calls == 1
