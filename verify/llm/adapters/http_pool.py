"""The keep-alive HTTP/1.1 connections of one event loop to one OpenAI-compatible server.

A judge call is one ``POST`` of a JSON body and one JSON reply, so the client needs only a small
part of HTTP: a request written in one piece, a status line, headers and a body framed by
``Content-Length``, chunks or the end of the connection. Doing that directly on asyncio streams
costs a few tens of microseconds per call. httpx costs about 1.8 ms per call at 20 in flight
(``benchmarks/bench_http.py``): its pool checks every connection's socket for every request, and
models, headers and anyio layers come on top; h11 alone measured 0.11 ms per exchange, more than
the whole trivial client. So calls go over :class:`ConnectionPool`, and httpx is kept for what it
does that this does not: proxies from the environment (``HTTP_PROXY``, ...) and redirects.

Connections are reused last-in first-out; one that the server closed while it was idle is noticed
before it is used, and a reused one that is closed without a byte of reply is retried once on a new
connection (as a browser or urllib3 does). A call that fails, times out or is cancelled closes its
connection, so the server sees the client go. Errors are httpx's exception types (``ConnectError``,
``ConnectTimeout``, ``ReadTimeout``, ``ReadError``, ``RemoteProtocolError``), which
:mod:`verify.llm.resilience` classifies by name.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import urllib.request
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

import httpx

if TYPE_CHECKING:
    import ssl
    from collections.abc import Mapping

__all__ = ["ConnectionPool", "HttpReply"]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_MAX_HEADER_BYTES = 1 << 16
_FRAMING = frozenset({"content-length", "transfer-encoding", "connection"})  # ours to set, per request
_ENCODED = frozenset({"content-encoding", "content-length", "transfer-encoding"})  # describe the body as sent


@dataclass(frozen=True)
class HttpReply:
    """A server's answer: status, headers (names in lower case) and the body as received."""

    status_code: int
    headers: tuple[tuple[str, str], ...]
    content: bytes
    url: str

    def response(self) -> httpx.Response:
        """The same answer as an :class:`httpx.Response` (for errors, which keep it: Retry-After)."""
        return httpx.Response(self.status_code, headers=list(self.headers), content=self.content,
                              request=httpx.Request("POST", self.url))  # fmt: skip

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


class _Answer(NamedTuple):
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    keep_alive: bool


class _Stale(Exception):
    """A reused connection was closed before any byte of the reply came."""


class _Connection:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def close(self) -> None:
        with contextlib.suppress(Exception):  # a transport of a closed loop is gone anyway
            self.writer.close()

    async def exchange(self, request: bytes, reused: bool) -> _Answer:
        """Send ``request`` and read the reply."""
        self.writer.write(request)
        reader = self.reader
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            while head[9:10] == b"1":  # an interim 1xx answer: the real one follows
                head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            if reused and not exc.partial:
                raise _Stale from exc
            raise httpx.RemoteProtocolError("the server closed the connection without a complete reply") from exc
        except asyncio.LimitOverrunError as exc:
            raise httpx.RemoteProtocolError("the reply's headers are too long") from exc
        except (ConnectionError, ssl.SSLError) as exc:  # a TLS read error is a broken connection too
            if reused:
                raise _Stale from exc
            raise httpx.ReadError(str(exc) or type(exc).__name__) from exc
        lines = head[:-4].decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        try:
            status = int(rest[:3])
        except ValueError:
            raise httpx.RemoteProtocolError(f"not an HTTP reply: {lines[0][:80]!r}") from None
        headers = []
        fields: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip()
            headers.append((name, value))
            fields[name] = value
        connection = fields.get("connection", "").lower()
        keep = "close" not in connection if version == "HTTP/1.1" else "keep-alive" in connection
        framed = status in (204, 304) or "content-length" in fields or "transfer-encoding" in fields
        body = await self._body(status, fields)
        keep = keep and framed  # a body that ends with the connection leaves none to reuse
        encoding = fields.get("content-encoding", "").lower()
        if encoding in ("gzip", "deflate"):  # we ask for none; a server may send it anyway
            try:
                body = zlib.decompress(body, 47) if body else body  # 47: gzip or zlib header, detected
            except zlib.error as exc:
                raise httpx.DecodingError(f"a {encoding} reply that does not decompress: {exc}") from None
            # the body is decoded now: an httpx.Response built from it (errors) must not decode it again
            headers = [(name, value) for name, value in headers if name not in _ENCODED]
        return _Answer(status, tuple(headers), body, keep)

    async def _body(self, status: int, fields: Mapping[str, str]) -> bytes:
        reader = self.reader
        try:
            if status in (204, 304):
                return b""
            if "chunked" in fields.get("transfer-encoding", "").lower():
                parts = []
                while size := int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16):
                    parts.append((await reader.readexactly(size + 2))[:-2])  # the chunk and its CRLF
                while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                    pass
                return b"".join(parts)
            length = fields.get("content-length")
            if length is not None:
                return await reader.readexactly(int(length))
            return await reader.read()  # framed by the end of the connection
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            raise httpx.RemoteProtocolError(f"the reply's body is cut short or malformed ({exc})") from exc
        except (ConnectionError, ssl.SSLError) as exc:  # a TLS read error is a broken connection too
            raise httpx.ReadError(str(exc) or type(exc).__name__) from exc


class ConnectionPool:
    """Keep-alive connections to the server at ``base_url`` (``http://host:port/v1/``), opened as
    calls need them; ``headers`` go with every request."""

    def __init__(self, base_url: str, headers: Mapping[str, str], timeout: httpx.Timeout,
                 ssl_context: ssl.SSLContext) -> None:  # fmt: skip
        parts = urlsplit(base_url)
        self.base_url = base_url
        self._host = parts.hostname or "localhost"
        self._tls = ssl_context if parts.scheme == "https" else None
        self._port = parts.port or (443 if self._tls is not None else 80)
        self._path = parts.path if parts.path.endswith("/") else parts.path + "/"
        host = f"[{self._host}]" if ":" in self._host else self._host
        default = parts.port is None or parts.port == (443 if self._tls is not None else 80)
        fixed = {"Host": host if default else f"{host}:{self._port}", "Accept": "application/json",
                 "User-Agent": "verify", "Content-Type": "application/json"}  # fmt: skip
        given = {name.lower() for name in headers}  # a configured header replaces ours of the same name
        fixed = {name: value for name, value in fixed.items() if name.lower() not in given}
        fixed.update((name, value) for name, value in headers.items() if name.lower() not in _FRAMING)
        self._head = "".join(f"{name}: {value}\r\n" for name, value in fixed.items())
        self._connect = timeout.connect
        self._read = timeout.read
        self._httpx_settings: dict[str, Any] = {"base_url": base_url, "headers": dict(headers), "timeout": timeout,
                                                "verify": ssl_context, "follow_redirects": True}  # fmt: skip
        self._fallback: httpx.AsyncClient | None = None
        # a proxy from the environment applies to this server: httpx knows how to go through one
        self.proxied = _proxied(parts.scheme, self._host)
        self._idle: list[_Connection] = []
        self.connections: set[_Connection] = set()
        self.is_closed = False

    async def post(self, path: str, content: bytes, headers: Mapping[str, str]) -> HttpReply:
        """``POST`` ``content`` (JSON) to ``path`` under the base URL; the whole reply is read."""
        if self.proxied:
            return await self._via_httpx(path, content, headers)
        extra = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        request = (f"POST {self._path}{path} HTTP/1.1\r\n{self._head}{extra}"
                   f"Content-Length: {len(content)}\r\n\r\n").encode() + content  # fmt: skip
        try:
            async with asyncio.timeout(self._read):
                answer = await self._send(request)
        except TimeoutError:
            raise httpx.ReadTimeout(f"no complete reply within {self._read} s") from None
        reply = HttpReply(answer.status, answer.headers, answer.body, self.base_url + path)
        if answer.status in _REDIRECTS and any(name == "location" for name, _ in answer.headers):
            return await self._via_httpx(path, content, headers)  # httpx follows it as the OpenAI SDK does
        return reply

    async def _send(self, request: bytes) -> _Answer:
        connection, reused = self._take()
        for fresh in (False, True):
            if connection is None:
                connection = await self._open()
            try:
                answer = await connection.exchange(request, reused)
            except _Stale:
                self._drop(connection)
                if fresh or self.is_closed:
                    raise httpx.RemoteProtocolError("the server closed the connection without replying") from None
                # a reused connection the server closed while idle (the request never arrived): once
                # more on a new connection, never on another idle one, which may have gone stale with it
                for idle in self._idle:
                    self._drop(idle)
                self._idle.clear()
                connection, reused = None, False
                continue
            except BaseException:
                self._drop(connection)  # the server sees the client go
                raise
            if answer.keep_alive and not self.is_closed:
                self._idle.append(connection)
            else:
                self._drop(connection)
            return answer
        raise AssertionError("unreachable: the second attempt returns or raises")

    def _take(self) -> tuple[_Connection | None, bool]:
        while self._idle:
            connection = self._idle.pop()
            if not connection.reader.at_eof() and not connection.writer.is_closing():
                return connection, True
            self._drop(connection)
        return None, False

    async def _open(self) -> _Connection:
        # one turn of the loop first: a call cut short at this moment (an opening circuit breaker
        # cancels the calls it admitted) then opens no connection the server would see
        await asyncio.sleep(0)
        try:
            async with asyncio.timeout(self._connect):
                reader, writer = await asyncio.open_connection(
                    self._host, self._port, ssl=self._tls, limit=_MAX_HEADER_BYTES,
                    server_hostname=self._host if self._tls is not None else None,
                )
        except TimeoutError:
            raise httpx.ConnectTimeout(f"no connection to {self._host}:{self._port} within {self._connect} s") from None
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
        connection = _Connection(reader, writer)
        self.connections.add(connection)
        return connection

    def _drop(self, connection: _Connection) -> None:
        connection.close()
        self.connections.discard(connection)

    async def _via_httpx(self, path: str, content: bytes, headers: Mapping[str, str]) -> HttpReply:
        if self._fallback is None:
            self._fallback = httpx.AsyncClient(**self._httpx_settings)
        sent = {"Content-Type": "application/json", **headers}
        response = await self._fallback.post(path, content=content, headers=sent)
        fields = tuple((name.lower(), value) for name, value in response.headers.items())
        return HttpReply(response.status_code, fields, response.content, str(response.url))

    async def aclose(self) -> None:
        self.is_closed = True
        for connection in list(self.connections):
            self._drop(connection)
        self._idle.clear()
        if self._fallback is not None:
            with contextlib.suppress(Exception):  # a client of a closed loop is gone anyway
                await self._fallback.aclose()


def _proxied(scheme: str, host: str) -> bool:
    """Whether httpx (``trust_env``) would send a request to ``host`` through a proxy."""
    proxies = urllib.request.getproxies()
    if not (proxies.get(scheme) or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass(host)
