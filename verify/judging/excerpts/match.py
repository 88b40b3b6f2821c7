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

import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from rapidfuzz import fuzz
from rapidfuzz.distance import OSA, Indel

__all__ = [
    "MAX_FUZZY_CHARS",
    "MIN_FUZZY_CHARS",
    "ExcerptMatch",
    "MatchMethod",
    "match_excerpt",
    "normalize_text",
    "validate_excerpts",
]

MatchMethod = Literal["exact", "normalized", "fuzzy", "failed"]

#: Excerpts shorter than this many normalised characters are only matched exactly / after normalisation.
MIN_FUZZY_CHARS = 20
#: Excerpts longer than this many normalised characters are only matched exactly / after normalisation
#: (fuzzy alignment is quadratic in the excerpt length; judges quote sentences, not pages).
MAX_FUZZY_CHARS = 5000

# Fuzzy alignment tuning.
_MIN_BLOCK = 4  # an excerpt character is "supported" when it lies in a common block of >= this size
_MAX_GAP = 10  # longest tolerated run of unsupported characters (either side of the alignment)
_FULL_SCAN_MAX_CHARS = 400  # longest excerpt for which a whole-text alignment scan is affordable
_MAX_REGIONS = 3  # candidate alignments (from q-gram anchors) that are examined in detail
_QUICK_SHINGLES = 12  # q-grams sampled from the excerpt for the quick anchor search
_MAX_SHINGLES = 32  # q-grams sampled from the excerpt for the thorough anchor search
_MAX_OCCURRENCES = 32  # occurrences of one q-gram that are considered
_EXACT_REFINE_MAX_CHARS = 800  # up to this excerpt length every candidate span gets an exact ratio
_REFINE_SHORTLIST = 6  # candidate spans that get an exact ratio for longer excerpts


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


# --------------------------------------------------------------------------------------------------
# Normalisation with an offset map
# --------------------------------------------------------------------------------------------------

_CHAR_REPLACEMENTS: dict[str, str] = {
    "\u2018": "'",  # ‘
    "\u2019": "'",  # ’
    "\u201a": "'",  # ‚
    "\u201b": "'",  # ‛
    "\u2032": "'",  # ′
    "\u2039": "'",  # ‹
    "\u203a": "'",  # ›
    "\u201c": '"',  # “
    "\u201d": '"',  # ”
    "\u201e": '"',  # „
    "\u201f": '"',  # ‟
    "\u00ab": '"',  # «
    "\u00bb": '"',  # »
    "\u2033": '"',  # ″
    "\u2010": "-",  # ‐
    "\u2011": "-",  # ‑
    "\u2012": "-",  # ‒
    "\u2013": "-",  # –
    "\u2014": "-",  # —
    "\u2015": "-",  # ―
    "\u2212": "-",  # −
    # Every single whitespace character becomes a space; runs are collapsed by _SPECIAL_RE.
    **{chr(code): " " for code in range(0x3001) if chr(code).isspace() and code != 0x20},
}
_CHAR_RE = re.compile("[" + re.escape("".join(_CHAR_REPLACEMENTS)) + "]")
_ASCII_MAP = bytes(
    ord(_CHAR_REPLACEMENTS.get(chr(code), chr(code)).lower()) if code < 128 else code for code in range(256)
)


def _fold(text: str) -> str:
    """Apply ``_CHAR_REPLACEMENTS`` and case folding (length-preserving except for rare characters)."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_MAP).decode("ascii")
    return _CHAR_RE.sub(lambda m: _CHAR_REPLACEMENTS[m.group()], text).casefold()


_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
# Line-start Markdown: whitespace, blockquote markers, heading hashes and list bullets.
_LINE_MARKUP = r"(?:\s|>|#{1,6}(?=[ \t]|\Z)|[-*+](?=[ \t]|\Z))"
_SPECIAL_RE = re.compile(
    rf"(?P<lead>\A{_LINE_MARKUP}+)"
    rf"|(?P<nl>\s*\n{_LINE_MARKUP}*)"
    r"|(?P<ws>\s{2,})"
    rf"|(?P<zw>[{_ZERO_WIDTH}]+)"
    r"|(?P<ell>\u2026)"
    r"|(?P<md>[*_`]+)"
    r"|(?P<lo>!?\[(?=[^\]\n]*\]\([^)\s]*\)))"
    r"|(?P<lc>\]\([^)\s]*\))"
)
# Characters at which a special sequence can start, except the space (handled via double spaces).
# A bare character class lets the regex engine scan quickly.
_TRIGGER_RE = re.compile(
    "[\t\n\x0b\x0c\r\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
    rf"{_ZERO_WIDTH}*_`\[\]!\u2026]"
)
_REPLACEMENTS = {"lead": "", "nl": " ", "ws": " ", "zw": "", "ell": "...", "md": "", "lo": "", "lc": ""}


def _is_marker_kept(text: str, start: int, end: int) -> bool:
    """Whether a run of ``*``, ``_`` or backticks is literal text rather than Markdown emphasis/code.

    At either end of the string the context is unknown (an excerpt may end just before a bold word),
    so markers there are always removed.
    """
    if start == 0 or end == len(text):
        return False
    before, after = text[start - 1], text[end]
    if before.isalnum() and after.isalnum():  # snake_case, 2*3
        return True
    return before.isspace() and after.isspace()  # a lone "*" between spaces, e.g. "2 * 3"


def _special_matches(text: str) -> list[re.Match[str]]:
    """The matches of ``_SPECIAL_RE`` in ``text``, found without running it at every position.

    Candidate positions are the start of the text, every trigger character and every double
    space; spaces right before a candidate are included so that ``"  \n"`` collapses as one run.
    """
    candidates = [0, *(m.start() for m in _TRIGGER_RE.finditer(text))]
    pos = text.find("  ")
    while pos != -1:
        candidates.append(pos)
        pos = text.find("  ", pos + 2)
    candidates.sort()
    matches: list[re.Match[str]] = []
    last = 0
    for pos in candidates:
        if pos < last:
            continue
        begin = pos
        while begin > last and text[begin - 1] == " ":
            begin -= 1
        m = _SPECIAL_RE.match(text, begin)
        if begin < pos and (m is None or m.end() <= pos):
            m = _SPECIAL_RE.match(text, pos)
        if m is not None and m.end() > m.start():
            matches.append(m)
            last = m.end()
    return matches


class _Normalized:
    """A normalised copy of a text plus a piecewise map back to original offsets.

    Piece ``i`` covers ``norm[n_starts[i]:n_starts[i + 1]]`` and stems from
    ``original[o_starts[i]:o_starts[i] + o_lens[i]]``. Most pieces are copied character for
    character (equal lengths); replacement pieces (a collapsed whitespace run, an expanded ellipsis)
    map onto their original range as a whole. Deleted markup produces no piece.
    """

    __slots__ = ("n_starts", "norm", "o_lens", "o_starts", "original")

    def __init__(self, text: str) -> None:
        self.original = text
        n_starts: list[int] = []
        o_starts: list[int] = []
        o_lens: list[int] = []
        parts: list[str] = []
        folded = _fold(text)
        fast = len(folded) == len(text)  # False only if case folding changed a length (e.g. "ß")
        size = 0

        def copy_slow(o_start: int, o_end: int) -> int:
            offset = size
            for index in range(o_start, o_end):
                piece = _fold(text[index])
                n_starts.append(offset)
                o_starts.append(index)
                o_lens.append(1)
                parts.append(piece)
                offset += len(piece)
            return offset

        last = 0
        for m in _special_matches(text):
            start, end = m.span()
            kind = m.lastgroup or ""
            if end - start == 1 and kind == "nl":
                continue  # a lone newline: mapped to a space one-to-one by _fold
            if kind == "md" and _is_marker_kept(text, start, end):
                continue
            if start > last:
                if fast:
                    n_starts.append(size)
                    o_starts.append(last)
                    o_lens.append(start - last)
                    parts.append(folded[last:start])
                    size += start - last
                else:
                    size = copy_slow(last, start)
            replacement = _REPLACEMENTS[kind]
            if replacement:
                n_starts.append(size)
                o_starts.append(start)
                o_lens.append(end - start)
                parts.append(replacement)
                size += len(replacement)
            last = end
        if last < len(text):
            if fast:
                n_starts.append(size)
                o_starts.append(last)
                o_lens.append(len(text) - last)
                parts.append(folded[last:])
            else:
                copy_slow(last, len(text))
        self.n_starts = n_starts
        self.o_starts = o_starts
        self.o_lens = o_lens
        self.norm = "".join(parts)

    def to_original(self, start: int, end: int) -> tuple[int, int]:
        """Map a non-empty normalised span ``[start, end)`` to original offsets."""
        i = bisect_right(self.n_starts, start) - 1
        o_start = self.o_starts[i] + min(start - self.n_starts[i], self.o_lens[i] - 1)
        j = bisect_right(self.n_starts, end - 1) - 1
        o_end = self.o_starts[j] + min(end - self.n_starts[j], self.o_lens[j])
        return o_start, o_end


@lru_cache(maxsize=32)
def _prepare(text: str) -> _Normalized:
    return _Normalized(text)


def normalize_text(text: str) -> str:
    """Normalise a string the way excerpts and texts are compared.

    Whitespace runs (including NBSP) collapse to one space and are stripped at both ends;
    typographic quotes, primes and dashes become ASCII, ``…`` becomes ``...``; the text is
    case-folded; Markdown emphasis/code markers (``**``, ``__``, ``*``, ``_``, backticks), line-start
    headings, blockquotes and list bullets, link syntax (``[text](url)`` keeps ``text``) and
    zero-width characters are removed.

    Args:
        text: Any string.

    Returns:
        The normalised string.
    """
    return _Normalized(text).norm.strip(" ")


_EDGE_DECORATION_RE = re.compile(r"^(?:\.{3,}|[\"'])\s*|\s*(?:\.{3,}|[\"'])$")


def _strip_decorations(norm: str) -> str:
    """Drop quote marks and ``...`` that a judge may wrap around an excerpt."""
    previous = None
    while previous != norm:
        previous = norm
        norm = _EDGE_DECORATION_RE.sub("", norm).strip(" ")
    return norm


# --------------------------------------------------------------------------------------------------
# Guards
# --------------------------------------------------------------------------------------------------

_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")
_THOUSANDS_RE = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_LETTERS_RE = re.compile(r"[^\W\d_]+")
_WORD_RE = re.compile(r"[^\W_]+")
_NEGATION_RE = re.compile(
    r"(?<![^\W_])(?:no|not|never|none|nothing|nobody|nowhere|neither|nor|without|cannot"
    r"|[^\W\d_]+n['\u2019]t|(?:ca|do|does|did|is|are|was|were|wo|would|could|should|has|have|had|ai"
    r"|must|need)nt)(?![^\W_])",
    re.IGNORECASE,
)
_SKIP_BEFORE_TOKEN = frozenset(" \t\r\n\f\v\u00a0*_`#>\"'([{-\u2018\u201c\u00ab\u2014\u2013")


def _numbers(text: str) -> Counter[str]:
    found: Counter[str] = Counter()
    for m in _NUMBER_RE.finditer(text):
        value = m.group()
        if _THOUSANDS_RE.fullmatch(value):
            value = value.replace(",", "")
        found[value] += 1
    return found


def _negations(text: str) -> Counter[str]:
    found: Counter[str] = Counter()
    for word in _NEGATION_RE.findall(text):
        word = word.casefold()
        found["not" if word == "cannot" or word.endswith(("nt", "n't", "n\u2019t")) else word] += 1
    return found


def _is_sentence_initial(text: str, pos: int) -> bool:
    """Whether the token at ``text[pos]`` starts a sentence, line or the string itself."""
    i = pos - 1
    saw_newline = False
    while i >= 0 and text[i] in _SKIP_BEFORE_TOKEN:
        saw_newline = saw_newline or text[i] == "\n"
        i -= 1
    return i < 0 or saw_newline or text[i] in ".!?:;"


def _name_problem(excerpt: str, text: str, g_start: int, g_end: int) -> str | None:
    """Compare capitalised words of the excerpt and of the guard span ``text[g_start:g_end]``.

    A capitalised word must occur (case-insensitively, as often) on the other side. Sentence-initial
    words are only exempt when a word on the other side is one edit away (``"Teh"`` for ``"The"``).
    """
    span = text[g_start:g_end]
    span_words = Counter(_LETTERS_RE.findall(span.casefold()))
    excerpt_words = Counter(_LETTERS_RE.findall(excerpt.casefold()))

    def unmatched(source: str, base: int, context: str, other: Counter[str]) -> list[str]:
        needed: Counter[str] = Counter()
        missing: list[str] = []
        for m in _LETTERS_RE.finditer(source):
            word = m.group()
            if not word[0].isupper():
                continue
            folded = word.casefold()
            needed[folded] += 1
            if needed[folded] <= other[folded]:
                continue
            if _is_sentence_initial(context, base + m.start()) and any(
                OSA.distance(folded, candidate, score_cutoff=1) <= 1 for candidate in other
            ):
                continue  # a typo in an ordinary capitalised sentence opener ("Teh" for "The")
            missing.append(word)
        return missing

    added = unmatched(excerpt, 0, excerpt, span_words)
    removed = unmatched(span, g_start, text, excerpt_words)
    if not added and not removed:
        return None
    return f"name changed: {', '.join(removed) or '(none)'} -> {', '.join(added) or '(none)'}"


def _max_unsupported_run(excerpt: str, window: str) -> int:
    """Longest run of characters, on either side, not covered by a common block of ``_MIN_BLOCK``."""
    blocks = [
        op
        for op in Indel.opcodes(excerpt, window)
        if op.tag == "equal" and op.src_end - op.src_start >= _MIN_BLOCK
    ]
    if not blocks:
        return max(len(excerpt), len(window))
    gap = max(blocks[0].src_start, blocks[0].dest_start)
    for prev, cur in zip(blocks, blocks[1:], strict=False):
        gap = max(gap, cur.src_start - prev.src_end, cur.dest_start - prev.dest_end)
    return max(gap, len(excerpt) - blocks[-1].src_end, len(window) - blocks[-1].dest_end)


def _word_problem(needle: str, window: str) -> str | None:
    """Compare the words of the normalised excerpt and window, tolerating typos.

    A word present on one side only is explained by a typo when the other side has a word within
    a small edit distance (1, or 2 for words longer than 4 characters), or when it is two adjacent
    words of the other side written together. At most one unexplained word of up to 3 characters
    (a dropped or added article, say) is tolerated; anything else means words were substituted.
    """
    needle_words = _WORD_RE.findall(needle)
    window_words = _WORD_RE.findall(window)
    needle_count, window_count = Counter(needle_words), Counter(window_words)
    needle_only, window_only = needle_count - window_count, window_count - needle_count
    if not needle_only and not window_only:
        return None

    for words, own, other in (
        (window_words, window_only, needle_only),
        (needle_words, needle_only, window_only),
    ):
        for first, second in zip(words, words[1:], strict=False):  # "the cell" written "thecell"
            if other[first + second] > 0 and own[first] > 0 and own[second] > 0:
                other[first + second] -= 1
                own[first] -= 1
                own[second] -= 1

    def unexplained(only: Counter[str], other_only: Counter[str]) -> list[str]:
        missing = []
        for word in (+only).elements():
            limit = 1 if len(word) <= 4 else 2
            if not any(OSA.distance(word, other, score_cutoff=limit) <= limit for other in +other_only):
                missing.append(word)
        return missing

    added = unexplained(needle_only, window_only)
    removed = unexplained(window_only, needle_only)
    if len(added) + len(removed) <= 1 and all(len(word) <= 3 for word in added + removed):
        return None
    return f"words changed: {' '.join(removed) or '(none)'} -> {' '.join(added) or '(none)'}"


def _snap_to_tokens(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen ``[start, end)`` so that it does not cut a word or number in half."""
    while 0 < start < len(text) and text[start - 1].isalnum() and text[start].isalnum():
        start -= 1
    while 0 < end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
        end += 1
    return start, end


# --------------------------------------------------------------------------------------------------
# Fuzzy alignment
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Candidate:
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
    needle: str, excerpt: str, prepared: _Normalized, threshold: float, start: int, end: int
) -> _Candidate:
    """Score the normalised span ``[start, end)`` against ``needle`` and apply the guards."""
    window = prepared.norm[start:end]
    similarity = fuzz.ratio(needle, window) / 100.0

    def rejected(reason: str) -> _Candidate:
        return _Candidate(start, end, similarity, reason)

    if similarity < threshold:
        return rejected(f"below threshold {threshold:.2f} ({similarity:.2f})")
    allowed = max(4, int(len(needle) * min(0.25, 1.0 - threshold)))
    if abs(len(window) - len(needle)) > allowed:
        return rejected(f"aligned span length {len(window)} differs from excerpt length {len(needle)}")
    text = prepared.original
    o_start, o_end = prepared.to_original(start, end)
    # Numbers are compared on the span widened to whole tokens, so that "10" quoted for "100" is caught.
    excerpt_numbers = _numbers(excerpt)
    span_numbers = _numbers(text[slice(*_snap_to_tokens(text, o_start, o_end))])
    if excerpt_numbers != span_numbers:
        before = ", ".join(sorted((span_numbers - excerpt_numbers).elements())) or "(none)"
        after = ", ".join(sorted((excerpt_numbers - span_numbers).elements())) or "(none)"
        return rejected(f"number changed: {before} -> {after}")
    # Words are compared on the aligned span itself: an excerpt that starts or ends inside a word
    # aligns with the same fragment of that word.
    if _negations(excerpt) != _negations(text[o_start:o_end]):
        return rejected("negation differs")
    name_problem = _name_problem(excerpt, text, o_start, o_end)
    if name_problem is not None:
        return rejected(name_problem)
    word_problem = _word_problem(needle, window)
    if word_problem is not None:
        return rejected(word_problem)
    run = _max_unsupported_run(needle, window)
    if run > _MAX_GAP:
        return rejected(f"unsupported segment of {run} chars (spliced or altered quote)")
    return _Candidate(start, end, similarity, None)


def _fuzzy(needle: str, excerpt: str, prepared: _Normalized, threshold: float) -> _Candidate | None:
    haystack = prepared.norm
    size = len(needle)
    best: _Candidate | None = None
    seen: set[tuple[int, int]] = set()

    def consider(w_start: int, w_end: int) -> _Candidate | None:
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


def _failed(reason: str) -> ExcerptMatch:
    return ExcerptMatch(False, 0.0, -1, -1, "failed", reason)


def _check_threshold(threshold: float) -> None:
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be within [0, 1], got {threshold!r}")


def _match(excerpt: str, text: str, threshold: float, prepare: Callable[[], _Normalized]) -> ExcerptMatch:
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
    stripped = _strip_decorations(needle)
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
    found = _fuzzy(needle, excerpt, prepared, threshold)
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
    return _match(excerpt, text, threshold, lambda: _prepare(text))


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
    cache: list[_Normalized] = []

    def prepare() -> _Normalized:
        if not cache:
            cache.append(_prepare(text))
        return cache[0]

    return [_match(excerpt, text, threshold, prepare) for excerpt in excerpts]
