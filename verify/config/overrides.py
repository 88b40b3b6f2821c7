"""Helpers of :meth:`VerificationConfig.from_overrides <verify.config.verification.VerificationConfig.from_overrides>`:
karenina's keyword names and the model keywords (``answering_model``, ``parsing_id``, ...)."""

from __future__ import annotations

from typing import Any

from verify.config.models import ModelConfig
from verify.errors import ConfigError

__all__ = ["OVERRIDE_ALIASES"]

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
MODEL_OVERRIDES = frozenset(
    {f"{role}_{key}" for role in ("answering", "parsing") for key in _ROLE_KEYS}
    | {"temperature", "manual_traces"}
)


def model_dict(model: ModelConfig) -> dict[str, Any]:
    data = model.model_dump()  # python mode keeps SecretStr values; manual_traces is excluded
    if model.manual_traces is not None:
        data["manual_traces"] = dict(model.manual_traces)
    return data


def apply_model_overrides(data: dict[str, Any], given: dict[str, Any], *, has_base: bool) -> None:
    temperature = given.get("temperature")
    traces = given.get("manual_traces")
    for role in ("answering", "parsing"):
        key = f"{role}_models"
        ov = {k: given.get(f"{role}_{k}") for k in _ROLE_KEYS}
        models = [model_dict(m) if isinstance(m, ModelConfig) else dict(m) for m in data.get(key) or []]
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
