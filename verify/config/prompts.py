"""Few-shot and prompt settings (karenina's shapes): which examples the answering model sees,
and extra instructions appended to the prompts of each kind of model call."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from verify.config.models import FORBID
from verify.errors import raise_if

__all__ = [
    "FewShotConfig",
    "FewShotExample",
    "FewShotSelection",
    "PromptConfig",
    "PromptTask",
    "QuestionFewShotConfig",
]

# --------------------------------------------------------------------------- few-shot and prompts


class FewShotExample(BaseModel):
    model_config = FORBID

    question: str
    answer: str


class QuestionFewShotConfig(BaseModel):
    """Few-shot settings of one question; ``inherit`` uses the pool settings."""

    model_config = FORBID

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

    model_config = FORBID

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
        raise_if(problems)
        return self

    def effective(self, question_id: str) -> QuestionFewShotConfig:
        """The question's settings with ``inherit`` resolved to the pool's mode and ``pool_k``
        (karenina's ``get_effective_config``: an inheriting question keeps its own
        ``selected_examples`` and ``excluded_examples``; ``k`` falls back to ``pool_k``)."""
        own = self.question_configs.get(question_id) or QuestionFewShotConfig()
        inherit = own.mode == "inherit"
        return QuestionFewShotConfig(
            mode=self.pool_mode if inherit else own.mode,
            k=self.pool_k if inherit or own.k is None else own.k,
            selected_examples=own.selected_examples,
            excluded_examples=own.excluded_examples,
        )

    def select(self, question_id: str, pool: Sequence[Mapping[str, Any]]) -> FewShotSelection:
        """The examples the answering model sees for one question (karenina's
        ``resolve_examples_for_question``): the question's own ``pool`` per the effective mode,
        then ``global_examples``, by ``source``.

        References (``selected_examples``, ``excluded_examples``) are indexes into ``pool`` or the
        MD5 of an example's question text. Excluded examples leave the pool before the mode picks,
        so ``k-shot`` still gets ``k`` examples and an index always means the same example
        (karenina applies exclusion indexes to the already-picked list, which removes the wrong
        examples after ``k-shot`` or ``custom``). The ``k-shot`` pick is karenina's: seeded with
        the question id's MD5, so both tools pick the same examples.
        """
        if self.source == "disabled":
            return FewShotSelection()
        picked: list[dict[str, Any]] = []
        unmatched: list[int | str] = []
        if self.source in ("question_pool", "both") and pool:
            eff = self.effective(question_id)
            by_hash: dict[str, list[int]] = {}
            for i, example in enumerate(pool):
                digest = hashlib.md5(str(example.get("question", "")).encode("utf-8")).hexdigest()
                by_hash.setdefault(digest, []).append(i)

            def lookup(ref: int | str) -> list[int]:
                found = (
                    ([ref] if 0 <= ref < len(pool) else []) if isinstance(ref, int)
                    else by_hash.get(ref.strip().lower(), [])
                )
                if not found:
                    unmatched.append(ref)
                return found

            excluded = {i for ref in eff.excluded_examples or [] for i in lookup(ref)}
            available = [i for i in range(len(pool)) if i not in excluded]
            chosen: list[int] = []
            if eff.mode == "all":
                chosen = available
            elif eff.mode == "k-shot":
                k = max(0, eff.k if eff.k is not None else self.pool_k)
                if len(available) <= k:
                    chosen = available
                else:
                    seed = int(hashlib.md5(question_id.encode()).hexdigest(), 16) & 0x7FFFFFFF
                    chosen = random.Random(seed).sample(available, k)
            elif eff.mode == "custom":
                for ref in eff.selected_examples or []:
                    hits = [i for i in lookup(ref) if i not in excluded]
                    if hits and hits[0] not in chosen:
                        chosen.append(hits[0])
            picked = [dict(pool[i]) for i in chosen]
        if self.source in ("global", "both"):
            picked += [e.model_dump() for e in self.global_examples]
        return FewShotSelection(picked, unmatched)


@dataclass(frozen=True)
class FewShotSelection:
    """The examples picked for one question, and the references that matched no example."""

    examples: list[dict[str, Any]] = field(default_factory=list)
    unmatched: list[int | str] = field(default_factory=list)

    def warnings(self, question_id: str) -> list[str]:
        if not self.unmatched:
            return []
        refs = ", ".join(repr(r) for r in self.unmatched)
        return [
            f"few_shot_config.question_configs[{question_id!r}]: {refs} match(es) no few-shot example of "
            "the question (an index into its examples or the MD5 of an example's question)"
        ]


# karenina's PromptTask values of the calls verify makes; ``PromptConfig.get_for_task`` resolves them.
PromptTask = Literal[
    "generation",
    "parsing",
    "abstention_detection",
    "sufficiency_detection",
    "rubric_llm_trait_batch",
    "rubric_llm_trait_single",
    "rubric_literal_trait_batch",
    "rubric_literal_trait_single",
    "rubric_llm_trait_template",
    "rubric_metric_trait",
    "dj_template_excerpt_extraction",
    "dj_template_hallucination",
    "dj_template_reasoning",
    "dj_template_reasoning_only",
    "dj_rubric_excerpt_extraction",
    "dj_rubric_hallucination",
    "dj_rubric_reasoning",
    "dj_rubric_score_extraction",
]


class PromptConfig(BaseModel):
    """Extra instructions appended to the prompts of one kind of model call."""

    model_config = FORBID

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
