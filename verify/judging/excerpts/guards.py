"""Guards that reject near-matches of an excerpt which change its meaning, and say what changed.

A fuzzy alignment can score high although the quote altered what the text says. These checks
compare an excerpt with its aligned span: numbers, negations and capitalised names (:mod:`.names`)
must be identical, every other differing word must be explained by a small typo, and no contiguous
segment may be unsupported by the span (which rejects quotes spliced together from distant passages).

Each guard returns ``None`` or a short reason naming the difference, for example
``number changed: 2 -> 3``, ``negation removed: "not"``, ``inserted words: "very"`` or
``changed words: "chemical" -> "electrical"``. The judge sees these reasons when it is asked to quote
again, so they describe the text side first (``text -> quote``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from rapidfuzz.distance import OSA, Indel

from verify.judging.excerpts.folding import fold_plain
from verify.judging.excerpts.normalise import ORDERED_MARKER

__all__ = [
    "Edges",
    "cut_words",
    "describe_words",
    "is_typo",
    "list_number_problem",
    "listed",
    "negation_problem",
    "number_problem",
    "numbers",
    "short",
    "snap_to_tokens",
    "typo_limit",
    "unsupported_problem",
    "word_problem",
]

_MIN_BLOCK = 4  # an excerpt character is "supported" when it lies in a common block of >= this size
_MAX_GROUPS = 3  # differing word groups named in one reason
_SHOWN_CHARS = 40  # longest quoted fragment in a reason

_NUMBER_RE = re.compile(r"(?:(?<![\w.])-)?\d+(?:[.,]\d+)*")
_THOUSANDS_RE = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
# After the same line-start markup normalisation drops: "* 2. item" is a bullet and a list number.
_LIST_NUMBER_RE = re.compile(rf"(?m)^(?:[ \t>]|#{{1,6}}(?=[ \t])|[-*+](?=[ \t]))*{ORDERED_MARKER}")
_LINK_TARGET_RE = re.compile(r"\]\([^)\s]*\)")  # the URL of a Markdown link is not part of the text
_WORD_RE = re.compile(r"[^\W_]+")
_NEGATION_RE = re.compile(
    r"(?<![^\W_])(?:no|not|never|none|nothing|nobody|nowhere|neither|nor|without|cannot"
    r"|[^\W\d_]+n't|(?:ca|do|does|did|is|are|was|were|wo|would|could|should|has|have|had|ai"
    r"|must|need)nt)(?![^\W_])",
)


def short(text: str, limit: int = _SHOWN_CHARS) -> str:
    """``text`` in double quotes, shortened with ``…`` beyond ``limit`` characters."""
    text = " ".join(text.split())
    return f'"{text}"' if len(text) <= limit else f'"{text[: limit - 1].rstrip()}\u2026"'


def _take(pool: Counter[str], words: list[str]) -> list[str]:
    """The ``words`` still available in ``pool``, which are removed from it."""
    taken = []
    for word in words:
        if pool[word] > 0:
            pool[word] -= 1
            taken.append(word)
    return taken


def listed(words: list[str]) -> str:
    """The words, each in double quotes, separated by commas."""
    return ", ".join(short(word) for word in words)


def numbers(text: str) -> Counter[str]:
    """The numbers in ``text`` with their counts, after folding (``CO₂`` has a 2).

    Thousands separators are dropped, a minus sign before a number counts, and neither ordered-list
    markers (``1.`` at a line start) nor Markdown link targets are numbers of the text.
    """
    found: Counter[str] = Counter()
    text = _LINK_TARGET_RE.sub("]", _LIST_NUMBER_RE.sub("", fold_plain(text)))
    for m in _NUMBER_RE.finditer(text):
        value = m.group()
        if _THOUSANDS_RE.fullmatch(value):
            value = value.replace(",", "")
        found[value] += 1
    return found


def _list_numbers(text: str) -> Counter[str]:
    """The numbers of the ordered-list markers in ``text``."""
    return Counter(m.group().lstrip(" \t>").rstrip(".)") for m in _LIST_NUMBER_RE.finditer(fold_plain(text)))


def list_number_problem(quoted: str, text: str, start: int, end: int) -> str | None:
    """Whether the list numbers of a quote are those of the list at ``text[start:end]``.

    Normalisation drops list numbers at line starts on both sides, so they are compared here. The
    text is read from the start of the span's first line: a quote that opens with ``1.`` is matched
    from the first item's words, after the marker.
    """
    line_start = text.rfind("\n", 0, start) + 1
    quoted_numbers, original = _list_numbers(quoted), _list_numbers(text[line_start:end])
    added = quoted_numbers - original
    if not added:
        return None
    removed = ", ".join(sorted((_list_numbers(text[start:end]) - quoted_numbers).elements()))
    inserted = ", ".join(sorted(added.elements()))
    return f"list number changed: {removed} -> {inserted}" if removed else f"list number inserted: {inserted}"


def number_problem(excerpt: str, span: str) -> str | None:
    """Whether the excerpt has the same numbers as the span of the text (``None``) or which differ.

    A quote may keep the numbers of the list items it spans (``"Paris. 2. Temperatures"``).
    """
    quoted, original = numbers(excerpt), numbers(span)
    if quoted == original or (not original - quoted and not (quoted - original) - _list_numbers(span)):
        return None
    removed = ", ".join(sorted((original - quoted).elements()))
    added = ", ".join(sorted((quoted - original).elements()))
    if removed and added:
        return f"number changed: {removed} -> {added}"
    return f"number missing: {removed}" if removed else f"number inserted: {added}"


def _negations(text: str) -> Counter[str]:
    found: Counter[str] = Counter()
    for word in _NEGATION_RE.findall(fold_plain(text)):
        found["not" if word == "cannot" or word.endswith(("nt", "n't")) else word] += 1
    return found


def negation_problem(excerpt: str, span: str) -> str | None:
    """Whether the excerpt has the same negations as the span (every ``n't`` form counts as ``not``)."""
    quoted, original = _negations(excerpt), _negations(span)
    if quoted == original:
        return None
    removed, added = sorted((original - quoted).elements()), sorted((quoted - original).elements())
    if removed and added:
        return f"negation changed: {listed(removed)} -> {listed(added)}"
    return f"negation removed: {listed(removed)}" if removed else f"negation added: {listed(added)}"


def snap_to_tokens(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen ``[start, end)`` so that it does not cut a word or number in half."""
    while 0 < start < len(text) and text[start - 1].isalnum() and text[start].isalnum():
        start -= 1
    while 0 < end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
        end += 1
    return start, end


def typo_limit(word: str) -> int:
    """How many edits a quoted word may differ from the text's word and still count as a typo of it."""
    return 1 if len(word) <= 4 else 2


def is_typo(word: str, other: str) -> bool:
    """Whether ``word`` is within :func:`typo_limit` edits of ``other``."""
    limit = typo_limit(word)
    return OSA.distance(word, other, score_cutoff=limit) <= limit


@dataclass(frozen=True)
class Edges:
    """A span after deciding how the words it cuts at its edges are quoted (``problem`` if wrongly)."""

    start: int
    end: int
    problem: str | None = None


def _word_around(text: str, pos: int) -> tuple[int, int]:
    """The alphanumeric run of ``text`` that contains ``text[pos]``."""
    start = end = pos
    while start > 0 and text[start - 1].isalnum():
        start -= 1
    while end < len(text) and text[end].isalnum():
        end += 1
    return start, end


def cut_words(needle: str, haystack: str, start: int, end: int, lo: int, hi: int) -> Edges:
    """Check the words that the span ``haystack[start:end]`` cuts in half at either edge.

    A quote may start inside a word of the text (``"foo handles"`` from ``"libfoo handles"``) or end
    inside one, and a quoted word may have a typo, but not both on the same word: a first word that
    is neither the end of the text's word nor a typo of all of it (``"foox"`` for ``"libfoo"``) is
    another word, although a fragment plus a typo allowance would accept it. When the quoted word is
    a typo of the whole word, the span is widened to that word, so that the guards compare it whole.
    """
    words: list[str] | None = None
    if lo < start < len(haystack) and haystack[start - 1].isalnum() and haystack[start].isalnum():
        words = _WORD_RE.findall(needle)
        w_start, w_end = _word_around(haystack, start)
        whole = haystack[w_start:w_end]
        if words and not whole.endswith(words[0]):
            if not is_typo(words[0], whole):
                return Edges(start, end, f"changed words: {short(whole)} -> {short(words[0])}")
            start = max(lo, w_start)
    if 0 < end < min(hi, len(haystack)) and haystack[end - 1].isalnum() and haystack[end].isalnum():
        words = _WORD_RE.findall(needle) if words is None else words
        w_start, w_end = _word_around(haystack, end - 1)
        whole = haystack[w_start:w_end]
        if words and not whole.startswith(words[-1]):
            if not is_typo(words[-1], whole):
                return Edges(start, end, f"changed words: {short(whole)} -> {short(words[-1])}")
            end = min(hi, w_end)
    return Edges(start, end)


def describe_words(
    needle: str,
    window: str,
    added: Counter[str] | None = None,
    removed: Counter[str] | None = None,
    context: bool = False,
) -> str | None:
    """Name the word groups in which the normalised excerpt and window differ, in text order.

    With ``added``/``removed`` (words only in the excerpt / only in the window that need naming),
    other differing words (typos) are left out. With ``context``, the window is a passage around the
    quoted one, so text words before the first and after the last quoted word are not named.
    """
    ours, theirs = _WORD_RE.findall(needle), _WORD_RE.findall(window)
    spans: list[list[int]] = []  # [ours start, ours end, theirs start, theirs end] of each group
    for op in Indel.opcodes(ours, theirs):  # insertions and deletions only: omitted runs stay whole
        if op.tag == "equal":
            continue
        if spans and spans[-1][1] == op.src_start and spans[-1][3] == op.dest_start:
            spans[-1][1], spans[-1][3] = op.src_end, op.dest_end
        else:
            spans.append([op.src_start, op.src_end, op.dest_start, op.dest_end])
    if context:
        spans = [sp for sp in spans if sp[0] != sp[1] or 0 < sp[0] < len(ours)]
    groups = [(ours[a:b], theirs[c:d]) for a, b, c, d in spans]
    changed: list[str] = []
    inserted: list[str] = []
    missing: list[str] = []
    for quote_words, text_words in groups:
        if added is not None and removed is not None:
            quote_words, text_words = _take(added, quote_words), _take(removed, text_words)
        if quote_words and text_words:
            changed.append(f"{short(' '.join(text_words))} -> {short(' '.join(quote_words))}")
        elif quote_words:
            inserted.append(short(" ".join(quote_words)))
        elif text_words:
            missing.append(short(" ".join(text_words)))
    parts = [
        f"{label}: {', '.join(found[:_MAX_GROUPS])}"
        for label, found in (
            ("changed words", changed),
            ("inserted words", inserted),
            ("missing words", missing),
        )
        if found
    ]
    return "; ".join(parts) or None


def word_problem(needle: str, window: str) -> str | None:
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
            if not any(is_typo(word, other) for other in +other_only):
                missing.append(word)
        return missing

    added = unexplained(needle_only, window_only)
    removed = unexplained(window_only, needle_only)
    if len(added) + len(removed) <= 1 and all(len(word) <= 3 for word in added + removed):
        return None
    found = describe_words(needle, window, Counter(added), Counter(removed))
    return found or f"words changed: {listed(removed)} -> {listed(added)}"


def unsupported_problem(needle: str, window: str, max_gap: int) -> str | None:
    """Reject when a run of more than ``max_gap`` characters on either side is not covered by a
    common block of ``_MIN_BLOCK`` characters (a spliced or rewritten quote); name that run."""
    blocks = [
        op
        for op in Indel.opcodes(needle, window)
        if op.tag == "equal" and op.src_end - op.src_start >= _MIN_BLOCK
    ]
    # (length, excerpt start, excerpt end, window start, window end) of every uncovered stretch
    stretches: list[tuple[int, int, int, int, int]] = []
    src = dest = 0
    for op in [*blocks, None]:
        src_end = len(needle) if op is None else op.src_start
        dest_end = len(window) if op is None else op.dest_start
        stretches.append((max(src_end - src, dest_end - dest), src, src_end, dest, dest_end))
        if op is not None:
            src, dest = op.src_end, op.dest_end
    size, src, src_end, dest, dest_end = max(stretches)
    if size <= max_gap:
        return None
    if src_end - src >= dest_end - dest:
        return f"not in the text: {short(needle[src:src_end])} (spliced or altered quote)"
    return f"missing passage: {short(window[dest:dest_end])} (spliced or altered quote)"
