"""What the judges read when the answer is a transcript, and where their quotes fall in it.

``use_full_trace_for_rubric`` / ``use_full_trace_for_template`` (karenina's fields) choose the whole
transcript, rendered as numbered blocks, or the submission (``transcript_extractor``; karenina's
final answer by default). A string answer is judged as it is, whatever they say.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from verify.config.verification import VerificationConfig
    from verify.run.state import TaskState

__all__ = ["judged_text", "mark_blocks", "plan_note", "transcript_sources"]


def judged_text(state: TaskState, config: VerificationConfig, *, rubric: bool) -> str:
    """The text the rubric (``rubric=True``) or template judges see."""
    full = config.use_full_trace_for_rubric if rubric else config.use_full_trace_for_template
    if state.transcript is not None and full:
        return state.transcript.rendered().text
    return state.answer or ""


def mark_blocks(state: TaskState, config: VerificationConfig) -> None:
    """Record the block each validated quote starts in, for the judges that read the full trace:
    the quotes' offsets are into the rendered transcript, so the block follows from them."""
    if state.transcript is None:
        return
    rendered = state.transcript.rendered()
    sections = []
    if config.use_full_trace_for_rubric and state.deep_judgment_rubric is not None:
        sections.append(state.deep_judgment_rubric.extracted_rubric_excerpts)
    if config.use_full_trace_for_template and state.template.deep_judgment is not None:
        sections.append(state.template.deep_judgment.extracted_excerpts)
    for excerpts in sections:
        for quotes in excerpts.values():
            for quote in quotes:
                quote.block = rendered.block_of(quote.start)


def transcript_sources(config: VerificationConfig, answers: Mapping[str, Mapping[str, Any]] | None = None) -> list[str]:
    """Where this run's transcripts come from (empty: every answer is plain text)."""
    found = [f"answering model {m.id!r} uses tools {[t if isinstance(t, str) else t.get('name') for t in m.tools]}"
             for m in config.answering_models if m.tools]
    found += [f"manual traces of {m.id!r}" for m in config.answering_models
              if isinstance(m.manual_traces, dict) and any(isinstance(v, list) for v in m.manual_traces.values())]
    if any(isinstance(v, list) for table in (answers or {}).values() for v in table.values()):
        found.append("recorded answers (--answers)")
    return found


def plan_note(config: VerificationConfig, answers: Mapping[str, Mapping[str, Any]] | None = None) -> str | None:
    """The ``--show-plan`` line saying what the judges read of a transcript, when the run has any."""
    sources = transcript_sources(config, answers)
    if not sources:
        return None

    def reads(full: bool) -> str:
        return "the full trace" if full else "the submission"

    return (f"transcripts ({'; '.join(sources)}): submission = transcript_extractor {config.transcript_extractor}; "
            f"rubric judges read {reads(config.use_full_trace_for_rubric)} (use_full_trace_for_rubric="
            f"{str(config.use_full_trace_for_rubric).lower()}), template judges read "
            f"{reads(config.use_full_trace_for_template)} (use_full_trace_for_template="
            f"{str(config.use_full_trace_for_template).lower()}); partial traces "
            f"{'scored' if config.allow_partial_trace_scoring else 'not scored'} (allow_partial_trace_scoring)")
