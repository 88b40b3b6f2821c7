"""Where a model is served: showing its URL safely, telling a loopback URL, and the one-line error
for a URL where nothing listens (:class:`EndpointUnreachable`)."""

from __future__ import annotations

import errno
import ipaddress
from urllib.parse import urlsplit

from verify.errors import ModelError

__all__ = ["EndpointUnreachable", "connection_refused", "is_loopback_url", "shown_url"]

_REFUSED_ERRNOS = frozenset({errno.ECONNREFUSED, 10061})  # 10061: WSAECONNREFUSED on Windows


def connection_refused(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error in its cause chain) is a refused TCP connection."""
    current: BaseException | None = exc
    seen = 0
    while current is not None and seen < 8:
        if isinstance(current, ConnectionRefusedError):
            return True
        if isinstance(current, OSError) and current.errno in _REFUSED_ERRNOS:
            return True
        if "connection refused" in str(current).lower():
            return True
        current = current.__cause__ or current.__context__
        seen += 1
    return False


def is_loopback_url(url: str) -> bool:
    """``localhost``, ``127.x``, ``::1`` or ``0.0.0.0``: a server on this machine."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def shown_url(url: str) -> str:
    """``url`` without user info, query or fragment (where credentials may hide)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


class EndpointUnreachable(ModelError):
    """Nothing listens at ``url``: one line naming it (category ``connection``).

    ``local`` says the URL is a loopback one; :class:`~verify.llm.resilience.RetryingModel` then
    retries it once, quickly.
    """

    def __init__(self, url: str) -> None:
        self.url = shown_url(url)
        self.local = is_loopback_url(url)
        super().__init__(f"cannot connect to {self.url} (connection refused): is the server running?", "connection")
