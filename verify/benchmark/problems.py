"""Located problems (and warnings) found while reading a checkpoint, collected so one error lists them all.

Also how they are worded: a value of the wrong type is named by what it is and what was expected
(``text is a number, expected text``), a place by question and trait (:func:`trait_where`); values
kept verbatim are checked for depth (:meth:`Problems.check_depth`), and trait names that differ only
in case or surrounding spaces are warned about (:func:`warn_similar_names`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from verify.errors import validation_lines
from verify.files import MAX_JSON_DEPTH, nesting_path, render_path

__all__ = [
    "MAX_PROBLEMS", "OPTIONAL_TEXT", "Problems", "build_model", "check_unique_names", "kind_of",
    "trait_where", "warn_similar_names", "wrong_type",
]

MAX_PROBLEMS = 10
OPTIONAL_TEXT = (str, type(None))  # isinstance() of an optional text field


class Problems:
    """Collects located one-line problems; keeps the first :data:`MAX_PROBLEMS` and counts the rest.

    ``warnings`` collects located lines about valid but suspicious input (they never fail a load).
    """

    def __init__(self, limit: int = MAX_PROBLEMS) -> None:
        self.items: list[str] = []
        self.warnings: list[str] = []
        self.dropped = 0
        self._limit = limit

    @property
    def count(self) -> int:
        return len(self.items) + self.dropped

    def add(self, where: str, message: str) -> None:
        if len(self.items) < self._limit:
            self.items.append(f"{where}: {message}")
        else:
            self.dropped += 1

    def warn(self, where: str, message: str) -> None:
        self.warnings.append(f"{where}: {message}")

    def wrong(self, where: str, obj: dict[str, Any], key: str, expected: str, missing: str) -> None:
        """Report ``obj[key]`` as ``missing`` (the key is absent) or as the wrong type of value."""
        self.add(where, missing if key not in obj else wrong_type(key, obj[key], expected))

    def optional_text(self, where: str, values: dict[str, Any]) -> None:
        """Each of ``values`` (``{"@id": ..., ...}``) must be null or text."""
        for key, value in values.items():
            if value is not None and not isinstance(value, str):
                self.add(where, wrong_type(key, value, "text"))

    def check_depth(self, where: str, what: str, value: Any) -> bool:
        """A value kept verbatim (unknown keys, property values) must not nest too deeply to copy or save."""
        kids = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        if not any(isinstance(kid, (dict, list)) for kid in kids):  # the common case: flat, or not a container
            return True
        path = nesting_path(value, MAX_JSON_DEPTH)
        if path is None:
            return True
        at = render_path(path[:3])
        inside = f" (inside {at}...)" if at else ""
        self.add(where, f"{what} is nested deeper than {MAX_JSON_DEPTH} levels{inside}; flatten it")
        return False

    def check_keys(self, where: str, extra: dict[str, Any]) -> None:
        """Unknown keys are kept verbatim for the round trip: each is checked with :meth:`check_depth`."""
        for key, value in extra.items():
            self.check_depth(where, f"key {key!r}", value)

    def __bool__(self) -> bool:
        return bool(self.items)


def check_unique_names(traits: Sequence[Any], where: Callable[[str], str], problems: Problems) -> None:
    seen: set[str] = set()
    for trait in traits:
        if trait.name in seen:
            problems.add(where(trait.name), "duplicate trait name; trait names must be unique")
        seen.add(trait.name)


def warn_similar_names(
    traits: Sequence[Any], where: str, problems: Problems, global_folded: dict[str, str] | None = None
) -> dict[str, str]:
    """Warn about trait names that differ only in case or surrounding spaces: within ``traits``, and
    against the global rubric's (``global_folded``, what this returned for it). Identical names are
    errors, reported elsewhere. Returns ``{folded name: the first trait name that folds to it}``."""
    seen: dict[str, str] = {}
    for trait in traits:
        key = trait.name.strip().casefold()
        other = global_folded.get(key) if global_folded else None
        label = "global trait"
        if other is None:
            other, label = seen.setdefault(key, trait.name), "trait"
        if other != trait.name:
            problems.warn(where, f"trait {trait.name!r} and {label} {other!r} differ only in case or surrounding "
                                 "spaces, so they are two separate traits; rename one if they are meant to be one")
    return seen


def kind_of(value: Any) -> str:
    """What a JSON value is, in words: ``text``, ``a number``, ``a list``, ``an object``, ``null``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({'true' if value else 'false'})"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text" if value.strip() else "empty text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def wrong_type(name: str, value: Any, expected: str) -> str:
    """``text is a number, expected text (the question)``."""
    return f"{name} is {kind_of(value)}, expected {expected}"


def build_model(cls: type[BaseModel], data: dict[str, Any], where: str, problems: Problems) -> Any:
    """``cls.model_validate(data)``; a ValidationError becomes located problems and None."""
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        for line in validation_lines(exc, root=cls):
            problems.add(where, line)
        return None


def trait_where(container: str | None, index: int, name: Any) -> str:
    """Location of a rating (``container`` None = top level): by trait name if it has one, else index."""
    if isinstance(name, str) and name.strip():
        return f"global trait {name!r}" if container is None else f"{container} / trait {name!r}"
    return f"rating[{index}] (top level)" if container is None else f"{container} / rating[{index}]"
