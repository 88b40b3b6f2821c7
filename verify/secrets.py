"""Recognising and removing credentials, in one place.

``is_secret_key`` says whether a settings key (at any nesting depth: ``default_headers`` ->
``Authorization``) holds a credential; ``mask_secrets`` masks such values recursively;
``redact`` removes credential-looking strings from free text (error messages, replies).
"""

from __future__ import annotations

import re
from typing import Any

MASK = "**********"
_SECRET_KEY = re.compile(
    r"api_?key|secret|password|passwd|authorization|credential|cookie|private_?key|"
    r"^(x-)?(access_|auth_|bearer_|refresh_)?token$",
    re.IGNORECASE,
)
_SECRET_PATTERNS = (
    re.compile(r"\b(sk|pk|rk|tvly|sk-ant|sk-or|sk-proj|gsk|xai)[-_][A-Za-z0-9_\-*]{6,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._\-*]+"),
    re.compile(
        r"(?i)((?:api[_-]?key|x-api-key|authorization|token|secret|password)[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]+"
    ),
)


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.search(key))


def mask_secrets(value: Any, *, drop: bool = False) -> Any:
    """``value`` with every credential under a secret-looking key masked (or dropped), recursively."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if isinstance(key, str) and is_secret_key(key) and item is not None:
                if not drop:
                    out[key] = MASK
                continue
            out[key] = mask_secrets(item, drop=drop)
        return out
    if isinstance(value, list | tuple):
        return [mask_secrets(item, drop=drop) for item in value]
    if isinstance(value, str):
        return redact(value, limit=10**9)
    return value


def _mask(match: re.Match[str]) -> str:
    return (match.group(1) if match.lastindex else "") + "***"


def redact(text: str, limit: int = 500) -> str:
    """Remove anything that looks like a credential, and shorten."""
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(_mask, text)
    text = " ".join(text.split()) if limit < 10**9 else text
    return text if len(text) <= limit else text[: limit - 3] + "..."
