"""Fuzzy alignment of a normalised excerpt against a normalised text, using RapidFuzz.

Candidate regions are located through exact q-gram anchors voting for an alignment diagonal, or,
for short excerpts, RapidFuzz's ``partial_ratio_alignment`` over the whole normalised text; each
window is refined with an Indel alignment, snapped to whole tokens for the number check, scored
with ``fuzz.ratio`` and passed through the :mod:`~verify.judging.excerpts.guards`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass

from rapidfuzz import fuzz
from rapidfuzz.distance import Indel

from verify.judging.excerpts.guards import max_unsupported_run, name_problem, negations, numbers, word_problem
from verify.judging.excerpts.normalise import Normalized

__all__ = ["Candidate", "fuzzy"]

# Fuzzy alignment tuning.
_MAX_GAP = 10  # longest tolerated run of unsupported characters (either side of the alignment)
_FULL_SCAN_MAX_CHARS = 400  # longest excerpt for which a whole-text alignment scan is affordable
_MAX_REGIONS = 3  # candidate alignments (from q-gram anchors) that are examined in detail
_QUICK_SHINGLES = 12  # q-grams sampled from the excerpt for the quick anchor search
_MAX_SHINGLES = 32  # q-grams sampled from the excerpt for the thorough anchor search
_MAX_OCCURRENCES = 32  # occurrences of one q-gram that are considered
_EXACT_REFINE_MAX_CHARS = 800  # up to this excerpt length every candidate span gets an exact ratio
_REFINE_SHORTLIST = 6  # candidate spans that get an exact ratio for longer excerpts


def _snap_to_tokens(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen ``[start, end)`` so that it does not cut a word or number in half."""
    while 0 < start < len(text) and text[start - 1].isalnum() and text[start].isalnum():
        start -= 1
    while 0 < end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
        end += 1
    return start, end


@dataclass(frozen=True)
class Candidate:
    """A scored span of the normalised text; ``reason`` says why it was rejected (``None`` if accepted)."""

    start: int  # normalised offsets
    end: int
    similarity: float
    reason: str | None


def _anchor_diagonals(needle: str, haystack: str, thorough: bool) -> list[int]:
    """Likely alignments of ``needle`` in ``haystack``, from exact q-grams voting for a diagonal.

    A diagonal ``d`` means that ``needle[0]`` aligns with ``haystack[d]``. The quick mode samples
    a few q-grams and only looks at their first occurrence (one partial scan each); the thorough
    mode samples more q-grams and follows up to ``_MAX_OCCURRENCES`` occurrences of each. Votes on
    nearby diagonals (shifted by insertions or deletions) are clustered; the best-supported
    diagonal of each of the ``_MAX_REGIONS`` strongest clusters is returned.
    """
    size = len(needle)
    q = 12 if size >= 48 else max(6, size // 4)
    last = size - q
    shingles = _MAX_SHINGLES if thorough else _QUICK_SHINGLES
    occurrences = _MAX_OCCURRENCES if thorough else 1
    step = max(1, last // (shingles - 1))
    positions = list(range(0, last + 1, step))
    if positions[-1] != last:
        positions.append(last)
    votes: Counter[int] = Counter()
    for pos in positions:
        gram = needle[pos : pos + q]
        hit = haystack.find(gram)
        count = 0
        while hit != -1:
            votes[hit - pos] += 1
            count += 1
            if count >= occurrences:
                break
            hit = haystack.find(gram, hit + 1)
    if not votes:
        return []
    tolerance = 8 + size // 8
    clusters: list[tuple[int, int]] = []  # (total votes, best diagonal)
    members: list[int] = []
    for diagonal in sorted(votes):
        if members and diagonal - members[-1] > tolerance:
            clusters.append((sum(votes[d] for d in members), max(members, key=lambda d: votes[d])))
            members = []
        members.append(diagonal)
    clusters.append((sum(votes[d] for d in members), max(members, key=lambda d: votes[d])))
    clusters.sort(key=lambda c: -c[0])
    return [diagonal for _, diagonal in clusters[:_MAX_REGIONS]]


def _refine(needle: str, haystack: str, w_start: int, w_end: int) -> tuple[int, int]:
    """Adjust an approximate window to the span of ``haystack`` that best matches ``needle``.

    ``needle`` is aligned (Indel opcodes) against the window widened by a margin; candidate
    boundaries come from the first and last common blocks (their own position, and the position
    implied by their diagonal), and the pair maximising the ratio ``2 * common / (len(needle) +
    len(span))`` is kept. For long needles, ``common`` is first estimated from the alignment to
    shortlist a few spans, so that only those need an exact (quadratic) ratio.
    """
    n = len(haystack)
    size = len(needle)
    pad = 4 + size // 10
    p_start, p_end = max(0, w_start - pad), min(n, w_end + pad)
    blocks = [op for op in Indel.opcodes(needle, haystack[p_start:p_end]) if op.tag == "equal"]
    starts = {max(0, w_start)}
    ends = {min(n, w_end)}
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
            s2, e2 = max(0, s), min(n, e)
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
    needle: str, excerpt: str, prepared: Normalized, threshold: float, start: int, end: int
) -> Candidate:
    """Score the normalised span ``[start, end)`` against ``needle`` and apply the guards."""
    window = prepared.norm[start:end]
    similarity = fuzz.ratio(needle, window) / 100.0

    def rejected(reason: str) -> Candidate:
        return Candidate(start, end, similarity, reason)

    if similarity < threshold:
        return rejected(f"below threshold {threshold:.2f} ({similarity:.2f})")
    allowed = max(4, int(len(needle) * min(0.25, 1.0 - threshold)))
    if abs(len(window) - len(needle)) > allowed:
        return rejected(f"aligned span length {len(window)} differs from excerpt length {len(needle)}")
    text = prepared.original
    o_start, o_end = prepared.to_original(start, end)
    # Numbers are compared on the span widened to whole tokens, so that "10" quoted for "100" is caught.
    excerpt_numbers = numbers(excerpt)
    span_numbers = numbers(text[slice(*_snap_to_tokens(text, o_start, o_end))])
    if excerpt_numbers != span_numbers:
        before = ", ".join(sorted((span_numbers - excerpt_numbers).elements())) or "(none)"
        after = ", ".join(sorted((excerpt_numbers - span_numbers).elements())) or "(none)"
        return rejected(f"number changed: {before} -> {after}")
    # Words are compared on the aligned span itself: an excerpt that starts or ends inside a word
    # aligns with the same fragment of that word.
    if negations(excerpt) != negations(text[o_start:o_end]):
        return rejected("negation differs")
    problem = name_problem(excerpt, text, o_start, o_end)
    if problem is not None:
        return rejected(problem)
    problem = word_problem(needle, window)
    if problem is not None:
        return rejected(problem)
    run = max_unsupported_run(needle, window)
    if run > _MAX_GAP:
        return rejected(f"unsupported segment of {run} chars (spliced or altered quote)")
    return Candidate(start, end, similarity, None)


def fuzzy(needle: str, excerpt: str, prepared: Normalized, threshold: float) -> Candidate | None:
    """The first aligned span that passes the guards, else the best rejected one (``None`` if none)."""
    haystack = prepared.norm
    size = len(needle)
    best: Candidate | None = None
    seen: set[tuple[int, int]] = set()

    def consider(w_start: int, w_end: int) -> Candidate | None:
        nonlocal best
        span = _refine(needle, haystack, w_start, w_end)
        if span[0] >= span[1] or span in seen:
            return None
        seen.add(span)
        candidate = _judge(needle, excerpt, prepared, threshold, *span)
        if best is None or (candidate.reason is None, candidate.similarity) > (
            best.reason is None,
            best.similarity,
        ):
            best = candidate
        return candidate if candidate.reason is None else None

    for diagonal in _anchor_diagonals(needle, haystack, thorough=False):
        found = consider(diagonal, diagonal + size)
        if found is not None:
            return found
    small = len(haystack) <= 4 * size + 512
    if small or size <= _FULL_SCAN_MAX_CHARS:
        # A global fixed-width alignment scan: affordable for short excerpts or texts, and it does
        # not rely on exact q-grams (an excerpt with many small typos may share none with the text).
        cutoff = 0.0 if small else threshold * 100.0
        alignment = fuzz.partial_ratio_alignment(needle, haystack, score_cutoff=cutoff)
        if alignment is not None and alignment.score > 0:
            found = consider(alignment.dest_start, alignment.dest_end)
            if found is not None:
                return found
    else:
        for diagonal in _anchor_diagonals(needle, haystack, thorough=True):
            found = consider(diagonal, diagonal + size)
            if found is not None:
                return found
    return best
