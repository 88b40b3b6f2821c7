"""Atomic file writes: the one way verify replaces a file (exports, checkpoints, presets).

The text goes to a hidden temporary file in the target's folder, is flushed and fsynced, keeps the
old file's permissions, and only then replaces the target (``os.replace``), so a crash or a full
disk never leaves half a file where the old one was, and no temporary file is left behind.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

__all__ = ["atomic_writer", "write_atomic"]


@contextmanager
def atomic_writer(path: Path) -> Iterator[IO[str]]:
    """A text handle whose content replaces ``path`` when the block ends without an exception."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.partial")
    try:
        with open(tmp, "x", encoding="utf-8", newline="") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            shutil.copymode(path, tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically."""
    with atomic_writer(path) as handle:
        handle.write(text)
