"""The tools a judge may call before it grades (letta's agent-as-judge), as a trait declares them.

An LLM trait's ``tools`` lists them: ``"search"`` (the run's search port), ``"submit_grade"`` (the
tool the judge submits its grade with: ``submit_grade(score, rationale)``), and command runners
``{"name": "run", "commands": ["python -c ...", ...], "timeout": 10}``: the judge may run one of the
given commands (chosen by exact text; never a command the answer wrote) in a child process with a
time limit. A ``submit_grade`` entry written as a dict may give its ``parameters`` (a JSON schema):
they must include ``score`` and ``rationale``. Checked when the trait is built, so a judge that could
never submit a grade is refused before any model call (letta's fail-fast rule).
"""

from __future__ import annotations

import shlex
from typing import Any

__all__ = [
    "DEFAULT_TOOL_PROMPT", "DEFAULT_TOOL_ROUNDS", "SEARCH_TOOL", "SUBMIT_TOOL", "entry_problems", "tool_name",
    "tool_problems",
]

SUBMIT_TOOL = "submit_grade"
SEARCH_TOOL = "search"
DEFAULT_TOOL_ROUNDS = 5
DEFAULT_COMMAND_TIMEOUT = 10.0
DEFAULT_TOOL_PROMPT = (
    "Rubric: {rubric}\n\nQuestion: {input}\n\nSubmission to grade:\n{submission}\n\n"
    "Use your tools to check the submission, then call submit_grade with a score from 0.0 to 1.0 and your rationale."
)
"""The prompt of a tool-using LLM trait that has no ``prompt`` of its own."""

_DICT_KEYS = {"name", "description", "parameters", "commands", "timeout"}


def tool_name(entry: Any) -> str:
    return entry if isinstance(entry, str) else str(entry.get("name", "")) if isinstance(entry, dict) else ""


def entry_problems(entry: Any) -> list[str]:
    if isinstance(entry, str):
        if entry in (SEARCH_TOOL, SUBMIT_TOOL):
            return []
        return [f"unknown tool {entry!r}: use {SEARCH_TOOL!r}, {SUBMIT_TOOL!r} or "
                '{"name": ..., "commands": [...]} for a command runner']
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"].strip():
        return [f"tool entry {entry!r} needs a name"]
    name = entry["name"]
    unknown = sorted(set(entry) - _DICT_KEYS)
    if unknown:
        return [f"tool {name!r}: unknown keys {unknown}; use {sorted(_DICT_KEYS)}"]
    if name == SUBMIT_TOOL:
        params = entry.get("parameters")
        props = params.get("properties") if isinstance(params, dict) else None
        if params is not None and not (isinstance(props, dict) and {"score", "rationale"} <= set(props)):
            return [f"tool {SUBMIT_TOOL!r} must take both score and rationale parameters"]
        return []
    if name == SEARCH_TOOL:
        return []
    commands = entry.get("commands")
    if not isinstance(commands, list) or not commands or not all(isinstance(c, str) and c.strip() for c in commands):
        return [f"tool {name!r}: a command runner needs commands, a non-empty list of command lines"]
    problems = []
    for command in commands:
        try:
            shlex.split(command)
        except ValueError as exc:
            problems.append(f"tool {name!r}: command {command!r} cannot be split into arguments: {exc}")
    timeout = entry.get("timeout", DEFAULT_COMMAND_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 600:
        problems.append(f"tool {name!r}: timeout must be a number of seconds, above 0 and at most 600")
    return problems


def tool_problems(trait: str, tools: list[Any]) -> list[str]:
    """What is wrong with a trait's tools, one line each naming the trait (empty: fine)."""
    problems = [f"trait {trait!r}: {p}" for entry in tools for p in entry_problems(entry)]
    names = [tool_name(e) for e in tools]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        problems.append(f"trait {trait!r}: tools {twice} are listed twice")
    if SUBMIT_TOOL not in names:
        problems.append(f"trait {trait!r}: judge tool {SUBMIT_TOOL!r} not found among its tools {names}; add "
                        f"{SUBMIT_TOOL!r} (the judge submits its grade by calling {SUBMIT_TOOL}(score, rationale))")
    return problems
