"""karenina's graded numeric primitives: a binary gate (``check()``, behind ``verify()``) plus partial
credit (``score()``, behind ``verify_granular()``), so a near miss can fail ``verify()`` and still earn
some credit.

Credit decays across a shoulder: ``1 - r`` (``linear``) or ``1 - r**2`` (``quadratic``), ``r`` being
the share of the shoulder already crossed; 0.0 beyond it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import model_validator

from verify.templates.primitives import VerificationPrimitive

Decay = Literal["linear", "quadratic"]


def decayed(r: float, decay: Decay) -> float:
    return 1.0 - r * r if decay == "quadratic" else 1.0 - r


class NumericGraded(VerificationPrimitive):
    """Credit by distance to the ground truth.

    Single band (``full_credit`` None): passes within ``cutoff``; credit falls from 1.0 at the
    ground truth to 0.0 at ``cutoff``. Double band: full credit and the pass within
    ``full_credit``, then decaying credit out to ``cutoff`` (a miss there still scores > 0).
    Distances are fractions of the ground truth (``relative``; undefined, so no credit, when it
    is 0 and the value differs) or raw units (``absolute``).
    """

    cutoff: float
    full_credit: float | None = None
    mode: Literal["relative", "absolute"] = "relative"
    decay: Decay = "linear"

    @model_validator(mode="after")
    def _bands(self) -> NumericGraded:
        if self.cutoff <= 0:
            raise ValueError("NumericGraded.cutoff must be > 0")
        if self.full_credit is not None and not 0 <= self.full_credit < self.cutoff:
            raise ValueError("NumericGraded.full_credit must satisfy 0 <= full_credit < cutoff")
        return self

    def distance(self, extracted: Any, expected: Any) -> float | None:
        d = abs(float(extracted) - float(expected))
        if self.mode == "absolute":
            return d
        if float(expected) == 0:
            return 0.0 if d == 0 else None
        return d / abs(float(expected))

    def check(self, extracted: Any, expected: Any) -> bool:
        d = self.distance(extracted, expected)
        gate = self.cutoff if self.full_credit is None else self.full_credit
        return d is not None and d <= gate

    def score(self, extracted: Any, expected: Any) -> float:
        d = self.distance(extracted, expected)
        if d is None:
            return 0.0
        inner = self.full_credit or 0.0
        if d <= inner:
            return 1.0
        if d >= self.cutoff:
            return 0.0
        return decayed((d - inner) / (self.cutoff - inner), self.decay)


class NumericRangeGraded(VerificationPrimitive):
    """Passes inside [min, max]; outside, credit decays across a shoulder of ``margin`` (raw units,
    or a fraction of the band's width when ``relative``). The ground truth is not used."""

    min: float
    max: float
    margin: float
    mode: Literal["relative", "absolute"] = "absolute"
    decay: Decay = "linear"
    exclusive_min: bool = False
    exclusive_max: bool = False

    @model_validator(mode="after")
    def _band(self) -> NumericRangeGraded:
        if self.min >= self.max:
            raise ValueError("NumericRangeGraded requires min < max")
        if self.margin <= 0:
            raise ValueError("NumericRangeGraded.margin must be > 0")
        return self

    def check(self, extracted: Any, expected: Any) -> bool:
        value = float(extracted)
        below = value <= self.min if self.exclusive_min else value < self.min
        above = value >= self.max if self.exclusive_max else value > self.max
        return not (below or above)

    def score(self, extracted: Any, expected: Any) -> float:
        value = float(extracted)
        if self.min <= value <= self.max:
            return 1.0  # the band is the plateau, edges included (as in karenina)
        gap = self.min - value if value < self.min else value - self.max
        shoulder = self.margin if self.mode == "absolute" else self.margin * (self.max - self.min)
        if gap >= shoulder:
            return 0.0
        return decayed(gap / shoulder, self.decay)


class NumericThresholdGraded(VerificationPrimitive):
    """A one-sided bound at the ground truth: ``max`` passes at or below it, ``min`` at or above
    (strictly when ``exclusive``). On the wrong side, credit decays across ``margin`` (raw units, or a
    fraction of the bound when ``relative``; no credit when that bound is 0)."""

    direction: Literal["max", "min"]
    margin: float
    mode: Literal["relative", "absolute"] = "relative"
    decay: Decay = "linear"
    exclusive: bool = False

    @model_validator(mode="after")
    def _margin(self) -> NumericThresholdGraded:
        if self.margin <= 0:
            raise ValueError("NumericThresholdGraded.margin must be > 0")
        return self

    def check(self, extracted: Any, expected: Any) -> bool:
        value, bound = float(extracted), float(expected)
        if self.direction == "max":
            return value < bound if self.exclusive else value <= bound
        return value > bound if self.exclusive else value >= bound

    def score(self, extracted: Any, expected: Any) -> float:
        value, bound = float(extracted), float(expected)
        gap = value - bound if self.direction == "max" else bound - value
        if gap <= 0:
            return 1.0
        if self.mode == "absolute":
            shoulder = self.margin
        elif bound == 0:
            return 0.0
        else:
            shoulder = self.margin * abs(bound)
        if gap >= shoulder:
            return 0.0
        return decayed(gap / shoulder, self.decay)
