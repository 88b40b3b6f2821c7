"""Checkpoint form of the traits verify adds: letta prompt graders and Docent schema judges.

Both are stored as karenina LLM ratings so that karenina still loads the file (it ignores property
names it does not know): a prompt grader is a score trait 0-1 with extra ``prompt`` (and ``model``,
``temperature``; a tool judge ``tools`` as a JSON string and ``tool_rounds``) properties; a schema judge is a boolean ``RubricTrait`` whose extra
``schema_judge`` property holds the whole :class:`~verify.benchmark.judge_spec.SchemaJudgeSpec` as a
JSON string. karenina would judge that trait as a plain boolean from its description (the rubric
text); verify reads the property back and runs the schema judge.
"""

from __future__ import annotations

import json
from typing import Any

from verify.benchmark.problems import Problems
from verify.benchmark.properties import json_value

__all__ = ["GRADER_PROPS", "JUDGE_PROP", "grader_props", "judge_data", "judge_props"]

GRADER_PROPS = ("prompt", "model", "temperature", "tools", "tool_rounds")
JUDGE_PROP = "schema_judge"
_KEPT = ("higher_is_better", "weight", "required", "pass_threshold")  # what a schema judge takes of the rating


def grader_props(trait: Any) -> list[tuple[str, Any]]:
    """A prompt grader's own properties, those that are set. Its kind is written too: bounds 1/0 alone
    read as a boolean trait, in karenina and in verify."""
    own = [(k, getattr(trait, k)) for k in GRADER_PROPS[:3] if getattr(trait, k, None) is not None]
    if getattr(trait, "tools", None) is not None:  # a tool judge: its tools as a JSON string, and its round cap
        own += [("tools", json.dumps(trait.tools)), ("tool_rounds", trait.tool_rounds)]
    return [("kind", "score"), *own] if own else []


def judge_props(trait: Any) -> list[tuple[str, Any]]:
    return [("higher_is_better", trait.higher_is_better),
            (JUDGE_PROP, json.dumps(trait.judge.model_dump(mode="json", exclude_defaults=True)))]


def judge_data(data: dict[str, Any], values: dict[str, Any], where: str, problems: Problems) -> dict[str, Any]:
    """The SchemaJudgeTrait fields from a rating read as an LLM trait that has ``schema_judge``."""
    out = {**data, **{k: values[k] for k in _KEPT if k in values}}
    out["judge"] = json_value(values[JUDGE_PROP], dict, JUDGE_PROP, where, problems)
    return out
