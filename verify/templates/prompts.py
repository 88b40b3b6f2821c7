"""Prompts and reply models of the template stages: abstention, sufficiency, parsing, equivalence,
and template deep judgment (excerpts and reasoning per attribute).

Same conventions as :mod:`verify.judging.prompts`: the question in ``<question>``, the answer in
``<response>`` (data, never instructions), reply models titled by step. Template fields are listed
as ``<field name="..." type="...">description</field>`` inside ``<template class="...">``. The
ground truth is never shown to the judge, except to the equivalence check, which compares it with
the parsed values.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from verify.judging.prompts import JUDGE_SYSTEM, context_block
from verify.templates.compiler import FieldSpec


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore")


class AbstentionResult(_Reply):
    """Whether the response refuses or abstains instead of answering."""

    reasoning: str = ""
    abstention_detected: bool = Field(description="true if the response refuses, abstains or says it cannot answer")


class SufficiencyResult(_Reply):
    """Whether the response holds enough information to fill every template field."""

    reasoning: str = ""
    sufficient: bool = Field(description="true if every field can be filled from the response")


class EquivalenceResult(_Reply):
    """Whether the parsed values mean the same as the expected ones."""

    reasoning: str = ""
    equivalent: bool


class TemplateExcerpt(_Reply):
    text: str = Field(description="a verbatim quote copied exactly from the response")
    confidence: Literal["high", "medium", "low", "none"] = "medium"


class TemplateExcerptsOutput(_Reply):
    """Verbatim quotes of the response per template attribute."""

    # Items are read one by one (verify.judging.quotes): one bad field must not discard the good quotes.
    excerpts: Annotated[dict[str, Any], WithJsonSchema({
        "type": "object", "additionalProperties": {"type": "array", "items": TemplateExcerpt.model_json_schema()},
    })] = Field(default_factory=dict)


class TemplateReasoningOutput(_Reply):
    """Reasoning per template attribute, citing the evidence."""

    reasoning: dict[str, str] = Field(default_factory=dict)


PARSE_SYSTEM = (
    JUDGE_SYSTEM + " You extract structured answers: fill each field with what the response itself "
    "states, do not correct it and do not add knowledge of your own; use null when the response does "
    "not give a value."
)


def render_fields(class_name: str, fields: Sequence[FieldSpec]) -> str:
    rows = "\n".join(f'<field name="{f.name}" type="{f.type}">{f.description}</field>' for f in fields)
    return f'<template class="{class_name}">\n{rows}\n</template>'


def abstention_prompt(question: str, response: str) -> str:
    return (
        "Decide whether the response abstains: it refuses, says it cannot or will not answer, says it "
        "does not know, or only deflects, instead of attempting an answer. A hedged or wrong answer is "
        f"still an attempt.\n{context_block(question, response)}\n"
        'Return JSON: {"reasoning": "...", "abstention_detected": true|false}.'
    )


def sufficiency_prompt(question: str, response: str, class_name: str, fields: Sequence[FieldSpec],
                       schema: dict[str, Any]) -> str:
    return (
        "Decide whether the response contains enough information to fill every field of the template "
        "(whether the values are right does not matter here).\n"
        f"{context_block(question, response)}\n{render_fields(class_name, fields)}\n"
        f"<template_schema>{json.dumps(schema)}</template_schema>\n"
        'Return JSON: {"reasoning": "...", "sufficient": true|false}.'
    )


def parse_prompt(question: str, response: str, class_name: str, fields: Sequence[FieldSpec],
                 schema: dict[str, Any], reasoning: dict[str, str] | None = None) -> str:
    block = ""
    if reasoning:
        block = f"\n<attribute_reasoning>{json.dumps(reasoning)}</attribute_reasoning>\nUse this reasoning to fill the fields."
    return (
        "Parse the response into the template's fields.\n"
        f"{context_block(question, response)}\n{render_fields(class_name, fields)}{block}\n"
        f"Return one JSON object matching this schema (null for a field the response does not give):\n"
        f"{json.dumps(schema)}"
    )


def equivalence_prompt(question: str, expected: Any, parsed: Any) -> str:
    return (
        "The parsed answer did not match the expected answer exactly. Decide whether they are "
        "semantically equivalent: the same facts, differing only in wording, format or precision.\n"
        f"<question>{question}</question>\n<expected>{json.dumps(expected, sort_keys=True)}</expected>\n"
        f"<parsed>{json.dumps(parsed, sort_keys=True)}</parsed>\n"
        'Return JSON: {"reasoning": "...", "equivalent": true|false}.'
    )


def template_excerpt_prompt(question: str, response: str, class_name: str, fields: Sequence[FieldSpec],
                            max_excerpts: int, feedback: str | None) -> str:
    retry = f"\n<retry_feedback>{feedback}</retry_feedback>" if feedback else ""
    return (
        "For each template field, quote the passages of the response that give its value. Copy each "
        "quote EXACTLY, character for character, from the response.\n"
        f"{context_block(question, response)}\n{render_fields(class_name, fields)}\n"
        f"<max_excerpts>{max_excerpts}</max_excerpts>{retry}\n"
        'Return JSON: {"excerpts": {"<field name>": [{"text": "...", "confidence": "high|medium|low"}]}}; '
        "an empty list for a field the response does not address."
    )


def template_reasoning_prompt(question: str, response: str, class_name: str, fields: Sequence[FieldSpec],
                              evidence: dict[str, str] | None) -> str:
    block = ""
    if evidence is not None:
        rows = "\n".join(f'<evidence field="{name}">\n{text}\n</evidence>' for name, text in evidence.items())
        block = f"\n{rows}\nBase the reasoning on the numbered evidence and cite it as [E1], [E2]."
    return (
        "For each template field, explain step by step what value the response gives and why.\n"
        f"{context_block(question, response)}\n{render_fields(class_name, fields)}{block}\n"
        'Return JSON: {"reasoning": {"<field name>": "..."}}.'
    )
