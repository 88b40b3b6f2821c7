"""Unicode compatibility folding for excerpt matching, with a map back to original offsets.

Judges retype what they quote: ``CO2`` for ``CO₂``, ``37°C`` for ``37 ℃``, a hyphen for a minus sign,
``fi`` for the ligature ``ﬁ``, a precomposed ``é`` for ``e`` plus a combining accent. :func:`fold`
makes such variants equal before anything else is compared: each character (with the combining marks
that follow it) goes through NFKC, case folding and NFKC again, then typographic quotes, dashes and
minus signs become ASCII, every space variant becomes a plain space (line and paragraph separators a
newline) and zero-width characters disappear. An :class:`OffsetMap` records where the folded copy
came from, so that positions found in it can be reported in the original text.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right

__all__ = ["OffsetMap", "fold", "fold_plain", "non_ascii_ranges"]

_REPLACEMENTS: dict[str, str] = {
    **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u2035\u2039\u203a\uff07", "'"),
    **dict.fromkeys("\u201c\u201d\u201e\u201f\u00ab\u00bb\u2033\u2036\uff02", '"'),
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\u207b\u208b\ufe58\ufe63\uff0d", "-"),
    # Every non-ASCII space becomes a space, except the line separators, which end a line.
    **{chr(code): " " for code in range(0x80, 0x3001) if chr(code).isspace()},
    **dict.fromkeys("\u0085\u2028\u2029", "\n"),
    **dict.fromkeys("\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e", ""),
}
_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]+")
_CHUNK = 256  # characters per block checked at once by non_ascii_ranges
_MAX_CACHED = 20_000  # entries of each fold cache below (cleared when full)

# A folded run of non-ASCII characters, plus the clusters whose folded length differs from their own:
# (offset in the run, length in the run, offset in the folded run, folded length).
_Run = tuple[str, tuple[tuple[int, int, int, int], ...]]
_runs: dict[str, _Run] = {}
_clusters: dict[str, str] = {}


def _fold_cluster(cluster: str) -> str:
    """Fold one character and the combining marks that follow it."""
    folded = _clusters.get(cluster)
    if folded is None:
        folded = _REPLACEMENTS.get(cluster)
        if folded is None:
            folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", cluster).casefold())
            folded = "".join(_REPLACEMENTS.get(char, char) for char in folded)
        if len(_clusters) >= _MAX_CACHED:
            _clusters.clear()
        _clusters[cluster] = folded
    return folded


def _fold_run(run: str) -> _Run:
    """Fold a run of characters cluster by cluster (cached: words and symbols recur in a text)."""
    cached = _runs.get(run)
    if cached is not None:
        return cached
    parts: list[str] = []
    changes: list[tuple[int, int, int, int]] = []
    i = size = 0
    while i < len(run):
        j = i + 1
        while j < len(run) and unicodedata.combining(run[j]):
            j += 1
        folded = _fold_cluster(run[i:j])
        if len(folded) != j - i:
            changes.append((i, j - i, size, len(folded)))
        parts.append(folded)
        size += len(folded)
        i = j
    if len(_runs) >= _MAX_CACHED:
        _runs.clear()
    result = _runs[run] = ("".join(parts), tuple(changes))
    return result


class OffsetMap:
    """A piecewise map from a derived string back to the string it was derived from.

    Piece ``i`` covers ``new[new_starts[i]:new_starts[i + 1]]`` and stems from
    ``old[old_starts[i]:old_starts[i] + old_lens[i]]``. A copy piece has the same length on both
    sides and maps character for character; any other piece maps onto its old range as a whole
    (a collapsed whitespace run, an expanded ligature). Deleted characters produce no piece.
    """

    __slots__ = ("copies", "new_starts", "old_lens", "old_starts")

    def __init__(self) -> None:
        self.new_starts: list[int] = []
        self.old_starts: list[int] = []
        self.old_lens: list[int] = []
        self.copies: list[bool] = []

    def add(self, new_start: int, old_start: int, old_len: int, new_len: int) -> None:
        """Record that ``new[new_start:new_start + new_len]`` stems from ``old[old_start:old_start + old_len]``."""
        if new_len == 0:
            return
        copy = new_len == old_len
        if (
            copy
            and self.copies
            and self.copies[-1]
            and self.new_starts[-1] + self.old_lens[-1] == new_start
            and self.old_starts[-1] + self.old_lens[-1] == old_start
        ):
            self.old_lens[-1] += old_len  # extends the previous copy piece
            return
        self.new_starts.append(new_start)
        self.old_starts.append(old_start)
        self.old_lens.append(old_len)
        self.copies.append(copy)

    def span(self, start: int, end: int) -> tuple[int, int]:
        """Map a non-empty span ``[start, end)`` of the new string to the old string."""
        i = bisect_right(self.new_starts, start) - 1
        old_start = self.old_starts[i] + (start - self.new_starts[i] if self.copies[i] else 0)
        j = bisect_right(self.new_starts, end - 1) - 1
        old_end = self.old_starts[j] + (end - self.new_starts[j] if self.copies[j] else self.old_lens[j])
        return old_start, old_end


def non_ascii_ranges(text: str) -> list[tuple[int, int]]:
    """Ranges of ``text`` that hold every non-ASCII character of it, found at memory speed.

    A regex scan for non-ASCII characters costs about 10 ns a character; a slice of a string knows
    whether it is ASCII as soon as it is made. Answers are mostly ASCII, so scanning only the
    :data:`_CHUNK`-character blocks that are not (adjacent ones merged) saves most of the scan.
    """
    ranges: list[tuple[int, int]] = []
    for lo in range(0, len(text), _CHUNK):
        if not text[lo : lo + _CHUNK].isascii():
            hi = min(len(text), lo + _CHUNK)
            if ranges and ranges[-1][1] == lo:
                ranges[-1] = (ranges[-1][0], hi)
            else:
                ranges.append((lo, hi))
    return ranges


def fold(text: str) -> tuple[str, OffsetMap | None]:
    """Fold ``text`` (see the module docstring) and map the result back to ``text``.

    Returns:
        The folded text and its map, or ``None`` for the map when the text is ASCII (folding then
        only lowercases, so offsets are unchanged).
    """
    if text.isascii():
        return text.lower(), None
    lowered = text.lower()
    same_length = len(lowered) == len(text)  # False only for the rare characters that lower() expands
    out: list[str] = []
    offsets = OffsetMap()
    size = last = 0
    runs = (m for lo, hi in non_ascii_ranges(text) for m in _NON_ASCII_RE.finditer(text, lo, hi))
    for m in runs:
        start, end = m.span()
        if start > last and unicodedata.combining(text[start]):
            start -= 1  # the ASCII letter that carries the accent belongs to the cluster
        if start > last:
            ascii_part = lowered[last:start] if same_length else text[last:start].lower()
            out.append(ascii_part)
            offsets.add(size, last, start - last, start - last)
            size += start - last
        folded, changes = _fold_run(text[start:end])
        done_old = done_new = 0
        for old_at, old_len, new_at, new_len in changes:
            offsets.add(size + done_new, start + done_old, old_at - done_old, new_at - done_new)
            offsets.add(size + new_at, start + old_at, old_len, new_len)
            done_old, done_new = old_at + old_len, new_at + new_len
        offsets.add(size + done_new, start + done_old, end - start - done_old, len(folded) - done_new)
        out.append(folded)
        size += len(folded)
        last = end
    if last < len(text):
        out.append(lowered[last:] if same_length else text[last:].lower())
        offsets.add(size, last, len(text) - last, len(text) - last)
    return "".join(out), offsets


def fold_plain(text: str) -> str:
    """:func:`fold` without the map, for comparing short strings (numbers, negations).

    Combining marks after an ASCII letter are folded on their own here (not composed with it), which
    does not matter for digits and words without accents.
    """
    if text.isascii():
        return text.lower()
    return _NON_ASCII_RE.sub(lambda m: _fold_run(m.group())[0], text.lower())
