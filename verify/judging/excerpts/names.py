"""The capitalised-word guard: a quote must keep the names of the passage it quotes.

A capitalised word is a name unless it is capitalised only because of where it stands (at the start
of a sentence, a line, a clause after a colon, a list item, or after a dash) and is written like an
ordinary word. Names must occur on both sides; a positional capital may carry a typo like any word
(``"Througput rose"`` for ``"Throughput rose"``), while ``"Curei"`` for ``"Curie"`` is a changed name.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from verify.judging.excerpts.guards import is_typo, listed, snap_to_tokens

__all__ = ["name_problem"]

_LETTERS_RE = re.compile(r"[^\W\d_]+")
# Characters skipped when looking back from a word for what stands before it.
_SKIP_BEFORE_TOKEN = frozenset(" \t\r\n\f\v\u00a0*_`#>\"'([{-\u2018\u201c\u00ab\u2014\u2013")


def _one_word_wider(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen ``[start, end)`` to whole tokens, then by one more word on each side."""
    start, end = snap_to_tokens(text, start, end)
    while start > 0 and not text[start - 1].isalnum():
        start -= 1
    while start > 0 and text[start - 1].isalnum():
        start -= 1
    while end < len(text) and not text[end].isalnum():
        end += 1
    while end < len(text) and text[end].isalnum():
        end += 1
    return start, end


def _after_list_marker(text: str, i: int) -> bool:
    """Whether ``text[i]`` is the ``)`` of a list marker such as ``a)``, ``2)`` or ``iv)``."""
    if text[i] != ")":
        return False
    j = i - 1
    while j >= 0 and text[j].isalnum():
        j -= 1
    return 1 <= i - 1 - j <= 3 and (j < 0 or text[j].isspace())


def _is_positional(text: str, pos: int, at_start: bool) -> bool:
    """Whether the token at ``text[pos]`` is capitalised because of where it stands.

    That is at the start of ``text`` (when ``at_start``), of a line, a sentence, a clause after a
    colon or semicolon, or a list item (``1.``, ``a)``), or after a dash between words. A hyphen
    inside a word does not count: in ``non-Hodgkin`` the capital marks a name.
    """
    i = pos - 1
    after_break = False
    while i >= 0 and text[i] in _SKIP_BEFORE_TOKEN:
        char = text[i]
        if char == "\n" or char == "\u2014" or (char in "-\u2013" and (i == 0 or text[i - 1].isspace())):
            after_break = True
        i -= 1
    if i < 0:
        return at_start or after_break
    return after_break or text[i] in ".!?:;" or _after_list_marker(text, i)


def _is_ordinary_shape(source: str, start: int, end: int) -> bool:
    """Whether ``source[start:end]`` is written like an ordinary word that happens to be capitalised.

    Acronyms (``ATP``), CamelCase (``McDonald``) and words joined to digits (``Covid19``) are names
    wherever they stand.
    """
    rest = source[start + 1 : end]
    if rest and not rest.islower():
        return False
    return not (start > 0 and source[start - 1].isdigit()) and not (
        end < len(source) and source[end].isdigit()
    )


def name_problem(excerpt: str, text: str, g_start: int, g_end: int) -> str | None:
    """Compare capitalised words of the excerpt and of the guard span ``text[g_start:g_end]``.

    A capitalised word must occur (case-insensitively, as often) on the other side, unless it is not
    a name: a word capitalised only because of where it stands (see :func:`_is_positional`), written
    like an ordinary word, is exempt when a word on the other side is a typo away (``"Teh"`` for
    ``"The"``, ``"Througput"`` for ``"Throughput"``); :func:`word_problem` then judges it like any word.
    Both sides are compared in NFKC form (``ＡＴＰ`` is ``ATP``, ``CO₂`` is ``CO2``).
    """
    span_at_sentence_start = _is_positional(text, g_start, True)
    span = text[g_start:g_end]
    excerpt = excerpt if excerpt.isascii() else unicodedata.normalize("NFKC", excerpt)
    span = span if span.isascii() else unicodedata.normalize("NFKC", span)
    span_words = Counter(_LETTERS_RE.findall(span.casefold()))
    excerpt_words = Counter(_LETTERS_RE.findall(excerpt.casefold()))

    def unmatched(source: str, at_start: bool, other: Counter[str]) -> list[str]:
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
            if (
                _is_positional(source, m.start(), at_start)
                and _is_ordinary_shape(source, m.start(), m.end())
                and any(is_typo(folded, candidate) for candidate in other)
            ):
                continue  # not a name, and a typo of a word on the other side ("Teh" for "The")
            missing.append(word)
        return missing

    added = unmatched(excerpt, True, span_words)
    removed = unmatched(span, span_at_sentence_start, excerpt_words)
    if added and not removed:
        # Only for naming the difference: the span may stop short of the replaced word ("Pierre"
        # aligned on "ie" of "Marie", or "in Lyon" on "in" before "Paris"), so look one word further.
        w_start, w_end = _one_word_wider(text, g_start, g_end)
        wide = text[w_start:w_end]
        wide = wide if wide.isascii() else unicodedata.normalize("NFKC", wide)
        removed = unmatched(wide, _is_positional(text, w_start, True), excerpt_words)
    if added and removed:
        return f"name changed: {listed(removed)} -> {listed(added)}"
    if added:
        return f"inserted words: {listed(added)}"
    return f"missing words: {listed(removed)}" if removed else None
