"""The simulated judge's replies to prompt graders and schema judges (see ``brain.HANDLERS``).

A prompt grader's prompt is the suite's own text, so there are no structural tags to read: the
grader scores the length of what it was shown (a deterministic stand-in, 0.4-1.0) and says so in its
rationale. A schema judge reads the numbered agent run (``[E1] ...`` lines), the ``<rubric>`` when
the template has one, and the output schema (the first JSON schema in the prompt, which keeps the
``citations`` marks; else the request's), and fills the schema: the rubric is met when the run shares words
with it or is long (the brain's boolean rule); enums take ``pass``/``fail`` (else first/last),
numbers their maximum/minimum, booleans the verdict, and each ``"citations": true`` string cites
``[E1]`` and quotes that segment verbatim. Under the brain's fabrication fault the quote is altered,
so it is not in the answer and the citation cannot be proven. In ``xml_key`` mode the JSON is put
inside the tag the prompt asks for (``<response>`` unless it names another).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from verify.llm.simulated.text import fabricate, overlap, tag, words

__all__ = ["grader", "schema_judge"]

_SEGMENT = re.compile(r"^(?:<([A-Za-z_][\w.-]*)>)?\[(E\d+)\] (.*)$", re.M)
_TAG_ASKED = re.compile(r"<([A-Za-z_][\w.-]*)>\s*\.\.\.\s*</\1>")


def grader(prompt: str) -> dict[str, Any]:
    count = len(words(prompt))
    score = round(0.4 + 0.6 * min(count / 120, 1.0), 2)
    return {"score": score, "rationale": f"The submission and rubric run to {count} words; scored {score} by length."}


def _schema_in(prompt: str) -> dict[str, Any] | None:
    decoder = json.JSONDecoder()
    for found in re.finditer(r"\{", prompt):
        try:
            value, _ = decoder.raw_decode(prompt, found.start())
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("type") == "object" and isinstance(value.get("properties"), dict):
            return value
    return None


class _Filler:
    def __init__(self, ok: bool, segments: list[tuple[str, str]], fabricated: bool) -> None:
        self.ok, self.segments, self.fabricated = ok, segments, fabricated

    def cite(self) -> str:
        label, text = self.segments[0] if self.segments else ("E1", "")
        said = "meets" if self.ok else "does not meet"
        if self.fabricated:
            return f'The run {said} the rubric: it says "{fabricate(text or "The answer cites 3 sources.")}".'
        if '"' in text or len(text) < 3:
            return f"The run {said} the rubric, as [{label}] shows."
        return f'The run {said} the rubric, as [{label}] shows: "{text}".'

    def fill(self, node: dict[str, Any]) -> Any:
        kind = node.get("type")
        if "enum" in node:
            options = list(node["enum"])
            if "pass" in options:
                return "pass" if self.ok else ("fail" if "fail" in options else options[-1])
            return options[0] if self.ok else options[-1]
        if kind == "object":
            return {k: self.fill(v) for k, v in (node.get("properties") or {}).items() if isinstance(v, dict)}
        if kind == "array":
            return [self.fill(node["items"])] if isinstance(node.get("items"), dict) else []
        if kind == "boolean":
            return self.ok
        if kind in ("integer", "number"):
            value = node.get("maximum", 1) if self.ok else node.get("minimum", 0)
            return int(value) if kind == "integer" else value
        if node.get("citations") is True:
            return self.cite()
        return "simulated judgment: the run " + ("meets" if self.ok else "does not meet") + " the rubric"


def _segments(prompt: str) -> list[tuple[str, str]]:
    """The numbered run's ``(label, text)`` lines. A template that puts ``{agent_run}`` and its tags on
    one line (``<agent_run>{agent_run}</agent_run>``) opens the tag before ``[E1]`` and closes it after
    the last segment: that markup is the prompt's, never the answer's, so it is never quoted."""
    found = _SEGMENT.findall(prompt)
    opened = next((tag for tag, _label, _text in found if tag), None)
    segments = [(label, text) for _tag, label, text in found]
    if opened and segments:
        label, text = segments[-1]
        closing = f"</{opened}>"
        segments[-1] = (label, text[: -len(closing)] if text.endswith(closing) else text)
    return segments


def schema_judge(prompt: str, schema: dict[str, Any], fabricates: Callable[[str], bool]) -> str | dict[str, Any]:
    """The judge's output: a dict (constrained decoding, ``schema`` given) or text with the tagged JSON."""
    segments = _segments(prompt)
    run = " ".join(text for _, text in segments)
    rubric = tag(prompt, "rubric") or prompt
    ok = overlap(rubric, run) >= 0.2 or len(words(run)) >= 12
    # the prompt's copy first: it keeps Docent's "citations" marks, which the wire schema leaves out
    target = _schema_in(prompt) or {k: v for k, v in schema.items() if k != "title"}
    output = _Filler(ok, segments, fabricates(run)).fill(target)
    if schema:
        return dict(output) if isinstance(output, dict) else {"output": output}
    asked = _TAG_ASKED.search(prompt)
    key = asked.group(1) if asked else "response"
    return f"I read the run against the rubric.\n<{key}>{json.dumps(output)}</{key}>"
