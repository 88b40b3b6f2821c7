"""Where karenina is, for the tests that check verify's files with karenina's own code.

karenina is not a dependency: set ``KARENINA_PYTHON`` to an interpreter that has it (its own venv,
e.g. one made with ``pip install /path/to/karenina-*.whl``), or install it in this one. Tests that
need it are skipped otherwise.
"""

from __future__ import annotations

import importlib.util
import os
import sys

__all__ = ["karenina_python"]


def karenina_python() -> str | None:
    """An interpreter that can import karenina, or ``None``."""
    given = os.environ.get("KARENINA_PYTHON")
    if given:
        return given
    return sys.executable if importlib.util.find_spec("karenina") is not None else None
