"""A server that repeats the caller's credentials in its error replies (``echo_auth_rate``).

Some servers and proxies quote what they refuse: ``Incorrect API key provided: sk-...``, or every
header of the request in a 401 page. verify writes error messages into results, progress files and
the terminal, so it must mask what such a server sends back. With ``echo_auth_rate`` the simulated
server answers that share of chat requests with HTTP 401 whose OpenAI-style error message quotes,
in full, every credential-like header of the request (``Authorization``, ``api-key``,
``X-Custom-Auth``, ``Cookie``...). Which header names count is decided here, on purpose without
:mod:`verify.secrets`, so the fault does not depend on the code it tests.
"""

from __future__ import annotations

from collections.abc import Iterable

from verify.llm.simulated.wire import BadRequest

__all__ = ["CREDENTIAL_PARTS", "credential_headers", "refuse_some"]

#: A header whose lowercased name holds one of these is quoted back.
CREDENTIAL_PARTS = ("auth", "key", "token", "secret", "cookie", "password")


def credential_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The ``(name, value)`` pairs of ``headers`` that look like credentials, in request order."""
    return [(name, value) for name, value in headers if any(p in name.lower() for p in CREDENTIAL_PARTS)]


def refuse_some(headers: Iterable[tuple[str, str]], rate: float, draw: float) -> None:
    """Raise a 401 :class:`~verify.llm.simulated.wire.BadRequest` quoting the request's credential
    headers when ``draw`` (uniform in [0, 1)) falls below ``rate``."""
    if draw >= rate:
        return
    sent = credential_headers(headers)
    quoted = "; ".join(f"{name}: {value}" for name, value in sent) or "no credentials"
    raise BadRequest(401, f"Incorrect API key provided. The request sent {quoted} (simulated echo)")
