"""Text normalisation for excerpt matching, with a map back to original offsets.

Excerpts and texts are compared after folding typographic characters to ASCII, case folding,
collapsing whitespace and removing Markdown markers and zero-width characters. :class:`Normalized`
keeps a piecewise map from the normalised copy back to the original text, so that a match found in
normalised form can be reported with original offsets.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache

__all__ = ["Normalized", "normalize_text", "prepare_text", "strip_decorations"]

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


class Normalized:
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
def prepare_text(text: str) -> Normalized:
    """The :class:`Normalized` form of ``text``, cached for recently seen texts."""
    return Normalized(text)


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
    return Normalized(text).norm.strip(" ")


_EDGE_DECORATION_RE = re.compile(r"^(?:\.{3,}|[\"'])\s*|\s*(?:\.{3,}|[\"'])$")


def strip_decorations(norm: str) -> str:
    """Drop quote marks and ``...`` that a judge may wrap around an excerpt."""
    previous = None
    while previous != norm:
        previous = norm
        norm = _EDGE_DECORATION_RE.sub("", norm).strip(" ")
    return norm
