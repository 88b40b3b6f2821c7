"""Citations in a schema judge's output, proven against the answer (Docent leaves them to the user).

The judge sees the answer as numbered segments (:func:`numbered`: ``[E1] ...``, one per sentence or
line). Every string field the output schema marks ``"citations": true`` must cite them: by reference
(``[E2]``, ``[E2, E3]``, ``[E2-E4]``) or by a verbatim quote in double quotes. :func:`prove` resolves
each citation to offsets in the answer: a reference to a segment that exists, a quote through the
excerpt matcher (:func:`~verify.judging.excerpts.match_excerpt`: exact, normalised, elided or a
guarded fuzzy match). A field with no citation, or with a citation that does not hold, makes the
judgment *unproven*, which the run treats like a deep-judgment trait without valid evidence.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from verify.judging.excerpts import match_excerpt
from verify.results.schema_judgment import CitationRecord, CitedField

__all__ = ["Segment", "numbered", "prove", "segments"]

_SENTENCE = re.compile(r"[^\n]+?(?:[.!?]+(?=\s|$)|$)", re.M)  # "2.1" does not end a sentence
_REFS = re.compile(r"\[\s*(E\d+(?:\s*[-–,]\s*E?\d+)*)\s*\]")
_QUOTE = re.compile(r"\"([^\"]{3,})\"|“([^”]{3,})”")


@dataclass(frozen=True)
class Segment:
    label: str  # "E1"
    start: int
    end: int


def segments(text: str) -> list[Segment]:
    """The answer cut into sentences (or lines), numbered from E1, with their offsets."""
    out: list[Segment] = []
    for found in _SENTENCE.finditer(text):
        start, end = found.start(), found.end()
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            out.append(Segment(f"E{len(out) + 1}", start, end))
    return out


def numbered(text: str) -> str:
    """The answer as the judge sees it: one ``[E<n>] sentence`` per line."""
    return "\n".join(f"[{s.label}] {text[s.start:s.end]}" for s in segments(text))


def _labels(spec: str) -> list[str]:
    """``E2, E3`` / ``E2-E4`` -> the labels named (a range is capped at 200 segments)."""
    labels: list[str] = []
    for part in re.split(r"\s*,\s*", spec):
        found = re.fullmatch(r"E?(\d+)(?:\s*[-–]\s*E?(\d+))?", part.strip(), re.I)
        if found:
            lo = int(found.group(1))
            hi = int(found.group(2) or lo)
            labels += [f"E{n}" for n in range(lo, min(hi, lo + 200) + 1)]
    return labels


def _cite(value: str, text: str, by_label: dict[str, Segment], threshold: float) -> list[CitationRecord]:
    found: list[CitationRecord] = []
    for ref in _REFS.finditer(value):
        for label in _labels(ref.group(1)):
            seg = by_label.get(label)
            found.append(CitationRecord(kind="reference", text=f"[{label}]", valid=seg is not None,
                                        start=seg.start if seg else -1, end=seg.end if seg else -1,
                                        reason=None if seg else f"there is no segment {label}"))
    for quote in _QUOTE.finditer(value):
        said = quote.group(1) or quote.group(2)
        match = match_excerpt(said, text, threshold)
        found.append(CitationRecord(kind="quote", text=said, valid=match.valid, start=match.start, end=match.end,
                                    reason=match.reason, similarity=round(match.similarity, 3)))
    return found


def _strings(value: Any, path: Sequence[str], where: str) -> Iterator[tuple[str, str]]:
    if not path:
        if isinstance(value, str):
            yield where, value
        return
    head, rest = path[0], path[1:]
    if head == "[]":
        for number, item in enumerate(value if isinstance(value, list) else []):
            yield from _strings(item, rest, f"{where}[{number}]")
    elif isinstance(value, dict) and head in value:
        yield from _strings(value[head], rest, f"{where}.{head}" if where else head)


def prove(output: dict[str, Any], paths: Sequence[tuple[str, ...]], text: str,
          threshold: float = 0.8) -> list[CitedField]:
    """Every cited field's citations, resolved against ``text`` (the answer the judge saw)."""
    by_label = {s.label: s for s in segments(text)}
    out: list[CitedField] = []
    for path in paths:
        for where, value in _strings(output, path, ""):
            cited = _cite(value, text, by_label, threshold)
            out.append(CitedField(path=where, proven=bool(cited) and all(c.valid for c in cited), citations=cited))
    return out
