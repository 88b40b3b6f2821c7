"""``verify init [DIR]``: write a small project that runs as written, offline.

The files are copies of the package's own examples (``verify/examples``), so the project a user
starts from is the suite the tests run: the example suite and its grader prompt, the offline preset
(the simulated judge), the shipped ``local-endpoint`` preset (a local OpenAI-compatible server) and
a README of next steps.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Annotated

import typer

from verify.errors import UserError

__all__ = ["PROJECT_FILES", "init", "write_project"]

#: The project's files: path in the project -> (package folder, file name) of the source.
PROJECT_FILES: dict[str, tuple[str, str]] = {
    "suite.yaml": ("examples/suite", "suite.yaml"),
    "quality_rubric.txt": ("examples/suite", "quality_rubric.txt"),
    "presets/offline.json": ("examples/suite", "offline.json"),
    "presets/local.json": ("config/presets", "local-endpoint.json"),
    "README.md": ("examples/init", "README.md"),
}


def write_project(folder: Path, *, overwrite: bool = False) -> list[Path]:
    """Write the project's files into ``folder`` (created if missing); an existing file is replaced
    only with ``overwrite``, and then nothing is written until every name has been checked."""
    targets = {folder / name: source for name, source in PROJECT_FILES.items()}
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{folder} exists and is not a folder", "give verify init a new or existing folder")
    taken = [path for path in targets if path.exists()]
    if taken and not overwrite:
        names = ", ".join(str(p) for p in taken)
        raise UserError(f"verify init would replace {names}", "choose an empty folder, or pass --overwrite")
    root = resources.files("verify")
    for path, (package_dir, name) in targets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(root.joinpath(package_dir, name).read_bytes())
    return list(targets)


def init(
    folder: Annotated[Path, typer.Argument(help="the project folder (created if missing)")] = Path("."),
    overwrite: Annotated[bool, typer.Option(help="replace files of an earlier verify init")] = False,
) -> None:
    """Write a small project that runs offline as written: a suite, recorded answers, two presets, a README."""
    from verify.secrets import scrub

    try:
        written = write_project(folder, overwrite=overwrite)
    except UserError as exc:
        typer.secho(f"error: {scrub(exc.message)}", err=True, fg="red")
        if exc.hint:
            typer.echo(f"hint: {scrub(exc.hint)}", err=True)
        raise typer.Exit(1) from None
    for path in written:
        typer.echo(f"wrote {path}")
    enter = "" if folder == Path(".") else f"cd {folder} && "
    typer.echo(f"next: {enter}verify suite.yaml --preset offline   (offline; README.md says what comes next)")
