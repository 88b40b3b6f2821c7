"""karenina's VerifiedField templates: fields that carry their own ground truth and check.

``x: float = VerifiedField(description=..., ground_truth=46, verify_with=NumericTolerance(tolerance=0.05),
weight=1.0, extraction_hint=None)`` is a pydantic ``Field`` whose ``json_schema_extra["__verification__"]``
holds the ground truth, the primitive (as ``{"type": name, **params}``), the weight and the hint, as
karenina stores them. A template made of such fields needs no ``verify()``: :class:`BaseAnswer`
gives it karenina's (every field passes, or its ``VerificationStrategy``), a ``verify_granular()``
(weighted scores) and ``self.correct`` (each field's ground truth).

The live primitive also rides along on the field (``FieldInfo.metadata``, which pydantic keeps and
ignores), so a primitive class written in the template itself is checked as written; the registry
of karenina's primitives only serves fields whose metadata was written by hand.

A field's result is True, False, or None when the judge left it null (``None`` never passes a check,
and scores 0). A :class:`ConditionalGroundTruth` picks its case from a scenario's earlier results;
verify runs no scenarios, so its ``default`` case applies (karenina does the same outside one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from verify.templates import graded, primitives, trace
from verify.templates.composition import (
    AllOf,
    AnyOf,
    AtLeastN,
    evaluate_strategy,
    strategy_granular,
    strategy_of,
)
from verify.templates.primitives import VerificationPrimitive
from verify.templates.trace import TracePrimitive

META_KEY = "__verification__"
PRIMITIVES: dict[str, type[VerificationPrimitive]] = {
    cls.__name__: cls
    for module in (primitives, graded, trace)
    for cls in vars(module).values()
    if isinstance(cls, type) and issubclass(cls, VerificationPrimitive)
    and cls not in (VerificationPrimitive, TracePrimitive)
}


class FieldCheckError(ValueError):
    """A VerifiedField could not be checked; the message names the field and its primitive."""


class VerificationMeta(BaseModel):
    """What a VerifiedField stores, hidden from the judge."""

    ground_truth: Any
    verify_with: dict[str, Any]
    weight: float = 1.0
    extraction_hint: str | None = None


class GroundTruthCase(BaseModel):
    """One case of a conditional ground truth: its value, and optionally another primitive."""

    model_config = ConfigDict(extra="forbid")

    value: Any
    verify_with: Any = None


class ConditionalGroundTruth(BaseModel):
    """A ground truth chosen by a scenario's earlier result (``source``, a dot path); ``default`` otherwise."""

    model_config = ConfigDict(extra="forbid")

    source: str
    cases: dict[str, GroundTruthCase]
    default: GroundTruthCase

    def serialize(self) -> dict[str, Any]:
        """As karenina stores it: the cases with their primitives as data, marked ``__conditional__``."""
        data = self.model_dump(mode="json")
        for key, case in self.cases.items():
            data["cases"][key]["verify_with"] = primitive_data(case.verify_with)
        data["default"]["verify_with"] = primitive_data(self.default.verify_with)
        data["__conditional__"] = True
        return data


def primitive_data(primitive: Any) -> dict[str, Any] | None:
    """A primitive as karenina stores it, ``{"type": "ExactMatch", **params}``; None stays None."""
    if primitive is None:
        return None
    if isinstance(primitive, dict):
        return primitive if "type" in primitive else None
    if not isinstance(primitive, BaseModel):
        raise TypeError(f"verify_with must be a verification primitive such as ExactMatch(), "
                        f"got {type(primitive).__name__}")
    data: dict[str, Any] = primitive.model_dump(mode="json")
    data["type"] = type(primitive).__name__
    return data


@dataclass(frozen=True)
class Live:
    """The objects a VerifiedField was written with (kept in ``FieldInfo.metadata``)."""

    primitive: VerificationPrimitive
    conditional: ConditionalGroundTruth | None = None


def VerifiedField(  # noqa: N802 - karenina's name
    description: str, ground_truth: Any, verify_with: Any, weight: float = 1.0,
    extraction_hint: str | None = None, **kwargs: Any,
) -> Any:
    """A pydantic ``Field`` carrying its ground truth and check (see the module docstring)."""
    if not description or not description.strip():
        raise ValueError("VerifiedField needs a description: the judge relies on it to know what to extract")
    if verify_with is None:
        raise ValueError("VerifiedField needs verify_with, a verification primitive such as ExactMatch()")
    if not isinstance(verify_with, VerificationPrimitive):
        raise TypeError(f"verify_with must be a verification primitive such as ExactMatch(), "
                        f"got {type(verify_with).__name__}")
    conditional = ground_truth if isinstance(ground_truth, ConditionalGroundTruth) else None
    meta = VerificationMeta(
        ground_truth=conditional.serialize() if conditional else ground_truth,
        verify_with=primitive_data(verify_with) or {}, weight=weight, extraction_hint=extraction_hint,
    )
    extra = dict(kwargs.pop("json_schema_extra", None) or {})
    extra[META_KEY] = meta.model_dump(mode="json")
    info = Field(description=description, json_schema_extra=extra, **kwargs)
    info.metadata.append(Live(verify_with, conditional))
    return info


# --- reading a template's fields ---------------------------------------------------------------------


@dataclass(frozen=True)
class FieldRule:
    """A VerifiedField as checked: its metadata, and the primitive and ground truth that apply."""

    meta: VerificationMeta
    primitive: VerificationPrimitive
    expected: Any

    @property
    def is_trace(self) -> bool:
        return isinstance(self.primitive, TracePrimitive)

    @property
    def is_conditional(self) -> bool:
        return isinstance(self.meta.ground_truth, dict) and bool(self.meta.ground_truth.get("__conditional__"))


def rebuild_primitive(data: Mapping[str, Any]) -> VerificationPrimitive:
    params = dict(data)
    name = params.pop("type", None)
    cls = PRIMITIVES.get(str(name))
    if cls is None:
        raise ValueError(f"unknown verification primitive {name!r}")
    return cls.model_validate(params)


def _rule(info: Any, meta: VerificationMeta) -> FieldRule:
    live = next((m for m in info.metadata if isinstance(m, Live)), None)
    primitive = live.primitive if live else rebuild_primitive(meta.verify_with)
    expected = meta.ground_truth
    if isinstance(expected, dict) and expected.get("__conditional__"):
        default = live.conditional.default if live and live.conditional else None
        stored = expected.get("default") or {}
        expected = stored.get("value")  # as stored (JSON data), like every other ground truth
        override = default.verify_with if default else stored.get("verify_with")
        if isinstance(override, VerificationPrimitive):
            primitive = override
        elif isinstance(override, dict) and override.get("type"):
            primitive = rebuild_primitive(override)
    return FieldRule(meta, primitive, expected)


def field_rules(cls: type[BaseModel]) -> dict[str, FieldRule]:
    """The template's VerifiedFields, in declaration order (empty for a classic template)."""
    rules: dict[str, FieldRule] = {}
    for name, info in cls.model_fields.items():
        extra = info.json_schema_extra
        if isinstance(extra, dict) and META_KEY in extra:
            rules[name] = _rule(info, VerificationMeta.model_validate(extra[META_KEY]))
    return rules


def trace_fields(cls: type[BaseModel]) -> list[str]:
    return [name for name, rule in field_rules(cls).items() if rule.is_trace]


def strip_meta(schema: Any) -> Any:
    """``schema`` without any ``__verification__`` key, at any depth (in place; returned)."""
    if isinstance(schema, dict):
        schema.pop(META_KEY, None)
        for value in schema.values():
            strip_meta(value)
    elif isinstance(schema, list):
        for item in schema:
            strip_meta(item)
    return schema


# --- checking an answer ------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldOutcomes:
    results: dict[str, bool | None]  # None: the judge left the field null
    scores: dict[str, float | None]
    expected: dict[str, Any]  # the ground truth each field was checked against


def _checked(name: str, rule: FieldRule, run: Any) -> Any:
    try:
        return run()
    except Exception as exc:  # one located line, whatever the primitive raised
        raise FieldCheckError(f"field {name!r} ({type(rule.primitive).__name__}): "
                              f"{type(exc).__name__}: {exc}") from None


def field_outcomes(answer: BaseModel, raw_trace: str | None, null_fields: frozenset[str]) -> FieldOutcomes:
    """Every VerifiedField of ``answer`` checked: parsed fields against the judge's value, trace
    fields against ``raw_trace`` (the answer text)."""
    out = FieldOutcomes({}, {}, {})
    for name, rule in field_rules(type(answer)).items():
        out.expected[name] = rule.expected
        if name in null_fields:
            out.results[name] = out.scores[name] = None
            continue
        if rule.is_trace:
            if raw_trace is None:
                raise FieldCheckError(f"field {name!r} ({type(rule.primitive).__name__}) reads the answer "
                                      "text, which this check was not given")
            primitive: Any = rule.primitive
            passed = _checked(name, rule, lambda p=primitive: p.check_trace(raw_trace)) == bool(rule.expected)
            out.results[name], out.scores[name] = passed, 1.0 if passed else 0.0
            continue
        value = getattr(answer, name, None)
        passed = bool(_checked(name, rule, lambda r=rule, v=value: r.primitive.check(v, r.expected)))
        try:  # as in karenina, a score() that raises falls back to the binary result
            score = float(rule.primitive.score(value, rule.expected))
        except Exception:  # noqa: BLE001
            score = 1.0 if passed else 0.0
        out.results[name], out.scores[name] = passed, min(1.0, max(0.0, score))
    return out


def auto_verify(answer: BaseModel, raw_trace: str | None, null_fields: frozenset[str]) -> bool:
    results = field_outcomes(answer, raw_trace, null_fields).results
    strategy = strategy_of(type(answer))
    if strategy is not None:
        try:
            return evaluate_strategy(strategy, results)
        except KeyError as exc:
            raise FieldCheckError(f"VerificationStrategy names {exc}, which is not a VerifiedField") from None
    return all(result is True for result in results.values())


def auto_granular(answer: BaseModel, raw_trace: str | None, null_fields: frozenset[str]) -> float:
    scores = field_outcomes(answer, raw_trace, null_fields).scores
    weights = {name: rule.meta.weight for name, rule in field_rules(type(answer)).items()}
    return strategy_granular(strategy_of(type(answer)), scores, weights)


def ground_truths(cls: type[BaseModel]) -> dict[str, Any]:
    """``self.correct`` of a VerifiedField template: each field's ground truth, conditional ones left out."""
    return {name: rule.meta.ground_truth for name, rule in field_rules(cls).items() if not rule.is_conditional}


def resolved_ground_truths(cls: type[BaseModel]) -> dict[str, Any]:
    """Each VerifiedField's ground truth as checked (a conditional one resolved to its default case);
    karenina adds these to the result's ``parsed_gt_response``."""
    return {name: rule.expected for name, rule in field_rules(cls).items()}


def strategy_label(cls: type) -> str | None:
    """karenina's ``composition_strategy`` of a result: ``all_of``, ``any_of``, ``at_least_n(2)``."""
    strategy = strategy_of(cls)
    if strategy is None:
        return None
    if isinstance(strategy, AtLeastN):
        return f"at_least_n({strategy.n})"
    if isinstance(strategy, AnyOf):
        return "any_of"
    return "all_of" if isinstance(strategy, AllOf) else type(strategy).__name__.lower()
