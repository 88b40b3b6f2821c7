"""What the judges read when the answer is a transcript, and where their quotes fall in it.

``use_full_trace_for_rubric`` / ``use_full_trace_for_template`` (karenina's fields) choose the whole
transcript, rendered as numbered blocks, or the submission (``transcript_extractor``; karenina's
final answer by default). A string answer is judged as it is, whatever they say.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from verify.config.verification import VerificationConfig
    from verify.run.state import TaskState

__all__ = ["judged_text", "mark_blocks"]


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
