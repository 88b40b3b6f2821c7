"""The ``verify`` command's entry point (and ``python -m verify``).

``verify --help`` prints the top-level help from ``verify/help.txt``, which is the text the Typer app
renders (written by ``docs/gen_reference.py`` and checked against the app by ``tests/test_docs.py``), so
the most common first command answers without importing Typer or the CLI. Everything else goes to
:func:`verify.cli.main`.
"""

from __future__ import annotations

import shutil
import sys

__all__ = ["main"]

#: click wraps help at this width at most; below it the text would wrap differently, so the app renders it
HELP_WIDTH = 80


def main() -> None:
    if sys.argv[1:] == ["--help"] and shutil.get_terminal_size((HELP_WIDTH, 24)).columns >= HELP_WIDTH:
        from importlib.resources import files

        sys.stdout.write(files("verify").joinpath("help.txt").read_text(encoding="utf-8"))
        return
    from verify.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
