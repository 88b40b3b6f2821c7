"""An index of anchors for aligning a quote with a long text.

Fuzzy matching needs to know where in a 60,000-character answer a quote with a typo might come from.
Scanning the whole text for every quote is what made matching slow; instead, the text is indexed
once (when the searches made without an index add up to the cost of building one) by the first
:data:`KEY_CHARS` characters of every word, and a quote's own keys are looked up in it.
"""

from __future__ import annotations

from collections import Counter
from itertools import accumulate
from operator import add

__all__ = ["KEY_CHARS", "KeyIndex"]

#: Length of the keys of a :class:`KeyIndex`.
KEY_CHARS = 12


class KeyIndex:
    """Where the :data:`KEY_CHARS` characters that begin each token of a text occur.

    A key usually spans two or three words, so it is far rarer than a single word and makes a good
    anchor for aligning a quote. The index keeps the first occurrence and the count of every key
    (both built at C speed); further occurrences of a repeated key are looked up when first asked for.
    """

    __slots__ = ("_counts", "_first", "_more", "_text")

    def __init__(self, text: str) -> None:
        tokens = text.split(" ")
        ends = list(accumulate(map(len, tokens), initial=0))
        starts = list(map(add, ends, range(len(tokens))))  # token i starts after i separators
        keys = [text[pos : pos + KEY_CHARS] for pos in starts]
        self._text = text
        self._first = dict(zip(reversed(keys), reversed(starts), strict=True))
        self._counts = Counter(keys)
        self._more: dict[str, list[int]] = {}

    def count(self, key: str) -> int:
        """How often ``key`` begins a token of the text."""
        return self._counts.get(key, 0)

    def positions(self, key: str) -> list[int]:
        """The offsets at which ``key`` begins a token of the text, in order."""
        count = self._counts.get(key, 0)
        if count <= 1:
            return [self._first[key]] if count else []
        found = self._more.get(key)
        if found is None:
            found = [self._first[key]]
            pos = self._text.find(key, found[0] + 1)
            while pos != -1 and len(found) < count:
                if self._text[pos - 1] == " ":  # starts a token, like the indexed occurrences
                    found.append(pos)
                pos = self._text.find(key, pos + 1)
            self._more[key] = found
        return found
