"""The verification config: karenina's field names and defaults, checked when the config is built.

``VerificationConfig`` accepts every field of karenina's config (so karenina presets load
unchanged) plus one field of ours, ``deep_judgment_rubric_search_enabled``. Cross-field rules
are ``model_validator(mode="after")`` checks that report every problem at once, each with the
field it concerns and how to fix it. Nothing in this module reads environment variables:
precedence is field defaults < preset < explicit overrides, and the CLI binds any env vars.

``VerificationConfig.from_overrides`` keeps karenina's keyword names (``abstention``,
``async_workers``, ``deep_judgment_rubric_search``, ...) and also takes any field name. ``None``
means "not given", so an unset CLI flag never overwrites a preset value.
"""

from __future__ import annotations

import copy
import difflib
import re
import types
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    WithJsonSchema,
    computed_field,
    field_serializer,
    field_validator,
    model_validator,
)

from verify.errors import ConfigError

__all__ = [
    "DEFAULT_ANSWERING_SYSTEM_PROMPT",
    "DEFAULT_PARSING_SYSTEM_PROMPT",
    "INTERFACES",
    "OVERRIDE_ALIASES",
    "SEARCH_TOOLS",
    "CategoryRetryConfig",
    "ConfigProblems",
    "DeepJudgmentRubricCustomConfig",
    "DeepJudgmentTraitConfig",
    "ErrorPatternConfig",
    "FewShotConfig",
    "FewShotExample",
    "ModelConfig",
    "PromptConfig",
    "QuestionFewShotConfig",
    "RetryPolicy",
    "VerificationConfig",
    "config_to_dict",
    "config_warnings",
    "format_validation_error",
]

DEFAULT_ANSWERING_SYSTEM_PROMPT = "You are an expert assistant. Answer the question accurately and concisely."
#: Offered for judges (karenina never applies it automatically; neither do we).
DEFAULT_PARSING_SYSTEM_PROMPT = (
    "You are a validation assistant. Parse and validate responses against the given Pydantic template."
)

Interface = Literal[
    "langchain",
    "openrouter",
    "openai_endpoint",
    "claude_agent_sdk",
    "claude_tool",
    "langchain_deep_agents",
    "manual",
    "taskeval",
    "simulated",
]
INTERFACES: tuple[str, ...] = get_args(Interface)
_PROVIDER_REQUIRED = frozenset({"langchain", "langchain_deep_agents"})
_DEEP_AGENT_INTERFACES = frozenset({"claude_agent_sdk", "langchain_deep_agents"})
#: Built-in search backends; a callable ``(query) -> results`` is accepted too.
SEARCH_TOOLS: tuple[str, ...] = ("tavily", "simulated")


class ConfigProblems(ValueError):
    """Several located problems found by one validator: ``[(field path, how to fix), ...]``.

    Pydantic wraps it as one ``value_error``; :func:`format_validation_error` unpacks it again
    into one line per problem.
    """

    def __init__(self, problems: Iterable[tuple[str, str]]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(f"{path}: {msg}" if path else msg for path, msg in self.problems))


def _raise_if(problems: list[tuple[str, str]]) -> None:
    if problems:
        raise ConfigProblems(problems)


_Forbid = ConfigDict(extra="forbid")

# --------------------------------------------------------------------------- retries


class CategoryRetryConfig(BaseModel):
    """Retry budget and backoff for one error category (karenina's shape)."""

    model_config = _Forbid

    max_attempts: int = Field(
        default=0,
        ge=0,
        le=50,
        validation_alias=AliasChoices("max_attempts", "max_retries"),
        description="Retries after the first call (not total calls); 0 = no retry. Alias: max_retries.",
    )
    backoff_min: float = Field(default=1.0, ge=0, description="Delay before the first retry, seconds.")
    backoff_max: float = Field(default=10.0, ge=0, description="Upper bound of any delay, seconds.")
    backoff_multiplier: float = Field(default=2.0, ge=1.0, description="Delay growth per retry.")

    @model_validator(mode="after")
    def _bounds(self) -> CategoryRetryConfig:
        if self.backoff_max < self.backoff_min:
            raise ConfigProblems([("backoff_max", f"must be >= backoff_min ({self.backoff_min})")])
        return self


def _category(max_attempts: int, low: float, high: float) -> Any:
    return Field(
        default_factory=lambda: CategoryRetryConfig(
            max_attempts=max_attempts, backoff_min=low, backoff_max=high
        )
    )


class RetryPolicy(BaseModel):
    """Per-category retries for model calls; ``permanent`` errors are never retried."""

    model_config = _Forbid

    connection: CategoryRetryConfig = _category(3, 1.0, 10.0)
    timeout: CategoryRetryConfig = _category(3, 5.0, 30.0)
    rate_limit: CategoryRetryConfig = _category(5, 5.0, 30.0)
    server_error: CategoryRetryConfig = _category(2, 2.0, 15.0)
    jitter: bool = Field(
        default=True, description="Full jitter: sleep uniform(0, backoff) instead of the backoff itself."
    )
    timeout_escalation: Any = Field(
        default=None, description="Accepted from karenina presets; not used by verify."
    )

    def for_category(self, category: str) -> CategoryRetryConfig:
        """The budget of ``category``; unknown and ``permanent`` categories get no retries."""
        if category in {"connection", "timeout", "rate_limit", "server_error"}:
            found: CategoryRetryConfig = getattr(self, category)
            return found
        return CategoryRetryConfig(max_attempts=0)

    def backoff_seconds(self, category: str, attempt: int) -> float:
        """Delay before retry number ``attempt`` (0-based), before jitter."""
        cfg = self.for_category(category)
        return float(min(cfg.backoff_min * cfg.backoff_multiplier**attempt, cfg.backoff_max))


class ErrorPatternConfig(BaseModel):
    """A user rule classifying errors by type name or message substring."""

    model_config = _Forbid

    pattern: str = Field(min_length=1)
    category: Literal["connection", "timeout", "rate_limit", "server_error", "permanent"]
    match_type: Literal["type_name", "message_substring"] = "message_substring"


# --------------------------------------------------------------------------- models


class ModelConfig(BaseModel):
    """One answering or judge (parsing) model, with karenina's fields.

    ``mcp_*``, ``agent_runtime``, ``agent_middleware``, ``max_context_tokens`` and
    ``agent_timeout`` are accepted and stored so karenina presets load; verify runs no agents,
    so they have no effect. ``manual_traces`` is never dumped.
    """

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    id: str | None = Field(
        default=None, description="Short unique name used in results; 'manual' for manual traces."
    )
    model_provider: str | None = Field(
        default=None, description="Provider for langchain interfaces, e.g. 'openai', 'anthropic'."
    )
    model_name: str | None = None
    temperature: float = Field(default=0.1, ge=0.0, le=2.0)
    max_tokens: int = Field(default=16384, ge=1)
    interface: Interface = Field(
        default="langchain", description="How the model is called; 'simulated' is verify's offline provider."
    )
    system_prompt: str | None = Field(
        default=None,
        description="Answering models without one get DEFAULT_ANSWERING_SYSTEM_PROMPT; judges keep None.",
    )
    max_retries: int = Field(default=2, ge=0)
    mcp_urls_dict: dict[str, str] | None = None
    mcp_tool_filter: list[str] | None = None
    mcp_tool_description_overrides: dict[str, str] | None = None
    mcp_http_timeout: float | None = Field(default=None, gt=0)
    mcp_sse_read_timeout: float | None = Field(default=None, gt=0)
    endpoint_base_url: str | None = Field(
        default=None, description="Base URL of an OpenAI-compatible server (openai_endpoint)."
    )
    endpoint_api_key: SecretStr | None = Field(default=None, description="Never written to presets or dumps.")
    anthropic_base_url: str | None = None
    anthropic_api_key: SecretStr | None = Field(
        default=None, description="Never written to presets or dumps."
    )
    agent_runtime: dict[str, Any] | None = None
    extra_kwargs: dict[str, Any] | None = Field(
        default=None, description="Passed through to the model constructor."
    )
    manual_traces: dict[str, str] | None = Field(
        default=None,
        exclude=True,
        repr=False,
        description="interface='manual' only: question id or MD5 of the question text -> answer text.",
    )
    agent_middleware: dict[str, Any] | None = None
    max_context_tokens: int | None = Field(default=None, ge=1)
    agent_timeout: int | None = Field(default=None, ge=1)
    request_timeout: float | None = Field(
        default=None, gt=0, description="Seconds per call; None = the config's request_timeout."
    )
    retry_policy: RetryPolicy | None = Field(default=None, description="None = the config's retry_policy.")

    @model_validator(mode="before")
    @classmethod
    def _manual_defaults(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("interface") == "manual":
            data = dict(data)
            data["model_name"] = data.get("model_name") or "manual"
            data["id"] = data.get("id") or "manual"
        return data

    @model_validator(mode="after")
    def _rules(self) -> ModelConfig:
        problems: list[tuple[str, str]] = []
        iface = self.interface
        if not self.model_name:
            problems.append(("model_name", 'required: set the provider\'s model name, e.g. "gpt-4.1-mini"'))
        if not self.id:
            problems.append(
                ("id", 'required: give the model a short unique name used in results, e.g. "answerer"')
            )
        if iface in _PROVIDER_REQUIRED and not self.model_provider:
            problems.append(
                (
                    "model_provider",
                    f'required for interface \'{iface}\': set it, e.g. "openai" or "anthropic"',
                )
            )
        if iface == "manual":
            if not self.manual_traces:
                problems.append(
                    (
                        "manual_traces",
                        "interface 'manual' needs manual_traces (question id or MD5 of the question text -> "
                        "answer text); pass --manual-traces FILE",
                    )
                )
            if self.mcp_urls_dict:
                problems.append(
                    ("mcp_urls_dict", "MCP tools cannot be used with interface 'manual'; remove it")
                )
        elif self.manual_traces is not None:
            problems.append(
                ("manual_traces", "only used with interface 'manual'; remove it or set interface='manual'")
            )
        if iface == "openai_endpoint":
            url = self.endpoint_base_url or ""
            if not url.startswith(("http://", "https://")):
                problems.append(
                    (
                        "endpoint_base_url",
                        "interface 'openai_endpoint' needs an http(s) URL, e.g. \"http://localhost:11434/v1\" "
                        '(Ollama) or "http://localhost:8000/v1" (vLLM)',
                    )
                )
        anthropic_ok = iface in {"claude_tool", "claude_agent_sdk"} or (
            iface in _PROVIDER_REQUIRED and (self.model_provider or "").lower() == "anthropic"
        )
        extra = self.extra_kwargs or {}
        for name, dup in (("anthropic_base_url", "base_url"), ("anthropic_api_key", "api_key")):
            if getattr(self, name) is None:
                continue
            if not anthropic_ok:
                problems.append(
                    (
                        name,
                        "only used by claude_tool/claude_agent_sdk or langchain with model_provider 'anthropic'",
                    )
                )
            elif dup in extra:
                problems.append((name, f"also given as extra_kwargs['{dup}']; keep only one"))
        _raise_if(problems)
        return self

    @property
    def display_name(self) -> str:
        """``provider:model`` (or just the model name) for messages."""
        return f"{self.model_provider}:{self.model_name}" if self.model_provider else str(self.model_name)


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
        specific = self.question_specific.get(question_id, {}).get(trait_name)
        return specific if specific is not None else self.global_traits.get(trait_name)

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


# --------------------------------------------------------------------------- the config


class VerificationConfig(BaseModel):
    """Everything one verification run needs, with karenina's field names and defaults.

    Inert fields (accepted and stored so karenina presets load, but no part of verify reads them):
    ``parsing_only``, ``db_config``, ``scenario_turn_limit``, ``max_requeue_count``,
    ``replay_store``, ``replay_parse_on_hydration_mismatch``, ``skip_triples``, every
    ``agentic_*`` field, every ``workspace_*`` field, ``retry_policy.timeout_escalation``, and
    the agent/MCP fields of :class:`ModelConfig`. :func:`config_warnings` names those that are
    set to something other than their default.

    Ours, not karenina's: ``deep_judgment_rubric_search_enabled`` (karenina drops it) switches
    excerpt search on for every trait in ``enable_all`` mode; the ``simulated`` interface and
    search tool run offline.
    """

    model_config = _Forbid

    # models / run shape
    answering_models: list[ModelConfig] = Field(default_factory=list)
    parsing_models: list[ModelConfig] = Field(description="Judge models; at least one.")
    replicate_count: int = Field(default=1, ge=1, description="Runs per question and answering model.")
    parsing_only: bool = Field(default=False, description="karenina TaskEval mode; inert in verify.")
    evaluation_mode: Literal["template_only", "template_and_rubric", "rubric_only"] = "template_only"
    rubric_trait_names: list[str] | None = Field(
        default=None, description="Evaluate only these rubric traits."
    )
    rubric_evaluation_strategy: Literal["batch", "sequential"] | None = Field(
        default="batch",
        description="batch: all LLM traits in one call; sequential (or None): one call per trait.",
    )
    use_full_trace_for_template: bool = False
    use_full_trace_for_rubric: bool = True
    allow_partial_trace_scoring: bool = True
    include_extraction_hints: bool = True

    # guards and checks
    abstention_enabled: bool = False
    sufficiency_enabled: bool = False
    embedding_check_enabled: bool = False
    embedding_check_model: str = "all-MiniLM-L6-v2"
    embedding_check_threshold: float = Field(default=0.85, ge=0.0, le=1.0)

    # template deep judgment
    deep_judgment_mode: Literal["disabled", "reasoning_only", "full"] = "disabled"
    deep_judgment_max_excerpts_per_attribute: int = Field(default=3, ge=1)
    deep_judgment_fuzzy_match_threshold: float = Field(default=0.80, ge=0.0, le=1.0)
    deep_judgment_excerpt_retry_attempts: int = Field(default=2, ge=0)
    deep_judgment_search_enabled: bool = False
    deep_judgment_search_tool: SearchTool = "tavily"

    # rubric deep judgment
    deep_judgment_rubric_mode: Literal["disabled", "enable_all", "use_checkpoint", "custom"] = Field(
        default="disabled",
        description="enable_all: every LLM trait; use_checkpoint: the traits' own settings; custom: deep_judgment_rubric_config.",
    )
    deep_judgment_rubric_global_excerpts: bool = Field(
        default=True, description="enable_all: extract excerpts (else reasoning only)."
    )
    deep_judgment_rubric_config: DeepJudgmentRubricCustomConfig | None = Field(
        default=None, description="Per-trait settings for mode 'custom'."
    )
    deep_judgment_rubric_max_excerpts_default: int = Field(
        default=7, ge=1, description="Used where a trait sets no max_excerpts."
    )
    deep_judgment_rubric_fuzzy_match_threshold_default: float = Field(
        default=0.80, ge=0.0, le=1.0, description="Used where a trait sets no fuzzy_match_threshold."
    )
    deep_judgment_rubric_excerpt_retry_attempts_default: int = Field(
        default=2, ge=0, description="Used where a trait sets no excerpt_retry_attempts."
    )
    deep_judgment_rubric_search_enabled: bool = Field(
        default=False,
        description="verify only: check excerpts with web search for every trait in enable_all mode.",
    )
    deep_judgment_rubric_search_tool: SearchTool = "tavily"

    # few-shot and prompts
    few_shot_config: FewShotConfig | None = None
    prompt_config: PromptConfig | None = None

    # execution
    async_enabled: bool = True
    async_max_workers: int = Field(default=2, ge=1, description="Questions worked on in parallel.")
    max_concurrent_requests: int | None = Field(
        default=None, ge=1, description="Cap on model calls in flight."
    )
    batch_timeout_seconds: float | None = Field(default=None, gt=0)
    task_ordering: Literal["auto", "prefix_cache", "distribute_answerers", "generation_order", "random"] = (
        "auto"
    )
    answerer_concurrency_limits: int | dict[str, int] | None = Field(
        default=None, description="Calls in flight per answering model: one number, or {model id: number}."
    )
    request_timeout: float = Field(
        default=120.0, gt=0, description="Seconds per model call unless the model sets its own."
    )
    retry_policy: RetryPolicy = Field(default_factory=RetryPolicy)
    custom_error_patterns: list[ErrorPatternConfig] = Field(default_factory=list)
    max_requeue_count: int = Field(default=5, ge=0)
    scenario_turn_limit: int = Field(default=20, ge=1)
    db_config: dict[str, Any] | None = None
    replay_store: Any = Field(default=None, exclude=True, repr=False)
    replay_parse_on_hydration_mismatch: Literal["fall_through", "strict"] = "fall_through"
    skip_triples: Any = Field(default=None, exclude=True, repr=False)

    # agentic (inert)
    agentic_parsing: bool = False
    agentic_parsing_trigger: Literal["always", "dynamic"] = "always"
    agentic_judge_context: Literal["workspace_only", "trace_and_workspace", "trace_only"] = "workspace_only"
    agentic_parsing_max_turns: int = Field(default=15, ge=1)
    agentic_parsing_timeout: float = Field(default=120.0, gt=0)
    agentic_parsing_materialize_trace: bool = False
    agentic_parsing_persist_trace: bool = False
    agentic_rubric_strategy: Literal["individual", "shared"] = "individual"
    agentic_rubric_parallel: bool = False
    workspace_copy: bool = True
    workspace_cleanup: bool = True
    workspace_output_mode: Literal["none", "full", "produced"] = "none"
    workspace_output_dir: str | None = None
    workspace_output_exclude_patterns: list[str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _accept_karenina_keys(cls, data: Any) -> Any:
        """Drop serialized ``rubric_enabled`` and ``$schema``; fold ``<task>_instructions`` shortcuts."""
        if not isinstance(data, dict):
            return data
        data = {k: v for k, v in data.items() if k not in {"rubric_enabled", "$schema"}}
        shortcuts = {f"{name}_instructions": name for name in PromptConfig.model_fields}
        folded = {shortcuts[k]: data.pop(k) for k in list(data) if k in shortcuts}
        if folded:
            current = data.get("prompt_config") or {}
            current = current.model_dump() if isinstance(current, PromptConfig) else dict(current)
            for name, value in folded.items():
                if current.get(name) not in (None, value):
                    raise ConfigProblems(
                        [(f"{name}_instructions", f"conflicts with prompt_config.{name}; give only one")]
                    )
                current[name] = value
            data["prompt_config"] = current
        return data

    @field_validator("answering_models")
    @classmethod
    def _default_system_prompt(cls, models: list[ModelConfig]) -> list[ModelConfig]:
        return [
            m if m.system_prompt else m.model_copy(update={"system_prompt": DEFAULT_ANSWERING_SYSTEM_PROMPT})
            for m in models
        ]

    @field_validator("deep_judgment_search_tool", "deep_judgment_rubric_search_tool")
    @classmethod
    def _tool_lowercase(cls, tool: str | Callable[..., Any]) -> str | Callable[..., Any]:
        return tool.strip().lower() if isinstance(tool, str) else tool

    @field_serializer("deep_judgment_search_tool", "deep_judgment_rubric_search_tool", when_used="json")
    def _tool_json(self, tool: str | Callable[..., Any]) -> str:
        return _tool_label(tool)

    @model_validator(mode="after")
    def _rules(self) -> VerificationConfig:
        problems: list[tuple[str, str]] = []
        self._check_models(problems)
        if self.deep_judgment_rubric_mode == "custom" and self.deep_judgment_rubric_config is None:
            problems.append(
                (
                    "deep_judgment_rubric_config",
                    "deep_judgment_rubric_mode='custom' needs deep_judgment_rubric_config; pass "
                    "--deep-judgment-rubric-config FILE or set it in the preset",
                )
            )
        if self.deep_judgment_mode == "reasoning_only" and self.deep_judgment_search_enabled:
            problems.append(
                (
                    "deep_judgment_search_enabled",
                    "search needs excerpts, which deep_judgment_mode='reasoning_only' skips; use "
                    "deep_judgment_mode='full' or set deep_judgment_search_enabled=false",
                )
            )
        if self.deep_judgment_search_enabled:
            _check_tool("deep_judgment_search_tool", self.deep_judgment_search_tool, problems)
        if self.rubric_search_may_run:
            _check_tool("deep_judgment_rubric_search_tool", self.deep_judgment_rubric_search_tool, problems)
        self._check_agentic(problems)
        _raise_if(problems)
        return self

    def _check_models(self, problems: list[tuple[str, str]]) -> None:
        if not self.parsing_models:
            problems.append(
                ("parsing_models", "at least one judge model is required; add one or pass --parsing-model")
            )
        if not self.answering_models and not self.parsing_only:
            problems.append(
                (
                    "answering_models",
                    "at least one answering model is required; add one or pass --answering-model",
                )
            )
        for role in ("answering_models", "parsing_models"):
            seen: set[str] = set()
            for i, model in enumerate(getattr(self, role)):
                if model.id in seen:
                    problems.append(
                        (f"{role}[{i}].id", f"duplicate id {model.id!r}; give each model its own id")
                    )
                seen.add(str(model.id))
        for i, model in enumerate(self.parsing_models):
            if model.interface == "manual":
                problems.append(
                    (
                        f"parsing_models[{i}].interface",
                        "'manual' only replays answers; judges need a real interface",
                    )
                )
        limits = self.answerer_concurrency_limits
        answer_ids = {str(m.id) for m in self.answering_models}
        for key, value in ({"*": limits} if isinstance(limits, int) else limits or {}).items():
            where = "answerer_concurrency_limits" + ("" if key == "*" else f".{key}")
            if value < 1:
                problems.append((where, "must be at least 1"))
            if key != "*" and key not in answer_ids:
                problems.append(
                    (where, f"no answering model has id {key!r} (ids: {', '.join(sorted(answer_ids))})")
                )

    def _check_agentic(self, problems: list[tuple[str, str]]) -> None:
        if self.agentic_parsing_trigger == "dynamic" and not self.agentic_parsing:
            problems.append(("agentic_parsing_trigger", "'dynamic' needs agentic_parsing=true"))
        if not self.agentic_parsing:
            return
        for i, model in enumerate(self.parsing_models):
            if model.interface not in _DEEP_AGENT_INTERFACES:
                problems.append(
                    (
                        f"parsing_models[{i}].interface",
                        f"agentic_parsing needs a deep-agent judge interface ({', '.join(sorted(_DEEP_AGENT_INTERFACES))})",
                    )
                )
        if self.evaluation_mode == "rubric_only":
            problems.append(
                ("agentic_parsing", "has no template to parse with evaluation_mode='rubric_only'")
            )
        if self.agentic_parsing_materialize_trace and self.agentic_judge_context == "workspace_only":
            problems.append(
                (
                    "agentic_parsing_materialize_trace",
                    "incompatible with agentic_judge_context='workspace_only'; use 'trace_and_workspace' or set it false",
                )
            )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rubric_enabled(self) -> bool:
        """True when ``evaluation_mode`` includes rubric evaluation."""
        return self.evaluation_mode != "template_only"

    @property
    def rubric_search_may_run(self) -> bool:
        """Whether some trait may use the rubric search tool under the current mode."""
        mode = self.deep_judgment_rubric_mode
        custom = self.deep_judgment_rubric_config
        return (
            self.deep_judgment_rubric_search_enabled
            or mode == "use_checkpoint"
            or (mode == "custom" and custom is not None and custom.any_search())
        )

    def model_request_timeout(self, model: ModelConfig) -> float:
        """The model's own ``request_timeout``, else the config's."""
        return model.request_timeout if model.request_timeout is not None else self.request_timeout

    def model_retry_policy(self, model: ModelConfig) -> RetryPolicy:
        """The model's own ``retry_policy``, else the config's."""
        return model.retry_policy or self.retry_policy

    @classmethod
    def from_overrides(cls, base: VerificationConfig | None = None, **overrides: Any) -> VerificationConfig:
        """``base`` (or defaults) with every non-``None`` override applied, validated again as a whole.

        Names: any field name, or karenina's ``from_overrides`` keywords (see ``OVERRIDE_ALIASES``
        plus the model keywords ``answering_model``, ``answering_provider``, ``answering_id``,
        ``answering_interface``, ``parsing_model``, ``parsing_provider``, ``parsing_id``,
        ``parsing_interface``, ``temperature`` and ``manual_traces``).

        Model keywords, unlike karenina: they apply to *every* model of their role (a
        multi-model preset is never collapsed to one model); ``temperature`` applies to every
        answering and judge model even when given alone; ``*_id`` alone applies too (an error if
        the role has several models, as ids must stay unique). Without ``base``, each role gets
        one model: ``gpt-4.1-mini`` via langchain/openai at temperature 0.1 unless overridden, with
        id ``answering-1`` / ``parsing-1`` unless given. ``manual_traces`` (with
        ``answering_interface`` unset or ``"manual"``) makes the answering model a manual one.

        Raises :class:`ConfigError` for unknown names (naming the closest valid ones), for
        conflicting names, and when the merged config is invalid.
        """
        given = {k: v for k, v in overrides.items() if v is not None}
        unknown = sorted(k for k in given if k not in _VALID_OVERRIDES)
        if unknown:
            raise ConfigError(
                "; ".join(
                    f"unknown override {name!r}{_did_you_mean(name, _VALID_OVERRIDES)}" for name in unknown
                ),
                hint="use a VerificationConfig field name or one of karenina's from_overrides keywords",
            )
        data: dict[str, Any] = _base_fields(base) if base is not None else {}
        fields: dict[str, tuple[str, Any]] = {}
        for key, value in given.items():
            if key in _MODEL_OVERRIDES:
                continue
            target = OVERRIDE_ALIASES.get(key, key)
            if target in fields and fields[target][1] != value:
                raise ConfigError(
                    f"overrides {fields[target][0]!r} and {key!r} both set {target} to different values",
                    hint="give only one of them",
                )
            fields[target] = (key, value)
        data.update({target: value for target, (_, value) in fields.items()})
        _apply_model_overrides(data, given, has_base=base is not None)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            lines = format_validation_error(exc).splitlines()
            raise ConfigError(
                "invalid configuration after overrides:\n" + "\n".join(f"  {line}" for line in lines),
                hint="fix the listed values (in the preset or in the flags/overrides given)",
            ) from None


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


# --------------------------------------------------------------------------- from_overrides helpers

#: karenina's ``from_overrides`` keywords that rename a field (others use the field name).
OVERRIDE_ALIASES: dict[str, str] = {
    "abstention": "abstention_enabled",
    "sufficiency": "sufficiency_enabled",
    "embedding_check": "embedding_check_enabled",
    "embedding_threshold": "embedding_check_threshold",
    "embedding_model": "embedding_check_model",
    "async_execution": "async_enabled",
    "async_workers": "async_max_workers",
    "deep_judgment_rubric_excerpts": "deep_judgment_rubric_global_excerpts",
    "deep_judgment_rubric_max_excerpts": "deep_judgment_rubric_max_excerpts_default",
    "deep_judgment_rubric_fuzzy_threshold": "deep_judgment_rubric_fuzzy_match_threshold_default",
    "deep_judgment_rubric_retry_attempts": "deep_judgment_rubric_excerpt_retry_attempts_default",
    "deep_judgment_rubric_search": "deep_judgment_rubric_search_enabled",
}
_ROLE_KEYS = ("model", "provider", "id", "interface")
_MODEL_OVERRIDES = frozenset(
    {f"{role}_{key}" for role in ("answering", "parsing") for key in _ROLE_KEYS}
    | {"temperature", "manual_traces"}
)
_VALID_OVERRIDES = frozenset(VerificationConfig.model_fields) | frozenset(OVERRIDE_ALIASES) | _MODEL_OVERRIDES


def _did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``"; did you mean X?"`` naming the closest choices (all within a hair of the best), or ``""``."""
    scored = sorted(((difflib.SequenceMatcher(None, name, c).ratio(), c) for c in set(choices)), reverse=True)
    if not scored or scored[0][0] < 0.6:
        return ""
    close = [c for ratio, c in scored[:3] if ratio >= max(0.6, scored[0][0] - 0.05)]
    return f"; did you mean {' or '.join(close)}?"


def _model_dict(model: ModelConfig) -> dict[str, Any]:
    data = model.model_dump()  # python mode keeps SecretStr values; manual_traces is excluded
    if model.manual_traces is not None:
        data["manual_traces"] = dict(model.manual_traces)
    return data


def _base_fields(base: VerificationConfig) -> dict[str, Any]:
    shared = {"replay_store", "skip_triples"}  # runtime objects: passed on, not copied
    data = {
        name: getattr(base, name) if name in shared else copy.deepcopy(getattr(base, name))
        for name in VerificationConfig.model_fields
    }
    for role in ("answering_models", "parsing_models"):
        data[role] = [_model_dict(m) for m in data[role]]
    return data


def _apply_model_overrides(data: dict[str, Any], given: dict[str, Any], *, has_base: bool) -> None:
    temperature = given.get("temperature")
    traces = given.get("manual_traces")
    for role in ("answering", "parsing"):
        key = f"{role}_models"
        ov = {k: given.get(f"{role}_{k}") for k in _ROLE_KEYS}
        models = [_model_dict(m) if isinstance(m, ModelConfig) else dict(m) for m in data.get(key) or []]
        if role == "answering" and (traces is not None or ov["interface"] == "manual"):
            data[key] = [_manual_model(models, ov, traces)]
            continue
        if not models and not has_base and not (role == "answering" and data.get("parsing_only")):
            models = [_fresh_model(role, ov["interface"])]
        if ov["interface"] not in (None, "manual"):  # leaving manual: a manual model has nothing to keep
            models = [
                _fresh_model(role, ov["interface"]) if m.get("interface") == "manual" else m for m in models
            ]
        updates = {
            field: value
            for field, value in (
                ("model_name", ov["model"]),
                ("model_provider", ov["provider"]),
                ("interface", ov["interface"]),
                ("temperature", temperature),
                ("id", ov["id"]),
            )
            if value is not None
        }
        if ov["id"] is not None and len(models) > 1:
            raise ConfigError(
                f"{role}_id={ov['id']!r} cannot name all {len(models)} {role} models (ids must be unique)",
                hint=f"edit the ids in the preset's {key} instead",
            )
        data[key] = [{**m, **updates} for m in models]


def _fresh_model(role: str, interface: str | None) -> dict[str, Any]:
    iface = interface or "langchain"
    fresh: dict[str, Any] = {"id": f"{role}-1", "interface": iface, "temperature": 0.1}
    if iface == "langchain":
        fresh |= {"model_name": "gpt-4.1-mini", "model_provider": "openai"}
    elif iface == "simulated":
        fresh |= {
            "model_name": f"simulated-{'answerer' if role == 'answering' else 'judge'}",
            "model_provider": "simulated",
        }
    return fresh


def _manual_model(models: list[dict[str, Any]], ov: dict[str, Any], traces: Any) -> dict[str, Any]:
    if ov["interface"] not in (None, "manual"):
        raise ConfigError(
            f"manual_traces only work with answering_interface='manual', not {ov['interface']!r}",
            hint="drop --manual-traces or use --interface manual",
        )
    if ov["model"] is not None or ov["provider"] is not None:
        raise ConfigError(
            "answering_model/answering_provider have no effect with manual traces",
            hint="drop them; manual traces replace the answering model",
        )
    if traces is None:
        old = models[0] if len(models) == 1 and models[0].get("interface") == "manual" else {}
        traces = old.get("manual_traces")
        if traces is None:
            raise ConfigError(
                "answering_interface='manual' needs manual_traces",
                hint="pass --manual-traces FILE (JSON: question id or MD5 of question text -> answer)",
            )
    return {
        "interface": "manual",
        "manual_traces": traces,
        "id": ov["id"] or "manual",
        "model_name": "manual",
    }


# --------------------------------------------------------------------------- dumps and messages


def config_to_dict(config: VerificationConfig) -> dict[str, Any]:
    """A JSON-safe dump of every field. API keys are masked as ``"**********"`` (never the key),
    ``manual_traces``/``replay_store``/``skip_triples`` are left out, and a callable search tool
    becomes ``"<callable name>"``. Secret-looking ``extra_kwargs`` entries (``api_key``, ``token``,
    ...) are masked the same way."""
    data = config.model_dump(mode="json", by_alias=True)
    for role in ("answering_models", "parsing_models"):
        for model in data.get(role) or []:
            extra = model.get("extra_kwargs")
            if isinstance(extra, dict):
                model["extra_kwargs"] = {
                    k: "**********" if _SECRET_KWARG.search(k) and v is not None else v for k, v in extra.items()
                }
    return data


_SECRET_KWARG = re.compile(r"api_?key|secret|password|authorization|^(access_|auth_|bearer_)?token$", re.IGNORECASE)


_DEFAULTS_OF_INERT: dict[str, Any] = {
    name: VerificationConfig.model_fields[name].default
    for name in VerificationConfig.model_fields
    if name.startswith(("agentic_", "workspace_"))
    or name
    in {
        "parsing_only",
        "db_config",
        "scenario_turn_limit",
        "max_requeue_count",
        "replay_parse_on_hydration_mismatch",
    }
}


def config_warnings(config: VerificationConfig) -> list[str]:
    """Valid but probably unintended settings, for the CLI to print (never raised)."""
    notes: list[str] = []
    if config.deep_judgment_rubric_mode != "disabled" and not config.rubric_enabled:
        notes.append(
            f"deep_judgment_rubric_mode={config.deep_judgment_rubric_mode!r} has no effect with "
            "evaluation_mode='template_only'; use 'template_and_rubric' or 'rubric_only'"
        )
    if config.deep_judgment_rubric_search_enabled and config.deep_judgment_rubric_mode == "disabled":
        notes.append(
            "deep_judgment_rubric_search_enabled has no effect while deep_judgment_rubric_mode='disabled'"
        )
    if config.deep_judgment_rubric_config is not None and config.deep_judgment_rubric_mode != "custom":
        notes.append("deep_judgment_rubric_config is only read in deep_judgment_rubric_mode='custom'")
    inert = [name for name, default in _DEFAULTS_OF_INERT.items() if getattr(config, name) != default]
    if inert:
        notes.append(f"ignored by verify (karenina-only features): {', '.join(inert)}")
    agent_fields = ("mcp_urls_dict", "agent_runtime", "agent_middleware")
    for role in ("answering_models", "parsing_models"):
        for model in getattr(config, role):
            used = [f for f in agent_fields if getattr(model, f)]
            if used:
                notes.append(f"{role} {model.id!r}: {', '.join(used)} ignored (verify runs no agents)")
    return notes


_MODELS: dict[str, type[BaseModel]] = {
    cls.__name__: cls
    for cls in (
        VerificationConfig,
        ModelConfig,
        RetryPolicy,
        CategoryRetryConfig,
        FewShotConfig,
        PromptConfig,
        DeepJudgmentTraitConfig,
        DeepJudgmentRubricCustomConfig,
    )
}


def format_validation_error(exc: ValidationError, source: str = "", *, prefix: str = "") -> str:
    """One line per problem, ``[source: ]field.path: message``.

    Unknown keys get ``unknown field; did you mean ...?``; the several member errors of one
    union collapse into one line. ``prefix`` goes before every field path, e.g. ``"config."``
    for the ``config`` object of a karenina preset file.
    """
    root = _MODELS.get(exc.title)
    lines: dict[str, list[str]] = {}
    got: dict[str, str] = {}
    for err in exc.errors(include_url=False):
        for path, message, value in _explain(err, root):
            where = f"{prefix}{path}" if path else (prefix.rstrip(".") or "(top level)")
            messages = lines.setdefault(where, [])
            if message not in messages:
                messages.append(message)
            if value:
                got[where] = value
    head = f"{source}: " if source else ""
    return "\n".join(
        f"{head}{where}: {' or '.join(msgs)}" + (f" (got {got[where]})" if where in got else "")
        for where, msgs in lines.items()
    )


def _explain(err: Any, root: type[BaseModel] | None) -> list[tuple[str, str, str]]:
    """``(path, message, repr of the bad input or "")`` for one pydantic error."""
    loc = tuple(err["loc"])
    path, _ = _walk(root, loc)
    kind = err["type"]
    error = (err.get("ctx") or {}).get("error")
    if kind == "value_error" and isinstance(error, ConfigProblems):
        return [(_join(path, sub), msg, "") for sub, msg in error.problems]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        _, owner = _walk(root, loc[:-1])
        names = _field_names(owner) if owner else []
        return [(path, "unknown field" + _did_you_mean(key, names), "")]
    if kind == "missing":
        return [(path, "required field is missing", "")]
    message = str(err["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    value = err.get("input")
    shown = repr(value) if kind != "value_error" and isinstance(value, str | int | float | bool) else ""
    return [(path, message, shown if len(shown) <= 60 else "")]


def _join(path: str, sub: str) -> str:
    if not sub:
        return path
    return f"{path}{sub}" if sub.startswith("[") or not path else f"{path}.{sub}"


def _field_names(model: type[BaseModel]) -> list[str]:
    names = []
    for name, info in model.model_fields.items():
        names.append(info.alias or name)
    return names


def _walk(root: type[BaseModel] | None, loc: tuple[Any, ...]) -> tuple[str, type[BaseModel] | None]:
    """Render ``loc`` as ``a.b[0].c`` (dropping pydantic's union tags) and find the model it ends in."""
    path = ""
    tp: Any = root
    for seg in loc:
        tp, skip = _unwrap(tp, seg)
        if skip:
            continue
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            info = next((f for n, f in tp.model_fields.items() if seg in (n, f.alias)), None)
            path = _join(path, str(seg))
            tp = info.annotation if info else None
        elif get_origin(tp) is list and isinstance(seg, int):
            path += f"[{seg}]"
            tp = get_args(tp)[0]
        elif get_origin(tp) is dict:
            path = _join(path, str(seg))
            tp = get_args(tp)[1]
        else:
            path = _join(path, f"[{seg}]" if isinstance(seg, int) else str(seg))
            tp = None
    owner, _ = _unwrap(tp, None)
    return path, owner if isinstance(owner, type) and issubclass(owner, BaseModel) else None


def _unwrap(tp: Any, seg: Any) -> tuple[Any, bool]:
    """Strip Annotated/Optional; at a union, follow pydantic's member tag ``seg`` (-> skip it)."""
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) in (Union, types.UnionType):
        members = [a for a in get_args(tp) if a is not type(None)]
        for member in members:
            name = getattr(member, "__name__", None)
            if isinstance(seg, str) and (seg == name or seg.startswith(f"{name}[")):
                return member, True
        if isinstance(seg, str) and ("[" in seg or seg in {"str", "int", "float", "bool", "callable"}):
            return None, True  # a tag of a non-model member
        tp = members[0] if len(members) == 1 else None
        while get_origin(tp) is Annotated:
            tp = get_args(tp)[0]
    return tp, False
