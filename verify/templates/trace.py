"""karenina's trace primitives: checks on the raw answer text itself, not on a judge-extracted value.

A field verified with one is left out of the judge's schema (the judge never fills it); the field
passes when ``check_trace(answer) == bool(ground_truth)``, so ``ground_truth=False`` asks for the
pattern, substring or length condition NOT to hold. Patterns match with the ``regex`` package under
the primitives' time limit (:func:`verify.templates.primitives.regex_time_limit`).
"""

from __future__ import annotations

from typing import Any

from verify.templates.primitives import VerificationPrimitive, compile_pattern, timed


class TracePrimitive(VerificationPrimitive):
    """Base of the primitives that read the raw answer (``check_trace``) instead of a parsed value."""

    def check(self, extracted: Any, expected: Any) -> bool:
        raise NotImplementedError(f"{type(self).__name__} reads the raw answer: use check_trace()")

    def check_trace(self, raw_trace: str) -> bool:
        raise NotImplementedError(f"{type(self).__name__} defines no check_trace()")


class TraceRegex(TracePrimitive):
    """``pattern`` occurs in the answer (at least ``count_min`` times when set)."""

    pattern: str
    count_min: int | None = None

    def check_trace(self, raw_trace: str) -> bool:
        compiled = compile_pattern(self.pattern)
        count = timed(lambda limit: sum(1 for _ in compiled.finditer(raw_trace, timeout=limit)))
        return bool(count >= self.count_min) if self.count_min is not None else bool(count > 0)


class TraceContains(TracePrimitive):
    """``substring`` occurs in the answer (case-sensitive)."""

    substring: str

    def check_trace(self, raw_trace: str) -> bool:
        return self.substring in raw_trace


class TraceLength(TracePrimitive):
    """The answer's length, in ``chars`` or ``words`` (split on whitespace), within [min, max]."""

    min: int | None = None
    max: int | None = None
    unit: str = "chars"

    def check_trace(self, raw_trace: str) -> bool:
        length = len(raw_trace.split()) if self.unit == "words" else len(raw_trace)
        if self.min is not None and length < self.min:
            return False
        return not (self.max is not None and length > self.max)
