"""What a trait adds to the rubric verdict (AgentV's rubric fields): weight, required, pass_threshold,
score_ranges.

``weight`` (> 0, default 1) is the trait's share of the task's weighted rubric score; ``required``
fails the rubric verdict whenever the trait itself fails; ``pass_threshold`` (0-1) is the bar the
trait's normalised score must reach to pass (AgentV's ``min_score``: karenina already uses
``min_score`` for the bottom of a score scale, which keeps that meaning); ``score_ranges`` are
analytic levels on a 0-10 score, each ``{"range": [lo, hi], "description": ...}``, shown to the judge.
AgentV's shorthand ``{0: "...", 3: "...", 7: "..."}`` (lower bounds) is read too.

In a checkpoint these are extra ``additionalProperty`` entries of the trait's Rating, written only
when they differ from the defaults, so karenina's checkpoints round-trip unchanged and karenina
(which ignores property names it does not know) still loads verify's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from verify.benchmark.problems import Problems
from verify.benchmark.properties import json_value

__all__ = [
    "SCALE", "WEIGHTING_PROPS", "ScoreRange", "check_ranges", "read_score_ranges", "shorthand_ranges",
    "uses_weighting", "weighting_props",
]

SCALE = (0, 10)
"""The score scale of analytic traits (those with ``score_ranges``), as in AgentV."""

WEIGHTING_PROPS = frozenset({"weight", "required", "pass_threshold", "score_ranges"})


class ScoreRange(BaseModel):
    """One analytic level: scores ``range[0]..range[1]`` (inclusive, within 0-10) mean ``description``."""

    model_config = ConfigDict(extra="forbid")

    range: tuple[int, int]
    description: str

    @field_validator("range")
    @classmethod
    def _on_scale(cls, value: tuple[int, int]) -> tuple[int, int]:
        lo, hi = value
        if not SCALE[0] <= lo <= hi <= SCALE[1]:
            raise ValueError(f"range {list(value)} must be [lo, hi] with {SCALE[0]} <= lo <= hi <= {SCALE[1]}")
        return value

    @field_validator("description")
    @classmethod
    def _said(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a score range needs a description")
        return value


def shorthand_ranges(value: Any) -> Any:
    """AgentV's ``{lower bound: description}`` map as a list of ranges (each up to the next bound - 1,
    the last to 10); anything else unchanged, for the model to validate."""
    if not isinstance(value, Mapping):
        return value
    try:
        bounds = sorted((int(k), v) for k, v in value.items())
    except (TypeError, ValueError):
        raise ValueError("score_ranges keys must be the integer lower bounds of the levels") from None
    ends = [lo - 1 for lo, _ in bounds[1:]] + [SCALE[1]]
    return [{"range": [lo, end], "description": text} for (lo, text), end in zip(bounds, ends, strict=True)]


def check_ranges(name: str, ranges: list[ScoreRange]) -> None:
    """Raise ValueError when two levels overlap (the judge could not tell which one a score means)."""
    ordered = sorted(ranges, key=lambda r: r.range)
    for before, after in zip(ordered, ordered[1:], strict=False):
        if after.range[0] <= before.range[1]:
            raise ValueError(f"trait {name!r}: score_ranges {list(before.range)} and {list(after.range)} overlap")


def uses_weighting(trait: Any) -> bool:
    """Whether the trait sets any of the rubric-verdict fields (so its rubric asks for a verdict)."""
    return bool(getattr(trait, "weight", 1.0) != 1.0 or getattr(trait, "required", False)
                or getattr(trait, "pass_threshold", None) is not None or getattr(trait, "score_ranges", None))


def weighting_props(trait: Any) -> list[tuple[str, Any]]:
    """The trait's rubric-verdict fields as checkpoint properties, those that differ from the defaults."""
    props: list[tuple[str, Any]] = []
    if trait.weight != 1.0:
        props.append(("weight", trait.weight))
    if trait.required:
        props.append(("required", True))
    if trait.pass_threshold is not None:
        props.append(("pass_threshold", trait.pass_threshold))
    ranges = getattr(trait, "score_ranges", None)
    if ranges:
        props.append(("score_ranges", [r.model_dump(mode="json") for r in ranges]))
    return props


def read_score_ranges(values: dict[str, Any], where: str, problems: Problems) -> None:
    """``score_ranges`` as stored (a list, an AgentV map, or a JSON string of either), in place. A
    score trait without min_score/max_score is 1-5 for karenina, so analytic traits must store both."""
    if values.get("score_ranges") is None:
        values.pop("score_ranges", None)
        return
    raw = values["score_ranges"]
    as_map = isinstance(raw, dict) or (isinstance(raw, str) and raw.lstrip().startswith("{"))
    raw = json_value(raw, dict if as_map else list, "score_ranges", where, problems)
    values["score_ranges"] = raw
    if raw is not None and not {"min_score", "max_score"} <= values.keys():
        problems.add(where, "score_ranges need min_score 0 and max_score 10 stored with the trait (karenina reads a "
                            "score trait without them as 1-5); add both properties")
