"""A schema judge's verdict: what its ``verdict_field`` says, as a trait score and on 0-1.

* a boolean field: the boolean (true 1, false 0);
* a number or integer field: the number as given, normalised over the field's schema range
  (``minimum``..``maximum``; both are needed, else the trait is not weighed);
* any other value (an enum label, a string): true when it is one of ``pass_values``, else false,
  with the value kept as the trait's label.

Without ``verdict_field`` the judgment is recorded but has no score, and the trait is not weighed.
"""

from __future__ import annotations

from typing import Any

from verify.benchmark.judge_spec import SchemaJudgeSpec
from verify.results.models import Score

__all__ = ["judge_position", "judge_weighable", "verdict_of"]


def _field(spec: SchemaJudgeSpec) -> dict[str, Any]:
    field: dict[str, Any] = (spec.output_schema.get("properties") or {}).get(spec.verdict_field or "", {})
    return field


def _numeric(field: dict[str, Any]) -> bool:
    return field.get("type") in ("integer", "number")


def verdict_of(spec: SchemaJudgeSpec, output: dict[str, Any]) -> tuple[Score | None, str | None]:
    """(score, label) for an output that satisfies the schema; (None, None) without a verdict field."""
    if spec.verdict_field is None or spec.verdict_field not in output:
        return None, None
    value = output[spec.verdict_field]
    if isinstance(value, bool):
        return value, None
    if isinstance(value, int | float) and _numeric(_field(spec)):
        return value, None
    return value in spec.pass_values, str(value)


def judge_weighable(spec: SchemaJudgeSpec) -> bool:
    """Whether the verdict has a 0-1 value: a verdict field that is not a number, or one with both bounds."""
    if spec.verdict_field is None:
        return False
    field = _field(spec)
    return not _numeric(field) or ("minimum" in field and "maximum" in field)


def judge_position(spec: SchemaJudgeSpec, score: float) -> float:
    """The score on 0-1 before ``higher_is_better`` (booleans 0/1, numbers over the field's range)."""
    field = _field(spec)
    if not _numeric(field):
        return 1.0 if score else 0.0
    lo, hi = float(field["minimum"]), float(field["maximum"])
    return (score - lo) / (hi - lo) if hi > lo else 1.0
