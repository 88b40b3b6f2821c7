"""What a schema-judge trait leaves in a result (``rubric.schema_judgments[<trait>]``), Docent's shape.

``result_type`` is ``direct_result`` with the judge's ``output`` (valid against the trait's output
schema), or ``failure`` with ``result_metadata`` saying why (the problems of each attempt and the
last raw reply). Every cited field's citations are kept with the answer offsets they were proven at,
so a reader can highlight them; ``proven`` is False when a cited field has no citation that holds.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CitationRecord", "CitedField", "SchemaJudgment"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CitationRecord(_Model):
    kind: Literal["reference", "quote"]
    text: str
    valid: bool
    start: int = -1
    end: int = -1
    reason: str | None = None
    similarity: float | None = None


class CitedField(_Model):
    path: str = Field(description="the cited field in the output, e.g. 'issues[0].description'")
    proven: bool
    citations: list[CitationRecord] = Field(default_factory=list)


class SchemaJudgment(_Model):
    result_type: Literal["direct_result", "failure"]
    output: dict[str, Any] | None = None
    result_metadata: dict[str, Any] | None = None
    attempts: int = 1
    citations: list[CitedField] = Field(default_factory=list)
    proven: bool | None = Field(default=None, description="None: nothing cited (no output, or no cited field)")
