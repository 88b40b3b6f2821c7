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
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import regex as regex_engine
from pydantic import BaseModel, ConfigDict

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

    def model_post_init(self, __context: Any) -> None:
        """Run ``ground_truth()`` when the template defines it instead of ``model_post_init``."""
        ground_truth = getattr(type(self), "ground_truth", None)
        if callable(ground_truth):
            ground_truth(self)

    def verify(self) -> bool:
        raise NotImplementedError("the template defines no verify() method")

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
    return cls.verify is not BaseAnswer.verify


def has_granular(cls: type[BaseAnswer]) -> bool:
    return callable(getattr(cls, "verify_granular", None))


def json_safe(value: Any) -> Any:
    """``value`` as JSON data (what a worker sends back); unknown types become strings."""
    return json.loads(json.dumps(value, default=str))


def parsed_fields(instance: BaseAnswer) -> dict[str, Any]:
    """The parsed values of an answer (fields and extras), without ``id``, ``correct`` and ``regex``."""
    try:
        data = instance.model_dump(mode="json", exclude=set(EXCLUDED_FIELDS))
    except Exception:  # an odd extra attribute set by the template
        data = json_safe(instance.model_dump(exclude=set(EXCLUDED_FIELDS)))
    return dict(data)


def ground_truth_of(instance: BaseAnswer) -> dict[str, Any] | None:
    correct = getattr(instance, "correct", None)
    return dict(json_safe(correct)) if isinstance(correct, dict) else None
