"""Validation of verbatim excerpts quoted from an answer text.

In deep judgment a judge model quotes excerpts from the answer it evaluates; every excerpt must be
checked against the answer before it can be trusted as evidence. :func:`match_excerpt` does that in
four stages, cheapest first:

1. **exact**: the excerpt is a plain substring of the text;
2. **normalized**: both strings are normalised (Unicode compatibility forms folded: ``CO₂`` is
   ``CO2``, ``ﬁ`` is ``fi``; typographic quotes, dashes and ellipses made ASCII; case-folded;
   whitespace collapsed; Markdown decoration and zero-width characters removed) and the
   normalised excerpt is a substring of the normalised text. A piecewise offset map translates the
   position back to the original text;
3. **elided**: an excerpt with an ellipsis inside (``...``, ``…``, ``[...]``, ``[..]``, ``(...)``) is
   split into parts, each matched exactly, after normalisation or fuzzily (with the guards below),
   in order and close together (see :mod:`.elision`); the match has one span per part;
4. **fuzzy**: excerpts of :data:`MIN_FUZZY_CHARS` to :data:`MAX_FUZZY_CHARS` normalised characters
   are located through exact anchors (the first characters of their words, looked up in an index
   of the text built on first use) voting for an alignment diagonal, and, for short excerpts or texts,
   RapidFuzz's ``partial_ratio_alignment`` over the normalised text; the window is refined with an Indel alignment, and the match is accepted only if ``fuzz.ratio`` of the whole
   excerpt against the window clears the threshold *and* a set of guards pass: numbers, negations
   and capitalised names must be identical, every other differing word must be explained by a
   small typo, and no contiguous segment of the excerpt may be unsupported by the window (which
   rejects quotes spliced together from distant passages).

Unlike a longest-common-block validator based on :class:`difflib.SequenceMatcher` (whose *autojunk*
heuristic discards frequent characters in long texts and so rejects many verbatim quotes), every
verbatim quote is accepted, and matching stays in the millisecond range for 100k-character texts.

Everything here is pure: no I/O, no global state except bounded caches (prepared texts, folded
characters).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from verify.judging.excerpts.align import fuzzy
from verify.judging.excerpts.elision import ElidedMatch, Part, match_elided, split_elided
from verify.judging.excerpts.guards import list_number_problem
from verify.judging.excerpts.normalise import (
    Normalized,
    list_on_lines,
    normalize_text,
    strip_decorations,
)
from verify.judging.excerpts.prepared import prepare_text

__all__ = [
    "MAX_FUZZY_CHARS",
    "MIN_FUZZY_CHARS",
    "ExcerptMatch",
    "MatchMethod",
    "match_excerpt",
    "validate_excerpts",
]

MatchMethod = Literal["exact", "normalized", "elided", "fuzzy", "failed"]

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
            ``fuzz.ratio`` of the normalised excerpt against the aligned window for fuzzy ones, and
            the mean over the parts, weighted by their length, for elided ones.
        start: Start offset of the matched span in the *original* text (of the first part of an
            elided quote), ``-1`` when no candidate passage was located.
        end: Exclusive end offset of the matched span in the original text (of the last part of an
            elided quote), ``-1`` when none.
        method: ``"exact"``, ``"normalized"``, ``"elided"`` or ``"fuzzy"`` for accepted excerpts,
            ``"failed"`` for every rejected one.
        reason: Why the excerpt was rejected (``None`` when valid), naming the difference, e.g.
            ``"empty excerpt"``, ``"number changed: 42 -> 24"``, ``'negation removed: "not"'``,
            ``'inserted words: "very"'``, ``"parts not in order: ..."``, ``"below threshold 0.80 (0.62)"``.
        matched: ``text[start:end]``: the matched span, or for rejected excerpts the closest
            candidate passage (empty when none was located).
        spans: ``(start, end)`` offsets in the original text of each part of an elided quote, in
            order; a single ``(start, end)`` for other matches; for a rejected elided quote the parts
            located before the failure; empty when nothing was located.
    """

    valid: bool
    similarity: float
    start: int
    end: int
    method: MatchMethod
    reason: str | None = None
    matched: str = ""
    spans: tuple[tuple[int, int], ...] = ()


def _failed(reason: str) -> ExcerptMatch:
    return ExcerptMatch(False, 0.0, -1, -1, "failed", reason)


def _found(
    text: str,
    valid: bool,
    similarity: float,
    start: int,
    end: int,
    method: MatchMethod,
    reason: str | None = None,
) -> ExcerptMatch:
    return ExcerptMatch(valid, similarity, start, end, method, reason, text[start:end], ((start, end),))


def _elided(found: ElidedMatch, parts: list[Part], prepared: Normalized) -> ExcerptMatch:
    spans = tuple(prepared.to_original(span.start, span.end) for span in found.spans)
    # Weighted by part length; parts that were not located count as 0.
    located = zip(found.spans, parts[: len(found.spans)], strict=True)
    total = sum(len(part.needle) for part in parts)
    similarity = sum(span.similarity * len(part.needle) for span, part in located) / total
    if not spans:
        return ExcerptMatch(False, similarity, -1, -1, "failed", found.reason)
    start, end = spans[0][0], spans[-1][1]
    method: MatchMethod = "elided" if found.reason is None else "failed"
    text = prepared.original
    return ExcerptMatch(
        found.reason is None, similarity, start, end, method, found.reason, text[start:end], spans
    )


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
            return _found(text, True, 1.0, pos, pos + len(candidate), "exact")

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
            return _found(text, True, 1.0, *prepared.to_original(pos, pos + len(candidate)), "normalized")

    parts = split_elided(excerpt)
    if parts is not None:
        found = match_elided(parts, prepared, threshold)
        elided = _elided(found, parts, prepared)
        # A part may be missing because the text itself contains the ellipsis and the quote of that
        # passage has a typo: then the whole quote is tried as one.
        if elided.valid or found.misplaced or ".." not in haystack:
            return elided
        whole = _fuzzy(stripped or needle, excerpt, prepared, threshold)
        return whole if whole.valid else elided
    aligned = _fuzzy(stripped or needle, excerpt, prepared, threshold)
    if aligned.valid:
        return aligned
    listed = _as_list(excerpt, prepared, threshold)
    if listed is not None and (listed.valid or listed.similarity >= aligned.similarity):
        return listed  # read as a list, the quote's reason names what differs without the markers
    return aligned


def _as_list(excerpt: str, prepared: Normalized, threshold: float) -> ExcerptMatch | None:
    """Match a list quoted on one line with its markers as the list it quotes (``None`` if it is none).

    The offsets span the answer's list from the first quoted item to the last.
    """
    lines = list_on_lines(excerpt)
    if lines is None:
        return None
    needle = strip_decorations(normalize_text(lines))
    pos = prepared.norm.find(needle) if needle else -1
    if pos != -1:
        start, end = prepared.to_original(pos, pos + len(needle))
        found = _found(prepared.original, True, 1.0, start, end, "normalized")
    else:
        found = _fuzzy(needle, lines, prepared, threshold)
    problem = list_number_problem(lines, prepared.original, found.start, found.end) if found.valid else None
    return found if problem is None else replace(found, valid=False, method="failed", reason=problem)


def _fuzzy(needle: str, excerpt: str, prepared: Normalized, threshold: float) -> ExcerptMatch:
    if len(needle) < MIN_FUZZY_CHARS:
        return _failed(f"not found (fuzzy matching needs at least {MIN_FUZZY_CHARS} characters)")
    if len(needle) > MAX_FUZZY_CHARS:
        return _failed(f"not found (fuzzy matching is limited to {MAX_FUZZY_CHARS} characters)")
    found = fuzzy(needle, excerpt, prepared, threshold)
    if found is None:
        return _failed(f"no similar passage found (threshold {threshold:.2f})")
    start, end = prepared.to_original(found.start, found.end)
    if found.reason is None:
        return _found(prepared.original, True, found.similarity, start, end, "fuzzy")
    return _found(prepared.original, False, found.similarity, start, end, "failed", found.reason)


def match_excerpt(excerpt: str, text: str, threshold: float = 0.8) -> ExcerptMatch:
    """Validate that ``excerpt`` is a (near-)verbatim quote of ``text``.

    Exact substrings are accepted first, then matches after normalisation (see
    :func:`normalize_text`); both report similarity ``1.0``. An excerpt with an ellipsis inside
    (``"A ... B"``, ``"A … B"``, ``"A [...] B"``) is accepted when every part matches on its own, the
    parts come in order and each starts at most :data:`~.elision.MAX_ELISION_GAP` normalised
    characters after the previous one (method ``"elided"``, one span per part). Otherwise excerpts of at least
    :data:`MIN_FUZZY_CHARS` normalised characters are aligned fuzzily and accepted when the
    ``fuzz.ratio`` between the normalised excerpt and the aligned window reaches ``threshold`` and
    the window contains the same numbers, negations and capitalised names, every other differing
    word is a small typo, and no contiguous segment is unsupported (spliced or rewritten quote).

    Prepared texts (normalised, with their offset map and anchors) are cached process-wide (see
    :mod:`.prepared`), so every call quoting the same ``text`` prepares it once.

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
    """Validate many excerpts against one text, normalising the text at most once (and only if needed).

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
