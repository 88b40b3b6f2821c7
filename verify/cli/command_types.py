"""The command line's click classes: ``verify FILE`` runs, a mistyped command is named, and help stays
readable in an 80-column terminal.

typer's rich layout fits every flag into one table row and cuts long names to fit the width
(``--deep-judgment-rub…``: nine flags that look the same). The ``run`` command has dozens of long
karenina flag names, so its help uses click's layout instead, which puts a long name on a line of
its own and wraps only the description, with the same groups (rich help panels) as sections.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer.core

__all__ = ["GroupedHelpCommand", "RunByDefault", "looks_like_command"]


class GroupedHelpCommand(typer.core.TyperCommand):
    """A command whose ``--help`` never cuts an option name, grouped by each option's panel."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self.rich_markup_mode = None  # typer then falls back to click's formatter (below)
        super().format_help(ctx, formatter)

    def format_options(self, ctx: Any, formatter: Any) -> None:
        groups: dict[str, list[tuple[str, str]]] = {"Arguments": [], "Options": []}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                default = "Arguments" if isinstance(param, typer.core.TyperArgument) else "Options"
                panel = getattr(param, "rich_help_panel", None) or default
                groups.setdefault(panel, []).append(record)
        for name, rows in groups.items():
            if rows:
                with formatter.section(name):
                    formatter.write_dl(rows)


class RunByDefault(typer.core.TyperGroup):
    """``verify FILE ...`` runs (the ``run`` command, as karenina's ``verify``); ``verify report ...``
    is a command of its own."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            if looks_like_command(args):
                names = ", ".join(sorted(self.commands))
                ctx.fail(f"unknown command {args[0]!r}; the commands are {names} "
                         "(or give a checkpoint or suite FILE to run it)")
            args = ["run", *args]
        return super().parse_args(ctx, args)


def looks_like_command(args: list[str]) -> bool:
    """``verify eval suite.yaml``: a bare word that names no file, followed by more arguments, is a
    mistyped command rather than the BENCHMARK of a run (which would fail on its extra argument)."""
    word = args[0]
    return (len(args) > 1 and not word.startswith("-") and not any(c in word for c in "./\\")
            and not Path(word).exists() and not args[1].startswith("-"))
