"""karenina's ``VerificationConfig`` methods, so a karenina script runs after changing its imports.

Thin: each delegates to verify's own preset code (:mod:`verify.config.preset_files`), with karenina's
signatures and return shapes. The differences are verify's safety rules: a saved preset never
holds API keys or manual traces, and an existing preset file is not replaced.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from verify.config.prompts import FewShotConfig
    from verify.config.verification import VerificationConfig

__all__ = ["KareninaConfigMethods", "default_save_dir"]


def default_save_dir() -> Path:
    """Where ``save_preset`` writes without ``presets_dir``: ``$KARENINA_PRESETS_DIR``, else ./presets."""
    env = os.environ.get("KARENINA_PRESETS_DIR")
    return Path(env) if env else Path("presets")


class KareninaConfigMethods:
    """Mixed into :class:`~verify.config.verification.VerificationConfig`."""

    few_shot_config: FewShotConfig | None

    def get_few_shot_config(self) -> FewShotConfig | None:
        """The few-shot settings of this run, or None when none are set."""
        return self.few_shot_config

    def is_few_shot_enabled(self) -> bool:
        """Whether few-shot examples are added to answering prompts."""
        config = self.get_few_shot_config()
        return config is not None and config.source != "disabled"

    @classmethod
    def from_preset(cls, filepath: Path | str) -> VerificationConfig:
        """The config of a preset file (karenina's ``{"config": {...}}`` shape or a plain dump)."""
        from verify.config.preset_files import read_preset

        return cast("VerificationConfig", read_preset(cast(Any, cls), Path(filepath)))

    def save_preset(self, name: str, description: str | None = None,
                    presets_dir: Path | str | None = None) -> dict[str, Any]:
        """Write this config as ``<presets_dir>/<name as a file name>.json``; return karenina's
        metadata dict (``id``, ``name``, ``description``, ``filepath``, ``created_at``, ``updated_at``)."""
        import json

        from verify.config.preset_files import write_preset

        directory = Path(presets_dir) if presets_dir is not None else default_save_dir()
        directory.mkdir(parents=True, exist_ok=True)
        path = write_preset(self, directory, name, description)  # type: ignore[arg-type]
        saved = json.loads(path.read_text(encoding="utf-8"))
        return {"id": saved["id"], "name": saved["name"], "description": saved["description"],
                "filepath": str(path.resolve()), "created_at": saved["created_at"], "updated_at": saved["updated_at"]}

    @classmethod
    def sanitize_model_config(cls, model: dict[str, Any]) -> dict[str, Any]:
        """A model dict as a preset stores it: no credentials, interface-specific keys only."""
        from verify.config.preset_files import sanitized_model

        return sanitized_model(model)

    @classmethod
    def sanitize_preset_name(cls, name: str) -> str:
        """The preset's file name: lowercase, dashes, ``.json``."""
        from verify.config.preset_files import preset_file_name

        return preset_file_name(name)

    @classmethod
    def validate_preset_metadata(cls, name: str, description: str | None = None) -> None:
        """Raise ValueError for an empty or over-long name (100) or description (500), as karenina does."""
        if not isinstance(name, str) or not name.strip():
            raise ValueError("Preset name cannot be empty")
        if len(name) > 100:
            raise ValueError("Preset name cannot exceed 100 characters")
        if description is not None and len(description) > 500:
            raise ValueError("Preset description cannot exceed 500 characters")

    @classmethod
    def create_preset_structure(cls, preset_id: str, name: str, description: str | None,
                                config_dict: dict[str, Any], created_at: str, updated_at: str) -> dict[str, Any]:
        """karenina's preset file shape."""
        return {"id": preset_id, "name": name, "description": description, "config": config_dict,
                "created_at": created_at, "updated_at": updated_at}

