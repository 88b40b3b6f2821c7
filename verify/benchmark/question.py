"""One benchmark question: its text, expected answer, answer template, rubric and metadata.

Ids follow karenina: a question without ``@id`` gets ``urn:uuid:question-<slug>-<md5[:8]>``, and a
template is identified by the md5 of its normalised code.
"""

from __future__ import annotations

import hashlib
import textwrap
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from verify.benchmark.traits import Rubric

__all__ = ["Question", "generate_question_id", "generate_template_id", "now_iso"]


def now_iso() -> str:
    """The local time as karenina writes checkpoint dates."""
    return datetime.now().isoformat()


def generate_question_id(text: str) -> str:
    """karenina's id for a question without ``@id``: ``urn:uuid:question-<slug>-<md5[:8]>``."""
    digest = hashlib.md5(text.encode("utf-8")).hexdigest()
    slug = text.lower().replace(" ", "-").replace("?", "").replace(".", "").replace(",", "")[:50]
    return f"urn:uuid:question-{slug}-{digest[:8]}"


def generate_template_id(template_code: str | None) -> str:
    """md5 of the normalised template (32 hex chars), or ``"no_template"`` when it is empty."""
    code = textwrap.dedent(template_code or "").replace("\r\n", "\n").replace("\r", "\n")
    code = "\n".join(line.rstrip() for line in code.split("\n")).strip()
    return hashlib.md5(code.encode("utf-8")).hexdigest()[:32] if code else "no_template"


class Question(BaseModel):
    """One benchmark question (a schema.org ``DataFeedItem`` wrapping a ``Question``)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="The DataFeedItem @id (generated from the text when absent).")
    text: str
    raw_answer: str = Field(description="The reference answer (acceptedAnswer.text).")
    template_code: str = Field(default="", description="Answer template source (hasPart.text); may be empty.")
    template_name: str | None = Field(default=None, description="hasPart.name; a default is written if None.")
    template_language: str = "Python"
    template_repository: str | None = None
    keywords: list[str] = Field(default_factory=list)
    finished: bool = False
    author: dict[str, Any] | str | None = None
    sources: list[Any] | None = None
    few_shot_examples: list[dict[str, Any]] | None = None
    answer_notes: str | None = None
    workspace_path: str | None = None
    custom_metadata: dict[str, Any] = Field(default_factory=dict)
    rubric: Rubric | None = Field(default=None, description="Question-specific traits.")
    dynamic_rubric: Rubric | None = Field(default=None, description="Question-specific dynamic traits.")
    date_created: str = Field(default_factory=now_iso)
    date_modified: str = Field(default_factory=now_iso)
    item_node_id: str | None = Field(default=None, description="item.@id, kept for round trips.")
    answer_node_id: str | None = Field(default=None, description="acceptedAnswer.@id.")
    template_node_id: str | None = Field(default=None, description="hasPart.@id.")
    ignored_ratings: list[dict[str, Any]] = Field(
        default_factory=list, description="Global-typed ratings inside the question; karenina ignores them."
    )
    extra_properties: list[dict[str, Any]] = Field(default_factory=list)
    extra_item_keys: dict[str, Any] = Field(default_factory=dict)
    extra_feed_keys: dict[str, Any] = Field(default_factory=dict)

    @property
    def question_hash(self) -> str:
        """md5 of the text: karenina's key for manual traces."""
        return hashlib.md5(self.text.encode("utf-8")).hexdigest()

    @property
    def template_id(self) -> str:
        return generate_template_id(self.template_code)
