"""What the CLI shows of a built config: a secret-safe dump, and warnings about settings that do nothing."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from verify.secrets import mask_secrets

if TYPE_CHECKING:
    from verify.config.verification import VerificationConfig

__all__ = ["config_to_dict", "config_warnings"]


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
                model["extra_kwargs"] = mask_secrets(extra)  # nested headers too
    return data




@functools.cache
def _defaults_of_inert() -> dict[str, Any]:
    """The default of every inert field of :class:`~verify.config.verification.VerificationConfig`, by name."""
    from verify.config.verification import (
        VerificationConfig,  # deferred: verify.config.verification imports this module
    )

    return {
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
    inert = [name for name, default in _defaults_of_inert().items() if getattr(config, name) != default]
    if inert:
        notes.append(f"ignored by verify (karenina-only features): {', '.join(inert)}")
    agent_fields = ("mcp_urls_dict", "agent_runtime", "agent_middleware")
    for role in ("answering_models", "parsing_models"):
        for model in getattr(config, role):
            used = [f for f in agent_fields if getattr(model, f)]
            if used:
                notes.append(f"{role} {model.id!r}: {', '.join(used)} ignored (verify runs no agents)")
    return notes
