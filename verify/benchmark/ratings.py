"""Rubric traits <-> karenina's schema.org ``Rating`` objects, with located problem reporting.

A checkpoint stores each trait as a ``Rating`` whose ``additionalType`` names the trait family and
scope (``karenina:GlobalRegexTrait``, ``karenina:QuestionSpecificMetricRubricTrait``, ...) and whose
``additionalProperty`` list carries its settings. :func:`decode_ratings` turns a ``rating`` list into
trait models, reporting every problem to a :class:`Problems` collector instead of raising;
:func:`encode_trait` writes a trait back in karenina's layout, except that ``deep_judgment_*``
settings are always kept, unknown properties are written back verbatim, and the rubric-verdict
fields (``weight``, ``required``, ``pass_threshold``, ``score_ranges``: :mod:`verify.benchmark.weighting`)
are extra properties, written when set (karenina ignores them). Generic property helpers are in
:mod:`verify.benchmark.properties`.
"""

from __future__ import annotations

import base64
import binascii
import json
import sys
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel

from verify.benchmark.judge_ratings import GRADER_PROPS, JUDGE_PROP, grader_props, judge_data, judge_props
from verify.benchmark.problems import Problems, build_model, kind_of, trait_where, wrong_type
from verify.benchmark.properties import json_value, property_value, read_properties
from verify.benchmark.traits import (
    JSON_ASSERTIONS,
    AgenticTrait,
    AssertionTrait,
    CallableTrait,
    LLMTrait,
    MetricTrait,
    RegexTrait,
    Rubric,
    SchemaJudgeTrait,
)
from verify.benchmark.weighting import WEIGHTING_PROPS, read_score_ranges, weighting_props

Scope = Literal["global", "question"]
_FLOAT_MAX = sys.float_info.max
AnyTrait = LLMTrait | AssertionTrait | RegexTrait | CallableTrait | MetricTrait | AgenticTrait | SchemaJudgeTrait

PREFIX = "karenina:"
# additionalType suffix (after Global / QuestionSpecific) -> trait family
FAMILIES: dict[str, str] = {
    "RubricTrait": "llm", "LLMRubricTrait": "llm", "RegexTrait": "regex", "CallableTrait": "callable",
    "AssertionTrait": "assertion",
    "MetricRubricTrait": "metric", "AgenticRubricTrait": "agentic", "DynamicRubricTrait": "dynamic",
}
_CLASSES: dict[str, type[BaseModel]] = {
    "llm": LLMTrait, "regex": RegexTrait, "callable": CallableTrait, "metric": MetricTrait,
    "agentic": AgenticTrait,
}
# An assertion a regex states is karenina's RegexTrait (karenina runs its pattern) with these two properties
# besides; is-json and json-schema are verify's AssertionTrait, which karenina refuses rather than misjudges.
ASSERTION_PROPS = ("assertion", "assertion_value")
_DJ_FLAGS = ("deep_judgment_enabled", "deep_judgment_excerpt_enabled", "deep_judgment_search_enabled")
_DJ_OPTIONAL = ("deep_judgment_max_excerpts", "deep_judgment_fuzzy_match_threshold",
                "deep_judgment_excerpt_retry_attempts")
_COMMON = {"higher_is_better", "summary", *(WEIGHTING_PROPS - {"score_ranges"})}  # score_ranges: LLM traits only
_CALLABLE_DEFAULTS: dict[str, Any] = {"kind": "boolean", "invert_result": False, "higher_is_better": True}
# Property names each family interprets (agentic keeps every property); others go to extra_properties.
_KNOWN_PROPS: dict[str, frozenset[str]] = {
    "llm": frozenset({*_COMMON, *_DJ_FLAGS, *_DJ_OPTIONAL, "min_score", "max_score", "kind", "classes",
                      "include_ground_truth", "score_ranges", *GRADER_PROPS, JUDGE_PROP}),
    "regex": frozenset({*_COMMON, "pattern", "case_sensitive", "invert_result", *ASSERTION_PROPS}),
    "assertion": frozenset({*_COMMON, *ASSERTION_PROPS}),
    "callable": frozenset({*_COMMON, "callable_code", "kind", "invert_result", "min_score", "max_score",
                           "classes"}),
    "metric": frozenset({*_COMMON, "metrics", "repeated_extraction", "evaluation_mode", "tp_instructions",
                         "tn_instructions"}),
}


def parse_type(value: Any) -> tuple[Scope, str] | None:
    """``'karenina:GlobalRegexTrait'`` (prefix optional) -> ``('global', 'regex')``; None if unknown."""
    name = value.removeprefix(PREFIX) if isinstance(value, str) else ""
    for word, scope in (("Global", "global"), ("QuestionSpecific", "question")):
        if name.startswith(word) and name[len(word):] in FAMILIES:
            return scope, FAMILIES[name[len(word):]]  # type: ignore[return-value]
    return None


# ---------------------------------------------------------------------------------------- decoding


class Ratings(NamedTuple):
    traits: list[AnyTrait]
    dynamic: list[AnyTrait]
    ignored: list[dict[str, Any]]  # Global* ratings inside a question: karenina ignores them


def decode_ratings(raw: Any, container: str | None, problems: Problems) -> Ratings:
    """Decode a ``rating`` list: top level (``container`` None) or a question's (its label)."""
    out = Ratings([], [], [])
    if raw is None:
        return out
    if not isinstance(raw, list):
        problems.add(container or "top level", wrong_type("rating", raw, "a list of Rating objects"))
        return out
    expected: Scope = "global" if container is None else "question"
    for i, rating in enumerate(raw):
        at = trait_where(container, i, None)
        if not isinstance(rating, dict):
            problems.add(at, f"is {kind_of(rating)}, expected a Rating object")
            continue
        kind = parse_type(rating.get("additionalType"))
        on = f" on trait {rating['name']!r}" if isinstance(rating.get("name"), str) else ""
        if kind is None:
            word = "Global" if expected == "global" else "QuestionSpecific"
            choices = ", ".join(f"{PREFIX}{word}{suffix}" for suffix in FAMILIES)
            found = rating.get("additionalType")
            problems.add(at, f"unknown additionalType {found!r}{on}; expected one of {choices}")
        elif kind[0] != expected and container is None:
            problems.add(at, f"question-specific type {rating['additionalType']!r}{on} at top level; move it "
                             "into a question's item.rating or use the matching karenina:Global... type")
        elif kind[0] != expected:
            if problems.check_depth(at, "rating", rating):
                out.ignored.append(rating)
        else:
            trait = decode_trait(rating, kind[1], trait_where(container, i, rating.get("name")), problems)
            if trait is not None:
                (out.dynamic if kind[1] == "dynamic" else out.traits).append(trait)
    return out


def decode_legacy(prop_name: str, value: Any, problems: Problems) -> list[AnyTrait]:
    """A legacy top-level ``global_<family>_rubric_traits`` JSON list of trait dicts."""
    where = f"top level / additionalProperty {prop_name!r}"
    cls = _CLASSES[prop_name.split("_")[1]]
    traits = []
    for j, item in enumerate(json_value(value, list, prop_name, where, problems) or []):
        if not isinstance(item, dict):
            problems.add(f"{where}[{j}]", "not a trait object")
            continue
        item = dict(item)
        if "invert" in item and "invert_result" not in item:
            item["invert_result"] = item.pop("invert")
        named = isinstance(item.get("name"), str)
        label = f"global trait {item['name']!r}" if named else f"{where}[{j}]"
        trait = build_model(cls, item, label, problems)
        if trait is not None:
            traits.append(trait)
    return traits


class _Bounds(NamedTuple):
    best: float
    worst: float


def decode_trait(rating: dict[str, Any], family: str, where: str, problems: Problems) -> AnyTrait | None:
    """Decode one rating of a known family (``dynamic`` resolves its ``dynamic_trait_type``)."""
    start = problems.count
    if not isinstance(rating.get("name"), str):
        problems.wrong(where, rating, "name", "text (the trait's name)", "missing 'name'")
        return None
    bounds = []
    for key in ("bestRating", "worstRating"):
        value = rating.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            problems.wrong(where, rating, key, "a number", f"missing '{key}' (a number)")
            value = 0.0
        elif not -_FLOAT_MAX <= value <= _FLOAT_MAX:  # NaN or Infinity (passed from Python), or huge
            problems.add(where, f"{key} is not a finite number; write a number")
            value = 0.0
        bounds.append(float(value))
    props = rating.get("additionalProperty")
    if family == "dynamic":
        listed = props if isinstance(props, list) else []
        tags = [p for p in listed if isinstance(p, dict) and p.get("name") == "dynamic_trait_type"]
        member = tags[-1].get("value") if tags else "llm"  # karenina's default
        if not isinstance(member, str) or member not in _CLASSES:
            problems.add(where, f"dynamic_trait_type {member!r} is not one of {', '.join(_CLASSES)}")
            return None
        family = member
        props = [p for p in listed if not any(p is t for t in tags)] if tags else props
    values, extras = read_properties(props, _KNOWN_PROPS.get(family), where, problems)
    data: dict[str, Any] = {"name": rating["name"], "description": rating.get("description"),
                            "id": rating.get("@id"), "extra_properties": extras}
    if "summary" in values:
        data["summary"] = values.pop("summary")
    if values.get("classes") is not None and family in ("llm", "callable"):
        values["classes"] = json_value(values["classes"], dict, "classes", where, problems)
    read_score_ranges(values, where, problems)
    if family == "llm" and values.get(JUDGE_PROP) is not None:  # a schema judge stored as an LLM rating
        judge: SchemaJudgeTrait | None = build_model(SchemaJudgeTrait, judge_data(data, values, where, problems),
                                                     where, problems)
        return judge if problems.count == start else None
    if family in ("regex", "assertion") and (values.get("assertion") is not None or family == "assertion"):
        return _assertion(data, values, where, problems)
    decode = {"llm": _llm_fields, "callable": _callable_fields, "metric": _metric_fields,
              "agentic": _agentic_fields}.get(family, _as_is)
    data.update(decode(values, _Bounds(*bounds), where, problems))
    if problems.count > start:
        return None
    trait: AnyTrait | None = build_model(_CLASSES[family], data, where, problems)
    return trait


def _assertion(data: dict[str, Any], values: dict[str, Any], where: str, problems: Problems) -> AnyTrait | None:
    """An assertion trait from its ``assertion`` and ``assertion_value`` (JSON text); its pattern is derived."""
    raw = values.pop("assertion_value", None)
    value = json_value(raw, object, "assertion_value", where, problems) if raw is not None else None
    kept = {k: v for k, v in values.items() if k not in ("pattern", "case_sensitive", "invert_result")}
    trait: AnyTrait | None = build_model(AssertionTrait, {**data, **kept, "value": value}, where, problems)
    return trait


def _as_is(values: dict[str, Any], bounds: _Bounds, where: str, problems: Problems) -> dict[str, Any]:
    return values


def _karenina_range(values: dict[str, Any], bounds: _Bounds, where: str, problems: Problems, lo: Any, hi: Any) -> None:
    """min/max_score left out (or null) are ``lo``/``hi`` (LLM: 1-5; callable: None, unchecked) as karenina
    reads them: a rating's bounds are no range. A warning says so when the bounds meant another one."""
    for key in [k for k in ("min_score", "max_score") if k in values and values[k] is None]:
        del values[key]
    lo, hi = values.get("min_score", lo), values.get("max_score", hi)
    used = "not range-checked" if lo is None and hi is None else f"ranged {lo}-{hi}"
    if len(values.keys() & {"min_score", "max_score"}) < 2 and (bounds.worst, bounds.best) != (
            (1.0, 5.0) if lo is None and hi is None else (lo, hi)):
        problems.warn(where, f"worstRating/bestRating say {bounds.worst:g}-{bounds.best:g}, but without min_score/"
                             f"max_score the score is {used} (as karenina reads it); add both properties to keep "
                             "the bounds' range")


def _check_kind(kind: Any, where: str, problems: Problems) -> bool:
    if isinstance(kind, dict):
        ok = kind.get("type") == "template" and isinstance(kind.get("schema"), dict)
        if not ok:
            problems.add(where, 'kind object must be {"type": "template", "schema": {<JSON schema>}}')
        return ok
    if kind not in ("boolean", "score", "literal"):
        problems.add(where, f"kind {kind!r} is not boolean, score, literal or a template object")
        return False
    return True


def _llm_fields(values: dict[str, Any], bounds: _Bounds, where: str, problems: Problems) -> dict[str, Any]:
    if values.get("tools") is not None:  # a tool judge's tools, stored as a JSON string
        values["tools"] = json_value(values["tools"], list, "tools", where, problems)
    kind = values.pop("kind", None)
    if kind is None:  # karenina infers the kind from the bounds
        kind = "boolean" if bounds == (1.0, 0.0) else "score"
    if not _check_kind(kind, where, problems):
        return values
    if isinstance(kind, dict):
        if values.get("higher_is_better") is not None:
            problems.add(where, "a template-kind trait needs higher_is_better null (remove its value)")
        values.update(kind="template", template_schema=kind["schema"], higher_is_better=None)
        values.setdefault("min_score", None)
        values.setdefault("max_score", None)
    else:
        values["kind"] = kind
        if kind == "score":
            _karenina_range(values, bounds, where, problems, 1, 5)
    return values


def _callable_fields(
    values: dict[str, Any], bounds: _Bounds, where: str, problems: Problems
) -> dict[str, Any]:
    if values.get("callable_code") is not None:
        try:
            base64.b64decode(values["callable_code"], validate=True)
        except (binascii.Error, TypeError, ValueError):
            problems.add(where, "callable_code is not valid base64")
    if values.get("kind") is None:  # karenina says boolean, whatever the bounds; kept to write it back as it was
        values["kindless"] = (bounds.best, bounds.worst, tuple(k for k in _CALLABLE_DEFAULTS if k not in values))
        values["kind"] = "boolean"
    if values["kind"] == "score":
        _karenina_range(values, bounds, where, problems, None, None)
    return values


def _metric_fields(values: dict[str, Any], bounds: _Bounds, where: str, problems: Problems) -> dict[str, Any]:
    for key in ("metrics", "tp_instructions", "tn_instructions"):
        if values.get(key) is not None:
            values[key] = json_value(values[key], list, key, where, problems)
        else:
            values.pop(key, None)
    return values


def _agentic_fields(
    values: dict[str, Any], bounds: _Bounds, where: str, problems: Problems
) -> dict[str, Any]:
    _check_kind(values.get("kind", "boolean"), where, problems)  # kept verbatim: karenina's 1-5 default applies
    return {"properties": values}


# ---------------------------------------------------------------------------------------- encoding


def _score_bounds(trait: Any) -> tuple[float, float]:
    top, bottom = trait.max_score, trait.min_score
    return (float(top) if top is not None else 5.0), (float(bottom) if bottom is not None else 1.0)


def _encode_llm(trait: LLMTrait) -> tuple[str, tuple[float, float], list[tuple[str, Any]]]:
    props: list[tuple[str, Any]] = []
    optional = [(k, getattr(trait, k)) for k in _DJ_OPTIONAL if getattr(trait, k) is not None]
    flags = [(k, getattr(trait, k)) for k in _DJ_FLAGS]
    if optional or flags != [(_DJ_FLAGS[0], False), (_DJ_FLAGS[1], True), (_DJ_FLAGS[2], False)]:
        props += flags + optional  # only written when set, as in karenina's own example checkpoint
    props.append(("higher_is_better", trait.higher_is_better))
    props += [(k, getattr(trait, k)) for k in ("min_score", "max_score") if getattr(trait, k) is not None]
    if trait.kind == "literal":
        props += [("kind", "literal"), ("classes", trait.classes)]
        suffix, bounds = "LLMRubricTrait", (float(len(trait.classes or {}) - 1), 0.0)
    elif trait.kind == "template":
        props.append(("kind", {"type": "template", "schema": trait.template_schema}))
        suffix, bounds = "LLMRubricTrait", (0.0, 0.0)
    else:
        suffix, bounds = "RubricTrait", (1.0, 0.0) if trait.kind == "boolean" else _score_bounds(trait)
    if trait.include_ground_truth:
        props.append(("include_ground_truth", True))
    return suffix, bounds, props + grader_props(trait)


def _encode_callable(trait: CallableTrait) -> tuple[str, tuple[float, float], list[tuple[str, Any]]]:
    props: list[tuple[str, Any]] = []
    if trait.callable_code is not None:
        props.append(("callable_code", trait.callable_code))
    props += [("kind", trait.kind), ("invert_result", trait.invert_result),
              ("higher_is_better", trait.higher_is_better)]
    kept = trait.kindless if trait.kind == "boolean" else None
    if kept is not None:  # read without a kind: as it was, but for what changed since
        props = [(k, v) for k, v in props if k not in kept.absent or v != _CALLABLE_DEFAULTS[k]]
        return "CallableTrait", (kept.best, kept.worst), props
    bounds = (1.0, 0.0)
    if trait.kind == "score":
        props += [(k, getattr(trait, k)) for k in ("min_score", "max_score") if getattr(trait, k) is not None]
        bounds = _score_bounds(trait)
    elif trait.kind == "literal":
        props.append(("classes", trait.classes))
        bounds = (float(len(trait.classes or {}) - 1), 0.0)
    return "CallableTrait", bounds, props


def _encode_agentic(trait: AgenticTrait) -> tuple[str, tuple[float, float], list[tuple[str, Any]]]:
    kind = trait.properties.get("kind", "boolean")
    if isinstance(kind, dict) or kind == "boolean":
        bounds = (0.0, 0.0) if isinstance(kind, dict) else (1.0, 0.0)
    else:
        top, bottom = trait.properties.get("max_score"), trait.properties.get("min_score")
        bounds = (float(top) if isinstance(top, int | float) else 5.0,
                  float(bottom) if isinstance(bottom, int | float) else 1.0)
    return "AgenticRubricTrait", bounds, list(trait.properties.items())


def _encode_assertion(trait: AssertionTrait) -> tuple[str, tuple[float, float], list[tuple[str, Any]]]:
    props: list[tuple[str, Any]] = [("assertion", trait.assertion)]
    if trait.value is not None:
        props.append(("assertion_value", json.dumps(trait.value, ensure_ascii=False)))
    props.append(("higher_is_better", trait.higher_is_better))
    if trait.base in JSON_ASSERTIONS:
        return "AssertionTrait", (1.0, 0.0), props
    regex = [("pattern", trait.pattern), ("case_sensitive", trait.case_sensitive), ("invert_result", trait.invert_result)]
    return "RegexTrait", (1.0, 0.0), regex + props


def rubric_of(traits: list[AnyTrait]) -> Rubric | None:
    return Rubric(traits=traits) if traits else None


def encode_rubric(rubric: Rubric | None, scope: Scope, dynamic: bool = False) -> list[dict[str, Any]]:
    return [encode_trait(t, scope, dynamic) for t in (rubric.traits if rubric else [])]


def encode_trait(trait: AnyTrait, scope: Scope, dynamic: bool = False) -> dict[str, Any]:
    """Write a trait as a schema.org Rating in karenina's layout."""
    props: list[tuple[str, Any]]
    if isinstance(trait, LLMTrait):
        suffix, bounds, props = _encode_llm(trait)
    elif isinstance(trait, AssertionTrait):
        suffix, bounds, props = _encode_assertion(trait)
    elif isinstance(trait, RegexTrait):
        suffix, bounds = "RegexTrait", (1.0, 0.0)
        props = [("pattern", trait.pattern), ("case_sensitive", trait.case_sensitive),
                 ("invert_result", trait.invert_result), ("higher_is_better", trait.higher_is_better)]
    elif isinstance(trait, CallableTrait):
        suffix, bounds, props = _encode_callable(trait)
    elif isinstance(trait, SchemaJudgeTrait):
        suffix, bounds, props = "RubricTrait", (1.0, 0.0), judge_props(trait)
    elif isinstance(trait, MetricTrait):
        suffix, bounds = "MetricRubricTrait", (1.0, 0.0)
        props = [("metrics", list(trait.metrics)), ("repeated_extraction", trait.repeated_extraction),
                 ("evaluation_mode", trait.evaluation_mode), ("higher_is_better", trait.higher_is_better)]
        props += [(k, getattr(trait, k)) for k in ("tp_instructions", "tn_instructions") if getattr(trait, k)]
    else:
        suffix, bounds, props = _encode_agentic(trait)
    props += weighting_props(trait) if not isinstance(trait, AgenticTrait) else []  # agentic: in its properties
    if trait.summary is not None:
        props.append(("summary", trait.summary))
    if dynamic:
        suffix = "DynamicRubricTrait"
        props.append(("dynamic_trait_type", "llm" if isinstance(trait, SchemaJudgeTrait) else trait.trait_type))
    rating: dict[str, Any] = {"@type": "Rating"}
    if trait.id is not None:
        rating["@id"] = trait.id
    rating["name"] = trait.name
    if trait.description is not None:
        rating["description"] = trait.description
    scope_word = "Global" if scope == "global" else "QuestionSpecific"
    rating.update(bestRating=bounds[0], worstRating=bounds[1], additionalType=f"{PREFIX}{scope_word}{suffix}")
    entries = [property_value(name, value) for name, value in props] + list(trait.extra_properties)
    if entries:
        rating["additionalProperty"] = entries
    return rating
