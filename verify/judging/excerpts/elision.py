"""Elided quotes: ``"A ... B"``, ``"A … B"``, ``"A [...] B"``, ``"A [..] B"``, ``"A (...) B"``.

Judges shorten long passages with an ellipsis. Such a quote is accepted when every part is found in
the text (exactly, after normalisation, or fuzzily with all the guards when the part is long enough),
the parts come in the quoted order, and each starts at most :data:`MAX_ELISION_GAP` normalised
characters after the previous one ends.

Why these limits: an ellipsis stands for words left out *of one passage*; 400 characters is about a
paragraph (three or four sentences), which covers what judges elide, while parts taken from distant
places of a long answer (a splice presented as an elision) are rejected. The bound is fixed rather
than proportional to the answer, because a longer answer does not make a longer elision more
legitimate. Every part needs :data:`MIN_PART_WORDS` words and :data:`MIN_PART_CHARS` characters: a
fragment such as ``"the"`` or ``"is not"`` occurs by chance within any 400 characters, so it proves
nothing, and quotes such as ``"The ... is"`` would otherwise glue chance words into a claim.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from verify.judging.excerpts.align import Candidate, fuzzy
from verify.judging.excerpts.guards import short
from verify.judging.excerpts.normalise import Normalized, normalize_text, strip_decorations

__all__ = [
    "MAX_ELISION_GAP",
    "MIN_PART_CHARS",
    "MIN_PART_WORDS",
    "ElidedMatch",
    "Part",
    "PartSpan",
    "match_elided",
    "split_elided",
]

#: Longest run of normalised characters that an ellipsis may stand for.
MAX_ELISION_GAP = 400
#: Fewest normalised characters in each part of an elided quote.
MIN_PART_CHARS = 10
#: Fewest words in each part of an elided quote.
MIN_PART_WORDS = 2

_MIN_FUZZY_PART_CHARS = 20  # shorter parts must be found exactly or after normalisation
_MAX_FIRST_CANDIDATES = 16  # occurrences of the first part from which a chain of parts is tried
_DOTS = r"(?:\.{2,}|\u2026)"
_MARKER_RE = re.compile(rf"\s*(?:\[\s*{_DOTS}\s*\]|\(\s*{_DOTS}\s*\)|\.(?: ?\.){{2,}}|\u2026)\s*")
_WORD_RE = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Part:
    """One part of an elided quote: as written, and normalised without surrounding decoration."""

    excerpt: str
    needle: str


@dataclass(frozen=True)
class PartSpan:
    """Where a part was found, in normalised offsets, and how similar it is (``1.0`` when exact)."""

    start: int
    end: int
    similarity: float


@dataclass(frozen=True)
class ElidedMatch:
    """The outcome for an elided quote.

    ``spans`` are the parts located in order; ``reason`` says why the quote failed (``None`` if it
    matched); ``misplaced`` is true when every part exists in the text but not in order or not close
    together (rather than a part missing or altered).
    """

    spans: tuple[PartSpan, ...]
    reason: str | None
    misplaced: bool = False


def split_elided(excerpt: str) -> list[Part] | None:
    """The parts of an excerpt around its ellipses, or ``None`` when it has fewer than two parts.

    Leading and trailing ellipses only mark a quote that starts or ends mid-passage; they are
    dropped here (and by the whole-quote match before this is called).
    """
    pieces = _MARKER_RE.split(excerpt)
    if len(pieces) < 2:
        return None
    parts = []
    for piece in pieces:
        needle = strip_decorations(normalize_text(piece))
        if needle:
            parts.append(Part(piece.strip(), needle))
    return parts if len(parts) >= 2 else None


def _locate(
    part: Part, prepared: Normalized, threshold: float, lo: int, hi: int
) -> PartSpan | Candidate | None:
    """Find ``part`` in ``prepared.norm[lo:hi]``: exactly, else fuzzily (a rejected candidate, if any)."""
    pos = prepared.norm.find(part.needle, lo, hi)
    if pos != -1:
        return PartSpan(pos, pos + len(part.needle), 1.0)
    if len(part.needle) < _MIN_FUZZY_PART_CHARS:
        return None
    found = fuzzy(part.needle, part.excerpt, prepared, threshold, lo, hi)
    if found is not None and found.reason is None:
        return PartSpan(found.start, found.end, found.similarity)
    return found


def _first_spans(part: Part, prepared: Normalized, threshold: float) -> list[PartSpan] | Candidate | None:
    """Every place (up to a limit) where the first part occurs, else the best fuzzy candidate."""
    haystack, needle = prepared.norm, part.needle
    spans: list[PartSpan] = []
    pos = haystack.find(needle)
    while pos != -1 and len(spans) < _MAX_FIRST_CANDIDATES:
        spans.append(PartSpan(pos, pos + len(needle), 1.0))
        pos = haystack.find(needle, pos + 1)
    if spans:
        return spans
    found = _locate(part, prepared, threshold, 0, len(haystack))
    return [found] if isinstance(found, PartSpan) else found


def _altered(index: int, part: Part, candidate: Candidate | None, threshold: float) -> str | None:
    """The reason a similar passage was rejected for this part (a guard failed), if one was found."""
    if candidate is None or candidate.reason is None or candidate.similarity < threshold:
        return None
    return f"part {index} {short(part.excerpt)}: {candidate.reason}"


class _Chain(NamedTuple):
    """Parts located one after the other, and the rejected candidate for the next part (if any)."""

    spans: list[PartSpan]
    nearby: Candidate | None


def _follow(first: PartSpan, parts: list[Part], prepared: Normalized, threshold: float) -> _Chain:
    """Locate each further part within reach after the previous one, from ``first``, until one fails."""
    spans = [first]
    for part in parts[1:]:
        lo = spans[-1].end
        found = _locate(part, prepared, threshold, lo, lo + MAX_ELISION_GAP + len(part.needle))
        if not isinstance(found, PartSpan) or found.start - lo > MAX_ELISION_GAP:
            return _Chain(spans, found if isinstance(found, Candidate) else None)
        spans.append(found)
    return _Chain(spans, None)


def _diagnose(chain: _Chain, parts: list[Part], prepared: Normalized, threshold: float) -> ElidedMatch:
    """Why the part after ``chain`` was not found within reach of the previous one."""
    index = len(chain.spans) + 1
    part, previous, located = parts[index - 1], chain.spans[-1], tuple(chain.spans)
    altered = _altered(index, part, chain.nearby, threshold)
    if altered is not None:
        return ElidedMatch(located, altered)
    found = _locate(part, prepared, threshold, 0, len(prepared.norm))
    if not isinstance(found, PartSpan):
        reason = _altered(index, part, found, threshold) or f"part {index} not found: {short(part.excerpt)}"
        return ElidedMatch(located, reason)
    later = prepared.norm.find(part.needle, previous.end)
    start = later if later != -1 else found.start
    if start < previous.end:
        reason = f"parts not in order: part {index} comes before part {index - 1} in the text"
    else:
        reason = (
            f"parts too far apart: part {index} starts {start - previous.end} characters after part "
            f"{index - 1} ends (at most {MAX_ELISION_GAP})"
        )
    return ElidedMatch(located, reason, misplaced=True)


def match_elided(parts: list[Part], prepared: Normalized, threshold: float) -> ElidedMatch:
    """Locate the parts of an elided quote in order, each close after the previous one."""
    for index, part in enumerate(parts, 1):
        if len(part.needle) < MIN_PART_CHARS or len(_WORD_RE.findall(part.needle)) < MIN_PART_WORDS:
            return ElidedMatch(
                (),
                f"part {index} too short to verify: {short(part.excerpt)} (each part of an elided quote "
                f"needs {MIN_PART_WORDS} words and {MIN_PART_CHARS} characters)",
            )
    firsts = _first_spans(parts[0], prepared, threshold)
    if not isinstance(firsts, list):
        reason = _altered(1, parts[0], firsts, threshold) or f"part 1 not found: {short(parts[0].excerpt)}"
        return ElidedMatch((), reason)
    longest: _Chain | None = None
    for first in firsts:
        chain = _follow(first, parts, prepared, threshold)
        if len(chain.spans) == len(parts):
            return ElidedMatch(tuple(chain.spans), None)
        if longest is None or len(chain.spans) > len(longest.spans):
            longest = chain
    return _diagnose(longest or _Chain([firsts[0]], None), parts, prepared, threshold)
