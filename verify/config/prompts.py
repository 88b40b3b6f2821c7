"""Few-shot and prompt settings (karenina's shapes): which examples the answering model sees,
and extra instructions appended to the prompts of each kind of model call."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

from verify.config.models import _Forbid
from verify.config.problems import _raise_if

__all__ = ["FewShotConfig", "FewShotExample", "PromptConfig", "QuestionFewShotConfig"]

# --------------------------------------------------------------------------- few-shot and prompts


class FewShotExample(BaseModel):
    model_config = _Forbid

    question: str
    answer: str


class QuestionFewShotConfig(BaseModel):
    """Few-shot settings of one question; ``inherit`` uses the pool settings."""

    model_config = _Forbid

    mode: Literal["inherit", "all", "k-shot", "custom"] = "inherit"
    k: int | None = None
    selected_examples: list[int | str] | None = Field(
        default=None, description="Indexes or MD5 of example questions."
    )
    excluded_examples: list[int | str] | None = Field(
        default=None, description="Indexes or MD5 of example questions."
    )


class FewShotConfig(BaseModel):
    """Which few-shot examples the answering model sees (karenina's shape)."""

    model_config = _Forbid

    source: Literal["both", "disabled", "question_pool", "global"] = "both"
    pool_mode: Literal["all", "k-shot", "custom"] = "all"
    pool_k: int = 3
    question_configs: dict[str, QuestionFewShotConfig] = Field(default_factory=dict)
    global_examples: list[FewShotExample] = Field(default_factory=list)

    @model_validator(mode="after")
    def _k_positive(self) -> FewShotConfig:
        problems: list[tuple[str, str]] = []
        if self.source != "disabled":
            if self.pool_mode == "k-shot" and self.pool_k < 1:
                problems.append(("pool_k", "must be at least 1 with pool_mode='k-shot'"))
            for qid, qcfg in self.question_configs.items():
                if qcfg.mode == "k-shot" and qcfg.k is not None and qcfg.k < 1:
                    problems.append((f"question_configs.{qid}.k", "must be at least 1 with mode='k-shot'"))
        _raise_if(problems)
        return self


class PromptConfig(BaseModel):
    """Extra instructions appended to the prompts of one kind of model call."""

    model_config = _Forbid

    generation: str | None = None
    parsing: str | None = None
    abstention_detection: str | None = None
    sufficiency_detection: str | None = None
    rubric_evaluation: str | None = Field(
        default=None, description="Also the fallback for every rubric_* task."
    )
    agentic_parsing: str | None = Field(
        default=None, description="Also the fallback for every agentic_parsing_* task."
    )
    deep_judgment: str | None = Field(default=None, description="Also the fallback for every dj_* task.")

    def get_for_task(self, task: str) -> str | None:
        """Instructions for ``task`` (e.g. ``rubric_llm_trait_batch``), falling back by prefix."""
        direct = getattr(self, task, None) if task in type(self).model_fields else None
        if direct is not None:
            return str(direct)
        for prefix, fallback in (
            ("rubric_", "rubric_evaluation"),
            ("agentic_parsing_", "agentic_parsing"),
            ("dj_", "deep_judgment"),
        ):
            if task.startswith(prefix):
                value: str | None = getattr(self, fallback)
                return value
        return None
