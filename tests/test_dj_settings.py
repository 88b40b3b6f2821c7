"""deep_judgment_rubric_mode: the four modes, defaults and the custom-mode resolution order."""

from __future__ import annotations

from typing import Any

import pytest
from fakes import make_config

from verify.benchmark.traits import LLMTrait
from verify.config.deep_judgment import TraitDJSettings, resolve_rubric, resolve_trait
from verify.config.verification import VerificationConfig


def trait(name: str = "clarity", **fields: Any) -> LLMTrait:
    return LLMTrait(name=name, kind="score", description="The response is clear", **fields)


DJ_TRAIT = trait(
    deep_judgment_enabled=True, deep_judgment_excerpt_enabled=False, deep_judgment_max_excerpts=4,
    deep_judgment_fuzzy_match_threshold=0.95, deep_judgment_excerpt_retry_attempts=5,
    deep_judgment_search_enabled=True,
)


def custom(cfg: dict[str, Any], **overrides: Any) -> VerificationConfig:
    return make_config(deep_judgment_rubric_mode="custom", deep_judgment_rubric_config=cfg, **overrides)


# -- disabled -----------------------------------------------------------------------------------


def test_disabled_is_the_default_and_ignores_trait_settings() -> None:
    config = make_config()
    assert config.deep_judgment_rubric_mode == "disabled"
    settings = resolve_trait(config, "q1", DJ_TRAIT)
    assert settings.enabled is False


def test_disabled_ignores_a_custom_config_too() -> None:
    config = make_config(deep_judgment_rubric_config={"global": {"clarity": {"enabled": True}}})
    assert resolve_trait(config, "q1", trait()).enabled is False


# -- enable_all -----------------------------------------------------------------------------------


def test_enable_all_uses_rubric_defaults_not_template_ones() -> None:
    config = make_config(deep_judgment_rubric_mode="enable_all")
    # template deep-judgment defaults differ (3 excerpts): the rubric ones must be used
    assert config.deep_judgment_max_excerpts_per_attribute == 3
    s = resolve_trait(config, "q1", trait())
    assert (s.enabled, s.excerpt_enabled, s.max_excerpts, s.fuzzy_match_threshold, s.excerpt_retry_attempts) == (
        True, True, 7, 0.80, 2,
    )
    assert s.search_enabled is False
    assert s.source == "enable_all"


def test_enable_all_ignores_the_traits_own_fields() -> None:
    s = resolve_trait(make_config(deep_judgment_rubric_mode="enable_all"), "q1", DJ_TRAIT)
    assert (s.excerpt_enabled, s.max_excerpts, s.fuzzy_match_threshold, s.excerpt_retry_attempts, s.search_enabled) == (
        True, 7, 0.80, 2, False,
    )


def test_enable_all_follows_changed_global_defaults() -> None:
    config = make_config(
        deep_judgment_rubric_mode="enable_all", deep_judgment_rubric_max_excerpts_default=3,
        deep_judgment_rubric_fuzzy_match_threshold_default=0.9, deep_judgment_rubric_excerpt_retry_attempts_default=0,
    )
    s = resolve_trait(config, "q1", trait())
    assert (s.max_excerpts, s.fuzzy_match_threshold, s.excerpt_retry_attempts) == (3, 0.9, 0)


def test_enable_all_global_excerpts_false_turns_excerpts_off() -> None:
    config = make_config(deep_judgment_rubric_mode="enable_all", deep_judgment_rubric_global_excerpts=False)
    s = resolve_trait(config, "q1", trait())
    assert s.enabled is True and s.excerpt_enabled is False


@pytest.mark.parametrize("search", [True, False])
def test_enable_all_search_follows_the_config_switch(search: bool) -> None:
    config = make_config(
        deep_judgment_rubric_mode="enable_all", deep_judgment_rubric_search_enabled=search,
        deep_judgment_rubric_search_tool="simulated",
    )
    assert resolve_trait(config, "q1", trait()).search_enabled is search


@pytest.mark.parametrize("kind", ["boolean", "score", "literal"])
def test_enable_all_covers_every_llm_kind(kind: str) -> None:
    classes = {"a": "first", "b": "second"} if kind == "literal" else None
    t = LLMTrait(name="t", kind=kind, classes=classes)  # type: ignore[arg-type]
    assert resolve_trait(make_config(deep_judgment_rubric_mode="enable_all"), "q1", t).enabled is True


# -- use_checkpoint ------------------------------------------------------------------------------


def test_use_checkpoint_reads_the_trait_fields() -> None:
    s = resolve_trait(make_config(deep_judgment_rubric_mode="use_checkpoint"), "q1", DJ_TRAIT)
    assert s == TraitDJSettings(
        enabled=True, excerpt_enabled=False, max_excerpts=4, fuzzy_match_threshold=0.95,
        excerpt_retry_attempts=5, search_enabled=True, source="checkpoint",
    )


def test_use_checkpoint_none_fields_fall_back_to_rubric_defaults() -> None:
    s = resolve_trait(make_config(deep_judgment_rubric_mode="use_checkpoint"), "q1", trait(deep_judgment_enabled=True))
    assert s.enabled is True
    assert s.excerpt_enabled is True
    assert s.max_excerpts == 7  # NOT the template default of 3
    assert s.fuzzy_match_threshold == 0.80
    assert s.excerpt_retry_attempts == 2
    assert s.search_enabled is False


def test_use_checkpoint_none_fields_follow_changed_defaults() -> None:
    config = make_config(
        deep_judgment_rubric_mode="use_checkpoint", deep_judgment_rubric_max_excerpts_default=11,
        deep_judgment_rubric_fuzzy_match_threshold_default=0.6, deep_judgment_rubric_excerpt_retry_attempts_default=1,
        deep_judgment_max_excerpts_per_attribute=2,
    )
    s = resolve_trait(config, "q1", trait(deep_judgment_enabled=True, deep_judgment_max_excerpts=None))
    assert (s.max_excerpts, s.fuzzy_match_threshold, s.excerpt_retry_attempts) == (11, 0.6, 1)


def test_use_checkpoint_trait_without_deep_judgment_is_off() -> None:
    assert resolve_trait(make_config(deep_judgment_rubric_mode="use_checkpoint"), "q1", trait()).enabled is False


def test_use_checkpoint_zero_retries_is_kept_not_defaulted() -> None:
    t = trait(deep_judgment_enabled=True, deep_judgment_excerpt_retry_attempts=0)
    assert resolve_trait(make_config(deep_judgment_rubric_mode="use_checkpoint"), "q1", t).excerpt_retry_attempts == 0


# -- custom ---------------------------------------------------------------------------------------


def test_custom_question_specific_beats_global() -> None:
    config = custom({
        "global": {"clarity": {"max_excerpts": 5, "search_enabled": True}},
        "question_specific": {"q1": {"clarity": {"fuzzy_match_threshold": 0.9, "excerpt_enabled": False}}},
    }, deep_judgment_rubric_search_tool="simulated")
    s = resolve_trait(config, "q1", trait())
    assert s.source == "custom:question_specific"
    assert s.enabled is True
    assert s.fuzzy_match_threshold == 0.9
    assert s.excerpt_enabled is False
    # the question-specific entry replaces the global one wholesale: its None fields use defaults
    assert s.max_excerpts == 7
    assert s.search_enabled is False


def test_custom_global_applies_to_other_questions() -> None:
    config = custom({
        "global": {"clarity": {"max_excerpts": 5}},
        "question_specific": {"q1": {"clarity": {"max_excerpts": 2}}},
    })
    s = resolve_trait(config, "q2", trait())
    assert (s.enabled, s.source, s.max_excerpts) == (True, "custom:global", 5)


def test_custom_question_specific_only_for_its_question() -> None:
    config = custom({"question_specific": {"q1": {"clarity": {}}}})
    assert resolve_trait(config, "q1", trait()).enabled is True
    assert resolve_trait(config, "q2", trait()).enabled is False


def test_custom_missing_trait_is_off() -> None:
    config = custom({"global": {"clarity": {}}})
    s = resolve_trait(config, "q1", trait("safety"))
    assert s.enabled is False


def test_custom_enabled_false_is_off() -> None:
    config = custom({"global": {"clarity": {"enabled": False, "max_excerpts": 3}}})
    assert resolve_trait(config, "q1", trait()).enabled is False


def test_custom_question_specific_disable_overrides_global_enable() -> None:
    config = custom({
        "global": {"clarity": {"enabled": True}},
        "question_specific": {"q1": {"clarity": {"enabled": False}}},
    })
    assert resolve_trait(config, "q1", trait()).enabled is False
    assert resolve_trait(config, "q2", trait()).enabled is True


def test_custom_none_fields_use_rubric_defaults() -> None:
    config = custom({"global": {"clarity": {}}})
    s = resolve_trait(config, "q1", trait())
    assert (s.enabled, s.excerpt_enabled, s.max_excerpts, s.fuzzy_match_threshold, s.excerpt_retry_attempts,
            s.search_enabled) == (True, True, 7, 0.80, 2, False)


def test_custom_explicit_fields_are_used() -> None:
    config = custom({"global": {"clarity": {"max_excerpts": 1, "fuzzy_match_threshold": 0.5,
                                            "excerpt_retry_attempts": 0, "search_enabled": True}}},
                    deep_judgment_rubric_search_tool="simulated")
    s = resolve_trait(config, "q1", trait())
    assert (s.max_excerpts, s.fuzzy_match_threshold, s.excerpt_retry_attempts, s.search_enabled) == (1, 0.5, 0, True)


def test_custom_mode_needs_a_config() -> None:
    with pytest.raises(ValueError, match="deep_judgment_rubric_config"):
        make_config(deep_judgment_rubric_mode="custom")


def test_custom_ignores_trait_fields() -> None:
    config = custom({"global": {"other": {}}})
    assert resolve_trait(config, "q1", DJ_TRAIT).enabled is False


# -- template-kind traits and whole rubrics ----------------------------------------------------------


@pytest.mark.parametrize(
    "config",
    [
        make_config(deep_judgment_rubric_mode="enable_all"),
        make_config(deep_judgment_rubric_mode="use_checkpoint"),
        custom({"global": {"tmpl": {}}, "question_specific": {"q1": {"tmpl": {}}}}),
    ],
    ids=["enable_all", "use_checkpoint", "custom"],
)
def test_template_kind_trait_is_always_off(config: VerificationConfig) -> None:
    t = LLMTrait(name="tmpl", kind="template", template_schema={"type": "object"})
    assert resolve_trait(config, "q1", t).enabled is False


def test_resolve_rubric_mixes_traits() -> None:
    config = custom({"global": {"a": {}}})
    out = resolve_rubric(config, "q1", [trait("a"), trait("b")])
    assert out["a"].enabled is True and out["b"].enabled is False
