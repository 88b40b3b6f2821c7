"""Docent-style schema judges: the definition's rules, reading replies, and citations proven against the answer."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from verify.benchmark.judge_spec import SchemaJudgeSpec, metaschema_problems, placeholder_problems
from verify.judging.citations import numbered, prove, segments
from verify.judging.schema_reply import output_problems, read_reply

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "label": {"type": "string", "enum": ["pass", "fail"]},
        "score": {"type": "integer", "minimum": 1, "maximum": 5},
        "explanation": {"type": "string", "citations": True},
        "issues": {"type": "array", "items": {
            "type": "object",
            "properties": {"description": {"type": "string", "citations": True},
                           "severity": {"type": "string", "enum": ["low", "high"]}},
            "required": ["description"], "additionalProperties": False}},
    },
    "required": ["label", "explanation"],
    "additionalProperties": False,
}
ANSWER = "The capital of France is Paris. It has about 2.1 million inhabitants.\nThe Seine flows through it."


def spec(**kw: Any) -> SchemaJudgeSpec:
    return SchemaJudgeSpec(rubric_text="Is the answer correct?", output_schema=SCHEMA, verdict_field="label", **kw)


# --------------------------------------------------------------------------- the definition


def test_the_default_template_passes_docent_s_rules_and_cited_fields_are_found() -> None:
    judge = spec()
    assert judge.citation_paths() == [("explanation",), ("issues", "[]", "description")]


@pytest.mark.parametrize(
    ("templates", "expected"),
    [
        (["{rubric} {agent_run}"], "missing placeholder(s) {output_schema}"),
        (["{rubric} {agent_run} {output_schema} {answer}"], "prompt_templates[0]: unknown placeholder {answer}"),
        (["{rubric} {agent_run", "{output_schema}"], "prompt_templates[0]: "),
    ],
)
def test_placeholders_are_checked_across_templates(templates: list[str], expected: str) -> None:
    assert any(expected in p for p in placeholder_problems(templates))


def test_placeholders_may_be_spread_over_messages_and_literal_braces_are_fine() -> None:
    assert placeholder_problems(["{rubric}", "JSON like {{\"a\": 1}} for {agent_run}", "{output_schema}"]) == []


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "array", "items": {"type": "string"}}, 'output_schema: the root must be "type": "object"'),
        ({"type": "object", "properties": {"x": {"type": "array"}}}, 'output_schema.properties.x: an array needs "items"'),
        ({"type": "object", "properties": {"x": {"type": "object"}}}, 'output_schema.properties.x: an object needs "properties"'),
        ({"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}]}}}, "output_schema.properties.x: anyOf is not supported"),
        ({"type": "object", "properties": {"x": {"type": "integer", "citations": True}}},
         'output_schema.properties.x: "citations": true is only allowed on string fields'),
        ({"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": True},
         'output_schema: "additionalProperties" must be false'),
        ({"type": "object", "properties": {"x": {"type": "date"}}}, "output_schema.properties.x: type 'date' is not supported"),
        ({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["y"]},
         'output_schema: "required" names properties that do not exist'),
    ],
)
def test_the_metaschema_is_enforced_with_located_problems(schema: dict[str, Any], expected: str) -> None:
    assert any(p.startswith(expected) for p in metaschema_problems(schema)), metaschema_problems(schema)


def test_a_bad_definition_fails_with_every_problem_at_once() -> None:
    with pytest.raises(ValidationError) as caught:
        SchemaJudgeSpec(rubric_text="r", output_schema={"type": "object", "properties": {"x": {"type": "array"}}},
                        prompt_templates=[{"content": "{rubric} {run}"}], verdict_field="label")
    text = str(caught.value)
    for part in ("unknown placeholder {run}", "missing placeholder(s) {agent_run}, {output_schema}",
                 'an array needs "items"', "needs a template that names <response>", "verdict_field: 'label'"):
        assert part in text


def test_constrained_decoding_needs_no_response_tag() -> None:
    judge = SchemaJudgeSpec(rubric_text="r", output_schema=SCHEMA, output_parsing_mode="constrained_decoding",
                            prompt_templates=[{"content": "{rubric}\n{agent_run}\n{output_schema}"}])
    assert judge.output_parsing_mode == "constrained_decoding"


# --------------------------------------------------------------------------- replies


GOOD = {"label": "pass", "score": 4, "explanation": 'It names Paris [E1] and "about 2.1 million inhabitants".'}


def test_the_last_response_block_is_read_and_fences_are_stripped() -> None:
    text = ("Thinking: I will answer <response>{draft}</response>... final:\n"
            '<response>\n```json\n{"label": "pass", "explanation": "ok [E1]"}\n```\n</response>')
    reply = read_reply(text, SCHEMA)
    assert reply.problems == [] and reply.output == {"label": "pass", "explanation": "ok [E1]"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"label": "pass", "explanation": "x"}', "no <response>...</response> block"),
        ("<response>not json</response>", "the reply is not valid JSON"),
        ("<response>[1, 2]</response>", "must be a JSON object"),
        ('<response>{"type": "object", "properties": {"label": {}}}</response>', "repeats the output schema"),
        ('<response>{"label": "maybe", "explanation": "x"}</response>', 'output.label: "maybe" is not one of'),
        ('<response>{"label": "pass"}</response>', "output.explanation: missing (required)"),
        ('<response>{"label": "pass", "explanation": "x", "score": 9}</response>', "output.score: 9 is above the maximum 5"),
        ('<response>{"label": "pass", "explanation": "x", "score": true}</response>', "output.score: expected integer"),
        ('<response>{"label": "pass", "explanation": "x", "extra": 1}</response>', "output.extra: not in the schema"),
        ('<response>{"label": "pass", "explanation": "x", "issues": [{"severity": "low"}]}</response>',
         "output.issues[0].description: missing (required)"),
    ],
)
def test_unusable_replies_say_why_and_are_never_an_output(text: str, expected: str) -> None:
    reply = read_reply(text, SCHEMA)
    assert reply.output is None and any(expected in p for p in reply.problems), reply.problems


def test_constrained_decoding_reads_the_whole_reply() -> None:
    assert read_reply('{"label": "fail", "explanation": "x"}', SCHEMA, mode="constrained_decoding").output == {
        "label": "fail", "explanation": "x"}
    assert output_problems(GOOD, SCHEMA) == []


# --------------------------------------------------------------------------- citations


def test_the_answer_is_numbered_by_sentence_with_offsets() -> None:
    found = segments(ANSWER)
    assert [ANSWER[s.start:s.end] for s in found] == [
        "The capital of France is Paris.", "It has about 2.1 million inhabitants.", "The Seine flows through it."]
    assert numbered(ANSWER).splitlines()[1] == "[E2] It has about 2.1 million inhabitants."


def test_references_and_quotes_are_proven_with_offsets() -> None:
    output = {**GOOD, "issues": [{"description": 'Says "the Seine flows through it" [E3]', "severity": "low"}]}
    fields = prove(output, spec().citation_paths(), ANSWER)
    assert [f.path for f in fields] == ["explanation", "issues[0].description"]
    assert all(f.proven for f in fields)
    ref, quote = fields[0].citations
    assert (ref.kind, ANSWER[ref.start:ref.end]) == ("reference", "The capital of France is Paris.")
    assert quote.kind == "quote" and ANSWER[quote.start:quote.end] == "about 2.1 million inhabitants"


def test_a_citation_that_does_not_hold_or_no_citation_leaves_the_field_unproven() -> None:
    output = {"label": "pass", "explanation": 'It says "about 3.5 million inhabitants" [E9]'}
    (field,) = prove(output, [("explanation",)], ANSWER)
    assert not field.proven
    reasons = {c.kind: c.reason for c in field.citations}
    assert reasons["reference"] == "there is no segment E9" and "number changed" in str(reasons["quote"])
    (bare,) = prove({"label": "pass", "explanation": "Looks right."}, [("explanation",)], ANSWER)
    assert bare.citations == [] and not bare.proven


def test_reference_lists_and_ranges() -> None:
    (field,) = prove({"explanation": "See [E1, E2] and [E2-E3]."}, [("explanation",)], ANSWER)
    assert [c.text for c in field.citations] == ["[E1]", "[E2]", "[E2]", "[E3]"] and field.proven
