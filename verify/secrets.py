"""Recognising and removing credentials, in one place.

``is_secret_key`` says whether a settings key (at any nesting depth: ``default_headers`` ->
``Authorization``) names a credential; ``mask_secrets`` masks (or drops) such values recursively,
including ``[name, value]`` header pairs and ``{"name": ..., "value": ...}`` entries, and any string
that *looks like* a provider key wherever it sits; ``redact`` removes credential-looking strings
from free text (error messages, replies).
"""

from __future__ import annotations

import re
from typing import Any

MASK = "**********"
_SECRET_WORDS = {"apikey", "secret", "password", "passwd", "authorization", "credential", "credentials",
                 "cookie", "token", "privatekey", "bearer"}
# Provider keys are long: a short "pk-research-01" is a name, not a key.
_KEY_SHAPED = (
    re.compile(r"\b(?:sk|sk-ant|sk-or|sk-proj|tvly|gsk|xai|pk|rk)[-_][A-Za-z0-9_\-]{20,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._\-]{8,}"),
)
_ASSIGNED = re.compile(
    r"(?i)((?:api[_-]?key|x-api-key|authorization|access[_-]?token|secret[_-]?key|password)[\"']?\s*[:=]\s*[\"']?)"
    r"[^\s\"',}]+"
)


def is_secret_key(key: str) -> bool:
    """``Authorization``, ``api_key``, ``X-Api-Key``, ``access_token``... (whole words, not substrings)."""
    words = [w for w in re.split(r"[^a-z0-9]+", key.lower()) if w]
    joined = "".join(words)
    return any(w in _SECRET_WORDS for w in words) or "apikey" in joined or "privatekey" in joined


def looks_like_key(text: str) -> bool:
    return any(p.search(text) for p in _KEY_SHAPED)


def _mask_key_shaped(text: str) -> str:
    for pattern in _KEY_SHAPED:
        text = pattern.sub(MASK, text)
    return text


def mask_secrets(value: Any, *, drop: bool = False) -> Any:
    """``value`` with credentials masked (or, with ``drop``, removed), recursively.

    Only strings are treated as secrets: a boolean under a key like ``secret_mode`` stays.
    """
    if isinstance(value, dict):
        named = value.get("name") if set(value) >= {"name", "value"} else None
        if isinstance(named, str) and is_secret_key(named):
            return None if drop else {**value, "value": MASK}
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(key, str) and is_secret_key(key) and isinstance(item, str):
                if not drop:
                    out[key] = MASK
                continue
            masked = mask_secrets(item, drop=drop)
            if drop and masked is None and item is not None:
                continue
            out[key] = masked
        return out
    if isinstance(value, list | tuple):
        pair = len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], str)
        if pair and is_secret_key(value[0]):
            return None if drop else [value[0], MASK]
        items = [mask_secrets(item, drop=drop) for item in value]
        return [m for m, item in zip(items, value, strict=True) if not (drop and m is None and item is not None)]
    if isinstance(value, str) and looks_like_key(value):
        # A partly masked string would be sent to the provider as is: drop it instead.
        return None if drop else _mask_key_shaped(value)
    return value


def redact(text: str, limit: int = 500) -> str:
    """Remove anything that looks like a credential from free text, collapse whitespace, shorten."""
    text = _mask_key_shaped(text)
    text = _ASSIGNED.sub(lambda m: m.group(1) + "***", text)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
