"""letta-style prompt graders: the trait's own prompt, one call, a ``{score, rationale}`` reply.

The prompt is rendered with the question, the answer, the reference answer and the trait's
description (:func:`verify.benchmark.grader_prompt.render`) under letta's system prompt. The reply is
read by :func:`~verify.llm.structured.ask_structured`: a score outside 0.0-1.0, a missing rationale
or the schema echoed back is asked again with what was wrong. Unlike letta (which records 0.0 when
grading fails), a reply that never becomes usable leaves the trait ``unscored`` with the raw text:
a judge that could not be read has said nothing about the answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from verify.benchmark.grader_prompt import render
from verify.llm.ports import Message, Purpose
from verify.llm.structured import ask_structured
from verify.results.models import TraitOutcome

if TYPE_CHECKING:
    from verify.benchmark.traits import LLMTrait
    from verify.llm.ports import ChatModel

__all__ = ["SYSTEM_PROMPT", "GraderScore", "grade"]

SYSTEM_PROMPT = """You are an evaluation judge. You will be given:
1. A rubric describing evaluation criteria
2. An input/question
3. A submission to evaluate

Evaluate the submission according to the rubric and return a JSON response with:
{
    "score": (REQUIRED: a decimal number between 0.0 and 1.0 inclusive),
    "rationale": "explanation of your grading decision"
}

IMPORTANT:
- The score MUST be a number between 0.0 and 1.0 (inclusive)
- 0.0 means complete failure, 1.0 means perfect
- Use decimal values for partial credit (e.g., 0.25, 0.5, 0.75)
- Be objective and follow the rubric strictly"""
"""letta's rubric-grader system prompt, word for word."""


class GraderScore(BaseModel):
    """The grader's reply (letta's schema)."""

    model_config = ConfigDict(title="GraderScore", extra="ignore")

    score: float = Field(ge=0.0, le=1.0, allow_inf_nan=False, description="0.0 (complete failure) to 1.0 (perfect)")
    rationale: str = Field(min_length=1, description="why this score")


async def grade(judge: ChatModel, question: str, answer: str, trait: LLMTrait, reference: str | None) -> TraitOutcome:
    """Score the answer with the trait's prompt; an unusable reply leaves the trait unscored."""
    text = render(trait.prompt or "{submission}", question, answer, reference, trait.description)
    messages = [Message("system", SYSTEM_PROMPT), Message("user", text)]
    reply = await ask_structured(judge, messages, GraderScore, purpose=Purpose.RUBRIC_GRADER, trait=trait.name)
    if reply.value is None:
        why = f"judge reply unusable after {reply.attempts} attempt(s): {reply.error}"
        return TraitOutcome(status="unscored", reason=why, raw_reply=reply.raw_text, unscored_category="unparseable")
    return TraitOutcome(status="scored", score=reply.value.score, rationale=reply.value.rationale)
