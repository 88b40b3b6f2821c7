"""What the CLI shows of a built config: a secret-safe dump, and warnings about settings that do nothing."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from verify.secrets import FREE_FORM_FIELDS, mask_secrets, register_config_secrets

if TYPE_CHECKING:
    from verify.config.verification import VerificationConfig

__all__ = ["INERT_FIELDS", "config_to_dict", "config_warnings", "inert_settings"]


# --------------------------------------------------------------------------- dumps and messages


def config_to_dict(config: VerificationConfig, *, drop_secrets: bool = False) -> dict[str, Any]:
    """A JSON-safe dump of every field, safe to print or store: credentials are masked as
    ``"**********"`` (or, with ``drop_secrets``, left out, as a saved preset needs) wherever
    :mod:`verify.secrets` recognises them: API key fields, credential-named entries of the free-form
    settings (``extra_kwargs`` headers, ``[name, value]`` pairs...), credentials in URLs
    (``http://***@host``) and any string holding a registered secret. The config's own secrets are
    registered first, so they are masked wherever else they turn up. ``manual_traces``/
    ``replay_store``/``skip_triples`` are left out, and a callable search tool becomes
    ``"<callable name>"``."""
    register_config_secrets(config)
    data = config.model_dump(mode="json", by_alias=True)
    for owner in [data, *(data.get("answering_models") or []), *(data.get("parsing_models") or [])]:
        for name in FREE_FORM_FIELDS & owner.keys():
            owner[name] = mask_secrets(owner[name], drop=drop_secrets)  # nested headers too
    dumped: dict[str, Any] = mask_secrets(data, drop=drop_secrets, by_name=False)
    return dumped


_NO_MCP = ("verify connects to no MCP server; give the answering model verify's own tools instead "
           '(tools: "search", command runners)')

#: Every config field verify accepts but does not act on, with why: the one place that says so.
#: Paths are ``field`` (VerificationConfig), ``models.field`` (every answering and judge model),
#: ``prompt_config.field`` and ``few_shot_config.field``. A test checks that every other field is
#: read somewhere in the run. Set to anything but its default, each prints one warning line and is
#: listed in the results header.
INERT_FIELDS: dict[str, str] = {
    "parsing_only": "karenina's TaskEval mode; verify always answers and judges",
    "task_ordering": "verify runs tasks in checkpoint order",
    "replay_store": "karenina's replay store is not supported",
    "skip_triples": "karenina's replay store is not supported",
    "db_config": "verify writes results to files, not a database",
    "scenario_turn_limit": "multi-turn scenarios are not supported",
    "max_requeue_count": "verify retries calls (retry_policy) and resumes runs instead of requeueing",
    "replay_parse_on_hydration_mismatch": "karenina's replay store is not supported",
    "agentic_parsing": "agentic parsing is not supported",
    "agentic_parsing_trigger": "agentic parsing is not supported",
    "agentic_judge_context": "agentic parsing is not supported",
    "agentic_parsing_max_turns": "agentic parsing is not supported",
    "agentic_parsing_timeout": "agentic parsing is not supported",
    "agentic_parsing_materialize_trace": "agentic parsing is not supported",
    "agentic_parsing_persist_trace": "agentic parsing is not supported",
    "agentic_rubric_strategy": "agentic rubric traits are not supported",
    "agentic_rubric_parallel": "agentic rubric traits are not supported",
    "workspace_copy": "agent workspaces are not supported",
    "workspace_cleanup": "agent workspaces are not supported",
    "workspace_output_mode": "agent workspaces are not supported",
    "workspace_output_dir": "agent workspaces are not supported",
    "workspace_output_exclude_patterns": "agent workspaces are not supported",
    "retry_policy.timeout_escalation": "verify keeps one timeout per call (request_timeout)",
    "models.max_retries": "verify retries per error category: set retry_policy.<category>.max_attempts",
    "models.mcp_urls_dict": _NO_MCP,
    "models.mcp_tool_filter": _NO_MCP,
    "models.mcp_tool_description_overrides": _NO_MCP,
    "models.mcp_http_timeout": _NO_MCP,
    "models.mcp_sse_read_timeout": _NO_MCP,
    "models.agent_runtime": "verify's tool loop has no agent runtime to configure (tools, tool_rounds, agent_timeout)",
    "models.agent_middleware": "verify's tool loop has no middleware",
    "models.max_context_tokens": "verify's tool loop does not trim or summarise the conversation",
    "prompt_config.agentic_parsing": "agentic parsing is not supported",
}


def _asks_for_it(owner: BaseModel, name: str, value: Any) -> bool:
    return bool(value != type(owner).model_fields[name].get_default(call_default_factory=True))


def inert_settings(config: VerificationConfig) -> list[str]:
    """The inert fields set to something other than their default, as ``path=value``, in
    :data:`INERT_FIELDS` order (models named by id)."""
    found: list[str] = []
    models = [*config.answering_models, *config.parsing_models]
    for path in INERT_FIELDS:
        head, _, tail = path.partition(".")
        if not tail:
            owners: list[tuple[str, BaseModel]] = [("", config)]
            name = head
        elif head == "models":
            owners = [(f"model {m.id!r} ", m) for m in models]
            name = tail
        else:
            part = getattr(config, head)
            owners = [("", part)] if isinstance(part, BaseModel) else []
            name = tail
        for label, owner in owners:
            value = getattr(owner, name)
            if _asks_for_it(owner, name, value):
                shown = path if not label else f"{label}{tail}"
                found.append(f"{shown}={json.dumps(value, default=str)}")
    return found


def config_warnings(config: VerificationConfig) -> list[str]:
    """Valid but probably unintended settings, one line each, for stderr and the results header."""
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
    if config.deep_judgment_rubric_strategy == "batched" and config.deep_judgment_rubric_mode == "disabled":
        notes.append("deep_judgment_rubric_strategy='batched' has no effect while deep_judgment_rubric_mode='disabled'")
    if config.deep_judgment_rubric_config is not None and config.deep_judgment_rubric_mode != "custom":
        notes.append("deep_judgment_rubric_config is only read in deep_judgment_rubric_mode='custom'")
    for setting in inert_settings(config):
        path = setting.split("=", 1)[0]
        key = path if path in INERT_FIELDS else f"models.{path.rsplit(' ', 1)[-1]}"
        notes.append(f"{setting} is not used by verify: {INERT_FIELDS.get(key, 'not supported')}")
    return notes
