"""karenina's environment variables, with karenina's precedence: a value given to the config (by a
preset, a flag or in Python) wins, then the variable when it is set, then the field default.

A value that does not parse is ignored as karenina ignores it (the default applies), but not
silently: a warning names the variable and the value.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

__all__ = ["ENV_FIELDS", "apply_environment"]

log = logging.getLogger("verify")


def _flag(text: str) -> bool:
    return text.strip().lower() in ("true", "1", "yes")


ENV_FIELDS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "embedding_check_enabled": ("EMBEDDING_CHECK", _flag),
    "embedding_check_model": ("EMBEDDING_CHECK_MODEL", str),
    "embedding_check_threshold": ("EMBEDDING_CHECK_THRESHOLD", float),
    "async_enabled": ("KARENINA_ASYNC_ENABLED", _flag),
    "async_max_workers": ("KARENINA_ASYNC_MAX_WORKERS", int),
    "max_concurrent_requests": ("KARENINA_MAX_CONCURRENT_LLM_REQUESTS", int),
}
"""config field -> (variable, parser)."""


def apply_environment(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with each field it does not give taken from its variable, when that is set."""
    out = dict(data)
    for field, (variable, parse) in ENV_FIELDS.items():
        raw = os.environ.get(variable)
        if field in out or raw is None:
            continue
        try:
            out[field] = parse(raw)
        except ValueError:
            log.warning("environment variable %s=%r is not a valid %s; using the default", variable, raw,
                        getattr(parse, "__name__", "value"))
    return out
