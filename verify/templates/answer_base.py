"""``BaseAnswer``: karenina's answer-template base class, so templates run without karenina installed.

A template is a pydantic model subclassing :class:`BaseAnswer`. Its fields are what the judge
fills from the response; its ground truth is ``self.correct`` (a dict), set in
``model_post_init(self, __context)`` or in ``ground_truth(self)`` (bridged to the former); its
``verify()`` compares the two. Optional: ``verify_granular() -> float`` (0..1) and a ``regex``
dict ``{name: {"pattern", "expected", "match_type"}}`` checked against the raw response, with
karenina's match types ``exact | contains | count | all``.

Regex checks keep ``re``'s semantics but match with the ``regex`` package (its default V0 syntax is
``re``'s), for its ``timeout``: a pattern that backtracks for hours on one answer fails that check,
with a located reason, instead of freezing the run.

VerifiedField templates (:mod:`verify.templates.verified`) behave as in karenina: without a
``verify()`` or ``verify_granular()`` of their own they get the automatic ones, ``self.correct`` is
filled from the fields' ground truths, and the schema never shows the ``__verification__`` metadata.
Trace primitives read the answer text given with :meth:`BaseAnswer.set_raw_trace` (karenina's
``_raw_trace``); fields the judge left null are named with :meth:`BaseAnswer.set_null_fields`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import regex as regex_engine
from pydantic import BaseModel, ConfigDict, PrivateAttr

from verify.templates.verified import (
    VerificationMeta,
    auto_granular,
    auto_verify,
    field_outcomes,
    field_rules,
    ground_truths,
    strip_meta,
    trace_fields,
)

# Never shown to the judge nor reported as parsed values.
EXCLUDED_FIELDS = frozenset({"id", "correct", "regex"})
RESERVED_FIELDS = frozenset({"correct"})
MATCH_TYPES = ("exact", "contains", "count", "all")


class BaseAnswer(BaseModel):
    """Base of every answer template (karenina's ``BaseAnswer``): ``extra="allow"``, optional ``id``.

    Unannotated dict class attributes (``regex = {...}``) are kept as class attributes rather than
    rejected by pydantic, so regex-only templates load as written.
    """

    model_config = ConfigDict(extra="allow", ignored_types=(dict,))

    id: str | None = None
    _raw_trace: str | None = PrivateAttr(default=None)  # the answer text, for trace primitives
    _null_fields: frozenset[str] = PrivateAttr(default=frozenset())  # VerifiedFields the judge left null

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Give a VerifiedField template karenina's verify() and verify_granular() unless a class
        between it and BaseAnswer defines its own."""
        super().__pydantic_init_subclass__(**kwargs)
        if not field_rules(cls):
            return
        own = {name for klass in cls.__mro__[: cls.__mro__.index(BaseAnswer)] for name in vars(klass)}
        if "verify" not in own:
            cls.verify = BaseAnswer._auto_verify  # type: ignore[method-assign]
        if "verify_granular" not in own:
            cls.verify_granular = BaseAnswer._auto_verify_granular  # type: ignore[attr-defined]

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """pydantic's schema without the ground truth of VerifiedFields, wherever it is nested."""
        schema: dict[str, Any] = strip_meta(super().model_json_schema(*args, **kwargs))
        return schema

    def model_post_init(self, __context: Any) -> None:
        """Run ``ground_truth()`` when the template defines it instead of ``model_post_init``; else a
        VerifiedField template's ``self.correct`` is its fields' ground truths."""
        ground_truth = getattr(type(self), "ground_truth", None)
        if callable(ground_truth):
            ground_truth(self)
        elif getattr(self, "correct", None) is None and field_rules(type(self)):
            self.correct = ground_truths(type(self))

    def verify(self) -> bool:
        raise NotImplementedError("the template defines no verify() method")

    def set_raw_trace(self, text: str | None) -> None:
        self._raw_trace = text

    def set_null_fields(self, names: frozenset[str]) -> None:
        self._null_fields = frozenset(names)

    # karenina's names for the VerifiedField machinery, which hand-written verify() methods may call
    @classmethod
    def _get_verified_fields(cls) -> dict[str, VerificationMeta]:
        return {name: rule.meta for name, rule in field_rules(cls).items()}

    def _compute_field_results(self) -> dict[str, bool | None]:
        return field_outcomes(self, self._raw_trace, self._null_fields).results

    def _compute_field_scores(self) -> dict[str, float | None]:
        return field_outcomes(self, self._raw_trace, self._null_fields).scores

    def _get_resolved_ground_truths(self) -> dict[str, Any]:
        return field_outcomes(self, self._raw_trace, self._null_fields).expected

    def _auto_verify(self) -> bool:
        if not field_rules(type(self)):
            raise NotImplementedError("no VerifiedField fields: a classic template defines verify() itself")
        return auto_verify(self, self._raw_trace, self._null_fields)

    def _auto_verify_granular(self) -> float:
        if not field_rules(type(self)):
            raise NotImplementedError("no VerifiedField fields: a classic template defines verify_granular() itself")
        return auto_granular(self, self._raw_trace, self._null_fields)

    def set_question_id(self, question_id: str) -> None:
        self.id = question_id

    def verify_regex(self, raw_trace: str) -> RegexOutcome:
        """Check the template's ``regex`` specs against the raw response."""
        return check_regex(getattr(self, "regex", None), raw_trace)


@dataclass
class RegexOutcome:
    """karenina's ``verify_regex`` result: overall success, per-spec results and match details."""

    performed: bool = False
    success: bool = True
    results: dict[str, bool] = field(default_factory=dict)
    details: dict[str, dict[str, Any]] = field(default_factory=dict)
    extractions: dict[str, Any] = field(default_factory=dict)
    timed_out: dict[str, str] = field(default_factory=dict)  # check name -> the located reason it timed out


def findall(pattern: str, text: str, timeout: float | None) -> list[Any]:
    """``re.findall`` under a time limit (TimeoutError). Not ``regex.findall``: for a repeated
    group, ``(a|aa)+``, it returns 1-tuples where ``re`` returns strings."""
    re.compile(pattern)  # an invalid pattern fails as it always did, with re's message
    compiled = regex_engine.compile(pattern)
    groups: int = compiled.groups
    out: list[Any] = []
    for m in compiled.finditer(text, timeout=timeout):  # the limit covers the whole scan
        out.append(m.group() if groups == 0 else (m.group(1) or "") if groups == 1 else m.groups(default=""))
    return out


def _check_one(text: str, pattern: str, expected: Any, match_type: str,
               timeout: float | None) -> tuple[bool, dict[str, Any], Any]:
    matches = findall(pattern, text, timeout)
    details: dict[str, Any] = {
        "pattern": pattern, "expected": expected, "match_type": match_type,
        "matches_found": matches, "match_count": len(matches),
    }
    if match_type == "exact":
        ok = len(matches) == 1 and matches[0] == expected
        why = f"expected exactly one match equal to {expected!r}, got {len(matches)}: {matches[:5]}"
    elif match_type == "contains":
        ok = expected in matches
        why = f"{expected!r} not among the matches {matches[:5]}"
    elif match_type == "count":
        ok = isinstance(expected, int) and not isinstance(expected, bool) and len(matches) == expected
        why = f"expected {expected!r} matches, got {len(matches)}"
    elif match_type == "all":
        ok = isinstance(expected, list) and set(expected) <= set(matches)
        why = (f"missing {sorted(set(expected) - set(matches))}" if isinstance(expected, list)
               else f"'all' needs a list as expected, got {type(expected).__name__}")
    else:
        ok, why = False, f"unknown match_type {match_type!r} (use one of {', '.join(MATCH_TYPES)})"
    details["success_reason" if ok else "failure_reason"] = "ok" if ok else why
    extracted = matches[0] if len(matches) == 1 else matches
    return ok, details, extracted


def check_regex(specs: Any, text: str, *, timeout: float | None = None, where: str = "") -> RegexOutcome:
    """Evaluate ``{name: {"pattern", "expected", "match_type"}}`` against ``text``.

    Each pattern may match for ``timeout`` seconds (None: no limit); one that runs out fails its
    check with the reason ``"<where>, regex check '<name>': regex timed out after <timeout> s"``.
    Blocking: call it off the event loop (the ``regex`` package releases the GIL while matching).
    """
    if not isinstance(specs, dict) or not specs:
        return RegexOutcome()
    out = RegexOutcome(performed=True)
    for name, spec in specs.items():
        spec = spec if isinstance(spec, dict) else {}
        pattern = str(spec.get("pattern", ""))
        expected, match_type = spec.get("expected"), str(spec.get("match_type", "exact"))
        try:
            ok, details, extracted = _check_one(text, pattern, expected, match_type, timeout)
        except (re.error, regex_engine.error, TimeoutError) as exc:
            ok, extracted = False, None
            if isinstance(exc, TimeoutError):
                why = f"{where + ', ' if where else ''}regex check {str(name)!r}: regex timed out after {timeout:g} s"
                out.timed_out[str(name)] = why
            else:
                why = f"invalid pattern: {exc}"
            details = {"pattern": pattern, "expected": expected, "match_type": match_type, "failure_reason": why}
        out.results[str(name)] = ok
        out.details[str(name)] = details
        out.extractions[str(name)] = extracted
        out.success = out.success and ok
    return out


def has_own_verify(cls: type[BaseAnswer]) -> bool:
    """Whether the template wrote a ``verify()`` (karenina's automatic one does not count)."""
    return cls.verify is not BaseAnswer.verify and cls.verify is not BaseAnswer._auto_verify


def uses_auto_verify(cls: type[BaseAnswer]) -> bool:
    return cls.verify is BaseAnswer._auto_verify


def has_granular(cls: type[BaseAnswer]) -> bool:
    return callable(getattr(cls, "verify_granular", None))


def json_safe(value: Any) -> Any:
    """``value`` as JSON data (what a worker sends back); unknown types become strings."""
    return json.loads(json.dumps(value, default=str))


def parsed_fields(instance: BaseAnswer) -> dict[str, Any]:
    """The parsed values of an answer (fields and extras), without ``id``, ``correct``, ``regex`` and
    the trace fields of a VerifiedField template (the judge never fills those)."""
    excluded = set(EXCLUDED_FIELDS) | set(trace_fields(type(instance)))
    try:
        data = instance.model_dump(mode="json", exclude=excluded)
    except Exception:  # an odd extra attribute set by the template
        data = json_safe(instance.model_dump(exclude=excluded))
    return dict(data)


def ground_truth_of(instance: BaseAnswer) -> dict[str, Any] | None:
    correct = getattr(instance, "correct", None)
    return dict(json_safe(correct)) if isinstance(correct, dict) else None
