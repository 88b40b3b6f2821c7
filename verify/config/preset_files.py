"""Preset files: read, write and list them, for any config class (see :mod:`verify.config.preset`).

A preset is either karenina's shape, ``{"id", "name", "description", "config": {...},
"created_at", "updated_at"}`` (only ``config`` is read; other top-level keys such as
``_comment_*`` are ignored), or a plain config dump ``{"answering_models": ..., ...}`` with an
optional ``$schema`` key. A bare name is looked up as ``<dir>/<name>.json`` in the given
directory, else in ``./presets`` and then in the ``presets/`` directory shipped with verify.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from verify.config.models import ModelConfig, RetryPolicy
from verify.config.permissions import PERMISSION_FIELDS
from verify.config.report import config_to_dict
from verify.errors import PresetError, format_validation_error
from verify.files import JsonProblem, read_text, write_atomic

if TYPE_CHECKING:
    from verify.config.verification import VerificationConfig

C = TypeVar("C", bound="VerificationConfig")

log = logging.getLogger("verify")

__all__ = ["default_presets_dirs", "list_presets", "preset_file_name", "read_preset", "sanitized_model", "write_preset"]

_SECRET_FIELDS = ("endpoint_api_key", "anthropic_api_key")
_ALWAYS_KEPT = ("id", "model_provider", "model_name", "temperature", "interface", "system_prompt")
#: verify's own fields (karenina's config classes forbid unknown keys): a preset leaves them out while
#: they hold their defaults, so karenina loads a preset that uses none of verify's features
VERIFY_ONLY_FIELDS = frozenset({
    "deep_judgment_rubric_search_enabled", "deep_judgment_rubric_strategy", "gates", "revision_max_iterations",
    "rubric_pass_threshold", "seed", "transcript_extractor", "trust_checkpoint_code",
})
VERIFY_ONLY_MODEL_FIELDS = frozenset({"max_concurrent_requests", "tool_rounds", "tools"})
VERIFY_ONLY_RETRY_FIELDS = frozenset({"jitter", "breaker_failures", "breaker_cooldown_seconds"})


def default_presets_dirs() -> list[Path]:
    """``./presets`` (relative to the working directory), then the presets shipped with verify."""
    shipped = Path(__file__).resolve().parent / "presets"  # package data: ships in the wheel
    dirs = [Path.cwd() / "presets", shipped]
    unique: list[Path] = []
    for d in dirs:
        if d.is_dir() and d.resolve() not in {u.resolve() for u in unique}:
            unique.append(d)
    return unique


def _search_dirs(presets_dir: Path | None) -> list[Path]:
    return [Path(presets_dir)] if presets_dir is not None else default_presets_dirs()


def list_presets(presets_dir: Path | None = None) -> list[Path]:
    """The ``*.json`` presets in ``presets_dir`` (or the default directories; the first of a name wins)."""
    found: dict[str, Path] = {}
    for directory in _search_dirs(presets_dir):
        if directory.is_dir():
            for path in sorted(directory.glob("*.json")):
                found.setdefault(path.stem, path)
    return sorted(found.values(), key=lambda p: p.stem)


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _resolve(ref: str | Path, presets_dir: Path | None) -> Path:
    path = Path(ref)
    if path.is_file():
        return path
    is_bare = len(path.parts) == 1 and not str(ref).startswith(".")
    if is_bare:
        name = path.stem if path.suffix == ".json" else path.name
        for directory in _search_dirs(presets_dir):
            candidate = directory / f"{name}.json"
            if candidate.is_file():
                return candidate
    available = ", ".join(p.stem for p in list_presets(presets_dir)) or "none"
    where = ", ".join(_display(d) for d in _search_dirs(presets_dir)) or "./presets"
    raise PresetError(
        f"preset {str(ref)!r} not found (looked in {where if is_bare else 'that path'}); available presets: {available}",
        hint="pass a path to a preset file, or one of the names listed",
    )


def read_preset(cls: type[C], ref: str | Path, presets_dir: Path | None = None) -> C:
    """Load and validate a preset given as a path or a bare name; raises :class:`PresetError`."""
    path = _resolve(ref, presets_dir)
    source = f"preset {_display(path)}"
    try:
        text = read_text(path)
    except JsonProblem as exc:
        raise PresetError(f"{source}: {exc.problem}", hint=exc.hint) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PresetError(
            f"{source}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            hint='fix the JSON syntax (JSON allows no comments or trailing commas; use "_comment" keys)',
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PresetError(f"{source}: cannot be read: {exc}") from None
    if not isinstance(data, dict):
        raise PresetError(f"{source}: expected a JSON object, found {type(data).__name__}")
    config, prefix = _config_part(data, source, cls)
    config = _without_permissions(config, source)
    try:
        return cls.model_validate(config)
    except ValidationError as exc:
        unknown = any(err["type"] == "extra_forbidden" for err in exc.errors())
        raise PresetError(
            format_validation_error(exc, source, prefix=prefix, root=cls),
            hint=(
                'unknown keys inside the config are rejected (put comments in top-level "_comment" keys); '
                if unknown
                else ""
            )
            + "compare with a shipped preset such as verify/config/presets/demo.json",
        ) from None


def _without_permissions(config: dict[str, Any], source: str) -> dict[str, Any]:
    """The config without the permission fields it sets: a preset never grants them (a warning says how)."""
    given = sorted(name for name in PERMISSION_FIELDS if config.get(name))
    if given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        log.warning("%s sets %s: ignored, permissions never come from a file; pass %s on the command line "
                    "(or %s in Python) each run", source, ", ".join(given), flags, ", ".join(f"{n}=True" for n in given))
    return {k: v for k, v in config.items() if k not in PERMISSION_FIELDS}


def _config_part(data: dict[str, Any], source: str, cls: type[VerificationConfig]) -> tuple[dict[str, Any], str]:
    """The config object of a karenina preset or a plain dump, and its path prefix for messages."""
    if "config" in data:
        config = data["config"]
        if not isinstance(config, dict) or not config:
            raise PresetError(
                f'{source}: "config" must be a non-empty object',
                hint='put the VerificationConfig fields (answering_models, parsing_models, ...) inside "config"',
            )
        return config, "config."
    plain = {k: v for k, v in data.items() if not k.startswith("_comment")}
    if not plain.keys() & set(cls.model_fields):
        raise PresetError(
            f'{source}: no "config" object and no config fields found',
            hint='a preset is {"config": {...}} (karenina) or a plain config with answering_models/parsing_models',
        )
    return plain, ""


def _drop_defaults(data: dict[str, Any], fields: dict[str, Any], names: frozenset[str]) -> None:
    for key in [k for k in data if k in names and data[k] == fields[k].get_default(call_default_factory=True)]:
        del data[key]


def sanitized_model(model: dict[str, Any]) -> dict[str, Any]:
    """Drop API keys, manual traces, unset optional fields and verify's own fields at their defaults
    (other credentials are already out)."""
    return {
        key: value
        for key, value in model.items()
        if key not in _SECRET_FIELDS and key != "manual_traces" and (key in _ALWAYS_KEPT or value is not None)
        and not (key in VERIFY_ONLY_MODEL_FIELDS and value == ModelConfig.model_fields[key].default)
    }


def preset_file_name(name: str) -> str:
    slug = re.sub(r"[^a-z0-9-]", "", name.strip().lower().replace(" ", "-"))
    slug = re.sub(r"-{2,}", "-", slug).strip("-")[:96]
    return f"{slug or 'preset'}.json"


def write_preset(
    config: VerificationConfig,
    path: str | Path,
    name: str,
    description: str | None = None,
    overwrite: bool = False,
) -> Path:
    """Write ``config`` as a karenina-shaped preset and return the file written.

    ``path`` is the file, or an existing directory (the file is then named after ``name`` as
    karenina does: lowercase, dashes, ``.json``). Credentials (API keys, credential headers, user
    info and key parameters of URLs) and manual traces are never written.
    Refuses to replace an existing file unless ``overwrite=True`` (which keeps its ``id`` and
    ``created_at``).
    """
    if not 1 <= len(name.strip()) <= 100:
        raise PresetError("preset name must be 1 to 100 characters", hint="pass a shorter, non-empty name")
    if description is not None and len(description) > 500:
        raise PresetError("preset description must be at most 500 characters")
    for field in ("deep_judgment_search_tool", "deep_judgment_rubric_search_tool"):
        if not isinstance(getattr(config, field), str):
            raise PresetError(
                f"cannot save {field}: a Python callable cannot be stored in a preset",
                hint="set it to 'tavily' or 'simulated' before saving, and pass the callable from Python",
            )
    target = Path(path)
    if target.is_dir():
        target = target / preset_file_name(name)
    old: dict[str, Any] = {}
    if target.exists():
        if not overwrite:
            raise PresetError(
                f"preset {_display(target)} already exists", hint="pass overwrite=True or choose another name"
            )
        try:
            loaded = json.loads(target.read_text(encoding="utf-8"))
            old = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            old = {}
    dumped = config_to_dict(config, drop_secrets=True)  # URLs lose their credentials, headers their keys
    for permission in PERMISSION_FIELDS:  # never written: a preset cannot grant them (see read_preset)
        dumped.pop(permission, None)
    _drop_defaults(dumped, type(config).model_fields, VERIFY_ONLY_FIELDS)
    if isinstance(dumped.get("retry_policy"), dict):
        _drop_defaults(dumped["retry_policy"], RetryPolicy.model_fields, VERIFY_ONLY_RETRY_FIELDS)
    for key in ("async_max_workers", "workspace_output_exclude_patterns"):  # unset: karenina's own default
        if dumped.get(key) is None:
            dumped.pop(key, None)
    for role in ("answering_models", "parsing_models"):
        dumped[role] = [sanitized_model(m) for m in dumped[role]]
    try:
        type(config).model_validate(dumped)  # what we write must load again
    except ValidationError as exc:
        raise PresetError(
            "cannot save preset: without its secrets and manual traces the config would not load:\n"
            + format_validation_error(exc, prefix="config.", root=type(config)),
            hint="API keys and manual traces are never written; pass them at run time instead",
        ) from None
    now = datetime.now(UTC).isoformat()
    preset = {
        "id": str(old.get("id") or uuid.uuid4()),
        "name": name.strip(),
        "description": description,
        "config": dumped,
        "created_at": old.get("created_at") or now,
        "updated_at": now,
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, json.dumps(preset, indent=2, ensure_ascii=False) + "\n")
    return target
