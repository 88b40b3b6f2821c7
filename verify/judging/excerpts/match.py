"""Validation of verbatim excerpts quoted from an answer text.

In deep judgment a judge model quotes excerpts from the answer it evaluates; every excerpt must be
checked against the answer before it can be trusted as evidence. :func:`match_excerpt` does that in
three stages, cheapest first:

1. **exact**: the excerpt is a plain substring of the text;
2. **normalized**: both strings are normalised (whitespace collapsed, typographic quotes, dashes and
   ellipses made ASCII, case-folded, Markdown markers and zero-width characters removed) and the
   normalised excerpt is a substring of the normalised text. A piecewise offset map translates the
   position back to the original text;
3. **fuzzy**: excerpts of :data:`MIN_FUZZY_CHARS` to :data:`MAX_FUZZY_CHARS` normalised characters
   are located through exact q-gram anchors voting for an alignment diagonal, or, for short
   excerpts, RapidFuzz's ``partial_ratio_alignment`` over the whole normalised text; the window is
   refined with an Indel alignment, and the match is accepted only if ``fuzz.ratio`` of the whole
   excerpt against the window clears the threshold *and* a set of guards pass: numbers, negations
   and capitalised names must be identical, every other differing word must be explained by a
   small typo, and no contiguous segment of the excerpt may be unsupported by the window (which
   rejects quotes spliced together from distant passages).

Unlike a longest-common-block validator based on :class:`difflib.SequenceMatcher` (whose *autojunk*
heuristic discards frequent characters in long texts and so rejects many verbatim quotes), every
verbatim quote is accepted, and matching stays in the millisecond range for 100k-character texts.

Everything here is pure: no I/O, no global state except a small cache of normalised texts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from verify.judging.excerpts.align import fuzzy
from verify.judging.excerpts.normalise import Normalized, normalize_text, prepare_text, strip_decorations

__all__ = [
    "MAX_FUZZY_CHARS",
    "MIN_FUZZY_CHARS",
    "ExcerptMatch",
    "MatchMethod",
    "match_excerpt",
    "validate_excerpts",
]

MatchMethod = Literal["exact", "normalized", "fuzzy", "failed"]

#: Excerpts shorter than this many normalised characters are only matched exactly / after normalisation.
MIN_FUZZY_CHARS = 20
#: Excerpts longer than this many normalised characters are only matched exactly / after normalisation
#: (fuzzy alignment is quadratic in the excerpt length; judges quote sentences, not pages).
MAX_FUZZY_CHARS = 5000


@dataclass(frozen=True)
class ExcerptMatch:
    """Outcome of validating one excerpt against a text.

    Attributes:
        valid: Whether the excerpt is accepted as a quote of the text.
        similarity: Similarity in ``[0, 1]``; ``1.0`` for exact and normalised matches, the
            ``fuzz.ratio`` of the normalised excerpt against the aligned window for fuzzy ones.
        start: Start offset of the matched span in the *original* text, ``-1`` when no candidate
            passage was located.
        end: Exclusive end offset of the matched span in the original text, ``-1`` when none.
        method: ``"exact"``, ``"normalized"`` or ``"fuzzy"`` for accepted excerpts, ``"failed"``
            for every rejected one.
        reason: Why the excerpt was rejected (``None`` when valid), e.g. ``"empty excerpt"``,
            ``"number changed: 42 -> 24"``, ``"negation differs"``, ``"below threshold 0.80 (0.62)"``.
        matched: ``text[start:end]``: the matched span, or for rejected excerpts the closest
            candidate passage (empty when none was located).
    """

    valid: bool
    similarity: float
    start: int
    end: int
    method: MatchMethod
    reason: str | None = None
    matched: str = ""


def _failed(reason: str) -> ExcerptMatch:
    return ExcerptMatch(False, 0.0, -1, -1, "failed", reason)


def _check_threshold(threshold: float) -> None:
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be within [0, 1], got {threshold!r}")


def _match(excerpt: str, text: str, threshold: float, prepare: Callable[[], Normalized]) -> ExcerptMatch:
    if not excerpt.strip():
        return _failed("empty excerpt")
    if not text.strip():
        return _failed("empty text")
    for candidate in dict.fromkeys((excerpt, excerpt.strip())):
        pos = text.find(candidate)
        if pos != -1:
            return ExcerptMatch(True, 1.0, pos, pos + len(candidate), "exact", None, candidate)

    needle = normalize_text(excerpt)
    if not needle:
        return _failed("empty excerpt")
    prepared = prepare()
    haystack = prepared.norm
    if not haystack.strip():
        return _failed("empty text")
    stripped = strip_decorations(needle)
    for candidate in (needle, stripped):
        pos = haystack.find(candidate) if candidate else -1
        if pos != -1:
            start, end = prepared.to_original(pos, pos + len(candidate))
            return ExcerptMatch(True, 1.0, start, end, "normalized", None, text[start:end])

    needle = stripped or needle
    if len(needle) < MIN_FUZZY_CHARS:
        return _failed(f"not found (fuzzy matching needs at least {MIN_FUZZY_CHARS} characters)")
    if len(needle) > MAX_FUZZY_CHARS:
        return _failed(f"not found (fuzzy matching is limited to {MAX_FUZZY_CHARS} characters)")
    found = fuzzy(needle, excerpt, prepared, threshold)
    if found is None:
        return _failed(f"no similar passage found (threshold {threshold:.2f})")
    start, end = prepared.to_original(found.start, found.end)
    if found.reason is None:
        return ExcerptMatch(True, found.similarity, start, end, "fuzzy", None, text[start:end])
    return ExcerptMatch(False, found.similarity, start, end, "failed", found.reason, text[start:end])


def match_excerpt(excerpt: str, text: str, threshold: float = 0.8) -> ExcerptMatch:
    """Validate that ``excerpt`` is a (near-)verbatim quote of ``text``.

    Exact substrings are accepted first, then matches after normalisation (see
    :func:`normalize_text`); both report similarity ``1.0``. Otherwise excerpts of at least
    :data:`MIN_FUZZY_CHARS` normalised characters are aligned fuzzily and accepted when the
    ``fuzz.ratio`` between the normalised excerpt and the aligned window reaches ``threshold`` and
    the window contains the same numbers, negations and capitalised names, every other differing
    word is a small typo, and no contiguous segment is unsupported (spliced or rewritten quote).

    Normalised texts are cached, so repeated calls with the same ``text`` are cheap; use
    :func:`validate_excerpts` for batches.

    Args:
        excerpt: The quote to validate.
        text: The text the excerpt claims to quote.
        threshold: Minimum fuzzy similarity in ``[0, 1]``.

    Returns:
        The match; offsets refer to the original ``text``.

    Raises:
        ValueError: If ``threshold`` is outside ``[0, 1]``.
    """
    _check_threshold(threshold)
    return _match(excerpt, text, threshold, lambda: prepare_text(text))


def validate_excerpts(excerpts: Sequence[str], text: str, threshold: float = 0.8) -> list[ExcerptMatch]:
    """Validate many excerpts against one text, normalising the text at most once.

    Args:
        excerpts: Quotes to validate.
        text: The text they claim to quote.
        threshold: Minimum fuzzy similarity in ``[0, 1]``.

    Returns:
        One :class:`ExcerptMatch` per excerpt, in order.

    Raises:
        ValueError: If ``threshold`` is outside ``[0, 1]``.
    """
    _check_threshold(threshold)
    cache: list[Normalized] = []

    def prepare() -> Normalized:
        if not cache:
            cache.append(prepare_text(text))
        return cache[0]

    return [_match(excerpt, text, threshold, prepare) for excerpt in excerpts]
