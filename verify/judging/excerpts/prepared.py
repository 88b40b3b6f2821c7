"""The prepared (normalised, offset-mapped, indexed) form of the answers being judged, shared by every quote.

In a run, one answer is quoted by every trait, replicate and juror that judges it, in calls that
arrive at different times and from different tasks in flight. Preparing a 60,000-character answer
costs far more than matching one quote against it, so prepared answers are kept in one bounded,
least-recently-used cache keyed by the answer text. The bound is in characters rather than entries:
a run of short answers keeps many of them (all the tasks in flight), a few long ones cannot hold
much memory.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from verify.judging.excerpts.normalise import Normalized

__all__ = ["MAX_CACHED_CHARS", "PreparedTexts", "prepare_text"]

#: Characters of answer text whose prepared forms are kept (a prepared text, indexed, takes about
#: 30 bytes per character: some 30 MB at most).
MAX_CACHED_CHARS = 1_000_000


class PreparedTexts:
    """A least-recently-used cache of :class:`Normalized` texts holding at most ``max_chars`` characters.

    The most recent text is always kept, even when it alone is longer than the bound. Safe to share
    between threads.
    """

    def __init__(self, max_chars: int = MAX_CACHED_CHARS) -> None:
        self.max_chars = max_chars
        self._entries: OrderedDict[str, Normalized] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, text: str) -> Normalized:
        """The prepared form of ``text``, prepared now unless it is cached."""
        with self._lock:
            found = self._entries.get(text)
            if found is not None:
                self._entries.move_to_end(text)
                return found
        prepared = Normalized(text)  # outside the lock: other threads keep matching meanwhile
        with self._lock:
            if text not in self._entries:
                self._entries[text] = prepared
                self._chars += len(text)
                while self._chars > self.max_chars and len(self._entries) > 1:
                    evicted, _ = self._entries.popitem(last=False)
                    self._chars -= len(evicted)
        return prepared

    def clear(self) -> None:
        """Forget every prepared text."""
        with self._lock:
            self._entries.clear()
            self._chars = 0


_SHARED = PreparedTexts()


def prepare_text(text: str) -> Normalized:
    """The :class:`Normalized` form of ``text``, from the process-wide cache of recently quoted texts."""
    return _SHARED.get(text)
