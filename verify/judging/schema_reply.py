"""Reading a schema judge's reply: the JSON (inside ``<response>...</response>`` in ``xml_key`` mode,
the whole reply with ``constrained_decoding``), checked against the judge's output schema.

A reply that cannot be used is never a verdict: :func:`read_reply` returns the problems, which the
caller sends back to the judge or records as the ``failure`` result's metadata. Real judges wrap JSON
in code fences, repeat the tag in their reasoning before the answer, or echo the schema itself;
the last complete tag wins, fences are stripped, and an echoed schema is a problem, not an output.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Reply", "output_problems", "read_reply"]

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.S)
_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,), "array": (list,),
    "object": (dict,),
}


@dataclass
class Reply:
    """The parsed output, or why there is none (``problems``)."""

    output: dict[str, Any] | None
    problems: list[str] = field(default_factory=list)


def read_reply(text: str, schema: dict[str, Any], mode: str = "xml_key", key: str = "response") -> Reply:
    """Extract and check the judge's JSON output."""
    body = text
    if mode == "xml_key":
        blocks = re.findall(rf"<{re.escape(key)}>(.*?)</{re.escape(key)}>", text, re.S)
        if not blocks:
            return Reply(None, [f"no <{key}>...</{key}> block in the reply; put the JSON inside <{key}> tags"])
        body = blocks[-1]
    fenced = _FENCE.match(body)
    body = fenced.group(1) if fenced else body
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        return Reply(None, [f"the reply is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"])
    if not isinstance(data, dict):
        return Reply(None, [f"the output must be a JSON object, not {type(data).__name__}"])
    if data.get("type") == "object" and isinstance(data.get("properties"), dict):
        return Reply(None, ["the reply repeats the output schema; fill it with your evaluation instead"])
    problems = output_problems(data, schema)
    return Reply(None if problems else data, problems)


def output_problems(value: Any, schema: dict[str, Any], path: str = "output") -> list[str]:
    """Where ``value`` breaks ``schema`` (types, enums, bounds, required and extra properties, items)."""
    kind = schema.get("type")
    allowed = _PY_TYPES.get(str(kind), (object,))
    if not isinstance(value, allowed) or (isinstance(value, bool) and kind in ("integer", "number")):
        return [f"{path}: expected {kind}, got {type(value).__name__} {json.dumps(value)[:60]}"]
    problems: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path}: {json.dumps(value)[:60]} is not one of {json.dumps(schema['enum'])}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{path}: {value} is below the minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{path}: {value} is above the maximum {schema['maximum']}")
    if kind == "object" and isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        for name in schema.get("required", []):
            if name not in value:
                problems.append(f"{path}.{name}: missing (required)")
        for name, item in value.items():
            if name in props:
                problems += output_problems(item, props[name], f"{path}.{name}")
            elif schema.get("additionalProperties", True) is False:
                problems.append(f"{path}.{name}: not in the schema (allowed: {', '.join(props)})")
    elif kind == "array" and isinstance(value, list) and isinstance(schema.get("items"), dict):
        for number, item in enumerate(value):
            problems += output_problems(item, schema["items"], f"{path}[{number}]")
    return problems
