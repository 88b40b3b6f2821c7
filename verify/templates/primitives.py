"""karenina's parsed verification primitives: how a VerifiedField's judge-extracted value is compared
with its ground truth, deterministically (no model call).

Each primitive is a small pydantic model: its parameters are fields, ``check(extracted, expected)``
is the pass/fail gate behind ``verify()``, and ``score(extracted, expected)`` the credit in [0, 1]
behind ``verify_granular()`` (1.0/0.0 from ``check()`` unless a graded primitive overrides it, see
:mod:`verify.templates.graded`). Semantics follow karenina's, including its coercions (``float()``
on numeric values, ``str()`` on strings) and their errors: a value that cannot be coerced raises,
and the template's ``verify()`` then fails the task as ``field_verification_error`` rather than
calling the answer wrong.

Two deliberate differences:

* ``RegexMatch`` matches with the ``regex`` package (``re``'s syntax) under a time limit
  (:func:`regex_time_limit`, set per call by the worker from the run's code time limit): a pattern
  from the checkpoint that backtracks for hours raises ``TimeoutError`` instead of stalling the run.
* ``SemanticMatch`` needs an embedding model, which karenina does not run here either (its check
  raises ``NotImplementedError``). verify keeps that: the field cannot be checked, so ``verify()``
  raises, and the task fails as ``field_verification_error`` with a reason naming the field and
  the primitive; it is never a silent pass, nor a wrong answer. ``--show-plan`` and the run's
  preflight warn about such templates before any model call.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timedelta
from typing import Any, Literal

import regex as regex_engine
from dateutil import parser as date_parser
from pydantic import BaseModel

from verify.templates.normalizers import Normalizer, apply_normalizers

DEFAULT_REGEX_LIMIT = 5.0
"""Seconds a checkpoint pattern may match when no run set a limit (direct use, tests)."""

_regex_limit: ContextVar[float] = ContextVar("verify_primitive_regex_limit", default=DEFAULT_REGEX_LIMIT)
# karenina resolves flag names with getattr(re, name) and ignores unknown ones; these are the ones
# that mean the same to ``re`` and to ``regex``.
_FLAGS = {
    "IGNORECASE": regex_engine.I, "I": regex_engine.I, "MULTILINE": regex_engine.M, "M": regex_engine.M,
    "DOTALL": regex_engine.S, "S": regex_engine.S, "VERBOSE": regex_engine.X, "X": regex_engine.X,
    "ASCII": regex_engine.A, "A": regex_engine.A, "UNICODE": regex_engine.U, "U": regex_engine.U, "NOFLAG": 0,
}


@contextmanager
def regex_time_limit(seconds: float) -> Iterator[None]:
    """Within this block, each primitive's pattern may match for ``seconds``."""
    token = _regex_limit.set(seconds)
    try:
        yield
    finally:
        _regex_limit.reset(token)


def compile_pattern(pattern: str, flags: int = 0) -> Any:
    """``pattern`` compiled by ``regex``; an invalid one fails with ``re``'s message, as in karenina."""
    re.compile(pattern, flags)
    return regex_engine.compile(pattern, flags)


def timed(run: Any) -> Any:
    """``run(timeout)`` with the current limit; its TimeoutError gets a message saying so."""
    limit = _regex_limit.get()
    try:
        return run(limit)
    except TimeoutError:
        raise TimeoutError(f"the pattern did not finish matching within {limit:g} s") from None


class VerificationPrimitive(BaseModel):
    """Base of every primitive: ``check()`` gates, ``score()`` grades (0/1 from ``check()`` here)."""

    def check(self, extracted: Any, expected: Any) -> bool:
        raise NotImplementedError(f"{type(self).__name__} defines no check()")

    def score(self, extracted: Any, expected: Any) -> float:
        return 1.0 if self.check(extracted, expected) else 0.0


# --- booleans and strings ---------------------------------------------------------------------------


class BooleanMatch(VerificationPrimitive):
    """Truth values compared; None matches only None."""

    def check(self, extracted: Any, expected: Any) -> bool:
        if extracted is None or expected is None:
            return extracted is expected
        return bool(extracted) == bool(expected)


class ExactMatch(VerificationPrimitive):
    """Equal strings after normalizing both (lowercase and strip by default)."""

    normalize: list[Normalizer] = ["lowercase", "strip"]

    def check(self, extracted: Any, expected: Any) -> bool:
        return apply_normalizers(self.normalize, str(extracted)) == apply_normalizers(self.normalize, str(expected))


class ContainsAny(VerificationPrimitive):
    """The extracted text contains at least one of ``substrings`` (the ground truth is not used)."""

    substrings: list[str]
    normalize: list[Normalizer] = []

    def check(self, extracted: Any, expected: Any) -> bool:
        text = apply_normalizers(self.normalize, str(extracted))
        return any(apply_normalizers(self.normalize, s) in text for s in self.substrings)


class ContainsAll(VerificationPrimitive):
    """The extracted text contains every one of ``substrings`` (the ground truth is not used)."""

    substrings: list[str]
    normalize: list[Normalizer] = []

    def check(self, extracted: Any, expected: Any) -> bool:
        text = apply_normalizers(self.normalize, str(extracted))
        return all(apply_normalizers(self.normalize, s) in text for s in self.substrings)


class RegexMatch(VerificationPrimitive):
    """``pattern`` is found in the extracted text (``re.search`` semantics, under a time limit)."""

    pattern: str
    flags: list[str] = []

    def check(self, extracted: Any, expected: Any) -> bool:
        flags = 0
        for name in self.flags:
            flags |= _FLAGS.get(name, 0)  # an unknown flag is ignored, as karenina does
        compiled = compile_pattern(self.pattern, flags)
        text = str(extracted)
        return timed(lambda limit: compiled.search(text, timeout=limit)) is not None


class SemanticMatch(VerificationPrimitive):
    """Embedding similarity of extracted and expected text: not checkable inside a template."""

    threshold: float = 0.85

    def check(self, extracted: Any, expected: Any) -> bool:
        raise NotImplementedError(
            "SemanticMatch needs an embedding model, which templates cannot call (karenina does not "
            "either); use ExactMatch with normalizers or a SynonymMap, ContainsAny, or the embedding check"
        )


# --- numbers ----------------------------------------------------------------------------------------


class NumericExact(VerificationPrimitive):
    """Equal as floats."""

    def check(self, extracted: Any, expected: Any) -> bool:
        return float(extracted) == float(expected)


class NumericTolerance(VerificationPrimitive):
    """Within ``tolerance`` of the ground truth: a fraction of it (``relative``) or raw units."""

    tolerance: float
    mode: Literal["relative", "absolute"] = "relative"

    def check(self, extracted: Any, expected: Any) -> bool:
        diff = abs(float(extracted) - float(expected))
        if self.mode == "absolute":
            return diff <= self.tolerance
        if float(expected) == 0:
            return diff == 0
        return diff / abs(float(expected)) <= self.tolerance


class NumericRange(VerificationPrimitive):
    """Within [min, max] (either side open when None; ``exclusive_*`` makes a side strict)."""

    min: float | None = None
    max: float | None = None
    exclusive_min: bool = False
    exclusive_max: bool = False

    def check(self, extracted: Any, expected: Any) -> bool:
        value = float(extracted)
        if self.min is not None and (value <= self.min if self.exclusive_min else value < self.min):
            return False
        return not (self.max is not None and (value >= self.max if self.exclusive_max else value > self.max))


class NumericMinimum(VerificationPrimitive):
    """At least the ground truth (strictly more when ``exclusive``)."""

    exclusive: bool = False

    def check(self, extracted: Any, expected: Any) -> bool:
        value, bound = float(extracted), float(expected)
        return value > bound if self.exclusive else value >= bound


class NumericMaximum(VerificationPrimitive):
    """At most the ground truth (strictly less when ``exclusive``)."""

    exclusive: bool = False

    def check(self, extracted: Any, expected: Any) -> bool:
        value, bound = float(extracted), float(expected)
        return value < bound if self.exclusive else value <= bound


# --- lists and categories ---------------------------------------------------------------------------


class SetContainment(VerificationPrimitive):
    """Lists compared as sets: ``exact``, ``subset``, ``superset`` or ``overlap`` (>= min_overlap, default 1)."""

    mode: str = "exact"
    min_overlap: int | None = None

    def check(self, extracted: Any, expected: Any) -> bool:
        found, wanted = set(extracted), set(expected)
        if self.mode == "exact":
            return found == wanted
        if self.mode == "subset":
            return found <= wanted
        if self.mode == "superset":
            return found >= wanted
        if self.mode == "overlap":
            return len(found & wanted) >= (self.min_overlap or 1)
        raise ValueError(f"unknown SetContainment mode {self.mode!r} (use exact, subset, superset or overlap)")


class OrderedMatch(VerificationPrimitive):
    """Same length, and equal element by element after normalizing (lowercase and strip by default)."""

    normalize: list[Normalizer] = ["lowercase", "strip"]

    def check(self, extracted: Any, expected: Any) -> bool:
        if len(extracted) != len(expected):
            return False
        return all(apply_normalizers(self.normalize, str(a)) == apply_normalizers(self.normalize, str(b))
                   for a, b in zip(extracted, expected, strict=False))


class LiteralMatch(VerificationPrimitive):
    """Plain equality, for ``Literal[...]`` fields."""

    def check(self, extracted: Any, expected: Any) -> bool:
        return bool(extracted == expected)


# --- dates ------------------------------------------------------------------------------------------
# karenina's date primitives answer False (never raise) when a value is not a date.


def parse_date(value: Any, fmt: str | None = None) -> datetime:
    if fmt:
        return datetime.strptime(str(value), fmt)
    parsed: datetime = date_parser.parse(str(value))
    return parsed


_DATE_ERRORS = (ValueError, TypeError, OverflowError)


class DateMatch(VerificationPrimitive):
    """The same calendar day (time ignored); any date format unless ``format`` (strptime) is given."""

    format: str | None = None

    def check(self, extracted: Any, expected: Any) -> bool:
        try:
            return parse_date(extracted, self.format).date() == parse_date(expected, self.format).date()
        except _DATE_ERRORS:
            return False


class DateTolerance(VerificationPrimitive):
    """Within ``tolerance`` days, hours or minutes of the ground-truth date."""

    tolerance: int
    unit: Literal["days", "hours", "minutes"] = "days"

    def check(self, extracted: Any, expected: Any) -> bool:
        try:
            delta = timedelta(**{self.unit: self.tolerance})
            return abs(parse_date(extracted) - parse_date(expected)) <= delta
        except _DATE_ERRORS:
            return False


class DateRange(VerificationPrimitive):
    """On or between ``min`` and ``max`` (either may be None); the ground truth is not used."""

    min: str | None = None
    max: str | None = None

    def check(self, extracted: Any, expected: Any) -> bool:
        try:
            value = parse_date(extracted)
            if self.min is not None and value < parse_date(self.min):
                return False
            return not (self.max is not None and value > parse_date(self.max))
        except _DATE_ERRORS:
            return False
