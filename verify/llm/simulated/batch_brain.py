"""What the simulated judge reads from a batched deep-judgment prompt (``verify.judging.batched_prompts``).

The batch replies themselves are built in ``brain`` from the per-trait rules (the same quotes, the
same verdicts), so the two strategies are judged alike; this module only reads the prompt's
structure: each trait's maximum number of quotes (``<max_excerpts>``: one number, or
``name=N; ...``), and each trait's numbered evidence (``<evidence for="name">``) with the search
results shown per quote. It also lists the per-trait entries of a batch reply, for the imperfect judge.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from verify.llm.simulated.text import TraitSpec, tag

__all__ = ["EvidenceQuote", "changed_verdicts", "evidence", "limits", "trait_entries"]

_EVIDENCE = re.compile(r'<evidence for="([^"]*)">(.*?)</evidence>', re.S)
_QUOTE = re.compile(r"^\[(E\d+)\] (.*)$", re.M)

EvidenceQuote = tuple[str, str, str | None]
"""(excerpt id, quote, its rendered search results or ``None`` when none are shown)."""


def limits(prompt: str, default: int = 3) -> Callable[[str], int]:
    """Each trait's maximum number of quotes, by trait name."""
    raw = (tag(prompt, "max_excerpts") or "").strip()
    if raw.isdigit():
        return lambda _name: int(raw)
    per = {name.strip(): int(n) for name, n in re.findall(r"([^;=]+)=(\d+)", raw)}
    return lambda name: per.get(name, default)


def evidence(prompt: str) -> dict[str, list[EvidenceQuote]]:
    """Each trait's numbered quotes (an empty list when it shows none), by trait name."""
    out: dict[str, list[EvidenceQuote]] = {}
    for name, block in _EVIDENCE.findall(prompt):
        quotes: list[EvidenceQuote] = []
        for eid, text in _QUOTE.findall(block):
            found = re.search(rf'<search_results for="{eid}">\n?(.*?)</search_results>', block, re.S)
            quotes.append((eid, text, found.group(1) if found else None))
        out.setdefault(name, quotes)
    return out


def trait_entries(value: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The (trait name, entry) pairs of a batch reply ``{"traits": {name: {...}}}``."""
    found = value.get("traits")
    return [(n, e) for n, e in found.items() if isinstance(e, dict)] if isinstance(found, dict) else []


def changed_verdicts(value: dict[str, Any], specs: list[TraitSpec],
                     change: Callable[[TraitSpec, Any], Any]) -> list[tuple[dict[str, Any], Any]]:
    """(entry, new verdict) for each entry of a batch verdict reply that ``change`` rewrites (not ``None``)."""
    by_name = {s.name: s for s in specs}
    return [(e, new) for n, e in trait_entries(value)
            if n in by_name and (new := change(by_name[n], e.get("verdict"))) is not None]
