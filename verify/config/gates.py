"""Gates: run-level conditions (``config.gates``, ``--gate``), read without eval.

A gate is ``METRIC OP NUMBER``: ``pass_rate >= 0.9``, ``mean(clarity) >= 4``, ``rubric_score >= 0.75``,
``coverage >= 0.99``. Metrics: ``pass_rate`` (passed over complete tasks), ``coverage`` (judged over
planned evaluations), ``rubric_score`` (the mean weighted rubric score of the tasks whose rubric was
fully judged) and ``mean(<trait>)`` (the trait's mean raw score: true counts 1, a literal its class
index, a metric trait its headline value). Ops: ``>=``, ``>``, ``<=``, ``<``, ``==`` or letta's
``gte``, ``gt``, ``lte``, ``lt``, ``eq``. letta's form ``{"metric_key": "pass_rate", "op": "gte",
"value": 0.9}`` is read too. Each gate is kept as its canonical text; a gate that does not parse is a
config error naming it. Trait names are checked against the benchmark when the run starts, and
gates are evaluated at its end (:mod:`verify.results.gates`).
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BeforeValidator

from verify.errors import did_you_mean

__all__ = ["METRICS", "OPS", "SHARES", "Gate", "GateText", "gate_text", "parse_gate"]

SHARES = ("pass_rate", "coverage", "rubric_score")
"""Metrics that are shares (0-1); the other one is ``mean(<trait>)``."""
METRICS = (*SHARES, "mean(<trait>)")
OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq,
}
_WORDS = {"gte": ">=", "gt": ">", "lte": "<=", "lt": "<", "eq": "=="}
_FORM = re.compile(r"^\s*(?P<metric>\w+)\s*(?:\((?P<trait>.*)\))?\s*(?P<op>>=|<=|==|>|<|\b(?:gte|gt|lte|lt|eq)\b)"
                   r"\s*(?P<value>\S+)\s*$")
_HOW = "write METRIC OP NUMBER, e.g. 'pass_rate >= 0.9' or 'mean(clarity) >= 4'"


@dataclass(frozen=True)
class Gate:
    metric: str  # one of SHARES, or "mean"
    op: str  # one of OPS
    value: float
    trait: str | None = None  # mean(<trait>)

    @property
    def key(self) -> str:
        return f"mean({self.trait})" if self.metric == "mean" else self.metric

    @property
    def text(self) -> str:
        number = str(int(self.value)) if self.value.is_integer() and abs(self.value) < 1e15 else repr(self.value)
        return f"{self.key} {self.op} {number}"

    def met(self, actual: float | None) -> bool:
        """Whether ``actual`` meets the gate; a metric with no value (nothing to measure) never does."""
        if actual is None:
            return False
        if self.op == "==":
            return math.isclose(actual, self.value, rel_tol=1e-9, abs_tol=1e-9)
        return OPS[self.op](actual, self.value)


def _from_mapping(spec: Mapping[str, Any]) -> str:
    unknown = sorted(set(spec) - {"metric_key", "op", "value"})
    if unknown or not {"metric_key", "op", "value"} <= spec.keys():
        raise ValueError(f"gate {dict(spec)!r} needs exactly metric_key, op and value (letta's form); {_HOW}")
    return f"{spec['metric_key']} {spec['op']} {spec['value']}"


def parse_gate(spec: str | Mapping[str, Any]) -> Gate:
    """A gate from its text or letta's mapping; ValueError naming the gate and what is wrong."""
    text = _from_mapping(spec) if isinstance(spec, Mapping) else spec
    if not isinstance(text, str):
        raise ValueError(f"a gate is text or a metric_key/op/value object, not {type(text).__name__}; {_HOW}")
    found = _FORM.match(text)
    if found is None:
        raise ValueError(f"gate {text!r} does not parse: {_HOW} (ops: >=, >, <=, <, ==, gte, gt, lte, lt, eq)")
    metric, trait, op = found["metric"], found["trait"], _WORDS.get(found["op"], found["op"])
    try:
        value = float(found["value"])
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"gate {text!r}: {found['value']!r} is not a number; {_HOW}")
    if trait is not None:
        if metric != "mean" or not trait.strip():
            raise ValueError(f"gate {text!r}: only mean(<trait name>) takes a trait; metrics: {', '.join(METRICS)}")
        return Gate("mean", op, value, trait.strip())
    if metric not in SHARES:
        hint = did_you_mean(metric, SHARES) or (f"; for a trait's mean write mean({metric})" if metric != "mean" else "")
        raise ValueError(f"gate {text!r}: unknown metric {metric!r}{hint}; metrics: {', '.join(METRICS)}")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"gate {text!r}: {metric} is a share from 0 to 1, so {value:g} is out of its range")
    return Gate(metric, op, value)


def gate_text(spec: Any) -> Any:
    """A gate as its canonical text (what ``config.gates`` holds); ValueError when it does not parse."""
    return parse_gate(spec).text


GateText = Annotated[str, BeforeValidator(gate_text)]
"""A ``config.gates`` item: validated and normalised when the config is built."""
