"""The quotes in an excerpt reply, read one item at a time.

Judges copy the prompt's example into their reply (``"confidence": "high|medium|low"``), put a
bare string where an object was asked, or add placeholder items (``"..."``, ``"text"``). One bad
field must not throw away the good quotes of the same reply, and a placeholder is never a quote.
Whether a quote is really in the answer is decided later, by :mod:`verify.judging.excerpts`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["CONFIDENCES", "STANCES", "Quote", "is_placeholder", "read_quotes"]

CONFIDENCES = ("high", "medium", "low")
#: What a quote of a boolean trait shows, in the judge's own words: the response meeting or failing it.
STANCES = ("meets", "fails")
_STANCE_WORDS = {"meets": "meets", "meet": "meets", "met": "meets", "supports": "meets", "yes": "meets",
                 "true": "meets", "fails": "fails", "fail": "fails", "failed": "fails", "violates": "fails",
                 "no": "fails", "false": "fails"}

_PLACEHOLDERS = frozenset({
    "", "...", "…", "text", "quote", "excerpt", "passage", "verbatim quote", "a verbatim quote",
    "exact quote", "the quote", "quote here", "excerpt text", "<quote>", "<text>", "<excerpt>", "n/a", "none",
    "null", "string",
})  # fmt: skip
_ONLY_DOTS = re.compile(r"^[\s.…\[\]()]*$")


@dataclass(frozen=True)
class Quote:
    text: str
    confidence: str = "medium"
    supports: str | None = None  # one of STANCES when the judge said which way the passage points


def is_placeholder(text: str) -> bool:
    """True for a quote that only copies the prompt's example: "...", "text", "<quote>", "[...]"."""
    stripped = text.strip().strip("\"'`").strip()
    return stripped.casefold() in _PLACEHOLDERS or bool(_ONLY_DOTS.match(stripped))


def _confidence(value: Any) -> str:
    word = str(value or "").strip().casefold()
    return word if word in CONFIDENCES else "medium"  # "high|medium|low" copied from the prompt, or missing


def _stance(value: Any) -> str | None:
    return _STANCE_WORDS.get(str(value).strip().casefold()) if value is not None else None


def read_quotes(items: Any, limit: int) -> tuple[list[Quote], int]:
    """The usable quotes among ``items`` (at most ``limit``), and how many items were placeholders or unreadable.

    An item is a ``{"text": ..., "confidence": ...}`` object or a bare string; a single item not
    in a list is read as a list of one.
    """
    if items is None:
        return [], 0
    if isinstance(items, str | dict):
        items = [items]
    if not isinstance(items, list):
        return [], 1
    quotes: list[Quote] = []
    dropped = 0
    for item in items:
        supports = None
        if isinstance(item, str):
            text, confidence = item, None
        elif isinstance(item, dict):
            raw = item.get("text", item.get("quote", item.get("excerpt")))
            text, confidence = (raw if isinstance(raw, str) else ""), item.get("confidence")
            supports = _stance(item.get("supports"))
        else:
            dropped += 1
            continue
        if is_placeholder(text):
            dropped += 1
            continue
        if len(quotes) < limit:
            quotes.append(Quote(text, _confidence(confidence), supports))
    return quotes, dropped
