"""A transcript answer on the page: which text each deep judgment read, and the transcript's blocks.

A transcript is judged either whole, rendered in numbered blocks (the result's ``raw_llm_response``),
or by its submission only (the final answer, per ``transcript_extractor``), and the choice may differ
between the rubric (``use_full_trace_for_rubric``) and the template (``use_full_trace_for_template``).
Results do not say which text was read: a quote's ``block`` is recorded only when its judge read
the full trace (:func:`verify.stages.transcripts.mark_blocks`), the submission is not stored, and a
JSONL export has no config. So the page works it out per deep judgment (rubric traits, template
attributes), from the quotes themselves:

1. a quote with a ``block`` means the full trace;
2. otherwise each candidate text (the rendered trace, and the submission per each extractor: the
   run's own first, when its config is known) is scored by how many quotes read their own text at
   their offsets (exactly, or nearly for fuzzy matches), and the best wins;
3. ties, and deep judgments without quotes, follow the run's config, else verify's defaults (the
   rubric reads the full trace, the template the final answer).

The transcript is parsed again from ``trace_messages`` and used only when its rendering is exactly
the recorded ``raw_llm_response``; otherwise the page shows the recorded text as one answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

from verify.judging.transcript import Transcript, TranscriptError, parse_transcript
from verify.report.highlight import Node, slice_tree
from verify.results.models import Excerpt, TemplateSection

__all__ = ["Reading", "blocks", "reading"]

_FULL_TRACE = {"trait": ("use_full_trace_for_rubric", True), "attribute": ("use_full_trace_for_template", False)}
_SPACE = re.compile(r"\s+")
_NEAR = 0.8  # a fuzzy match: the answer's text at the offsets is close to the quote, not equal


@dataclass(frozen=True)
class Reading:
    """What a transcript task's judges read.

    ``reads``: kind (``trait``, ``attribute``) -> ``"trace"`` or ``"answer"`` (the submission);
    ``how``: kind -> ``"blocks"`` (recorded), ``"offsets"`` (the quotes fit that text) or ``"config"``.
    """

    transcript: Transcript
    rendered: str
    submission: str
    extractor: str
    reads: dict[str, str] = field(default_factory=dict)
    how: dict[str, str] = field(default_factory=dict)


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def _fit(text: str, quote: Excerpt) -> int:
    """2 when ``text`` holds the quote at its offsets, 1 when nearly (a fuzzy match), else 0."""
    parts = [tuple(p) for p in quote.spans] if quote.spans else [(quote.start, quote.end)]
    if not parts or any(not 0 <= s < e <= len(text) for s, e in parts):
        return 0
    found = " ... ".join(text[int(s):int(e)] for s, e in parts)
    if found == quote.text or _norm(found) == _norm(quote.text):
        return 2
    near = SequenceMatcher(None, _norm(found)[:2000], _norm(quote.text)[:2000], autojunk=False).ratio()
    return 1 if near >= _NEAR else 0


def _score(text: str, quotes: Sequence[Excerpt]) -> int:
    return sum(_fit(text, q) for q in quotes)


def _extractors(transcript: Transcript, configured: str | None) -> list[str]:
    tools = dict.fromkeys(t.tool_name for t in transcript.turns if t.role == "tool" and t.tool_name)
    names = [configured or "last_assistant", "last_assistant", "all_assistant", *(f"tool_output:{n}" for n in tools)]
    return list(dict.fromkeys(names))


def _submissions(transcript: Transcript, names: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in names:
        try:
            out[name] = transcript.submission(name)
        except TranscriptError:  # an extractor this verify does not know: the others still apply
            continue
    return out


def _flat(groups: Mapping[str, Sequence[Excerpt]]) -> list[Excerpt]:
    return [q for quotes in groups.values() for q in quotes]


def reading(
    template: TemplateSection, sections: Mapping[str, Mapping[str, Sequence[Excerpt]]], config: Mapping[str, Any],
) -> Reading | None:
    """What a task's judges read (see the module docstring); ``sections``: kind -> its quotes by
    trait or attribute; ``config``: the run's config (empty for a JSONL export). None when the
    answer is not a transcript, or its messages no longer render to the recorded text."""
    rendered = template.raw_llm_response
    if not template.trace_messages or rendered is None:
        return None
    try:
        transcript = parse_transcript(template.trace_messages)
    except TranscriptError:
        return None
    if transcript.rendered().text != rendered:
        return None
    configured = config.get("transcript_extractor")
    submissions = _submissions(transcript, _extractors(transcript, configured if isinstance(configured, str) else None))
    unmarked = [q for quotes in sections.values() for q in _flat(quotes) if q.block is None]
    # the first extractor (the run's own) wins ties: max keeps the first of equal scores
    extractor = max(submissions, key=lambda name: _score(submissions[name], unmarked))
    submission = submissions[extractor]
    reads: dict[str, str] = {}
    how: dict[str, str] = {}
    for kind, groups in sections.items():
        quotes = _flat(groups)
        key, default = _FULL_TRACE[kind]
        prefer = config.get(key, default)
        full = prefer if isinstance(prefer, bool) else default
        if any(q.block is not None for q in quotes):
            reads[kind], how[kind] = "trace", "blocks"
            continue
        on_trace, on_answer = _score(rendered, quotes), _score(submission, quotes)
        if on_trace != on_answer:
            reads[kind], how[kind] = ("trace" if on_trace > on_answer else "answer"), "offsets"
        else:
            reads[kind], how[kind] = ("trace" if full else "answer"), "config"
    return Reading(transcript, rendered, submission, extractor, reads, how)


def _heads(transcript: Transcript) -> Iterable[dict[str, Any]]:
    """Each rendered block's message: role, kind, tool, and the words before its body (as
    :mod:`verify.judging.transcript` renders them)."""
    for t in transcript.turns:
        if t.role == "tool":
            yield {"role": "tool", "kind": "result", "tool": t.tool_name, "error": t.is_error,
                   "head": f"tool {t.tool_name or 'unknown'}{' (error)' if t.is_error else ''}: "}
            continue
        if t.text or not t.tool_calls:
            yield {"role": t.role, "kind": "message", "head": f"{t.role}: "}
        for call in t.tool_calls:
            yield {"role": t.role, "kind": "call", "tool": call.name, "head": f"{t.role} -> tool {call.name}"}


def blocks(read: Reading, tree: Sequence[Node]) -> list[dict[str, Any]]:
    """The transcript's blocks for the page, each with its head (``[B3] tool search: ``) and body
    as parts of ``tree`` (the rendered transcript with its marks)."""
    out: list[dict[str, Any]] = []
    spans = read.transcript.rendered().spans
    for n, ((start, end), meta) in enumerate(zip(spans, _heads(read.transcript), strict=False), 1):
        head = f"[B{n}] {meta.pop('head')}"
        cut = start + len(head) if read.rendered.startswith(head, start) else start
        out.append({"n": n, **meta, "head": slice_tree(tree, start, cut), "body": slice_tree(tree, cut, end)})
    return out
