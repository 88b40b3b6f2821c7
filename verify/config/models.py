"""One answering or judge model: ``ModelConfig``, its interfaces and its retry policy.

Karenina's field names and defaults; cross-field rules report every problem at once, each with
the field it concerns and how to fix it. Also the default system prompts.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, model_validator

from verify.benchmark.judge_tools import SUBMIT_TOOL, entry_problems, tool_name
from verify.errors import TRANSIENT_CATEGORIES, ConfigProblems, TransientCategory, raise_if

__all__ = [
    "DEFAULT_ANSWERING_SYSTEM_PROMPT",
    "DEFAULT_PARSING_SYSTEM_PROMPT",
    "INERT_DESCRIPTION",
    "INTERFACES",
    "CategoryRetryConfig",
    "ErrorPatternConfig",
    "Interface",
    "ModelConfig",
    "RetryPolicy",
    "uses_template",
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
DEEP_AGENT_INTERFACES = frozenset({"claude_agent_sdk", "langchain_deep_agents"})


def uses_template(evaluation_mode: str) -> bool:
    """Whether an ``evaluation_mode`` runs the answer template stages (everything but ``rubric_only``)."""
    return evaluation_mode != "rubric_only"



FORBID = ConfigDict(extra="forbid")
#: The description of every karenina field verify accepts and does not act on (config.report.INERT_FIELDS
#: says why, field by field).
INERT_DESCRIPTION = "karenina's; accepted so its presets load, not used by verify (a warning says so when set)."

# --------------------------------------------------------------------------- retries


class CategoryRetryConfig(BaseModel):
    """Retry budget and backoff for one error category (karenina's shape)."""

    model_config = FORBID

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

    model_config = FORBID

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
    breaker_failures: int = Field(
        default=3,
        ge=0,
        description="verify only: after this many attempts in a row to one endpoint time out or fail to "
        "connect (retries and concurrent calls included), calls to it fail fast without being sent, as "
        "timeout/connection errors that --resume runs again; 0 = never.",
    )
    breaker_cooldown_seconds: float = Field(
        default=60.0,
        gt=0,
        description="verify only: seconds an endpoint's calls fail fast before one is let through to see "
        "whether it answers again.",
    )

    def for_category(self, category: str) -> CategoryRetryConfig:
        """The budget of ``category``; unknown and ``permanent`` categories get no retries."""
        if category in TRANSIENT_CATEGORIES:
            found: CategoryRetryConfig = getattr(self, category)
            return found
        return CategoryRetryConfig(max_attempts=0)

    def backoff_seconds(self, category: str, attempt: int) -> float:
        """Delay before retry number ``attempt`` (0-based), before jitter."""
        cfg = self.for_category(category)
        return float(min(cfg.backoff_min * cfg.backoff_multiplier**attempt, cfg.backoff_max))


class ErrorPatternConfig(BaseModel):
    """A user rule classifying errors by type name or message substring."""

    model_config = FORBID

    pattern: str = Field(min_length=1)
    category: TransientCategory | Literal["permanent"]
    match_type: Literal["type_name", "message_substring"] = "message_substring"


# --------------------------------------------------------------------------- models


def _answer_tool_problems(tools: list[Any]) -> list[str]:
    """What is wrong with an answering model's tools: a judge's tool entries, minus submit_grade."""
    problems = [p for entry in tools for p in entry_problems(entry)]
    names = [tool_name(e) for e in tools]
    if SUBMIT_TOOL in names:
        problems.insert(0, f"{SUBMIT_TOOL!r} is a judge's tool; an answering model answers with its last message")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        problems.append(f"tools {twice} are listed twice")
    return problems


class ModelConfig(BaseModel):
    """One answering or judge (parsing) model, with karenina's fields.

    ``tools`` / ``tool_rounds`` (verify only) give an answering model tools: it answers through the
    tool loop (:mod:`verify.llm.tool_loop`) and its answer is a transcript; ``agent_timeout`` bounds
    that loop. ``mcp_*``, ``agent_runtime``, ``agent_middleware`` and ``max_context_tokens`` are
    accepted and stored so karenina presets load, with no effect (verify connects to no MCP server).
    ``manual_traces`` is never dumped.
    """

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    id: str | None = Field(
        default=None, description="Short unique name used in results; 'manual' for manual traces."
    )
    model_provider: str | None = Field(
        default=None, description="Provider for langchain interfaces, e.g. 'openai', 'anthropic'."
    )
    model_name: str | None = Field(default=None, description="The provider's name of the model, e.g. 'gpt-4.1-mini'.")
    temperature: float = Field(default=0.1, ge=0.0, le=2.0, description="Sampling temperature sent with every call.")
    max_tokens: int | None = Field(
        default=None,
        ge=1,
        description="Cap on reply tokens, sent only when set; None = the server's own default.",
    )
    interface: Interface = Field(
        default="langchain", description="How the model is called; 'simulated' is verify's offline provider."
    )
    system_prompt: str | None = Field(
        default=None,
        description="Answering models without one get DEFAULT_ANSWERING_SYSTEM_PROMPT; judges keep None.",
    )
    max_retries: int = Field(default=2, ge=0, description=INERT_DESCRIPTION + " Set retry_policy.<category>.max_attempts.")
    mcp_urls_dict: dict[str, str] | None = Field(default=None, description=INERT_DESCRIPTION + " MCP servers are not supported.")
    mcp_tool_filter: list[str] | None = Field(default=None, description=INERT_DESCRIPTION)
    mcp_tool_description_overrides: dict[str, str] | None = Field(default=None, description=INERT_DESCRIPTION)
    mcp_http_timeout: float | None = Field(default=None, gt=0, description=INERT_DESCRIPTION)
    mcp_sse_read_timeout: float | None = Field(default=None, gt=0, description=INERT_DESCRIPTION)
    endpoint_base_url: str | None = Field(
        default=None, description="Base URL of an OpenAI-compatible server (openai_endpoint)."
    )
    endpoint_api_key: SecretStr | None = Field(default=None, description="Never written to presets or dumps.")
    anthropic_base_url: str | None = Field(default=None, description="Base URL for an Anthropic-compatible server.")
    anthropic_api_key: SecretStr | None = Field(
        default=None, description="Never written to presets or dumps."
    )
    agent_runtime: dict[str, Any] | None = Field(default=None, description=INERT_DESCRIPTION)
    extra_kwargs: dict[str, Any] | None = Field(
        default=None,
        description="Passed through to the model constructor, except structured_output_method "
        "(auto, json_schema, json_mode, function_calling, none) and endpoint_base_url_mode (raw).",
        repr=False,  # may hold headers/keys
    )
    manual_traces: dict[str, str | list[Any]] | None = Field(
        default=None,
        exclude=True,
        repr=False,
        description="interface='manual' only: question id or MD5 of the question text -> answer text "
        "or a transcript (a message list: verify.judging.transcript).",
    )
    agent_middleware: dict[str, Any] | None = Field(default=None, description=INERT_DESCRIPTION)
    max_context_tokens: int | None = Field(default=None, ge=1, description=INERT_DESCRIPTION)
    agent_timeout: int | None = Field(
        default=None, ge=1, description="Seconds a tool-using answering model's loop may take; then its transcript "
        "so far is the answer (a partial trace: allow_partial_trace_scoring).",
    )
    tools: list[str | dict[str, Any]] | None = Field(
        default=None,
        description='verify only: tools the answering model may call, as a judge\'s tools minus submit_grade: "search" '
        '(the run\'s search port) and command runners {"name": ..., "commands": [...], "timeout": ...} (only with '
        "--trust-checkpoint-code). Its answer is then a transcript (verify.judging.transcript).",
    )
    tool_rounds: int = Field(
        default=5, ge=1, le=50, description="verify only: model calls a tool-using answering model may make; one "
        "still calling tools after them stops there (recursion_limit).",
    )
    request_timeout: float | None = Field(
        default=None, gt=0, description="Seconds per call; None = the config's request_timeout."
    )
    max_concurrent_requests: int | None = Field(
        default=None,
        ge=1,
        description="verify only: cap on calls in flight to this model's server. Models with the same "
        "endpoint_base_url share one cap (the smallest given); None = only the run's max_concurrent_requests.",
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
        if (self.model_provider or "").strip().lower() == "simulated" and iface != "simulated":
            # The offline models are an interface, not a langchain provider: without this line the run
            # fails later with "unknown provider" (or asks for a provider SDK that would not help).
            problems.append(
                (
                    "model_provider",
                    "'simulated' is an interface, not a provider: the offline models (text rules, no "
                    "network) need interface 'simulated' too; add --interface simulated, or use --preset demo",
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
            if self.tools:
                problems.append(("tools", "a manual model answers from its traces and calls no tools; remove tools"))
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
        problems += [("tools", p) for p in _answer_tool_problems(self.tools or [])]
        raise_if(problems)
        return self

    @property
    def display_name(self) -> str:
        """``provider:model`` (or just the model name) for messages."""
        return f"{self.model_provider}:{self.model_name}" if self.model_provider else str(self.model_name)
