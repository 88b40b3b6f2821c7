"""Deep-judgment config pieces: per-trait rubric settings (mode ``custom``) and the excerpt search tool.

How these settings resolve per trait is :mod:`verify.config.dj_resolve`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from verify.config.models import _Forbid
from verify.config.problems import _did_you_mean

__all__ = ["SEARCH_TOOLS", "DeepJudgmentRubricCustomConfig", "DeepJudgmentTraitConfig", "SearchTool"]

#: Built-in search backends; a callable ``(query) -> results`` is accepted too.
SEARCH_TOOLS: tuple[str, ...] = ("tavily", "simulated")

# --------------------------------------------------------------------------- rubric deep judgment


class DeepJudgmentTraitConfig(BaseModel):
    """Deep judgment settings of one trait; ``None`` values use the config's rubric defaults."""

    model_config = _Forbid

    enabled: bool = True
    excerpt_enabled: bool = True
    max_excerpts: int | None = Field(default=None, ge=1, le=100)
    fuzzy_match_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    excerpt_retry_attempts: int | None = Field(default=None, ge=0, le=20)
    search_enabled: bool = False


class DeepJudgmentRubricCustomConfig(BaseModel):
    """``custom`` mode: ``{"global": {trait: cfg}, "question_specific": {question_id: {trait: cfg}}}``."""

    model_config = ConfigDict(
        extra="forbid", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )

    global_traits: dict[str, DeepJudgmentTraitConfig] = Field(default_factory=dict, alias="global")
    question_specific: dict[str, dict[str, DeepJudgmentTraitConfig]] = Field(default_factory=dict)

    def resolve(self, question_id: str, trait_name: str) -> DeepJudgmentTraitConfig | None:
        """Question-specific settings, else global ones, else ``None`` (no deep judgment)."""
        return self.lookup(question_id, trait_name)[0]

    def lookup(self, question_id: str, trait_name: str) -> tuple[DeepJudgmentTraitConfig | None, str]:
        """Like :meth:`resolve`, also naming where the settings came from (for ``--show-plan``)."""
        specific = self.question_specific.get(question_id, {}).get(trait_name)
        if specific is not None:
            return specific, "custom:question_specific"
        if trait_name in self.global_traits:
            return self.global_traits[trait_name], "custom:global"
        return None, "custom:none"

    def any_search(self) -> bool:
        configs = [
            *self.global_traits.values(),
            *(c for q in self.question_specific.values() for c in q.values()),
        ]
        return any(c.enabled and c.search_enabled for c in configs)


SearchTool = Annotated[
    str | Callable[..., Any],
    WithJsonSchema({"type": "string", "description": "'tavily', 'simulated' (or a callable, from Python)"}),
]


def _tool_label(tool: str | Callable[..., Any]) -> str:
    return tool if isinstance(tool, str) else f"<callable {getattr(tool, '__name__', type(tool).__name__)}>"


def _check_tool(field: str, tool: str | Callable[..., Any], problems: list[tuple[str, str]]) -> None:
    if isinstance(tool, str) and tool not in SEARCH_TOOLS:
        problems.append(
            (
                field,
                f"unknown search tool {tool!r}{_did_you_mean(tool, SEARCH_TOOLS)}; use one of {', '.join(SEARCH_TOOLS)}",
            )
        )
    elif not isinstance(tool, str) and not callable(tool):
        problems.append((field, "must be a search tool name or a callable"))
