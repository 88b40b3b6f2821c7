"""Help that stays readable in an 80-column terminal.

typer's rich layout fits every flag into one table row and cuts long names to fit the width
(``--deep-judgment-rub…``: nine flags that look the same). The ``run`` command has dozens of long
karenina flag names, so its help uses click's layout instead, which puts a long name on a line of
its own and wraps only the description, with the same groups (rich help panels) as sections.
"""

from __future__ import annotations

from typing import Any

import typer.core

__all__ = ["GroupedHelpCommand"]


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
