"""Guards that reject near-matches of an excerpt which change its meaning.

A fuzzy alignment can score high although the quote altered what the text says. These checks
compare an excerpt with its aligned span: numbers, negations and capitalised names must be
identical, every other differing word must be explained by a small typo, and no contiguous segment
may be unsupported by the span (which rejects quotes spliced together from distant passages).
"""

from __future__ import annotations

import re
from collections import Counter

from rapidfuzz.distance import OSA, Indel

__all__ = ["max_unsupported_run", "name_problem", "negations", "numbers", "word_problem"]

_MIN_BLOCK = 4  # an excerpt character is "supported" when it lies in a common block of >= this size

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


def numbers(text: str) -> Counter[str]:
    """The numbers in ``text`` with their counts; thousands separators are dropped."""
    found: Counter[str] = Counter()
    for m in _NUMBER_RE.finditer(text):
        value = m.group()
        if _THOUSANDS_RE.fullmatch(value):
            value = value.replace(",", "")
        found[value] += 1
    return found


def negations(text: str) -> Counter[str]:
    """The negation words in ``text`` with their counts; every ``n't`` form counts as ``not``."""
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


def name_problem(excerpt: str, text: str, g_start: int, g_end: int) -> str | None:
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


def max_unsupported_run(excerpt: str, window: str) -> int:
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
            limit = 1 if len(word) <= 4 else 2
            if not any(OSA.distance(word, other, score_cutoff=limit) <= limit for other in +other_only):
                missing.append(word)
        return missing

    added = unexplained(needle_only, window_only)
    removed = unexplained(window_only, needle_only)
    if len(added) + len(removed) <= 1 and all(len(word) <= 3 for word in added + removed):
        return None
    return f"words changed: {' '.join(removed) or '(none)'} -> {' '.join(added) or '(none)'}"
