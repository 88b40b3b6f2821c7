"""Text helpers shared by the simulated judge's modules (``brain``, ``template_brain``, ``imperfect``):
words and sentences, prompt tags, and the ``<trait ...>`` blocks of ``verify.judging.prompts``."""

from __future__ import annotations

import re
from dataclasses import dataclass

from verify.judging.consistency import criterion_text

STOP = set(
    "the a an and or of to in on for with is are was were be been by as at that this it its from "
    "which who whom whose what when where how why does do did not no response answer question trait "
    "should must provide provides includes include contains contain mentions mention any all each "
    "well clear more most very than then there their they them these those into about over under".split()
)


def tag(text: str, name: str) -> str | None:
    """The content of the first ``<name ...>...</name>`` block of ``text``, or None."""
    m = re.search(rf"<{name}(?: [^>]*)?>(.*?)</{name}>", text, re.S)
    return m.group(1) if m else None


def words(text: str) -> list[str]:
    """Content words: lower-cased, longer than two letters, not in :data:`STOP`."""
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2 and w not in STOP]


def overlap(criterion: str, text: str) -> float:
    """Share of the criterion's content words (5-letter stems) found in the text."""
    wanted = {w[:5] for w in words(criterion)}
    if not wanted:
        return 0.0
    have = {w[:5] for w in words(text)}
    return len(wanted & have) / len(wanted)


def sentences(text: str) -> list[str]:
    """The sentences (and lines) of ``text`` that are at least 12 characters long."""
    parts = re.split(r"(?<=[.!?])\s+|\n+", text)
    return [p.strip() for p in parts if len(p.strip()) >= 12]


def fabricate(text: str) -> str:
    """An altered quote: numbers changed, a word invented, so validation must reject it."""
    changed = re.sub(r"\d+", lambda m: str(int(m.group()) + 7), text)
    return f"Reportedly, {changed.rstrip('.')} according to an unnamed 2019 review."


_TRAIT = re.compile(r'<trait name="([^"]*)" kind="([^"]*)"(?: min="([^"]*)" max="([^"]*)")?>(.*?)</trait>', re.S)


@dataclass(frozen=True)
class TraitSpec:
    """One ``<trait ...>`` block of a prompt, as read back by the simulated judge."""

    name: str
    kind: str
    lo: int | None
    hi: int | None
    description: str

    @property
    def criterion(self) -> str:
        """The text the judging code reads the criterion from (name and description, no class list)."""
        return criterion_text(self.name, self.summary)

    @property
    def summary(self) -> str:
        """The description without a literal trait's ``Classes: ...`` line."""
        return self.description.split("\nClasses: ", 1)[0]

    @property
    def classes(self) -> list[tuple[str, str]]:
        """A literal trait's (class name, class description) pairs, from its ``Classes:`` line."""
        m = re.search(r"Classes: (.*)", self.description)
        if not m:
            return []
        return [(p.split(":", 1)[0].strip(), p.split(":", 1)[-1]) for p in m.group(1).split("; ")]


def traits(prompt: str) -> list[TraitSpec]:
    """Every ``<trait ...>`` block of ``prompt``, in order."""
    return [
        TraitSpec(name, kind, int(lo) if lo else None, int(hi) if hi else None, desc)
        for name, kind, lo, hi, desc in _TRAIT.findall(prompt)
    ]
