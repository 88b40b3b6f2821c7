"""A judge defined the Docent way: rubric text, prompt templates, an output schema, a parsing mode.

:class:`SchemaJudgeSpec` holds the definition and checks it when it is built, with Docent's rules:

* the prompt templates, together, use ``{agent_run}``, ``{rubric}`` and ``{output_schema}``, and no
  other placeholder (``{{`` and ``}}`` are literal braces);
* in ``xml_key`` mode some template names the response tag (``<response>``);
* the output schema follows Docent's metaschema (:func:`metaschema_problems`): an object root with
  ``properties``; ``additionalProperties`` absent or false; types ``string``, ``integer``, ``number``,
  ``boolean``, ``array`` (with ``items``) and ``object`` (with ``properties``); no ``anyOf``, ``oneOf``
  or ``allOf``; ``"citations": true`` only on strings.

Every problem is reported at once, each located by its path (``output_schema.properties.issues:
an array needs "items"``), so a bad suite fails at load with lines that say what to fix.
"""

from __future__ import annotations

import string
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["PLACEHOLDERS", "PromptTemplate", "SchemaJudgeSpec", "metaschema_problems", "placeholder_problems"]

PLACEHOLDERS = ("agent_run", "rubric", "output_schema")
_TYPES = {"string", "integer", "number", "boolean", "array", "object"}
_COMBINATORS = ("anyOf", "oneOf", "allOf")

DEFAULT_TEMPLATE = """Evaluate this agent run against the rubric.

Rubric:
<rubric>
{rubric}
</rubric>

Agent run (numbered segments; cite them as [E1], [E2], ... or quote them verbatim):
<agent_run>
{agent_run}
</agent_run>

Output your evaluation as JSON in <response>...</response> tags.
Schema: {output_schema}"""


class PromptTemplate(BaseModel):
    """One message of the judge's prompt."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant"] = "user"
    content: str


class SchemaJudgeSpec(BaseModel):
    """A Docent-style judge. ``verdict_field`` names the output field that decides pass/fail (a
    boolean, a value in ``pass_values``, or a number scored against ``pass_threshold`` of its range)."""

    model_config = ConfigDict(extra="forbid")

    rubric_text: str = Field(min_length=1)
    output_schema: dict[str, Any]
    prompt_templates: list[PromptTemplate] = Field(default_factory=lambda: [PromptTemplate(content=DEFAULT_TEMPLATE)])
    output_parsing_mode: Literal["xml_key", "constrained_decoding"] = "xml_key"
    response_xml_key: str = Field(default="response", pattern=r"^[A-Za-z_][\w.-]*$")
    judge_model: dict[str, Any] | None = None
    verdict_field: str | None = None
    pass_values: list[Any] = Field(default_factory=lambda: ["pass", True])

    @model_validator(mode="after")
    def _docent_rules(self) -> SchemaJudgeSpec:
        problems = placeholder_problems([t.content for t in self.prompt_templates])
        problems += metaschema_problems(self.output_schema)
        if self.output_parsing_mode == "xml_key":
            tag = f"<{self.response_xml_key}>"
            if not any(tag in t.content for t in self.prompt_templates):
                problems.append(f"prompt_templates: xml_key parsing needs a template that names {tag} "
                                "(ask for the JSON inside it)")
        if self.verdict_field is not None and self.verdict_field not in self.output_schema.get("properties", {}):
            names = ", ".join(self.output_schema.get("properties", {})) or "none"
            problems.append(f"verdict_field: {self.verdict_field!r} is not a property of output_schema "
                            f"(properties: {names})")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def citation_paths(self) -> list[tuple[str, ...]]:
        """Paths (property names, ``[]`` for array items) of the string fields marked ``"citations": true``."""
        found: list[tuple[str, ...]] = []
        _walk_citations(self.output_schema, (), found)
        return found


def _walk_citations(node: Any, path: tuple[str, ...], found: list[tuple[str, ...]]) -> None:
    if not isinstance(node, dict):
        return
    if node.get("type") == "string" and node.get("citations") is True:
        found.append(path)
    for name, child in (node.get("properties") or {}).items():
        _walk_citations(child, (*path, str(name)), found)
    if isinstance(node.get("items"), dict):
        _walk_citations(node["items"], (*path, "[]"), found)


def placeholder_problems(templates: list[str]) -> list[str]:
    """Unknown or missing placeholders across the templates (Docent: all three, nothing else)."""
    problems: list[str] = []
    used: set[str] = set()
    for number, text in enumerate(templates):
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
        except ValueError as exc:
            problems.append(f"prompt_templates[{number}]: {exc} (write a literal brace as {{{{ or }}}})")
            continue
        for name in fields:
            if name not in PLACEHOLDERS:
                problems.append(f"prompt_templates[{number}]: unknown placeholder {{{name}}} "
                                f"(use {', '.join('{' + p + '}' for p in PLACEHOLDERS)}; a literal brace is {{{{)")
            used.add(name)
    missing = [p for p in PLACEHOLDERS if p not in used]
    if missing:
        problems.append("prompt_templates: missing placeholder(s) " + ", ".join("{" + p + "}" for p in missing)
                        + " (the templates together must use all three)")
    return problems


def metaschema_problems(schema: Any, path: str = "output_schema") -> list[str]:
    """What makes ``schema`` break Docent's metaschema, each located by its path."""
    if not isinstance(schema, dict):
        return [f"{path}: must be a JSON object"]
    if schema.get("type") != "object":
        return [f'{path}: the root must be "type": "object" with "properties"']
    return _node_problems(schema, path)


def _node_problems(node: Any, path: str) -> list[str]:
    if not isinstance(node, dict):
        return [f"{path}: must be a JSON object"]
    problems = [f"{path}: {c} is not supported" for c in _COMBINATORS if c in node]
    kind = node.get("type")
    if kind not in _TYPES:
        problems.append(f"{path}: type {kind!r} is not supported (use one of {', '.join(sorted(_TYPES))})")
        return problems
    if node.get("citations") is not None and (kind != "string" or node.get("citations") is not True):
        problems.append(f'{path}: "citations": true is only allowed on string fields')
    if kind == "object":
        props = node.get("properties")
        if not isinstance(props, dict) or not props:
            problems.append(f'{path}: an object needs "properties"')
            props = {}
        if node.get("additionalProperties", False) is not False:
            problems.append(f'{path}: "additionalProperties" must be false when present')
        required = node.get("required", [])
        if not isinstance(required, list) or any(r not in props for r in required):
            problems.append(f'{path}: "required" names properties that do not exist')
        for name, child in props.items():
            problems += _node_problems(child, f"{path}.properties.{name}")
    elif kind == "array":
        if not isinstance(node.get("items"), dict):
            problems.append(f'{path}: an array needs "items"')
        else:
            problems += _node_problems(node["items"], f"{path}.items")
    if "enum" in node and (not isinstance(node["enum"], list) or not node["enum"]):
        problems.append(f'{path}: "enum" must be a non-empty list')
    return problems
