"""A task's evidence: every validated excerpt numbered E1.. across the task, where it sits in the
answer, and the judge's reasoning with its ``[E1]``-style references pointed at those numbers.

The judge numbers each trait's evidence from E1 (the reasoning prompt lists a trait's excerpts as
``[E1] ...``, ``[E2] ...``), so ``[E2]`` in the reasoning of 'clarity' means clarity's second excerpt.
One answer shows every trait's excerpts at once, so the page numbers them across the task (rubric
traits first, in the order the results hold them, then template attributes) and each reference is
rewritten to that number. A reference to an excerpt that does not exist stays plain text.

A transcript answer may have been judged on two texts: a deep judgment that read the full trace
quotes the rendered transcript, one that read the final answer quotes the submission. Each excerpt
is then marked in the text its judge read (``reads``), so there is a tree per text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from verify.report.highlight import Node, highlight
from verify.results.models import Excerpt

__all__ = ["Evidence", "collect", "reasoning_parts"]

# "[E1]", "[E1, E2]", "[e3; E4]": one bracket naming one or more excerpts
_REFERENCE = re.compile(r"\[\s*[Ee]\s*\d+(?:\s*[,;]\s*[Ee]\s*\d+)*\s*\]")
_NUMBER = re.compile(r"\d+")


@dataclass
class Evidence:
    """``excerpts``: one record per excerpt (the page's ``ex`` list); ``tree``: the answer with a
    mark per located excerpt; ``trace_tree``: the same for the rendered transcript, when excerpts
    were judged on it; ``numbers``: (kind, trait or attribute) -> its excerpts' numbers."""

    excerpts: list[dict[str, Any]] = field(default_factory=list)
    tree: list[Node] = field(default_factory=list)
    trace_tree: list[Node] = field(default_factory=list)
    numbers: dict[tuple[str, str], list[int]] = field(default_factory=dict)


def _ranges(excerpt: Excerpt, answer: str) -> list[tuple[int, int]]:
    """Where the excerpt sits in the answer (each part of an elided quote), or [] when its offsets
    do not fit the answer."""
    parts = [tuple(p) for p in excerpt.spans] if excerpt.spans else [(excerpt.start, excerpt.end)]
    if not parts or any(not 0 <= s < e <= len(answer) for s, e in parts):
        return []
    return [(int(s), int(e)) for s, e in parts]


def _record(
    number: int, kind: str, owner: str, excerpt: Excerpt, located: list[tuple[int, int]], where: str,
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "n": number, "trait": owner, "kind": kind, "text": excerpt.text, "start": excerpt.start,
        "end": excerpt.end, "confidence": excerpt.confidence, "similarity": excerpt.similarity_score,
        "method": excerpt.match_method, "located": bool(located), "in": where,
    }
    if excerpt.block is not None:
        record["block"] = excerpt.block
    if excerpt.spans:
        record["spans"] = [list(p) for p in excerpt.spans]
    if excerpt.hallucination_risk is not None:
        record["risk"] = excerpt.hallucination_risk
        record["justification"] = excerpt.hallucination_justification
    if excerpt.search_results is not None:
        record["search"] = [
            {"title": str(h.get("title") or ""), "url": str(h.get("url") or ""), "content": str(h.get("content") or "")}
            for h in excerpt.search_results if isinstance(h, dict)
        ]
    return record


def collect(
    answer: str | None, by_trait: Mapping[str, Sequence[Excerpt]], by_attribute: Mapping[str, Sequence[Excerpt]],
    *, trace: str | None = None, reads: Mapping[str, str] | None = None,
) -> Evidence:
    """Number every excerpt of a task and mark the located ones in ``answer``, or, for a kind
    (``trait``, ``attribute``) that ``reads`` maps to ``"trace"``, in the rendered transcript."""
    texts = {"answer": answer or "", "trace": trace or ""}
    evidence = Evidence()
    ranges: dict[str, list[tuple[int, int, int]]] = {"answer": [], "trace": []}
    for kind, groups in (("trait", by_trait), ("attribute", by_attribute)):
        where = "trace" if trace is not None and (reads or {}).get(kind) == "trace" else "answer"
        for owner, excerpts in groups.items():
            numbers = evidence.numbers.setdefault((kind, owner), [])
            for excerpt in excerpts:
                number = len(evidence.excerpts) + 1
                located = _ranges(excerpt, texts[where])
                evidence.excerpts.append(_record(number, kind, owner, excerpt, located, where))
                numbers.append(number)
                ranges[where].extend((number, s, e) for s, e in located)
    evidence.tree = highlight(texts["answer"], ranges["answer"]) if texts["answer"] else []
    evidence.trace_tree = highlight(texts["trace"], ranges["trace"]) if texts["trace"] else []
    return evidence


def reasoning_parts(text: str, numbers: Sequence[int]) -> list[str | int]:
    """``text`` as plain strings and excerpt numbers: each reference the judge made to its k-th
    excerpt (``[Ek]``) becomes ``numbers[k - 1]``, which the page links to that excerpt's mark."""
    parts: list[str | int] = []
    last = 0
    for match in _REFERENCE.finditer(text):
        local = [int(k) for k in _NUMBER.findall(match.group())]
        if not all(1 <= k <= len(numbers) for k in local):
            continue  # names evidence the trait does not have: keep the judge's words as they are
        if match.start() > last:
            parts.append(text[last:match.start()])
        for i, k in enumerate(local):
            if i:
                parts.append(", ")
            parts.append(numbers[k - 1])
        last = match.end()
    if last < len(text):
        parts.append(text[last:])
    return parts
