"""Preset files: load, save and list them.

A preset is either karenina's shape, ``{"id", "name", "description", "config": {...},
"created_at", "updated_at"}`` (only ``config`` is read; other top-level keys such as
``_comment_*`` are ignored), or a plain config dump ``{"answering_models": ..., ...}`` with an
optional ``$schema`` key. A bare name is looked up as ``<dir>/<name>.json`` in the given
directory, else in ``./presets`` and then in the ``presets/`` directory shipped with verify.
The file work is in :mod:`verify.config.preset_files`; this module binds it to :class:`VerificationConfig`.
"""

from __future__ import annotations

from pathlib import Path

from verify.config.preset_files import (
    default_presets_dirs,
    list_presets,
    preset_file_name,
    read_preset,
    sanitized_model,
    write_preset,
)
from verify.config.verification import VerificationConfig

__all__ = ["default_presets_dirs", "list_presets", "load_preset", "preset_file_name", "sanitized_model", "save_preset"]


def load_preset(ref: str | Path, presets_dir: Path | None = None) -> VerificationConfig:
    """Load and validate a preset given as a path or a bare name; raises :class:`~verify.errors.PresetError`."""
    return read_preset(VerificationConfig, ref, presets_dir)


def save_preset(config: VerificationConfig, path: str | Path, name: str, description: str | None = None,
                overwrite: bool = False) -> Path:
    """Write ``config`` as a karenina-shaped preset and return the file written.

    ``path`` is the file, or an existing directory (the file is then named after ``name`` as
    karenina does: lowercase, dashes, ``.json``). Credentials (API keys, credential headers, user
    info and key parameters of URLs) and manual traces are never written.
    Refuses to replace an existing file unless ``overwrite=True`` (which keeps its ``id`` and
    ``created_at``).
    """
    return write_preset(config, path, name, description, overwrite)
