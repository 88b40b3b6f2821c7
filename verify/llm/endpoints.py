"""Where a model is served: its base URL, showing that URL safely, telling a loopback URL, and the
one-line errors for a URL where nothing listens (:class:`EndpointUnreachable`) and for an endpoint
whose circuit breaker is open (:class:`EndpointNotAnswering`)."""

from __future__ import annotations

import errno
import ipaddress
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from verify.errors import ModelError

if TYPE_CHECKING:
    from verify.config.models import ModelConfig

__all__ = [
    "EndpointNotAnswering",
    "EndpointUnreachable",
    "base_url_of",
    "connection_refused",
    "is_loopback_url",
    "shown_url",
    "url_key",
]

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


def base_url_of(model: ModelConfig) -> str | None:
    """The URL of the server ``model`` is sent to, when its config names one."""
    url = model.endpoint_base_url or model.anthropic_base_url or (model.extra_kwargs or {}).get("base_url")
    return url if isinstance(url, str) and url else None


def url_key(url: str) -> str:
    """The server ``url`` points at, for grouping models by it: :func:`shown_url` in lower case,
    without a trailing ``/`` or ``/v1`` (so ``http://Host:8000/v1/`` and ``http://host:8000`` are one
    server, and no credential is part of the key)."""
    return shown_url(url).rstrip("/").removesuffix("/v1").lower()


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


class EndpointNotAnswering(ModelError):
    """A call refused without being sent: ``endpoint``'s circuit breaker is open
    (:mod:`verify.llm.breaker`). ``category`` is that of the failures that opened it, ``timeout`` or
    ``connection``, so the task is recorded as a retryable error and ``--resume`` runs it again.

    ``streak`` says what failed, e.g. ``"3 timeouts"``; ``outcome`` what became of the call (not
    sent, its retry not sent, or abandoned while it waited); ``hint`` what the last failure suggests.
    """

    def __init__(
        self, endpoint: str, streak: str, category: str, *, outcome: str = "call not sent", hint: str | None = None
    ) -> None:
        self.endpoint = endpoint
        message = f"endpoint {endpoint} is not answering ({streak} in a row); {outcome}"
        super().__init__(message + (f" ({hint})" if hint else ""), category)
