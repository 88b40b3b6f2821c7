"""The fields of a test-suite file (AgentV tests and assertions, letta graders and gates) and how one
criterion becomes a verify trait and back.

A criterion is AgentV's: a plain string (an outcome to check) or ``{id, outcome, weight, required,
min_score, score_ranges}``. It becomes an :class:`LLMTrait`: boolean (the judge says whether the
outcome holds), or a 0-10 score when it has ``score_ranges``. AgentV's ``min_score`` is the 0-1 bar
of the criterion, which verify calls ``pass_threshold`` (karenina's ``min_score`` is the bottom of a
score scale, so the name cannot be reused).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from verify.benchmark.traits import LLMTrait
from verify.errors import did_you_mean

__all__ = [
    "CRITERION_KEYS", "GATE_KEYS", "GRADER_KEYS", "JUDGE_KEYS", "RUBRICS_KEYS", "TEST_KEYS", "TOP_KEYS",
    "SuiteProblems", "criterion_entry", "criterion_trait", "slug",
]

TOP_KEYS = ("name", "description", "version", "tests", "assertions", "graders", "judges", "gate", "gates",
            "metadata")
TEST_KEYS = ("id", "input", "expected_output", "ground_truth", "criteria", "assertions", "output", "outputs",
             "metadata")
RUBRICS_KEYS = ("type", "name", "criteria")
CRITERION_KEYS = ("id", "outcome", "weight", "required", "min_score", "score_ranges")
GRADER_KEYS = ("kind", "prompt", "prompt_path", "model", "temperature", "extractor", "weight", "required",
               "min_score", "tools", "tool_rounds")
JUDGE_KEYS = ("rubric_text", "prompt_templates", "output_schema", "output_parsing_mode", "response_xml_key",
              "verdict_field", "pass_values", "model", "weight", "required")
GATE_KEYS = ("metric_key", "op", "value")


class SuiteProblems:
    """Located one-line problems of one suite file (each line names the file, the test and the field)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.items: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.items.append(f"{where}: {message}")

    def keys(self, where: str, data: dict[str, Any], allowed: Iterable[str]) -> None:
        """Unknown keys are mistakes (a misspelt ``weigth`` would silently weigh 1)."""
        allowed = tuple(allowed)
        for key in data:
            if key not in allowed:
                self.add(where, f"unknown key {key!r}{did_you_mean(str(key), allowed)} (known: {', '.join(allowed)})")


def slug(text: str) -> str:
    """A trait name from an outcome: lower-case words joined by '-', at most 48 characters (no dots)."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return "-".join(words)[:48].strip("-") or "criterion"


def criterion_trait(where: str, raw: Any, index: int, problems: SuiteProblems, *, required: bool) -> LLMTrait | None:
    """One AgentV criterion as an LLM trait; ``required`` is the default (true for plain-string assertions)."""
    if isinstance(raw, str):
        raw = {"outcome": raw}
    if not isinstance(raw, dict):
        problems.add(f"{where} criteria[{index}]", f"a criterion is text or an object, not {type(raw).__name__}")
        return None
    problems.keys(f"{where} criteria[{index}]", raw, CRITERION_KEYS)
    outcome = raw.get("outcome")
    if not isinstance(outcome, str) or not outcome.strip():
        problems.add(f"{where} criteria[{index}]", "outcome: needs the text of what to check, e.g. "
                     "outcome: Mentions divide-and-conquer")
        return None
    name = raw.get("id") if raw.get("id") is not None else slug(outcome)
    here = f"{where} criterion {name!r}"
    weight = raw.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not weight > 0:
        problems.add(here, f"weight: must be a number > 0, got {weight!r}; give it a positive weight or remove it")
        return None
    fields: dict[str, Any] = {"name": str(name), "description": outcome, "kind": "boolean", "weight": weight,
                              "required": raw.get("required", required)}
    if raw.get("min_score") is not None:
        fields["pass_threshold"] = raw["min_score"]
    if raw.get("score_ranges") is not None:
        fields.update(kind="score", score_ranges=raw["score_ranges"])
    return build_trait(here, fields, problems)


def build_trait(here: str, fields: dict[str, Any], problems: SuiteProblems) -> LLMTrait | None:
    """The trait, or each of its validation problems located at ``here`` (min_score named as the suite does)."""
    try:
        return LLMTrait(**fields)
    except ValidationError as exc:
        for error in exc.errors():
            field = ".".join(str(p) for p in error["loc"]) or "criterion"
            field = "min_score" if field == "pass_threshold" else field
            problems.add(here, f"{field}: {error['msg'].removeprefix('Value error, ')}")
        return None


def weighting_entry(trait: Any) -> dict[str, Any]:
    """A trait's weight, required flag and bar as a suite writes them (only what differs from AgentV's defaults)."""
    entry: dict[str, Any] = {}
    if trait.weight != 1.0:
        entry["weight"] = trait.weight
    if trait.required:
        entry["required"] = True
    if trait.pass_threshold is not None:
        entry["min_score"] = trait.pass_threshold
    return entry


def criterion_entry(trait: LLMTrait) -> dict[str, Any] | str:
    """The criterion a trait writes back to a suite: only what differs from AgentV's defaults."""
    entry: dict[str, Any] = {"id": trait.name, "outcome": trait.description or trait.name, **weighting_entry(trait)}
    if trait.score_ranges:
        entry["score_ranges"] = [{"range": list(r.range), "description": r.description} for r in trait.score_ranges]
    return entry
