"""The verification config: karenina's field names and defaults, checked when the config is built.

``VerificationConfig`` accepts every field of karenina's config (so karenina presets load
unchanged) plus fields of ours (``deep_judgment_rubric_search_enabled``, ``trust_checkpoint_code``).
Cross-field rules are ``model_validator(mode="after")`` checks that report every problem at once,
each with the field it concerns and how to fix it. Precedence, as in karenina: field defaults <
karenina's environment variables (:mod:`verify.config.environment`) < preset < explicit overrides. karenina's
config methods (``from_preset``, ``save_preset``, few-shot getters) are in :mod:`verify.config.compat`.

``VerificationConfig.from_overrides`` keeps karenina's keyword names (``abstention``,
``async_workers``, ``deep_judgment_rubric_search``, ...) and also takes any field name. ``None``
means "not given", so an unset CLI flag never overwrites a preset value.

The parts live in their own modules and are re-exported here, so ``from verify.config.verification import X``
works for all of them: :mod:`verify.config.models` (models, interfaces, retries, default prompts),
:mod:`verify.config.prompts` (few-shot, prompts), :mod:`verify.config.deep_judgment` (rubric deep judgment,
search tools), :mod:`verify.config.overrides` (``from_overrides`` keywords), :mod:`verify.config.report`
(dumps, warnings) and :mod:`verify.errors` (problems and how they are shown).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    ValidationError,
    computed_field,
    field_serializer,
    field_validator,
    model_validator,
)

from verify.config.compat import KareninaConfigMethods
from verify.config.deep_judgment import (
    DeepJudgmentRubricCustomConfig,
    SearchTool,
    check_search_tool,
    search_tool_label,
)
from verify.config.environment import apply_environment
from verify.config.gates import GateText
from verify.config.models import (
    DEEP_AGENT_INTERFACES,
    DEFAULT_ANSWERING_SYSTEM_PROMPT,
    FORBID,
    INERT_DESCRIPTION,
    ErrorPatternConfig,
    ModelConfig,
    RetryPolicy,
    uses_template,
)
from verify.config.overrides import MODEL_OVERRIDES, OVERRIDE_ALIASES, apply_model_overrides, model_dict
from verify.config.prompts import FewShotConfig, PromptConfig
from verify.errors import ConfigError, ConfigProblems, did_you_mean, format_validation_error, raise_if

__all__ = ["VerificationConfig"]

# --------------------------------------------------------------------------- the config


class VerificationConfig(KareninaConfigMethods, BaseModel):
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

    model_config = FORBID

    # models / run shape
    answering_models: list[ModelConfig] = Field(default_factory=list, description="Models that answer the questions (interface 'manual' for recorded answers); each answer is judged by every parsing model.")
    parsing_models: list[ModelConfig] = Field(description="Judge models; at least one.")
    replicate_count: int = Field(default=1, ge=1, description="Runs per question and answering model.")
    parsing_only: bool = Field(default=False, description="karenina TaskEval mode; inert in verify.")
    evaluation_mode: Literal["template_only", "template_and_rubric", "rubric_only"] = Field(default="template_only",
        description="Which judging runs: the answer template (parse and verify), the rubric, or both.")
    rubric_trait_names: list[str] | None = Field(
        default=None, description="Evaluate only these rubric traits."
    )
    rubric_evaluation_strategy: Literal["batch", "sequential"] | None = Field(
        default="batch",
        description="batch: all LLM traits in one call; sequential (or None): one call per trait.",
    )
    use_full_trace_for_template: bool = Field(default=False, description="A transcript answer: the template judge reads the whole run (True) or only its submission (False).")
    use_full_trace_for_rubric: bool = Field(default=True, description="A transcript answer: rubric judges read the whole run (True) or only its submission (False).")
    transcript_extractor: str = Field(default="last_assistant", pattern=r"^(last_assistant|all_assistant|tool_output:.+)$",
                                      description="a transcript's submission: verify.judging.transcript")
    allow_partial_trace_scoring: bool = Field(default=True, description="Judge a transcript cut short by agent_timeout or tool_rounds; False leaves such a task unjudged.")
    include_extraction_hints: bool = Field(default=True, description="Give the template judge each field's description as a hint for what to extract.")

    # guards and checks
    abstention_enabled: bool = Field(default=False, description="Ask the judge whether the answer refuses or abstains; if so the task fails (category abstention) and is not parsed.")
    sufficiency_enabled: bool = Field(default=False, description="Template modes: ask the judge whether the answer holds enough to fill the template; if not the task fails (category sufficiency).")
    embedding_check_enabled: bool = Field(default=False, description="When template verification fails, compare answer and expected answer by embedding similarity (needs the embedding extra).")
    embedding_check_model: str = Field(default="all-MiniLM-L6-v2", description="Sentence-embedding model of the embedding check.")
    embedding_check_threshold: float = Field(default=0.85, ge=0.0, le=1.0, description="Cosine similarity at or above which the embedding check calls the answers equivalent.")

    # template deep judgment
    deep_judgment_mode: Literal["disabled", "reasoning_only", "full"] = Field(default="disabled", description="Template deep judgment: full quotes the answer per field (quotes proven at offsets), then reasons, then parses; reasoning_only skips the quotes.")
    deep_judgment_max_excerpts_per_attribute: int = Field(default=3, ge=1, description="Template deep judgment: most quotes kept per template field.")
    deep_judgment_fuzzy_match_threshold: float = Field(default=0.80, ge=0.0, le=1.0, description="Template deep judgment: a quote is valid when its similarity to the answer text is at or above this.")
    deep_judgment_excerpt_retry_attempts: int = Field(default=2, ge=0, description="Template deep judgment: times the judge is asked again, with the problems, when quotes are not in the answer.")
    deep_judgment_search_enabled: bool = Field(default=False, description="Template deep judgment: check each valid quote with web search and record the hallucination risk.")
    deep_judgment_search_tool: SearchTool = Field(default="tavily", description="Search for template deep judgment: 'tavily', 'simulated' (offline) or a callable.")

    # rubric deep judgment
    deep_judgment_rubric_mode: Literal["disabled", "enable_all", "use_checkpoint", "custom"] = Field(
        default="disabled",
        description="enable_all: every LLM trait; use_checkpoint: the traits' own settings; custom: deep_judgment_rubric_config.",
    )
    deep_judgment_rubric_global_excerpts: bool = Field(default=True, description="enable_all: extract excerpts (else reasoning only).")
    deep_judgment_rubric_config: DeepJudgmentRubricCustomConfig | None = Field(default=None, description="Per-trait settings for mode 'custom'.")
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
    deep_judgment_rubric_search_tool: SearchTool = Field(default="tavily", description="Search for rubric deep judgment: 'tavily', 'simulated' (offline) or a callable.")
    deep_judgment_rubric_strategy: Literal["per_trait", "batched"] = Field(default="per_trait", description="verify "
        "only. per_trait: about 3 judge calls per trait; batched: all deep-judgment traits of a task share 2-3 calls (more on unusable replies).")

    # few-shot and prompts
    few_shot_config: FewShotConfig | None = Field(default=None, description="Few-shot examples given to the answering models (karenina's modes: all, k-shot, custom, none).")
    prompt_config: PromptConfig | None = Field(default=None, description="Extra instructions per task kind (generation, parsing, rubric evaluation, deep judgment...).")

    # execution
    async_enabled: bool = Field(default=True, description="Work on several questions at once; False runs them one by one.")
    async_max_workers: int | None = Field(
        default=None, ge=1, description="Questions worked on in parallel. None (karenina: the env var, else 2): verify "
        "chooses: every question may start and each server's calls in flight adapt (grow while calls succeed, "
        "halve on 429/overload)."
    )
    max_concurrent_requests: int | None = Field(default=None, ge=1, description="Cap on model calls in flight.")
    batch_timeout_seconds: float | None = Field(default=None, gt=0, description="Wall-clock limit for the whole run: then unfinished tasks stop, finished ones are saved for --resume.")
    task_ordering: Literal["auto", "prefix_cache", "distribute_answerers", "generation_order", "random"] = Field(
        default="auto", description=INERT_DESCRIPTION)
    answerer_concurrency_limits: int | dict[str, int] | None = Field(
        default=None, description="Calls in flight per answering model: one number, or {model id: number}."
    )
    request_timeout: float = Field(
        default=120.0, gt=0, description="Seconds per model call unless the model sets its own."
    )
    retry_policy: RetryPolicy = Field(default_factory=RetryPolicy, description="Retries per error category (rate limit, server error, timeout...) for every model without its own.")
    custom_error_patterns: list[ErrorPatternConfig] = Field(default_factory=list, description="Your own error texts and the category (and so the retry budget) each one belongs to.")
    max_requeue_count: int = Field(default=5, ge=0, description=INERT_DESCRIPTION)
    scenario_turn_limit: int = Field(default=20, ge=1, description=INERT_DESCRIPTION)
    db_config: dict[str, Any] | None = Field(default=None, description=INERT_DESCRIPTION)
    replay_store: Any = Field(default=None, exclude=True, repr=False, description=INERT_DESCRIPTION)
    replay_parse_on_hydration_mismatch: Literal["fall_through", "strict"] = Field(default="fall_through", description=INERT_DESCRIPTION)
    skip_triples: Any = Field(default=None, exclude=True, repr=False, description=INERT_DESCRIPTION)

    rubric_pass_threshold: float | None = Field(default=None, ge=0.0, le=1.0, description="Set: every rubric gets a "
        "verdict, its weighted score must reach this. Unset: only rubrics with weights etc., at AgentV's 0.8.")
    gates: list[GateText] = Field(default_factory=list, description='Run-level conditions, e.g. "pass_rate >= 0.9" (--gate).')
    seed: int = Field(default=0, ge=0, description="Seed of the simulated judge's draws and retry jitter (--seed).")
    revision_max_iterations: int | None = Field(default=None, ge=1, le=20, description="Revise until satisfied: answer "
        "and grade up to this many times, sending failing criteria back to the answering model (None: off).")
    trust_checkpoint_code: bool = Field(
        default=False,
        description="Run callable traits stored as cloudpickle (karenina's format). Unpickling runs "
        "arbitrary code from the checkpoint; it happens in a worker process under the code time limit.",
    )

    # agentic (inert)
    agentic_parsing: bool = Field(default=False, description=INERT_DESCRIPTION)
    agentic_parsing_trigger: Literal["always", "dynamic"] = Field(default="always", description=INERT_DESCRIPTION)
    agentic_judge_context: Literal["workspace_only", "trace_and_workspace", "trace_only"] = Field(default="workspace_only", description=INERT_DESCRIPTION)
    agentic_parsing_max_turns: int = Field(default=15, ge=1, description=INERT_DESCRIPTION)
    agentic_parsing_timeout: float = Field(default=120.0, gt=0, description=INERT_DESCRIPTION)
    agentic_parsing_materialize_trace: bool = Field(default=False, description=INERT_DESCRIPTION)
    agentic_parsing_persist_trace: bool = Field(default=False, description=INERT_DESCRIPTION)
    agentic_rubric_strategy: Literal["individual", "shared"] = Field(default="individual", description=INERT_DESCRIPTION)
    agentic_rubric_parallel: bool = Field(default=False, description=INERT_DESCRIPTION)
    workspace_copy: bool = Field(default=True, description=INERT_DESCRIPTION)
    workspace_cleanup: bool = Field(default=True, description=INERT_DESCRIPTION)
    workspace_output_mode: Literal["none", "full", "produced"] = Field(default="none", description=INERT_DESCRIPTION)
    workspace_output_dir: str | None = Field(default=None, description=INERT_DESCRIPTION)
    workspace_output_exclude_patterns: list[str] | None = Field(default=None, description=INERT_DESCRIPTION)

    @model_validator(mode="before")
    @classmethod
    def _accept_karenina_keys(cls, data: Any) -> Any:
        """Drop serialized ``rubric_enabled`` and ``$schema``; fold ``<task>_instructions`` shortcuts."""
        if not isinstance(data, dict):
            return data
        data = apply_environment({k: v for k, v in data.items() if k not in {"rubric_enabled", "$schema"}})
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
        return search_tool_label(tool)

    @model_validator(mode="after")
    def _rules(self) -> VerificationConfig:
        problems: list[tuple[str, str]] = []
        self._check_models(problems)
        if self.deep_judgment_rubric_mode == "custom" and self.deep_judgment_rubric_config is None:
            problems.append(("deep_judgment_rubric_config", "deep_judgment_rubric_mode='custom' needs "
                             "deep_judgment_rubric_config; pass --deep-judgment-rubric-config FILE or set it in the preset"))
        if self.deep_judgment_mode == "reasoning_only" and self.deep_judgment_search_enabled:
            problems.append(("deep_judgment_search_enabled", "search needs excerpts, which deep_judgment_mode="
                             "'reasoning_only' skips; use deep_judgment_mode='full' or set deep_judgment_search_enabled=false"))
        if self.deep_judgment_search_enabled:
            check_search_tool("deep_judgment_search_tool", self.deep_judgment_search_tool, problems)
        if self.rubric_search_may_run:
            check_search_tool("deep_judgment_rubric_search_tool", self.deep_judgment_rubric_search_tool, problems)
        self._check_agentic(problems)
        raise_if(problems)
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
            if model.interface not in DEEP_AGENT_INTERFACES:
                problems.append(
                    (
                        f"parsing_models[{i}].interface",
                        f"agentic_parsing needs a deep-agent judge interface ({', '.join(sorted(DEEP_AGENT_INTERFACES))})",
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
    def template_enabled(self) -> bool:
        """True when ``evaluation_mode`` includes the answer template stages."""
        return uses_template(self.evaluation_mode)

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
                    f"unknown override {name!r}{did_you_mean(name, _VALID_OVERRIDES)}" for name in unknown
                ),
                hint="use a VerificationConfig field name or one of karenina's from_overrides keywords",
            )
        data: dict[str, Any] = _base_fields(base) if base is not None else {}
        fields: dict[str, tuple[str, Any]] = {}
        for key, value in given.items():
            if key in MODEL_OVERRIDES:
                continue
            target = OVERRIDE_ALIASES.get(key, key)
            if target in fields and fields[target][1] != value:
                raise ConfigError(
                    f"overrides {fields[target][0]!r} and {key!r} both set {target} to different values",
                    hint="give only one of them",
                )
            fields[target] = (key, value)
        data.update({target: value for target, (_, value) in fields.items()})
        apply_model_overrides(data, given, has_base=base is not None)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            lines = format_validation_error(exc, root=cls).splitlines()
            raise ConfigError(
                "invalid configuration after overrides:\n" + "\n".join(f"  {line}" for line in lines),
                hint="fix the listed values (in the preset or in the flags/overrides given)",
            ) from None


# --------------------------------------------------------------------------- from_overrides helpers
# (those that read VerificationConfig's fields; the rest are in verify.config.overrides)

_VALID_OVERRIDES = frozenset(VerificationConfig.model_fields) | frozenset(OVERRIDE_ALIASES) | MODEL_OVERRIDES


def _base_fields(base: VerificationConfig) -> dict[str, Any]:
    shared = {"replay_store", "skip_triples"}  # runtime objects: passed on, not copied
    # only the fields the base was given: defaults stay defaults, so "set explicitly" survives overrides
    given = base.model_fields_set | {"answering_models", "parsing_models"}
    data = {
        name: getattr(base, name) if name in shared else copy.deepcopy(getattr(base, name))
        for name in VerificationConfig.model_fields
        if name in given
    }
    for role in ("answering_models", "parsing_models"):
        data[role] = [model_dict(m) for m in data[role]]
    return data
