"""Reading a judge's verdict on a trait: the reply model to ask for, and what a reply value means.

Real judges are imperfect: they answer a literal trait with the class's description instead of
its name, change a trait name's case or spaces, give 2.5 or 7 on a 1..5 scale. One definition here
serves the batch calls, the single-trait calls and deep judgment's score step:

* :func:`match_label` maps a label to a class name: exactly, then ignoring case, spaces and
  punctuation, then by the class's description ("name: description" too); a lenient match is
  recorded (``TraitOutcome.label_read_as``);
* :func:`match_names` finds each asked trait among the names a batch reply used;
* :func:`check_score` validates one raw score; out-of-range values are invalid, never clamped.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, create_model

from verify.benchmark.traits import LLMTrait
from verify.judging import prompts
from verify.llm.structured import Check
from verify.results.models import Score, TraitOutcome

__all__ = [
    "Conflicting",
    "check_label",
    "check_score",
    "distinct",
    "match_label",
    "match_names",
    "read_verdict",
    "verdict_check",
    "verdict_schema",
]

_SEPARATORS = re.compile(r"[\s_\-:]+")
_TRUE = frozenset({"true", "1", "yes", "met", "pass", "passed", "satisfied"})
_FALSE = frozenset({"false", "0", "no", "not met", "fail", "failed", "not satisfied"})
_INTEGER = re.compile(r"\s*(-?\d+)\s*(?:(?:/|out of)\s*(\d+))?\s*\.?\s*", re.IGNORECASE)
_EDGE_PUNCTUATION = " \t\n\"'`*.,;:!()[]"


def _key(text: str) -> str:
    """A label or name as compared leniently: case, runs of spaces/underscores/hyphens and edge punctuation ignored."""
    return _SEPARATORS.sub(" ", text.strip(_EDGE_PUNCTUATION)).strip().casefold()


@dataclass(frozen=True)
class Conflicting:
    """A reply that gives one trait two different values (``formal``, then ``casual``): neither is
    taken. The trait is an invalid reply, asked again with the values named; identical repeats are
    one value, not a conflict."""

    values: tuple[Any, ...]

    @property
    def problem(self) -> str:
        return ("given more than once with different values (" + ", then ".join(repr(v) for v in self.values)
                + "); give exactly one")


def distinct(values: Iterable[Any]) -> Any:
    """The one value ``values`` repeat, or :class:`Conflicting` when they differ."""
    found: list[Any] = []
    for value in values:
        if value not in found:
            found.append(value)
    return found[0] if len(found) == 1 else Conflicting(tuple(found))


def match_label(trait: LLMTrait, label: str) -> tuple[str, bool] | None:
    """The class ``label`` names, and whether the match was lenient; None when it names none (or two)."""
    names = trait.class_names
    if label in names:
        return label, False
    key = _key(label)
    if not key:
        return None
    found = {n for n in names if _key(n) == key}
    if not found:
        for name, description in (trait.classes or {}).items():
            desc = _key(description or "")
            # the description itself, or "name: description" / "name - description"
            if desc and key in (desc, f"{_key(name)} {desc}"):
                found.add(name)
    if len(found) != 1:
        return None
    return found.pop(), True


def check_label(trait: LLMTrait, label: Any) -> TraitOutcome:
    """One raw label as an outcome: scored with the class index, or unscored as an invalid reply."""
    if isinstance(label, Conflicting):
        return TraitOutcome(status="unscored", reason=label.problem, unscored_category="invalid_reply")
    matched = match_label(trait, label) if isinstance(label, str) else None
    if matched is None:
        return TraitOutcome(status="unscored", reason=f"label {label!r} is not one of {trait.class_names}",
                            unscored_category="invalid_reply")
    name, lenient = matched
    return TraitOutcome(status="scored", score=trait.class_names.index(name), label=name,
                        label_read_as=label if lenient else None)


def check_score(trait: LLMTrait, value: Any) -> TraitOutcome:
    """Validate one raw batch value against the trait; out-of-range values are unscored, not clamped."""
    def invalid(reason: str) -> TraitOutcome:
        return TraitOutcome(status="unscored", reason=reason, unscored_category="invalid_reply")

    if isinstance(value, Conflicting):
        return invalid(value.problem)
    if trait.kind == "boolean":
        if isinstance(value, bool):
            return TraitOutcome(status="scored", score=value)
        word = _key(str(value)) if isinstance(value, int | str) else ""
        if word in _TRUE or word in _FALSE:  # "True", "yes", "met": a string where a boolean is meant
            return TraitOutcome(status="scored", score=word in _TRUE)
        return invalid(f"expected true/false, got {value!r}")
    if isinstance(value, str) and (found := _INTEGER.fullmatch(value)) and (
            found.group(2) is None or (hi := trait.max_score) is not None and int(found.group(2)) == hi):
        value = int(found.group(1))  # "4", "4/5", "4 out of 5" (out of the trait's own maximum)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or int(value) != value:
        return invalid(f"expected an integer score, got {value!r}")
    lo, hi = trait.min_score, trait.max_score
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        return invalid(f"score {value} outside [{lo}, {hi}]")
    return TraitOutcome(status="scored", score=int(value))


def match_names(values: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """Each asked trait name mapped to the value the reply gave it, also under a leniently equal name.

    Names the reply invented are left out; two reply names that are leniently the same name give
    that trait twice: one value when they agree, else :class:`Conflicting`.
    """
    by_key: dict[str, list[str]] = {}
    for said in values:
        by_key.setdefault(_key(said), []).append(said)
    found: dict[str, Any] = {}
    asked = list(names)
    for name in asked:
        # another asked trait's own name is that trait's entry, never a second entry of this one
        candidates = [c for c in by_key.get(_key(name), []) if c == name or c not in asked]
        if name in values and len(candidates) <= 1:
            found[name] = values[name]
        elif candidates:
            found[name] = distinct(values[c] for c in candidates)
    return found


def verdict_schema(trait: LLMTrait) -> type[BaseModel]:
    """The reply model for a single verdict, with the trait's bounds built in (labels are checked by
    :func:`verdict_check`, so a description given for a class can still be read)."""
    if trait.kind == "boolean":
        return prompts.SingleBooleanScore
    if trait.kind == "literal":
        return _literal_schema(tuple(trait.class_names))
    return _numeric_schema(trait.min_score, trait.max_score)


def verdict_check(trait: LLMTrait) -> Check | None:
    """The check that sends an unknown label back to the judge with the class names."""
    if trait.kind != "literal":
        return None

    def check(_raw: dict[str, Any], value: Any) -> str | None:
        label = value.classification
        if match_label(trait, label) is None:
            return f"{label!r} is not one of the class names {trait.class_names}; answer with one class name"
        return None

    return check


# Built once per distinct bounds / class list: building a model class (and then its JSON schema,
# cached per class by verify.llm.structured) costs about a millisecond per score call otherwise.
@functools.lru_cache(maxsize=256)
def _numeric_schema(lo: int | None, hi: int | None) -> type[BaseModel]:
    return create_model(
        "SingleNumericScore", score=(int, Field(ge=lo, le=hi, description=f"integer {lo}..{hi}"))
    )


@functools.lru_cache(maxsize=256)
def _literal_schema(names: tuple[str, ...]) -> type[BaseModel]:
    return create_model(
        "SingleLiteralClassification",
        classification=(str, Field(description="exactly one class name", json_schema_extra={"enum": list(names)})),
    )


def read_verdict(trait: LLMTrait, value: BaseModel) -> TraitOutcome:
    """A validated single verdict as a scored outcome (literal traits score as the class index)."""
    data: dict[str, Any] = value.model_dump()
    if trait.kind == "boolean":
        return TraitOutcome(status="scored", score=bool(data["result"]))
    if trait.kind == "literal":
        return check_label(trait, str(data["classification"]))
    score: Score = int(data["score"])
    return TraitOutcome(status="scored", score=score)
