"""The keep-alive HTTP/1.1 pool of the OpenAI-compatible adapter, against servers that answer with
crafted bytes: framings (length, chunks, end of connection), connections the server closed while
idle, errors as httpx's types, and the calls that go through httpx instead (proxies, redirects)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import httpx
import pytest

from verify.llm.adapters.http_pool import ConnectionPool
from verify.llm.adapters.openai_compatible import _ssl_context
from verify.llm.resilience import classify_error

Answer = Callable[[int, bytes], bytes | None]  # (request number, request) -> reply bytes; None: close
CLOSE = b"<close>"  # a reply ending with this is sent without it, then the connection is closed


def ok(body: bytes = b'{"ok": true}', *, extra: str = "") -> bytes:
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


@asynccontextmanager
async def crafted(answer: Answer) -> AsyncIterator[tuple[str, list[bytes], list[int]]]:
    """A server on 127.0.0.1 answering each request with ``answer``; yields (base URL, requests,
    connections accepted)."""
    requests: list[bytes] = []
    accepted: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))  # fmt: skip
                request = head + await reader.readexactly(length)
                requests.append(request)
                reply = answer(len(requests), request)
                if reply is None:
                    break
                writer.write(reply.removesuffix(CLOSE))
                await writer.drain()
                if reply.endswith(CLOSE):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1/", requests, accepted
    finally:
        server.close()


def pool(url: str, read: float = 5.0) -> ConnectionPool:
    return ConnectionPool(url, {"Authorization": "Bearer sk-x"}, httpx.Timeout(read, connect=2.0), _ssl_context())


async def test_a_post_is_one_request_with_the_headers_and_the_body() -> None:
    async with crafted(lambda n, r: ok()) as (url, requests, _):
        p = pool(url)
        reply = await p.post("chat/completions", b'{"a": 1}', {"X-Verify-Purpose": "answer"})
        await p.aclose()
    assert (reply.status_code, json.loads(reply.content)) == (200, {"ok": True})
    head, body = requests[0].split(b"\r\n\r\n")
    assert head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n") and body == b'{"a": 1}'
    for line in (b"Authorization: Bearer sk-x", b"X-Verify-Purpose: answer", b"Content-Type: application/json",
                 b"Host: 127.0.0.1:"):  # fmt: skip
        assert line in head


async def test_a_configured_header_replaces_ours_of_the_same_name() -> None:
    async with crafted(lambda n, r: ok()) as (url, requests, _):
        p = ConnectionPool(url, {"user-agent": "mine/1", "Content-Length": "3"}, httpx.Timeout(5.0), _ssl_context())
        await p.post("x", b"{}", {})
        await p.aclose()
    head = requests[0].split(b"\r\n\r\n")[0].lower()
    assert head.count(b"user-agent:") == 1 and b"user-agent: mine/1" in head
    assert head.count(b"content-length:") == 1 and b"content-length: 2" in head  # framing is ours


async def test_chunked_and_connection_framed_bodies_are_read_whole() -> None:
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;x=1\r\n{\"a\"\r\n5\r\n: 1}\n\r\n0\r\n\r\n"
    until_close = b"HTTP/1.0 200 OK\r\n\r\n{\"b\": 2}" + CLOSE
    replies = {1: chunked, 2: ok(extra="Connection: close\r\n"), 3: until_close}
    async with crafted(lambda n, r: replies.get(n)) as (url, _requests, accepted):
        p = pool(url)
        first = await p.post("x", b"{}", {})
        assert json.loads(first.content) == {"a": 1} and len(p.connections) == 1  # kept alive
        await p.post("x", b"{}", {})
        assert not p.connections  # the server said close
        third = await p.post("x", b"{}", {})
        assert json.loads(third.content) == {"b": 2} and not p.connections
    assert len(accepted) == 2


async def test_a_connection_the_server_closed_while_idle_is_replaced_without_an_error() -> None:
    # the server answers the first request, then drops the connection when the second arrives
    async with crafted(lambda n, r: ok() if n != 2 else None) as (url, requests, accepted):
        p = pool(url)
        await p.post("x", b"{}", {})
        reply = await p.post("x", b"{}", {})
        await p.aclose()
    assert reply.status_code == 200 and len(requests) == 3 and len(accepted) == 2


async def test_errors_are_httpx_types_classified_as_before() -> None:
    async with crafted(lambda n, r: b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{\"cut" + CLOSE) as (url, _r, _a):
        with pytest.raises(httpx.RemoteProtocolError) as cut:
            await pool(url).post("x", b"{}", {})
    assert classify_error(cut.value) == "connection"

    async with crafted(lambda n, r: b"") as (url, _r, accepted):  # answers nothing, keeps the connection
        p = pool(url, read=0.2)
        with pytest.raises(httpx.ReadTimeout) as slow:
            await p.post("x", b"{}", {})
        assert classify_error(slow.value) == "timeout" and not p.connections  # closed: the server sees us go


async def test_redirects_and_proxies_go_through_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    def answer(n: int, request: bytes) -> bytes:
        if b"/old/" in request.split(b"\r\n")[0]:
            return b"HTTP/1.1 307 Temporary Redirect\r\nLocation: /v1/chat\r\nContent-Length: 0\r\n\r\n"
        return ok()

    async with crafted(answer) as (url, requests, _):
        p = pool(url.replace("/v1/", "/old/"))
        reply = await p.post("chat", b'{"q": 1}', {})
        await p.aclose()
    # the redirected call is sent again through httpx, which follows the redirect with the body
    assert reply.status_code == 200 and len(requests) == 3
    assert requests[2].startswith(b"POST /v1/chat ") and requests[2].endswith(b'{"q": 1}')

    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("NO_PROXY", "")
    assert pool("http://judge.example:8000/v1/").proxied
    monkeypatch.setenv("NO_PROXY", "judge.example")
    assert not pool("http://judge.example:8000/v1/").proxied


async def test_a_request_the_server_drops_is_sent_at_most_twice_however_many_connections_are_idle() -> None:
    # 8 idle connections; then the server reads each request and closes without replying (a crash, a
    # proxy dropping it): the request must not be resent once per idle connection (each may be billed)
    async with crafted(lambda n, r: ok() if n <= 8 else None) as (url, requests, _accepted):
        p = pool(url)
        await asyncio.gather(*(p.post("x", b"{}", {}) for _ in range(8)))
        assert len(p.connections) == 8
        with pytest.raises(httpx.RemoteProtocolError):
            await p.post("x", b"{}", {})
        await p.aclose()
    assert len(requests) == 8 + 2  # once on an idle connection, once on a new one


async def test_a_gzipped_error_reply_keeps_its_status_and_retry_after() -> None:
    import gzip

    body = gzip.compress(b'{"error": {"message": "slow down"}}')
    reply = (b"HTTP/1.1 429 Too Many Requests\r\nContent-Encoding: gzip\r\nRetry-After: 3\r\n"
             + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    async with crafted(lambda n, r: reply) as (url, _requests, _accepted):
        p = pool(url)
        answer = await p.post("x", b"{}", {})
        await p.aclose()
    response = answer.response()  # what the adapter raises with: must not decode the body twice
    assert (response.status_code, response.headers["retry-after"]) == (429, "3")
    assert json.loads(response.content) == {"error": {"message": "slow down"}}
