"""Per-trait deep-judgment settings: the four ``deep_judgment_rubric_mode`` values resolved.

Resolution (seed 003):

* ``disabled``: off for every trait.
* ``enable_all``: on for every LLM trait with the global defaults; excerpts per
  ``deep_judgment_rubric_global_excerpts``; search per ``deep_judgment_rubric_search_enabled``.
* ``use_checkpoint``: the trait's own ``deep_judgment_*`` fields.
* ``custom``: ``question_specific[question_id][trait]``, else ``global[trait]``, else off.

Any ``None`` number falls back to the ``deep_judgment_rubric_*_default`` values (7 excerpts, 0.80,
2 retries) -- not to the template deep-judgment settings as karenina does.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from verify.benchmark.traits import LLMTrait

if TYPE_CHECKING:
    from verify.config.verification import VerificationConfig


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
