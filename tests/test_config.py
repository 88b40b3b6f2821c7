"""VerificationConfig: karenina's names and defaults, validation rules, from_overrides, dumps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import verify.config.verification as config_module
from verify.config.deep_judgment import DeepJudgmentRubricCustomConfig, DeepJudgmentTraitConfig
from verify.config.models import DEFAULT_ANSWERING_SYSTEM_PROMPT, ModelConfig, RetryPolicy
from verify.config.prompts import FewShotConfig, PromptConfig
from verify.config.report import config_to_dict, config_warnings
from verify.config.verification import VerificationConfig
from verify.errors import ConfigError, format_validation_error

FIXTURES = Path(__file__).parent / "fixtures" / "karenina"

# The seed-003 example of karenina's docs ("Via from_overrides").
SEED_003 = dict(
    deep_judgment_rubric_mode="enable_all",
    deep_judgment_rubric_excerpts=True,
    deep_judgment_rubric_max_excerpts=5,
    deep_judgment_rubric_fuzzy_threshold=0.90,
    deep_judgment_rubric_retry_attempts=3,
    deep_judgment_rubric_search=True,
    deep_judgment_rubric_search_tool="tavily",
    answering_model="gpt-4o",
    answering_id="answering",
    parsing_model="gpt-4o",
    parsing_id="parsing",
)


def answerer(**kw: Any) -> dict[str, Any]:
    return {"id": "answerer", "model_provider": "openai", "model_name": "gpt-4.1-mini", **kw}


def judge(**kw: Any) -> dict[str, Any]:
    return {"id": "judge", "model_provider": "openai", "model_name": "gpt-4.1-mini", "temperature": 0.0, **kw}


def make(**kw: Any) -> VerificationConfig:
    data: dict[str, Any] = {"answering_models": [answerer()], "parsing_models": [judge()], **kw}
    return VerificationConfig.model_validate(data)


def problems(**kw: Any) -> str:
    """The formatted validation problems of a config built from ``kw``."""
    data: dict[str, Any] = {"answering_models": [answerer()], "parsing_models": [judge()], **kw}
    with pytest.raises(ValidationError) as info:
        VerificationConfig.model_validate(data)
    return format_validation_error(info.value, root=VerificationConfig)


def preset_full() -> VerificationConfig:
    data = json.loads((FIXTURES / "preset-full.json").read_text())
    return VerificationConfig.model_validate(data["config"])


# --------------------------------------------------------------------------- defaults

KARENINA_DEFAULTS: dict[str, Any] = {
    "replicate_count": 1,
    "parsing_only": False,
    "evaluation_mode": "template_only",
    "rubric_trait_names": None,
    "rubric_evaluation_strategy": "batch",
    "use_full_trace_for_template": False,
    "use_full_trace_for_rubric": True,
    "allow_partial_trace_scoring": True,
    "include_extraction_hints": True,
    "abstention_enabled": False,
    "sufficiency_enabled": False,
    "embedding_check_enabled": False,
    "embedding_check_model": "all-MiniLM-L6-v2",
    "embedding_check_threshold": 0.85,
    "deep_judgment_mode": "disabled",
    "deep_judgment_max_excerpts_per_attribute": 3,
    "deep_judgment_fuzzy_match_threshold": 0.80,
    "deep_judgment_excerpt_retry_attempts": 2,
    "deep_judgment_search_enabled": False,
    "deep_judgment_search_tool": "tavily",
    "deep_judgment_rubric_mode": "disabled",
    "deep_judgment_rubric_global_excerpts": True,
    "deep_judgment_rubric_config": None,
    "deep_judgment_rubric_max_excerpts_default": 7,
    "deep_judgment_rubric_fuzzy_match_threshold_default": 0.80,
    "deep_judgment_rubric_excerpt_retry_attempts_default": 2,
    "deep_judgment_rubric_search_tool": "tavily",
    "few_shot_config": None,
    "prompt_config": None,
    "async_enabled": True,
    "async_max_workers": None,  # karenina: None = KARENINA_ASYNC_MAX_WORKERS, else 2; verify: chooses
    "max_concurrent_requests": None,
    "batch_timeout_seconds": None,
    "task_ordering": "auto",
    "answerer_concurrency_limits": None,
    "request_timeout": 120.0,
    "custom_error_patterns": [],
    "max_requeue_count": 5,
    "scenario_turn_limit": 20,
    "db_config": None,
    "replay_store": None,
    "replay_parse_on_hydration_mismatch": "fall_through",
    "skip_triples": None,
    "agentic_parsing": False,
    "agentic_parsing_trigger": "always",
    "agentic_judge_context": "workspace_only",
    "agentic_parsing_max_turns": 15,
    "agentic_parsing_timeout": 120.0,
    "agentic_parsing_materialize_trace": False,
    "agentic_parsing_persist_trace": False,
    "agentic_rubric_strategy": "individual",
    "agentic_rubric_parallel": False,
    "workspace_copy": True,
    "workspace_cleanup": True,
    "workspace_output_mode": "none",
    "workspace_output_dir": None,
    "workspace_output_exclude_patterns": None,
}


def test_verification_config_has_karenina_fields_and_defaults() -> None:
    config = make()
    karenina_fields = set(KARENINA_DEFAULTS) | {"answering_models", "parsing_models", "retry_policy"}
    assert len(karenina_fields) == 60
    ours = {"deep_judgment_rubric_search_enabled", "trust_checkpoint_code", "rubric_pass_threshold", "gates",
            "revision_max_iterations", "transcript_extractor", "deep_judgment_rubric_strategy", "seed"}
    assert set(VerificationConfig.model_fields) == karenina_fields | ours
    for name, default in KARENINA_DEFAULTS.items():
        assert getattr(config, name) == default, name
    assert config.deep_judgment_rubric_search_enabled is False
    assert config.rubric_pass_threshold is None and config.gates == []  # no rubric verdict, no gates: as karenina
    assert config.rubric_enabled is False


def test_model_config_defaults() -> None:
    model = ModelConfig(id="a", model_name="m", model_provider="openai")
    assert (model.temperature, model.max_tokens, model.interface, model.max_retries) == (
        0.1,
        None,  # sent only when set: the server's own default otherwise
        "langchain",
        2,
    )
    assert model.system_prompt is None and model.request_timeout is None and model.retry_policy is None
    assert model.max_concurrent_requests is None


def test_retry_policy_defaults() -> None:
    policy = RetryPolicy()
    expected = {
        "connection": (3, 1, 10),
        "timeout": (3, 5, 30),
        "rate_limit": (5, 5, 30),
        "server_error": (2, 2, 15),
    }
    for category, (attempts, low, high) in expected.items():
        cfg = policy.for_category(category)
        assert (cfg.max_attempts, cfg.backoff_min, cfg.backoff_max, cfg.backoff_multiplier) == (
            attempts,
            low,
            high,
            2.0,
        )
    assert policy.for_category("permanent").max_attempts == 0
    assert policy.backoff_seconds("connection", 0) == 1.0
    assert policy.backoff_seconds("connection", 10) == 10.0
    # karenina's key and the alias max_retries both work
    assert RetryPolicy.model_validate({"timeout": {"max_retries": 1}}).timeout.max_attempts == 1
    with pytest.raises(ValidationError):
        RetryPolicy.model_validate({"timeout": {"backoff_min": 5, "backoff_max": 1}})


def test_model_level_timeout_and_retry_fall_back_to_config() -> None:
    config = make(request_timeout=30, answering_models=[answerer(request_timeout=5)])
    assert config.model_request_timeout(config.answering_models[0]) == 5
    assert config.model_request_timeout(config.parsing_models[0]) == 30
    assert config.model_retry_policy(config.parsing_models[0]) is config.retry_policy


def test_deep_judgment_trait_config_defaults_and_ranges() -> None:
    cfg = DeepJudgmentTraitConfig()
    assert cfg.model_dump() == {
        "enabled": True,
        "excerpt_enabled": True,
        "max_excerpts": None,
        "fuzzy_match_threshold": None,
        "excerpt_retry_attempts": None,
        "search_enabled": False,
    }
    for bad in (
        {"max_excerpts": 0},
        {"fuzzy_match_threshold": 1.5},
        {"excerpt_retry_attempts": -1},
        {"extra": 1},
    ):
        with pytest.raises(ValidationError):
            DeepJudgmentTraitConfig.model_validate(bad)


def test_custom_config_alias_global_and_resolution() -> None:
    custom = DeepJudgmentRubricCustomConfig.model_validate(
        {
            "global": {"safety": {"max_excerpts": 5}, "clarity": {"excerpt_enabled": False}},
            "question_specific": {"q1": {"safety": {"fuzzy_match_threshold": 0.9}}},
        }
    )
    assert custom.global_traits["safety"].max_excerpts == 5
    assert custom.resolve("q1", "safety").fuzzy_match_threshold == 0.9  # type: ignore[union-attr]
    assert custom.resolve("q2", "safety").max_excerpts == 5  # type: ignore[union-attr]
    assert custom.resolve("q1", "unknown") is None
    assert "global" in custom.model_dump() and "global" in custom.model_dump(mode="json")
    assert DeepJudgmentRubricCustomConfig(global_traits={"t": DeepJudgmentTraitConfig()}).global_traits
    config = make(deep_judgment_rubric_mode="custom", deep_judgment_rubric_config=custom.model_dump())
    assert config_to_dict(config)["deep_judgment_rubric_config"]["global"]["safety"]["max_excerpts"] == 5


def test_prompt_config_fallbacks() -> None:
    prompts = PromptConfig(rubric_evaluation="R", deep_judgment="D", parsing="P")
    assert prompts.get_for_task("parsing") == "P"
    assert prompts.get_for_task("rubric_llm_trait_batch") == "R"
    assert prompts.get_for_task("dj_rubric_reasoning") == "D"
    assert prompts.get_for_task("generation") is None


# --------------------------------------------------------------------------- karenina compatibility


def test_answering_models_get_default_system_prompt_without_mutating_input() -> None:
    model = ModelConfig(id="a", model_name="m", model_provider="openai")
    config = VerificationConfig(answering_models=[model], parsing_models=[ModelConfig(**judge())])
    assert config.answering_models[0].system_prompt == DEFAULT_ANSWERING_SYSTEM_PROMPT
    assert model.system_prompt is None  # the caller's object is untouched
    assert config.parsing_models[0].system_prompt is None  # judges are not given one
    custom = make(answering_models=[answerer(system_prompt="Be brief.")])
    assert custom.answering_models[0].system_prompt == "Be brief."


def test_serialized_rubric_enabled_schema_key_and_instruction_shortcuts_are_accepted() -> None:
    config = make(
        rubric_enabled=True,
        evaluation_mode="rubric_only",
        **{"$schema": "preset.schema.json"},
        parsing_instructions="X",
    )
    assert config.rubric_enabled is True
    assert config.prompt_config == PromptConfig(parsing="X")
    assert config_to_dict(config)["rubric_enabled"] is True
    with pytest.raises(ValidationError):
        make(parsing_instructions="X", prompt_config={"parsing": "Y"})


def test_dump_reloads_to_the_same_config() -> None:
    config = preset_full()
    assert VerificationConfig.model_validate(config_to_dict(config)) == config


def test_karenina_environment_variables_fill_only_what_is_not_given(monkeypatch: pytest.MonkeyPatch) -> None:
    # karenina's precedence (issue 13): given values > environment variables > field defaults
    for name, value in {
        "EMBEDDING_CHECK": "true",
        "EMBEDDING_CHECK_MODEL": "other",
        "EMBEDDING_CHECK_THRESHOLD": "0.1",
        "KARENINA_ASYNC_ENABLED": "false",
        "KARENINA_ASYNC_MAX_WORKERS": "9",
        "KARENINA_MAX_CONCURRENT_LLM_REQUESTS": "3",
    }.items():
        monkeypatch.setenv(name, value)
    config = make()
    assert (config.embedding_check_enabled, config.embedding_check_model, config.embedding_check_threshold) == (
        True, "other", 0.1)
    assert (config.async_enabled, config.async_max_workers, config.max_concurrent_requests) == (False, 9, 3)
    given = make(embedding_check_enabled=False, async_max_workers=2, max_concurrent_requests=None)
    assert (given.embedding_check_enabled, given.async_max_workers, given.max_concurrent_requests) == (False, 2, None)
    assert "os.environ" not in Path(config_module.__file__).read_text()  # read in one place: config/environment.py


# --------------------------------------------------------------------------- validation rules


def test_unknown_key_names_the_closest_field() -> None:
    text = problems(deep_judgment_rubric_modee="enable_all")
    assert "deep_judgment_rubric_modee: unknown field; did you mean deep_judgment_rubric_mode?" in text
    nested = problems(answering_models=[answerer(temprature=0.2)])
    assert "answering_models[0].temprature: unknown field; did you mean temperature?" in nested
    dj = problems(
        deep_judgment_rubric_config={"globl": {}, "question_specific": {"q": {"t": {"max_excerpt": 2}}}}
    )
    assert "deep_judgment_rubric_config.globl: unknown field; did you mean global?" in dj
    assert (
        "deep_judgment_rubric_config.question_specific.q.t.max_excerpt: unknown field; did you mean max_excerpts?"
        in dj
    )


def test_format_validation_error_prefix_source_and_bad_values() -> None:
    with pytest.raises(ValidationError) as info:
        VerificationConfig.model_validate(
            {"parsing_models": [judge()], "answering_models": [answerer()], "async_max_workers": "x"}
        )
    text = format_validation_error(info.value, "preset p.json", prefix="config.", root=VerificationConfig)
    assert text.startswith("preset p.json: config.async_max_workers: ")
    assert "(got 'x')" in text
    with pytest.raises(ValidationError) as info:
        VerificationConfig.model_validate({"answering_models": [answerer()]})
    assert format_validation_error(info.value) == "parsing_models: required field is missing"


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"parsing_models": []}, "parsing_models: at least one judge model is required"),
        ({"answering_models": []}, "answering_models: at least one answering model is required"),
        ({"evaluation_mode": "rubric"}, "evaluation_mode: Input should be"),
        ({"replicate_count": 0}, "replicate_count:"),
        ({"embedding_check_threshold": 1.5}, "embedding_check_threshold:"),
        (
            {"deep_judgment_rubric_mode": "custom"},
            "deep_judgment_rubric_config: deep_judgment_rubric_mode='custom' needs deep_judgment_rubric_config; "
            "pass --deep-judgment-rubric-config FILE or set it in the preset",
        ),
        (
            {"deep_judgment_mode": "reasoning_only", "deep_judgment_search_enabled": True},
            "deep_judgment_search_enabled: search needs excerpts",
        ),
        (
            {
                "deep_judgment_mode": "full",
                "deep_judgment_search_enabled": True,
                "deep_judgment_search_tool": "google",
            },
            "deep_judgment_search_tool: unknown search tool 'google'",
        ),
        (
            {"deep_judgment_rubric_search_enabled": True, "deep_judgment_rubric_search_tool": "tavly"},
            "deep_judgment_rubric_search_tool: unknown search tool 'tavly'; did you mean tavily?",
        ),
        (
            {"few_shot_config": {"pool_mode": "k-shot", "pool_k": 0}},
            "few_shot_config.pool_k: must be at least 1",
        ),
        (
            {"few_shot_config": {"question_configs": {"q1": {"mode": "k-shot", "k": 0}}}},
            "few_shot_config.question_configs.q1.k: must be at least 1",
        ),
        (
            {"agentic_parsing_trigger": "dynamic"},
            "agentic_parsing_trigger: 'dynamic' needs agentic_parsing=true",
        ),
        (
            {"agentic_parsing": True},
            "parsing_models[0].interface: agentic_parsing needs a deep-agent judge interface",
        ),
        (
            {
                "agentic_parsing": True,
                "evaluation_mode": "rubric_only",
                "parsing_models": [judge(interface="claude_agent_sdk")],
            },
            "agentic_parsing: has no template to parse",
        ),
        (
            {
                "agentic_parsing": True,
                "agentic_parsing_materialize_trace": True,
                "parsing_models": [judge(interface="claude_agent_sdk")],
            },
            "agentic_parsing_materialize_trace: incompatible with agentic_judge_context='workspace_only'",
        ),
        ({"parsing_models": [judge(), judge()]}, "parsing_models[1].id: duplicate id 'judge'"),
        (
            {"parsing_models": [judge(interface="manual", manual_traces={"q": "a"})]},
            "parsing_models[0].interface: 'manual' only replays answers",
        ),
        (
            {"answerer_concurrency_limits": {"nobody": 2}},
            "answerer_concurrency_limits.nobody: no answering model has id",
        ),
        ({"answerer_concurrency_limits": 0}, "answerer_concurrency_limits: must be at least 1"),
        ({"db_config": "sqlite:///x.db"}, "db_config:"),
    ],
)
def test_config_rules(overrides: dict[str, Any], expected: str) -> None:
    assert expected in problems(**overrides)


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ({"id": "a", "model_provider": "openai"}, "answering_models[0].model_name: required"),
        ({"model_name": "m", "model_provider": "openai"}, "answering_models[0].id: required"),
        (
            {"id": "a", "model_name": "m"},
            "answering_models[0].model_provider: required for interface 'langchain'",
        ),
        ({"id": "a", "model_name": "m", "interface": "langchain_deep_agents"}, "model_provider: required"),
        (
            {"id": "a", "model_name": "m", "interface": "nope"},
            "answering_models[0].interface: Input should be",
        ),
        (
            {"interface": "manual"},
            "answering_models[0].manual_traces: interface 'manual' needs manual_traces",
        ),
        ({"interface": "manual", "manual_traces": {"q": True}}, "answering_models[0].manual_traces.q:"),
        ({"interface": "manual", "manual_traces": True}, "answering_models[0].manual_traces:"),
        (
            {"interface": "manual", "manual_traces": {"q": "a"}, "mcp_urls_dict": {"s": "http://x"}},
            "answering_models[0].mcp_urls_dict: MCP tools cannot be used",
        ),
        (
            answerer(manual_traces={"q": "a"}),
            "answering_models[0].manual_traces: only used with interface 'manual'",
        ),
        (
            {"id": "a", "model_name": "m", "interface": "openai_endpoint"},
            "answering_models[0].endpoint_base_url:",
        ),
        (answerer(anthropic_api_key="k"), "answering_models[0].anthropic_api_key: only used by"),
        (
            answerer(
                model_provider="anthropic",
                anthropic_base_url="http://a",
                extra_kwargs={"base_url": "http://b"},
            ),
            "answering_models[0].anthropic_base_url: also given as extra_kwargs['base_url']",
        ),
        (answerer(temperature=-1), "answering_models[0].temperature:"),
    ],
)
def test_model_rules(model: dict[str, Any], expected: str) -> None:
    assert expected in problems(answering_models=[model])


def test_valid_model_variants() -> None:
    manual = ModelConfig(interface="manual", manual_traces={"abc": "Paris"})
    assert (manual.id, manual.model_name) == ("manual", "manual")
    assert ModelConfig(id="s", model_name="simulated-judge", interface="simulated").model_provider is None
    assert ModelConfig(id="o", model_name="m", interface="openrouter").interface == "openrouter"
    endpoint = ModelConfig(
        id="e", model_name="m", interface="openai_endpoint", endpoint_base_url="http://h/v1"
    )
    assert endpoint.endpoint_base_url == "http://h/v1"
    claude = ModelConfig(id="c", model_name="m", model_provider="anthropic", anthropic_api_key="k")
    assert claude.anthropic_api_key is not None


def test_parsing_only_needs_no_answering_model() -> None:
    config = VerificationConfig(parsing_models=[ModelConfig(**judge())], parsing_only=True)
    assert config.answering_models == []


def test_search_tools() -> None:
    def my_search(query: str) -> str:
        return query

    config = make(deep_judgment_rubric_search_enabled=True, deep_judgment_rubric_search_tool=my_search)
    assert config.deep_judgment_rubric_search_tool is my_search
    assert config_to_dict(config)["deep_judgment_rubric_search_tool"] == "<callable my_search>"
    assert (
        make(deep_judgment_search_enabled=True, deep_judgment_search_tool="Tavily").deep_judgment_search_tool
        == "tavily"
    )
    assert make(deep_judgment_rubric_search_enabled=True, deep_judgment_rubric_search_tool="simulated")
    # an unusable tool name is only an error when search can run
    assert make(deep_judgment_rubric_search_tool="other").deep_judgment_rubric_search_tool == "other"
    custom = {"global": {"t": {"search_enabled": True}}}
    text = problems(
        deep_judgment_rubric_mode="custom",
        deep_judgment_rubric_config=custom,
        deep_judgment_rubric_search_tool="x",
    )
    assert "deep_judgment_rubric_search_tool: unknown search tool 'x'" in text


def test_all_problems_of_one_model_are_reported_together() -> None:
    text = problems(answering_models=[{"interface": "openai_endpoint"}])
    assert {"model_name", "id", "endpoint_base_url"} <= {
        line.split(":")[0].split(".")[-1] for line in text.splitlines()
    }


def test_few_shot_disabled_skips_k_checks() -> None:
    assert make(few_shot_config={"source": "disabled", "pool_mode": "k-shot", "pool_k": 0}).few_shot_config
    assert FewShotConfig().source == "both" and FewShotConfig().pool_k == 3


# --------------------------------------------------------------------------- secrets and dumps


def test_secrets_are_masked_and_manual_traces_never_dumped() -> None:
    config = make(
        answering_models=[{"interface": "manual", "manual_traces": {"q": "secret answer"}}],
        parsing_models=[
            judge(interface="openai_endpoint", endpoint_base_url="http://h/v1", endpoint_api_key="sk-secret")
        ],
    )
    dumped = json.dumps(config_to_dict(config))
    assert "sk-secret" not in dumped and "secret answer" not in dumped
    assert config_to_dict(config)["parsing_models"][0]["endpoint_api_key"] == "**********"
    assert "sk-secret" not in repr(config) and "sk-secret" not in str(config)
    assert config.parsing_models[0].endpoint_api_key.get_secret_value() == "sk-secret"  # type: ignore[union-attr]


def test_json_schema_can_be_generated() -> None:
    schema = VerificationConfig.model_json_schema()
    assert schema["properties"]["deep_judgment_rubric_search_tool"]["type"] == "string"


def test_config_warnings() -> None:
    assert config_warnings(make()) == []
    notes = config_warnings(
        make(
            deep_judgment_rubric_mode="enable_all",
            agentic_rubric_parallel=True,
            answering_models=[answerer(mcp_urls_dict={"s": "http://x"})],
        )
    )
    assert any("evaluation_mode='template_only'" in n for n in notes)
    assert any("agentic_rubric_parallel" in n for n in notes)
    assert any("mcp_urls_dict" in n for n in notes)


# --------------------------------------------------------------------------- from_overrides


def test_from_overrides_seed_003_without_base() -> None:
    config = VerificationConfig.from_overrides(**SEED_003)
    assert config.deep_judgment_rubric_mode == "enable_all"
    assert config.deep_judgment_rubric_global_excerpts is True
    assert config.deep_judgment_rubric_max_excerpts_default == 5
    assert config.deep_judgment_rubric_fuzzy_match_threshold_default == 0.90
    assert config.deep_judgment_rubric_excerpt_retry_attempts_default == 3
    assert config.deep_judgment_rubric_search_enabled is True  # karenina drops this one
    assert config.deep_judgment_rubric_search_tool == "tavily"
    [a], [p] = config.answering_models, config.parsing_models
    assert (a.id, a.model_name, a.model_provider, a.interface, a.temperature) == (
        "answering",
        "gpt-4o",
        "openai",
        "langchain",
        0.1,
    )
    assert (p.id, p.model_name, p.model_provider) == ("parsing", "gpt-4o", "openai")
    assert a.system_prompt == DEFAULT_ANSWERING_SYSTEM_PROMPT


def test_from_overrides_seed_003_over_karenina_preset() -> None:
    base = preset_full()
    config = VerificationConfig.from_overrides(base, **SEED_003, evaluation_mode="template_and_rubric")
    assert config.deep_judgment_rubric_search_enabled is True
    assert config.deep_judgment_rubric_max_excerpts_default == 5
    assert config.evaluation_mode == "template_and_rubric"
    [a], [p] = config.answering_models, config.parsing_models
    # a copy of the preset's model with the given fields replaced
    assert (a.id, a.model_name, a.model_provider, a.max_tokens) == ("answering", "gpt-4o", "anthropic", 16384)
    assert (p.id, p.model_name, p.temperature, p.system_prompt) == (
        "parsing",
        "gpt-4o",
        0.0,
        base.parsing_models[0].system_prompt,
    )
    # untouched fields keep the preset's values; the base is not modified
    assert config.request_timeout == base.request_timeout and config.replicate_count == 1
    assert (
        base.deep_judgment_rubric_mode == "disabled"
        and base.answering_models[0].model_name == "claude-sonnet-4-6"
    )


def test_from_overrides_defaults_without_base() -> None:
    config = VerificationConfig.from_overrides()
    [a], [p] = config.answering_models, config.parsing_models
    assert (a.id, a.model_name, a.model_provider, a.interface, a.temperature) == (
        "answering-1",
        "gpt-4.1-mini",
        "openai",
        "langchain",
        0.1,
    )
    assert (p.id, p.model_name) == ("parsing-1", "gpt-4.1-mini")
    assert config.replicate_count == 1
    offline = VerificationConfig.from_overrides(
        answering_interface="simulated", parsing_interface="simulated"
    )
    assert [m.model_name for m in offline.answering_models + offline.parsing_models] == [
        "simulated-answerer",
        "simulated-judge",
    ]
    with pytest.raises(ConfigError, match=r"answering_models\[0\].model_name: required"):
        VerificationConfig.from_overrides(answering_interface="openrouter")


def test_none_overrides_are_ignored() -> None:
    base = make(evaluation_mode="rubric_only", async_max_workers=5, use_full_trace_for_rubric=False)
    config = VerificationConfig.from_overrides(
        base,
        evaluation_mode=None,
        async_workers=None,
        use_full_trace_for_rubric=None,
        deep_judgment_rubric_mode=None,
        answering_model=None,
        temperature=None,
    )
    assert config == base


def test_field_names_and_karenina_names_are_both_accepted() -> None:
    config = VerificationConfig.from_overrides(
        make(),
        evaluation_mode="rubric_only",
        async_max_workers=3,
        abstention=True,
        embedding_threshold=0.5,
        async_execution=False,
        workspace_output_mode="full",
        deep_judgment_rubric_config={"global": {"t": {}}},
        deep_judgment_rubric_mode="custom",
    )
    assert (config.evaluation_mode, config.async_max_workers, config.abstention_enabled) == (
        "rubric_only",
        3,
        True,
    )
    assert (config.embedding_check_threshold, config.async_enabled, config.workspace_output_mode) == (
        0.5,
        False,
        "full",
    )
    assert config.deep_judgment_rubric_config is not None


def test_unknown_override_names_the_closest() -> None:
    with pytest.raises(ConfigError) as info:
        VerificationConfig.from_overrides(deep_judgment_rubric_modee="enable_all")
    assert "unknown override 'deep_judgment_rubric_modee'" in info.value.message
    assert "did you mean deep_judgment_rubric_mode?" in info.value.message
    with pytest.raises(ConfigError, match="did you mean async_workers"):
        VerificationConfig.from_overrides(async_worker=2)


def test_conflicting_override_names() -> None:
    with pytest.raises(ConfigError, match="'abstention' and 'abstention_enabled'"):
        VerificationConfig.from_overrides(abstention=True, abstention_enabled=False)
    assert VerificationConfig.from_overrides(abstention=True, abstention_enabled=True).abstention_enabled


def test_invalid_merged_config_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        VerificationConfig.from_overrides(preset_full(), deep_judgment_rubric_mode="custom")
    assert "deep_judgment_rubric_config: deep_judgment_rubric_mode='custom' needs" in info.value.message
    assert "--deep-judgment-rubric-config" in info.value.message
    with pytest.raises(ConfigError, match="async_max_workers"):
        VerificationConfig.from_overrides(async_workers=0)


def test_temperature_alone_applies_to_every_model() -> None:
    base = make(answering_models=[answerer(), answerer(id="second", model_name="gpt-4o")])
    config = VerificationConfig.from_overrides(base, temperature=0.7)
    assert [m.temperature for m in config.answering_models + config.parsing_models] == [0.7, 0.7, 0.7]
    assert [m.model_name for m in config.answering_models] == ["gpt-4.1-mini", "gpt-4o"]


def test_model_overrides_apply_to_every_model_of_the_role() -> None:
    base = make(answering_models=[answerer(), answerer(id="second", model_name="gpt-4o")])
    config = VerificationConfig.from_overrides(base, answering_model="gpt-5", parsing_provider="anthropic")
    assert [(m.id, m.model_name) for m in config.answering_models] == [
        ("answerer", "gpt-5"),
        ("second", "gpt-5"),
    ]
    assert config.parsing_models[0].model_provider == "anthropic"
    with pytest.raises(ConfigError, match="ids must be unique"):
        VerificationConfig.from_overrides(base, answering_id="one")
    assert VerificationConfig.from_overrides(make(), parsing_id="j2").parsing_models[0].id == "j2"


def test_model_override_keeps_secrets_and_fields_of_the_base_model() -> None:
    base = make(
        parsing_models=[
            judge(interface="openai_endpoint", endpoint_base_url="http://h/v1", endpoint_api_key="sk-x")
        ]
    )
    config = VerificationConfig.from_overrides(base, parsing_model="other")
    model = config.parsing_models[0]
    assert model.model_name == "other" and model.endpoint_api_key.get_secret_value() == "sk-x"  # type: ignore[union-attr]


def test_manual_traces_override() -> None:
    config = VerificationConfig.from_overrides(preset_full(), manual_traces={"q1": "Paris"})
    [a] = config.answering_models
    assert (a.interface, a.id, a.manual_traces) == ("manual", "manual", {"q1": "Paris"})
    assert config.parsing_models[0].model_name == "claude-haiku-4-5"
    again = VerificationConfig.from_overrides(config, async_workers=4)
    assert again.answering_models[0].manual_traces == {"q1": "Paris"}
    direct = ModelConfig(interface="manual", manual_traces={"q": "a"})
    assert VerificationConfig.from_overrides(answering_models=[direct]).answering_models[0].manual_traces == {
        "q": "a"
    }
    back = VerificationConfig.from_overrides(config, answering_interface="langchain")
    assert (back.answering_models[0].model_name, back.answering_models[0].interface) == (
        "gpt-4.1-mini",
        "langchain",
    )
    with pytest.raises(ConfigError, match="needs manual_traces"):
        VerificationConfig.from_overrides(answering_interface="manual")
    with pytest.raises(ConfigError, match="only work with answering_interface='manual'"):
        VerificationConfig.from_overrides(answering_interface="langchain", manual_traces={"q": "a"})


def test_base_extras_survive_from_overrides() -> None:
    store = object()
    base = make()
    base.replay_store = store
    assert VerificationConfig.from_overrides(base, replicate_count=2).replay_store is store
