"""Text normalisation for excerpt matching, with a map back to original offsets.

Excerpts and texts are compared after Unicode compatibility folding (:mod:`.folding`: NFKC, case
folding, ASCII quotes and dashes, plain spaces), collapsing whitespace, removing the space between a
number and its unit, and removing Markdown decoration. :class:`Normalized` keeps a piecewise map from
the normalised copy back to the original text, so that a match found in normalised form can be
reported with original offsets.
"""

from __future__ import annotations

import re

from verify.judging.excerpts.anchors import KeyIndex
from verify.judging.excerpts.folding import OffsetMap, fold, non_ascii_ranges

__all__ = [
    "ELLIPSIS",
    "INDEX_COST_SCANS",
    "ORDERED_MARKER",
    "Normalized",
    "list_on_lines",
    "normalize_text",
    "strip_decorations",
]

#: Building a :class:`KeyIndex` costs about as much CPU as this many searches of the whole text for a
#: key (measured at 20k and 60k characters).
INDEX_COST_SCANS = 100

# ASCII whitespace that survives folding as itself; it becomes a space in the normalised copy.
_SPACE_MAP = bytes(32 if chr(code).isspace() else code for code in range(128)) + bytes(range(128, 256))
_CONTROL_SPACES = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"

#: An ordered-list number ("1. ", "2) ") at a line start. Not after a line that ends with a word or
#: comma: in hard-wrapped prose, "...was\n42. Then" continues a sentence that ends with a number.
ORDERED_MARKER = r"(?<![\w,;]\n)\d{1,3}[.)](?=[ \t]|\Z)"
# Line-start Markdown: whitespace, blockquote markers, heading hashes, bullets and ordered-list numbers.
_LINE_MARKUP = rf"(?:\s|>|#{{1,6}}(?=[ \t]|\Z)|[-*+](?=[ \t]|\Z)|{ORDERED_MARKER})"
# A unit right after a number ("5 mg", "37 °c", "92 %"): the space between them is dropped, since it
# is written either way. Units only (letters followed by a non-letter), so "2 and 3" keeps its space.
_UNIT = (
    r"(?:[°%‰]|(?:[kmμnpcdgt]?(?:g|l|m|m2|m3|s|mol|hz|w|v|j|pa|b|ω)|k|h|hr|hrs|min|ppm|ppb|atm|bar|db"
    r"|kcal|cal|mmhg|iu|rpm|bp|kbp|kda|da|°c|°f)(?![^\W_]))"
)
_SPECIAL_RE = re.compile(
    rf"(?P<lead>\A{_LINE_MARKUP}+)"
    rf"|(?P<nl>\s*\n{_LINE_MARKUP}*)"
    rf"|(?P<unit>(?<=\d) (?={_UNIT}))"
    r"|(?P<ws>\s{2,})"
    r"|(?P<md>[*_`]+)"
    r"|(?P<lo>!?\[(?=[^\]\n]*\]\([^)\s]*\)))"
    r"|(?P<lc>\]\([^)\s]*\))"
)
# Where a special sequence can start, except at a space (double spaces are found apart): a control
# character or bracket; a line break with a space before it or line-start markup after it (a lone
# one is already a space after folding, and it is the most frequent of these characters); the first
# character of a run of Markdown markers, unless the run is literal (see _is_marker_kept: between
# letters or digits, or between spaces); and a digit followed by a space and a unit. The match ends
# one character after the candidate position. The pattern starts with a bare character class, so the
# regex engine scans for it quickly, and one scan finds every kind.
_MARKER = "[*_`]"
_TRIGGER = (
    r"[\t\n\x0b\x0c\r\x1c-\x1f\[\]!*_`{digits}](?:"
    r"(?<=[\t\x0b\x0c\r\x1c-\x1f\[\]!])"
    r"|(?<=\n)(?:(?<= \n)|(?=[ \t\n\r\x0b\x0c\x1c-\x1f>#*+0-9-]))"
    rf"|(?<={_MARKER})(?<!{_MARKER}{_MARKER})(?!(?<=[^\W_]{_MARKER}){_MARKER}*[^\W_])(?!(?<=\s{_MARKER}){_MARKER}*\s)"
    rf"| (?={_UNIT})"
    ")"
)
# Checking a character against \d costs more than against 0-9, so the Unicode digits are looked for
# only in texts that have some besides the ASCII ones.
_TRIGGER_RE = re.compile(_TRIGGER.format(digits="0-9"))
_TRIGGER_ANY_DIGIT_RE = re.compile(_TRIGGER.format(digits=r"\d"))
_OTHER_DIGIT_RE = re.compile(r"(?![0-9])\d")
_REPLACEMENTS = {"lead": "", "nl": " ", "unit": "", "ws": " ", "md": "", "lo": "", "lc": ""}


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

    Candidate positions are the start of the text, the positions found by ``_TRIGGER_RE`` and every
    double space; spaces right before a candidate are included so that ``"  \n"`` collapses as one run.
    """
    other_digits = any(_OTHER_DIGIT_RE.search(text, lo, hi) for lo, hi in non_ascii_ranges(text))
    triggers = _TRIGGER_ANY_DIGIT_RE if other_digits else _TRIGGER_RE
    candidates = [0, *(m.end() - 1 for m in triggers.finditer(text))]
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


def _embrace_markers(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen ``[start, end)`` over runs of ``*``, ``_`` or backticks next to it whose partners are inside,
    and over the ``[`` of a link whose ``](url)`` is inside."""
    for char in "*_`":
        before = start
        while before > 0 and text[before - 1] == char:
            before -= 1
        after = end
        while after < len(text) and text[after] == char:
            after += 1
        if (before < start or after > end) and char in text[start:end]:
            start, end = before, after
    if start > 0 and text[start - 1] == "[" and "](" in text[start:end]:  # a link cut at its text
        start -= 2 if start > 1 and text[start - 2] == "!" else 1
    return start, end


def _spaces_to_blank(text: str) -> str:
    """Turn the ASCII whitespace left by folding into spaces (length-preserving)."""
    if text.isascii():
        return text.encode("ascii").translate(_SPACE_MAP).decode("ascii")
    # str.replace runs at memory speed; a regex substitution costs a call per line break.
    for char in _CONTROL_SPACES:
        if char in text:
            text = text.replace(char, " ")
    return text


class Normalized:
    """A normalised copy of a text plus a map back to original offsets.

    The text is first folded (:func:`.folding.fold`, with its own map unless the text is ASCII),
    then whitespace runs, number-unit spaces and Markdown markers are collapsed or removed; a second
    :class:`~.folding.OffsetMap` records that step. :meth:`to_original` goes through both.
    """

    __slots__ = ("_keys", "_scans", "folding", "norm", "original", "pieces")

    def __init__(self, text: str) -> None:
        self.original = text
        folded, self.folding = fold(text)
        blank = _spaces_to_blank(folded)
        pieces = OffsetMap()
        # Pieces are appended directly: in this step two copies are never contiguous on both sides,
        # so OffsetMap.add would never merge them (this loop runs once per special sequence).
        new_starts, old_starts, old_lens, copies = (
            pieces.new_starts,
            pieces.old_starts,
            pieces.old_lens,
            pieces.copies,
        )
        parts: list[str] = []
        size = last = 0
        for m in _special_matches(folded):
            start, end = m.span()
            kind = m.lastgroup or ""
            if kind == "md" and _is_marker_kept(folded, start, end):
                continue
            if start > last:
                parts.append(blank[last:start])
                new_starts.append(size)
                old_starts.append(last)
                old_lens.append(start - last)
                copies.append(True)
                size += start - last
            replacement = _REPLACEMENTS[kind]
            if replacement:
                new_starts.append(size)
                old_starts.append(start)
                old_lens.append(end - start)
                copies.append(len(replacement) == end - start)
                parts.append(replacement)
                size += len(replacement)
            last = end
        if last < len(folded):
            parts.append(blank[last:])
            new_starts.append(size)
            old_starts.append(last)
            old_lens.append(len(folded) - last)
            copies.append(True)
        self.pieces = pieces
        self.norm = "".join(parts)
        self._keys: KeyIndex | None = None
        self._scans = 0

    def key_index(self, scans: int) -> KeyIndex | None:
        """The :class:`KeyIndex` of :attr:`norm` once it pays, else ``None`` (look the keys up directly).

        ``scans`` is how many times the caller would otherwise search the whole text (one search per
        key of its quote). Building the index costs about as much as :data:`INDEX_COST_SCANS` such
        searches, so it is built only once the searches made without it add up to that: the first
        fuzzy quote on a long answer does not pay for the index, and a text quoted fuzzily many times
        pays for it once (at most about twice the cost of knowing in advance).
        """
        if self._keys is None:
            self._scans += scans
            if self._scans < INDEX_COST_SCANS:
                return None
            self._keys = KeyIndex(self.norm)
        return self._keys

    def to_original(self, start: int, end: int) -> tuple[int, int]:
        """Map a non-empty normalised span ``[start, end)`` to original offsets.

        Emphasis or code markers right outside the span are included when their partners are inside
        it, so that ``**Aspirin** reduces`` is reported rather than ``Aspirin** reduces``.
        """
        start, end = self.pieces.span(start, end)
        if self.folding is not None:
            start, end = self.folding.span(start, end)
        return _embrace_markers(self.original, start, end)


def normalize_text(text: str) -> str:
    """Normalise a string the way excerpts and texts are compared.

    Characters are folded to a compatibility form (NFKC and case folding: ``CO₂`` -> ``co2``,
    ``ﬁ`` -> ``fi``, ``µ`` -> ``μ``, ``℃`` -> ``°c``, ``…`` -> ``...``; decomposed and precomposed
    accents agree); typographic quotes, primes, dashes and minus signs become ASCII; zero-width
    characters are removed; whitespace runs (every space variant included) collapse to one space and
    are stripped at both ends; the space between a number and a short unit is removed (``5 mg`` ->
    ``5mg``); Markdown emphasis/code markers (``**``, ``__``, ``*``, ``_``, backticks), line-start
    headings, blockquotes, bullets and ordered-list numbers, and link syntax (``[text](url)`` keeps
    ``text``) are removed.

    Args:
        text: Any string.

    Returns:
        The normalised string.
    """
    return Normalized(text).norm.strip(" ")


#: An ellipsis as a judge writes one, in normalised form: ``...`` (``…`` folds to it), optionally
#: in square or round brackets (``[...]``, ``[..]``, ``(...)``).
ELLIPSIS = r"(?:\[ ?\.{2,} ?\]|\( ?\.{2,} ?\)|\.{3,})"
_EDGE_DECORATION_RE = re.compile(rf"^(?:{ELLIPSIS}|[\"'])\s*|\s*(?:{ELLIPSIS}|[\"'])$")


def strip_decorations(norm: str) -> str:
    """Drop quote marks and ellipses that a judge may put around a normalised excerpt."""
    previous = None
    while previous != norm:
        previous = norm
        norm = _EDGE_DECORATION_RE.sub("", norm).strip(" ")
    return norm


# The space before a list marker written inside a line: an ordered-list number ("2. ", "3) ") or a
# bullet ("- ", "* ", "+ ") between spaces, followed by a word.
_INLINE_ITEM_RE = re.compile(r"[ \t]+(?=(?:\d{1,3}[.)]|[-*+])[ \t]+[^\W_])")


def list_on_lines(excerpt: str) -> str | None:
    """``excerpt`` with each list marker inside a line moved to the start of a new line, else ``None``.

    A judge often quotes a list on one line with its markers (``steps: 1. Preheat the oven. 2. Mix
    ...``) while the answer has one item per line, where the markers are dropped as line-start markup.
    Written on lines again, the quote normalises the way the list does. A dash between words looks
    like a bullet too, so this is only tried after the quote as written failed.
    """
    lines = _INLINE_ITEM_RE.sub("\n", excerpt)
    return None if lines == excerpt else lines
