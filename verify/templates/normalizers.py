"""Text normalizers for the string primitives of VerifiedField templates (karenina's semantics).

A normalizer is a name (``"lowercase"``, ``"strip"``, ``"remove_punctuation"``,
``"collapse_whitespace"``) or a :class:`SynonymMap`; a list of them is applied in order, so
``["lowercase", SynonymMap(...)]`` lowercases before the synonym lookup.
"""

from __future__ import annotations

import re
import string
from typing import TypeAlias

from pydantic import BaseModel

NORMALIZER_NAMES = ("lowercase", "strip", "remove_punctuation", "collapse_whitespace")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


class SynonymMap(BaseModel):
    """Replaces a whole string found among the keys by its canonical value (exact lookup)."""

    mapping: dict[str, str]


Normalizer: TypeAlias = str | SynonymMap


def apply_normalizer(normalizer: Normalizer, text: str) -> str:
    if isinstance(normalizer, SynonymMap):
        return normalizer.mapping.get(text, text)
    if normalizer == "lowercase":
        return text.lower()
    if normalizer == "strip":
        return text.strip()
    if normalizer == "remove_punctuation":
        return text.translate(_PUNCTUATION)
    if normalizer == "collapse_whitespace":
        return re.sub(r"\s+", " ", text).strip()
    raise ValueError(f"unknown normalizer {normalizer!r} (use one of {', '.join(NORMALIZER_NAMES)}, or a SynonymMap)")


def apply_normalizers(normalizers: list[Normalizer], text: str) -> str:
    for normalizer in normalizers:
        text = apply_normalizer(normalizer, text)
    return text
