"""Rubric deep-judgment config: per-trait settings (mode ``custom``), the excerpt search tool, and
how the four ``deep_judgment_rubric_mode`` values resolve per trait.

Resolution (seed 003):

* ``disabled``: off for every trait.
* ``enable_all``: on for every LLM trait with the global defaults; excerpts per
  ``deep_judgment_rubric_global_excerpts``; search per ``deep_judgment_rubric_search_enabled``.
* ``use_checkpoint``: the trait's own ``deep_judgment_*`` fields.
* ``custom``: ``question_specific[question_id][trait]``, else ``global[trait]``, else off.

Any ``None`` number falls back to the ``deep_judgment_rubric_*_default`` values (7 excerpts, 0.80,
2 retries) -- not to the template deep-judgment settings as karenina does.

A ``custom`` config must name traits and questions of the benchmark: :func:`check_custom_names`
finds the names that match nothing (a typo would otherwise run that trait without deep judgment)
and the entries that can have no effect (a regex trait, a template-kind trait).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from verify.benchmark.traits import LLMTrait
from verify.config.models import FORBID
from verify.errors import did_you_mean

if TYPE_CHECKING:
    from verify.config.verification import VerificationConfig

__all__ = [
    "OFF",
    "TraitDJSettings",
    "resolve_rubric",
    "resolve_trait","SEARCH_TOOLS", "DeepJudgmentRubricCustomConfig", "DeepJudgmentTraitConfig", "SearchTool",
    "CustomNameCheck", "check_custom_names"]

#: Built-in search backends; a callable ``(query) -> results`` is accepted too.
SEARCH_TOOLS: tuple[str, ...] = ("tavily", "simulated")

# --------------------------------------------------------------------------- rubric deep judgment


class DeepJudgmentTraitConfig(BaseModel):
    """Deep judgment settings of one trait; ``None`` values use the config's rubric defaults."""

    model_config = FORBID

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


def search_tool_label(tool: str | Callable[..., Any]) -> str:
    return tool if isinstance(tool, str) else f"<callable {getattr(tool, '__name__', type(tool).__name__)}>"


def check_search_tool(field: str, tool: str | Callable[..., Any], problems: list[tuple[str, str]]) -> None:
    if isinstance(tool, str) and tool not in SEARCH_TOOLS:
        problems.append(
            (
                field,
                f"unknown search tool {tool!r}{did_you_mean(tool, SEARCH_TOOLS)}; use one of {', '.join(SEARCH_TOOLS)}",
            )
        )
    elif not isinstance(tool, str) and not callable(tool):
        problems.append((field, "must be a search tool name or a callable"))

# --------------------------------------------------------------------------- resolution per trait


@dataclass(frozen=True)
class TraitDJSettings:
    enabled: bool
    excerpt_enabled: bool = True
    max_excerpts: int = 7
    fuzzy_match_threshold: float = 0.8
    excerpt_retry_attempts: int = 2
    search_enabled: bool = False
    source: str = "disabled"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


OFF = TraitDJSettings(enabled=False)


def resolve_trait(config: VerificationConfig, question_id: str, trait: LLMTrait) -> TraitDJSettings:
    """Deep-judgment settings for one LLM trait of one question."""
    if trait.kind == "template":
        return OFF
    mode = config.deep_judgment_rubric_mode
    max_default = config.deep_judgment_rubric_max_excerpts_default
    fuzzy_default = config.deep_judgment_rubric_fuzzy_match_threshold_default
    retry_default = config.deep_judgment_rubric_excerpt_retry_attempts_default

    def pick(value: Any, default: Any) -> Any:
        return default if value is None else value

    if mode == "enable_all":
        return TraitDJSettings(
            enabled=True,
            excerpt_enabled=config.deep_judgment_rubric_global_excerpts,
            max_excerpts=max_default,
            fuzzy_match_threshold=fuzzy_default,
            excerpt_retry_attempts=retry_default,
            search_enabled=config.deep_judgment_rubric_search_enabled,
            source="enable_all",
        )
    if mode == "use_checkpoint":
        if not trait.deep_judgment_enabled:
            return TraitDJSettings(enabled=False, source="checkpoint")
        return TraitDJSettings(
            enabled=True,
            excerpt_enabled=trait.deep_judgment_excerpt_enabled,
            max_excerpts=pick(trait.deep_judgment_max_excerpts, max_default),
            fuzzy_match_threshold=pick(trait.deep_judgment_fuzzy_match_threshold, fuzzy_default),
            excerpt_retry_attempts=pick(trait.deep_judgment_excerpt_retry_attempts, retry_default),
            search_enabled=trait.deep_judgment_search_enabled,
            source="checkpoint",
        )
    if mode == "custom":
        custom = config.deep_judgment_rubric_config
        entry, source = custom.lookup(question_id, trait.name) if custom is not None else (None, "custom:none")
        if entry is None or not entry.enabled:
            return TraitDJSettings(enabled=False, source=source)
        return TraitDJSettings(
            enabled=True,
            excerpt_enabled=entry.excerpt_enabled,
            max_excerpts=pick(entry.max_excerpts, max_default),
            fuzzy_match_threshold=pick(entry.fuzzy_match_threshold, fuzzy_default),
            excerpt_retry_attempts=pick(entry.excerpt_retry_attempts, retry_default),
            search_enabled=entry.search_enabled,
            source=source,
        )
    return OFF


def resolve_rubric(config: VerificationConfig, question_id: str, traits: list[LLMTrait]) -> dict[str, TraitDJSettings]:
    return {t.name: resolve_trait(config, question_id, t) for t in traits}


# --------------------------------------------------------------------------- custom names vs the benchmark


class CustomNameCheck(NamedTuple):
    problems: list[str]  # names that match no question or trait: each stops the run
    warnings: list[str]  # entries for traits that deep judgment never applies to


def check_custom_names(
    custom: DeepJudgmentRubricCustomConfig, traits_of: Mapping[str, Mapping[str, object]],
    benchmark: str = "the benchmark",
) -> CustomNameCheck:
    """Compare a ``custom`` config with the benchmark (named ``benchmark`` in messages): ``traits_of``
    maps each question id to its traits by name (global and question-specific, as it is judged)."""
    problems: list[str] = []
    warnings: list[str] = []
    everywhere: dict[str, object] = {}
    for traits in traits_of.values():
        for name, trait in traits.items():
            everywhere.setdefault(name, trait)

    def check(where: str, name: str, known: Mapping[str, object], scope: str) -> None:
        if name not in known:
            problems.append(f"{where}: {scope} has no trait {name!r}{did_you_mean(name, known)}")
            return
        trait = known[name]
        if not isinstance(trait, LLMTrait):
            kind = getattr(trait, "trait_type", type(trait).__name__)
            warnings.append(f"{where}: {name!r} is a {kind} trait; deep judgment applies to LLM traits only, "
                            "so this entry has no effect")
        elif trait.kind == "template":
            warnings.append(f"{where}: {name!r} is a template-kind trait, which has no deep judgment; this "
                            "entry has no effect")

    for name in custom.global_traits:
        check(f"deep_judgment_rubric_config.global[{name!r}]", name, everywhere, benchmark)
    for question_id, entries in custom.question_specific.items():
        where = f"deep_judgment_rubric_config.question_specific[{question_id!r}]"
        if question_id not in traits_of:
            problems.append(f"{where}: {benchmark} has no question {question_id!r}"
                            f"{did_you_mean(question_id, traits_of)}")
            continue
        for name in entries:
            check(f"{where}[{name!r}]", name, traits_of[question_id], f"question {question_id!r} of {benchmark}")
    return CustomNameCheck(problems, warnings)
