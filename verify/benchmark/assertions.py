"""promptfoo-style assertions in suites and tables, as deterministic traits.

In a suite a test's ``assertions`` list may hold, beside criteria, entries such as
``{type: contains, value: Paris}``, ``{type: regex, value: '^\\d+$'}``, ``{type: is-json}``,
``{type: json-schema, value: {...}}`` or ``{type: max-length, value: 200}`` (promptfoo's names; ``not-``
before a type negates it). Each becomes an :class:`AssertionTrait`: true/false, decided without a
model call, required unless it says ``required: false``. ``llm-rubric`` (promptfoo's judge assertion) is
a criterion, judged by the model. A CSV cell writes the same list in one line:
``contains:Paris; regex:^\\d+$; is-json`` (see :func:`parse_assert_cell`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from verify.benchmark.suite_fields import SuiteProblems, criterion_trait, slug, weighting_entry
from verify.benchmark.traits import ASSERTIONS, AssertionTrait, LLMTrait, RegexTrait

__all__ = ["ASSERTION_KEYS", "JUDGED", "assertion_entry", "assertion_trait", "is_assertion", "parse_assert_cell",
           "regex_entry"]

ASSERTION_KEYS = ("type", "value", "id", "weight", "required", "min_score")
JUDGED = "llm-rubric"
"""promptfoo's model-judged assertion: here a criterion (its value is the outcome to check)."""
_KINDS = {*ASSERTIONS, *(f"not-{a}" for a in ASSERTIONS)}
# a ';' starts a new assertion only when a known type and ':' (or the end) follow, so values may hold ';'
_SPLIT = re.compile(r";\s*(?=(?:not-)?(?:" + "|".join(map(re.escape, sorted(ASSERTIONS, key=len, reverse=True)))
                    + "|" + JUDGED + r")\s*(?::|;|$))")


def is_assertion(entry: Any) -> bool:
    """Whether a suite's assertions entry is a typed assertion (not a criterion or ``type: rubrics``)."""
    return isinstance(entry, dict) and (entry.get("type") in _KINDS or entry.get("type") == JUDGED)


def assertion_trait(where: str, raw: dict[str, Any], index: int, problems: SuiteProblems) -> LLMTrait | AssertionTrait | None:
    """One typed assertion as a trait; problems are located at ``where assertions[index]``."""
    here = f"{where} assertions[{index}]"
    problems.keys(here, raw, ASSERTION_KEYS)
    kind, value = str(raw["type"]), raw.get("value")
    if kind == JUDGED:
        criterion = {k: v for k, v in raw.items() if k in ("id", "weight", "required", "min_score")}
        return criterion_trait(where, {**criterion, "outcome": value}, index, problems, required=True)
    name = raw.get("id") if raw.get("id") is not None else default_name(kind, value)
    fields: dict[str, Any] = {"name": str(name), "assertion": kind, "value": value,
                              "description": describe(kind, value), "required": raw.get("required", True)}
    fields.update({k: raw[k] for k in ("weight",) if k in raw})
    try:
        return AssertionTrait(**fields)
    except ValidationError as exc:
        for error in exc.errors():
            field = ".".join(str(p) for p in error["loc"]) or str(kind)
            problems.add(f"{here} ({kind})", f"{field}: {error['msg'].removeprefix('Value error, ')}")
        return None


def default_name(kind: str, value: Any) -> str:
    """``contains-paris``: an assertion's trait name when it gives no ``id``."""
    return slug(kind if value is None else f"{kind} {_text(value)}")


def describe(kind: str, value: Any) -> str:
    """``contains 'Paris'``: the trait's description, shown wherever the trait is named."""
    return kind if value is None else f"{kind} {_text(value)!r}" if not isinstance(value, dict) else f"{kind} (schema)"


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else str(value)


def parse_assert_cell(text: str) -> list[dict[str, Any]]:
    """``contains:Paris; regex:^\\d+$; is-json; max-length:200`` -> assertion entries.

    ``type:value`` pairs separated by ``;``; a ``;`` inside a value is kept unless a known type and ``:``
    follow it. ``max-length`` values are numbers and ``json-schema`` values JSON; ``llm-rubric:TEXT`` is a
    criterion for the judge. An unknown type is returned as is, for the caller to report.
    """
    entries: list[dict[str, Any]] = []
    for part in _SPLIT.split(text.strip()):
        part = part.strip()
        if not part:
            continue
        kind, sep, value = part.partition(":")
        kind = kind.strip()
        entry: dict[str, Any] = {"type": kind}
        if sep:
            entry["value"] = _cell_value(kind, value.strip())
        entries.append(entry)
    return entries


def _cell_value(kind: str, value: str) -> Any:
    base = kind.removeprefix("not-")
    if base == "max-length" and value.isdigit():
        return int(value)
    if base == "json-schema":
        try:
            return json.loads(value)
        except ValueError:
            return value  # the trait says what a schema must be
    return value


def assertion_entry(trait: AssertionTrait) -> dict[str, Any]:
    """The suite entry a trait was read from (only what differs from the defaults)."""
    entry: dict[str, Any] = {"type": trait.assertion}
    if trait.value is not None:
        entry["value"] = trait.value
    if trait.name != default_name(trait.assertion, trait.value):
        entry["id"] = trait.name
    weighing = weighting_entry(trait)
    if not weighing.pop("required", False):
        weighing["required"] = False
    return {**entry, **weighing}


def regex_entry(trait: RegexTrait) -> dict[str, Any]:
    """A karenina regex trait as a ``regex`` assertion (``(?i)`` for a case-insensitive one, ``not-regex``
    for an inverted one), keeping its name, weight and bar; not required, as the regex trait was not."""
    pattern = trait.pattern if trait.case_sensitive else f"(?i){trait.pattern}"
    entry: dict[str, Any] = {"type": "not-regex" if trait.invert_result else "regex", "value": pattern,
                             "id": trait.name, **weighting_entry(trait)}
    entry.setdefault("required", False)
    return entry
