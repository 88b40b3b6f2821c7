"""Fuzzy alignment of a normalised excerpt against a normalised text, using RapidFuzz.

Candidate regions are located through exact anchors (the first characters of each word, looked up in
the text's :class:`~verify.judging.excerpts.anchors.KeyIndex`) voting for an alignment diagonal,
and, for short ranges or when the anchors cannot be relied on, RapidFuzz's ``partial_ratio_alignment``
over the range; each window is refined with an Indel alignment, snapped to whole tokens for the number
check, scored with ``fuzz.ratio`` and passed through the :mod:`~verify.judging.excerpts.guards`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass
from typing import NamedTuple

from rapidfuzz import fuzz
from rapidfuzz.distance import Indel

from verify.judging.excerpts.anchors import KEY_CHARS
from verify.judging.excerpts.guards import (
    cut_words,
    describe_words,
    negation_problem,
    number_problem,
    snap_to_tokens,
    unsupported_problem,
    word_problem,
)
from verify.judging.excerpts.names import name_problem
from verify.judging.excerpts.normalise import Normalized

__all__ = ["Candidate", "fuzzy"]

# Fuzzy alignment tuning.
_MAX_GAP = 10  # longest tolerated run of unsupported characters (either side of the alignment)
_FULL_SCAN_MAX_CHARS = 400  # longest excerpt for which a whole-text alignment scan is affordable
_MAX_REGIONS = 3  # candidate alignments (from key anchors) that are examined in detail
_MAX_ANCHORS = 24  # rarest keys of the excerpt that vote for an alignment
_MAX_OCCURRENCES = 64  # a key occurring more often in the text is too common to be informative
_MIN_KEYS = 3  # with fewer keys the anchors are not relied on alone (one typo may hide them all)
_LOCAL_RANGE = 4096  # ranges up to this many characters are searched for keys without the index
_EXACT_REFINE_MAX_CHARS = 800  # up to this excerpt length every candidate span gets an exact ratio
_REFINE_SHORTLIST = 6  # candidate spans that get an exact ratio for longer excerpts


@dataclass(frozen=True)
class Candidate:
    """A scored span of the normalised text; ``reason`` says why it was rejected (``None`` if accepted)."""

    start: int  # normalised offsets
    end: int
    similarity: float
    reason: str | None


class Anchors(NamedTuple):
    """Likely alignments (diagonals) of a needle, and whether they can be relied on alone."""

    diagonals: list[int]
    reliable: bool


def _anchor_diagonals(needle: str, prepared: Normalized, lo: int, hi: int) -> Anchors:
    """Likely alignments of ``needle`` in ``prepared.norm[lo:hi]``, from exact keys voting for a diagonal.

    A diagonal ``d`` means that ``needle[0]`` aligns with ``norm[d]``. The anchors are the
    :data:`KEY_CHARS` characters starting at each token of the needle (usually two or three words,
    so rare in the text; the needle's first token is left out, as the quote may start inside a
    word), looked up in the text's :class:`KeyIndex` (or searched directly: in a short range, and
    until the index pays for itself, see :meth:`.Normalized.key_index`). The
    rarest ones vote; votes on nearby diagonals (shifted by insertions or deletions) are clustered,
    and the best-supported diagonal of each of the ``_MAX_REGIONS`` strongest clusters is returned.

    The anchors are not reliable alone when the needle has fewer than ``_MIN_KEYS`` keys (one typo
    may hide them all) or when every key is too common in the text to point anywhere.
    """
    haystack = prepared.norm
    # Without the index, each key of the needle is searched for in the range.
    scans = -(-(needle.count(" ") * (hi - lo)) // max(1, len(haystack)))
    index = None if hi - lo <= _LOCAL_RANGE else prepared.key_index(scans)
    local: dict[str, list[int]] = {}

    def positions(key: str) -> list[int]:
        if index is not None:
            return [pos for pos in index.positions(key) if lo <= pos < hi]
        found = local.get(key)
        if found is None:
            found = local[key] = []
            pos = haystack.find(key, lo, hi)
            while pos != -1 and len(found) <= _MAX_OCCURRENCES:
                if pos == 0 or haystack[pos - 1] == " ":  # keys start tokens
                    found.append(pos)
                pos = haystack.find(key, pos + 1, hi)
        return found

    usable: list[tuple[int, int, str]] = []  # (occurrences, offset in the needle, key)
    keys = common = 0
    offset = needle.find(" ") + 1
    while 0 < offset <= len(needle) - KEY_CHARS:
        key = needle[offset : offset + KEY_CHARS]
        count = index.count(key) if index is not None else len(positions(key))
        keys += 1
        if count > _MAX_OCCURRENCES:
            common += 1
        elif count:
            usable.append((count, offset, key))
        offset = needle.find(" ", offset) + 1
    votes: Counter[int] = Counter()
    for _, offset, key in sorted(usable)[:_MAX_ANCHORS]:
        for pos in positions(key):
            votes[pos - offset] += 1
    tolerance = 8 + len(needle) // 8
    clusters: list[tuple[int, int]] = []  # (total votes, best diagonal)
    members: list[int] = []
    for diagonal in sorted(votes):
        if members and diagonal - members[-1] > tolerance:
            clusters.append((sum(votes[d] for d in members), max(members, key=lambda d: votes[d])))
            members = []
        members.append(diagonal)
    if members:
        clusters.append((sum(votes[d] for d in members), max(members, key=lambda d: votes[d])))
    clusters.sort(key=lambda c: -c[0])
    reliable = keys >= _MIN_KEYS and (bool(usable) or not common)
    return Anchors([diagonal for _, diagonal in clusters[:_MAX_REGIONS]], reliable)


def _refine(needle: str, haystack: str, w_start: int, w_end: int, lo: int, hi: int) -> tuple[int, int]:
    """Adjust an approximate window to the span of ``haystack`` that best matches ``needle``.

    ``needle`` is aligned (Indel opcodes) against the window widened by a margin; candidate
    boundaries come from the first and last common blocks (their own position, and the position
    implied by their diagonal), and the pair maximising the ratio ``2 * common / (len(needle) +
    len(span))`` is kept. For long needles, ``common`` is first estimated from the alignment to
    shortlist a few spans, so that only those need an exact (quadratic) ratio.
    """
    size = len(needle)
    pad = 4 + size // 10
    p_start, p_end = max(lo, w_start - pad), min(hi, w_end + pad)
    blocks = [op for op in Indel.opcodes(needle, haystack[p_start:p_end]) if op.tag == "equal"]
    starts = {max(lo, w_start)}
    ends = {min(hi, w_end)}
    b_starts = [p_start + op.dest_start for op in blocks]
    b_ends = [p_start + op.dest_end for op in blocks]
    prefix = [0]
    for op in blocks:
        prefix.append(prefix[-1] + op.src_end - op.src_start)
    core = [i for i, op in enumerate(blocks) if op.src_end - op.src_start >= 3] or list(range(len(blocks)))
    for i in core[:3]:
        starts.update((b_starts[i], b_starts[i] - blocks[i].src_start))
    for i in core[-3:]:
        ends.update((b_ends[i], b_ends[i] + size - blocks[i].src_end))

    def common(s: int, e: int) -> int:
        first = bisect_right(b_ends, s)
        stop = bisect_left(b_starts, e)
        if first >= stop:
            return 0
        total = prefix[stop] - prefix[first] - max(0, s - b_starts[first]) - max(0, b_ends[stop - 1] - e)
        return max(0, total)

    spans: set[tuple[int, int]] = set()
    for s in starts:
        for e in ends:
            s2, e2 = max(lo, s), min(hi, e)
            while s2 < e2 and haystack[s2] == " ":
                s2 += 1
            while e2 > s2 and haystack[e2 - 1] == " ":
                e2 -= 1
            if s2 < e2:
                spans.add((s2, e2))
    if not spans:
        return w_start, w_start
    # The alignment may have matched a few edge characters of the needle to stray characters of the
    # margin, so the estimate is only used to shortlist spans when exact ratios would be costly.
    ranked = sorted(spans, key=lambda sp: -2 * common(*sp) / (size + sp[1] - sp[0]))
    shortlist = ranked if size <= _EXACT_REFINE_MAX_CHARS else ranked[:_REFINE_SHORTLIST]
    return max(
        shortlist,
        key=lambda sp: (fuzz.ratio(needle, haystack[sp[0] : sp[1]]), -abs(sp[1] - sp[0] - size), -sp[0]),
    )


def _judge(
    needle: str, excerpt: str, prepared: Normalized, threshold: float, start: int, end: int, lo: int, hi: int
) -> Candidate:
    """Score the normalised span ``[start, end)`` against ``needle`` and apply the guards."""
    edges = cut_words(needle, prepared.norm, start, end, lo, hi)
    start, end = edges.start, edges.end
    window = prepared.norm[start:end]
    similarity = fuzz.ratio(needle, window) / 100.0

    def rejected(reason: str) -> Candidate:
        return Candidate(start, end, similarity, reason)

    if similarity < threshold:
        return rejected(f"below threshold {threshold:.2f} ({similarity:.2f})")
    allowed = max(4, int(len(needle) * min(0.25, 1.0 - threshold)))
    if abs(len(window) - len(needle)) > allowed:
        # Words were left out or added: compare with a passage wide enough to hold the quoted one.
        extra = len(needle)
        around = prepared.norm[max(0, start - extra) : end + extra]
        described = describe_words(needle, around, context=True)
        return rejected(described or f"aligned passage has {len(window)} characters, the quote {len(needle)}")
    text = prepared.original
    o_start, o_end = prepared.to_original(start, end)
    # Numbers are compared on the span widened to whole tokens, so that "10" quoted for "100" is caught.
    # Words are compared on the aligned span itself: an excerpt that starts or ends inside a word
    # aligns with the same fragment of that word.
    problem = (
        number_problem(excerpt, text[slice(*snap_to_tokens(text, o_start, o_end))])
        or negation_problem(excerpt, text[o_start:o_end])
        or name_problem(excerpt, text, o_start, o_end)
        or edges.problem
        or word_problem(needle, window)
        or unsupported_problem(needle, window, _MAX_GAP)
    )
    if problem is not None:
        return rejected(problem)
    return Candidate(start, end, similarity, None)


def fuzzy(
    needle: str, excerpt: str, prepared: Normalized, threshold: float, lo: int = 0, hi: int | None = None
) -> Candidate | None:
    """The first aligned span that passes the guards, else the best rejected one (``None`` if none).

    ``lo`` and ``hi`` restrict the search to ``prepared.norm[lo:hi]`` (normalised offsets).
    """
    haystack = prepared.norm
    hi = len(haystack) if hi is None else min(hi, len(haystack))
    size = len(needle)
    best: Candidate | None = None
    seen: set[tuple[int, int]] = set()

    def consider(w_start: int, w_end: int) -> Candidate | None:
        nonlocal best
        span = _refine(needle, haystack, w_start, w_end, lo, hi)
        if span[0] >= span[1] or span in seen:
            return None
        seen.add(span)
        candidate = _judge(needle, excerpt, prepared, threshold, *span, lo, hi)
        if best is None or (candidate.reason is None, candidate.similarity) > (
            best.reason is None,
            best.similarity,
        ):
            best = candidate
        return candidate if candidate.reason is None else None

    anchors = _anchor_diagonals(needle, prepared, lo, hi)
    for diagonal in anchors.diagonals:
        found = consider(diagonal, diagonal + size)
        if found is not None:
            return found
    # A fixed-width alignment scan does not rely on exact keys (an excerpt with typos everywhere
    # shares none with the text). It is affordable over short ranges; over a long text it runs only
    # when the anchors are not reliable, since scanning 60k characters for every rejected quote (a
    # paraphrase, a changed number) would dominate the matching time.
    small = hi - lo <= 4 * size + 512
    if small or (not anchors.reliable and size <= _FULL_SCAN_MAX_CHARS):
        cutoff = 0.0 if small else threshold * 100.0
        alignment = fuzz.partial_ratio_alignment(needle, haystack[lo:hi], score_cutoff=cutoff)
        if alignment is not None and alignment.score > 0:
            found = consider(lo + alignment.dest_start, lo + alignment.dest_end)
            if found is not None:
                return found
    return best
