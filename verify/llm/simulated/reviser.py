"""The simulated answering model's revisions (revise until satisfied), deterministic and offline.

A revision request is the conversation so far ending in a user turn with a ``<revision_request>``
block of ``<criterion name=...><description>...</description><gap>...</gap></criterion>`` items
(:func:`verify.run.revision.feedback`). The reviser keeps the sentences of its last answer, drops those
that break a failing absence criterion ("does not recommend X"), and adds one sentence per failing
criterion that addresses it: what the gap says is missing (facts, a class to fit, text matching a
pattern), else the criterion's own description. Like the simulated judge, it is a stand-in for tests
and the offline demo, not a writer of good answers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from verify.judging.consistency import absence_cue
from verify.llm.ports import Message
from verify.llm.simulated.text import sentences, tag

__all__ = ["is_revision", "revise"]

_CRITERION = re.compile(r'<criterion name="([^"]*)"><description>(.*?)</description><gap>(.*?)</gap></criterion>', re.S)


def is_revision(messages: Sequence[Message]) -> bool:
    """Whether the last user turn asks for a revision."""
    users = [m for m in messages if m.role == "user"]
    return bool(users) and tag(users[-1].content, "revision_request") is not None


def example_of(pattern: str) -> str | None:
    """A short text a simple regex pattern finds (None when this crude rewrite does not match it)."""
    text = re.sub(r"\[([^\]\\])[^\]]*\]", r"\1", pattern)
    for token, stand_in in ((r"\d", "7"), (r"\w", "a"), (r"\s", " "), (r"\b", "")):
        text = text.replace(token, stand_in)
    text = re.sub(r"\{\d*,?\d*\}|[\^$()+*?|]", "", text).replace("\\", "")
    try:
        return text if text.strip() and re.search(pattern, text) else None
    except re.error:
        return None


def _addition(description: str, gap: str) -> list[str]:
    """What to add for one failing criterion."""
    missing = re.search(r"missing: (.*?)(?:; should not say:|; judge:|$)", gap, re.S)
    if missing:
        return [f"{fact.strip().rstrip('.')}." for fact in missing.group(1).split(";") if fact.strip()]
    fits = re.search(r"needs '[^']*' \(([^)]*)\)", gap)
    if fits:
        return [f"{fits.group(1).strip().rstrip('.')}."]
    pattern = re.search(r"does not match the pattern /(.*)/(?:; judge:|$)", gap, re.S)
    if pattern:
        found = example_of(pattern.group(1))
        return [f"For example, {found.strip()}."] if found else []
    return [f"{description.strip().rstrip('.')}."] if description.strip() else []


def revise(messages: Sequence[Message], violates: Callable[[str, str], bool]) -> str:
    """The revised answer: the last answer's sentences that break no failing absence criterion, then
    what each failing criterion still needs. ``violates(criterion, sentence)`` is the judge's rule."""
    request = [m for m in messages if m.role == "user"][-1].content
    answers = [m.content for m in messages if m.role == "assistant"]
    kept = sentences(answers[-1]) if answers else []
    added: list[str] = []
    for _name, description, gap in _CRITERION.findall(request):
        if absence_cue(description):
            kept = [s for s in kept if not violates(description, s)]
        else:
            added += _addition(description, gap)
    out: list[str] = []
    for sentence in [*kept, *added]:
        if sentence not in out:
            out.append(sentence)
    return " ".join(out) or "I have no answer to revise."
