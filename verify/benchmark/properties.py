"""schema.org ``PropertyValue`` lists as checkpoints store them: reading them into values, writing them back.

Used by the trait codec (:mod:`verify.benchmark.ratings`), questions and the benchmark's top level.
"""

from __future__ import annotations

from typing import Any

from verify.benchmark.problems import Problems, kind_of, wrong_type
from verify.files import JsonProblem, parse_json

__all__ = ["json_value", "property_value", "read_properties"]


def read_properties(
    raw: Any, known: frozenset[str] | None, where: str, problems: Problems
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Split ``additionalProperty`` into {known name: value} and the verbatim unknown entries.

    ``known=None`` treats every name as known. A PropertyValue without ``value`` reads as None; a
    repeated name keeps the last value (as in karenina).
    """
    values: dict[str, Any] = {}
    extras: list[dict[str, Any]] = []
    if raw is not None and not isinstance(raw, list):
        problems.add(where, wrong_type("additionalProperty", raw, "a list of PropertyValue objects"))
        return values, extras
    for i, entry in enumerate(raw or []):
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str):
            _bad_property(i, entry, where, problems)
        elif known is None or name in known:
            value = entry.get("value")
            if not isinstance(value, (dict, list)) or problems.check_depth(where, f"property {name!r}", value):
                values[name] = value
        elif problems.check_depth(where, f"property {name!r}", entry):
            extras.append(entry)
    return values, extras


def _bad_property(index: int, entry: Any, where: str, problems: Problems) -> None:
    at = f"additionalProperty[{index}]"
    if not isinstance(entry, dict):
        problems.add(where, wrong_type(at, entry, "a PropertyValue object"))
    elif "name" not in entry:
        problems.add(where, f"{at} is not a PropertyValue with a string 'name'")
    else:
        problems.add(where, wrong_type(f"{at}.name", entry["name"], "text"))


def json_value(value: Any, want: type, what: str, where: str, problems: Problems) -> Any:
    """A value stored either directly or as a JSON string (karenina accepts both); None if bad."""
    if isinstance(value, str) and want is not str:
        try:
            value = parse_json(value)
        except JsonProblem as exc:
            problems.add(where, f"{what} is a string but not valid JSON ({exc.problem})")
            return None
    if not isinstance(value, want):
        expected = "a list" if want is list else "an object" if want is dict else want.__name__
        problems.add(where, f"{what} is {kind_of(value)}, expected {expected} (or a JSON string of one)")
        return None
    return value


def property_value(name: str, value: Any) -> dict[str, Any]:
    """A PropertyValue; a None value has no ``value`` key (karenina dumps with exclude_none)."""
    entry: dict[str, Any] = {"@type": "PropertyValue", "name": name}
    if value is not None:
        entry["value"] = value
    return entry
