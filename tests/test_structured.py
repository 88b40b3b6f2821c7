"""Structured replies: JSON extraction and repair, truncation, validation-feedback retries."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from pydantic import BaseModel, Field

from verify.errors import ModelError
from verify.llm.ports import ChatReply, ChatRequest, Message, Purpose, Usage
from verify.llm.structured import (
    Structured,
    TextReply,
    ask_structured,
    ask_text,
    is_truncated,
    parse_json_reply,
    strip_thinking,
)


class Verdict(BaseModel):
    trait: str
    passed: bool
    score: int = Field(ge=0, le=5)
    excerpts: list[str] = Field(default_factory=list)


Script = ChatReply | Exception | Callable[[ChatRequest], ChatReply]


@dataclass
class ScriptedModel:
    """Returns (or raises) the scripted items in order and records each request."""

    script: list[Script]
    requests: list[ChatRequest] = field(default_factory=list)
    model_id: str = "scripted:test"

    async def complete(self, request: ChatRequest) -> ChatReply:
        self.requests.append(request)
        item = self.script.pop(0)
        if isinstance(item, Exception):
            raise item
        if callable(item):
            return item(request)
        return item


def text(value: str, finish: str | None = "stop", usage: Usage | None = None) -> ChatReply:
    return ChatReply(text=value, finish_reason=finish, usage=usage or Usage(10, 5))


GOOD = '{"trait": "clarity", "passed": true, "score": 4, "excerpts": ["Paris is the capital"]}'
PROMPT = [Message("system", "You judge."), Message("user", "Judge clarity.")]


# -- parse_json_reply --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        GOOD,
        f"```json\n{GOOD}\n```",
        f"```\n{GOOD}\n```",
        f"Sure! Here is my verdict:\n{GOOD}\nHope that helps.",
        f"<think>I could answer {{\"score\": 9}} but let me check {{</think>\n{GOOD}",
        f"<thinking>hmm</thinking>```json\n{GOOD}\n```",
        '{"trait": "clarity", "passed": true, "score": 4, "excerpts": ["Paris is the capital",],}',
        "Verdict: {'trait': 'clarity', 'passed': True, 'score': 4, 'excerpts': ['Paris is the capital']}",
        f'{{"Verdict": {GOOD}}}',
        f"{GOOD}\n\nAlternative: {{\"trait\": \"x\", \"passed\": false, \"score\": 0}}",
        '{"trait": "clarity", "passed": true, "score": 4, "excerpts": ["Paris is the capital {not a brace}"]}',
    ],
    ids=[
        "plain", "fenced-json", "fenced-bare", "prose-around", "think-with-braces", "thinking-fenced",
        "trailing-commas", "single-quotes-python-true", "wrapped-in-title", "two-objects", "brace-in-string",
    ],
)  # fmt: skip
def test_parse_json_reply_finds_the_object(reply: str) -> None:
    verdict = parse_json_reply(reply, Verdict)
    assert verdict.trait == "clarity"
    assert verdict.passed is True
    assert verdict.score == 4
    assert verdict.excerpts and verdict.excerpts[0].startswith("Paris is the capital")


def test_parse_json_reply_does_not_complete_a_cut_off_object() -> None:
    with pytest.raises(ValueError, match="truncated"):
        parse_json_reply(
            'Here: {"trait": "clarity", "passed": true, "score": 4, "excerpts": ["Paris is th', Verdict
        )


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("", "empty"),
        ("<think>only thoughts</think>", "empty"),
        ("I think the answer is clear, score 4.", "no JSON object"),
        ('{"trait": "clarity", "passed": "maybe", "score": 11}', "score"),
        ('{"trait": "clarity", "passed": true}', "score: required field is missing"),
    ],
)
def test_parse_json_reply_errors_are_short_and_specific(reply: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        parse_json_reply(reply, Verdict)
    assert len(str(caught.value)) < 400


def test_strip_thinking_and_truncation_flags() -> None:
    assert strip_thinking("<think>a {b}</think> done") == "done"
    assert strip_thinking("reasoning without an opening tag</think>{}") == "{}"
    assert is_truncated("length") and is_truncated("max_tokens") and is_truncated("LENGTH")
    assert not is_truncated("stop") and not is_truncated(None)


# -- ask_structured ----------------------------------------------------------------------------------


async def test_native_parsed_reply_is_validated() -> None:
    model = ScriptedModel([ChatReply(text=GOOD, parsed={"trait": "clarity", "passed": True, "score": 4})])
    result = await ask_structured(model, PROMPT, Verdict, purpose=Purpose.RUBRIC_SINGLE, trait="clarity")
    assert isinstance(result, Structured)
    assert result.value == Verdict(trait="clarity", passed=True, score=4)
    assert (result.error, result.attempts, result.calls) == (None, 1, 1)
    request = model.requests[0]
    assert request.schema == Verdict.model_json_schema()
    assert (request.purpose, request.trait) == (Purpose.RUBRIC_SINGLE, "clarity")


async def test_text_reply_is_extracted_without_a_second_call() -> None:
    model = ScriptedModel([text(f"Verdict below.\n```json\n{GOOD[:-1]},}}\n```")])
    result = await ask_structured(model, PROMPT, Verdict, purpose=Purpose.RUBRIC_SINGLE)
    assert result.value is not None and result.value.score == 4
    assert result.calls == 1


async def test_schema_invalid_reply_gets_feedback_then_succeeds() -> None:
    bad = '{"trait": "clarity", "passed": true, "score": 9}'
    model = ScriptedModel([text(bad, usage=Usage(100, 20)), text(GOOD, usage=Usage(130, 25))])
    result = await ask_structured(model, PROMPT, Verdict, purpose=Purpose.RUBRIC_SINGLE)
    assert result.value is not None and result.value.score == 4
    assert (result.attempts, result.calls, result.error) == (2, 2, None)
    assert result.usage == Usage(230, 45)
    retry = model.requests[1].messages
    assert retry[: len(PROMPT)] == tuple(PROMPT)
    assert retry[-2] == Message("assistant", bad)
    assert retry[-1].role == "user"
    assert "score" in retry[-1].content and "less than or equal to 5" in retry[-1].content
    assert "only the corrected JSON" in retry[-1].content


async def test_native_parsed_but_invalid_is_fed_back_too() -> None:
    bad = {"trait": "clarity", "passed": True, "score": -1}
    model = ScriptedModel([ChatReply(text="{}", parsed=bad), ChatReply(text=GOOD, parsed=None)])
    result = await ask_structured(model, PROMPT, Verdict, purpose=Purpose.RUBRIC_SINGLE)
    assert result.value is not None and result.calls == 2
    assert "greater than or equal to 0" in model.requests[1].messages[-1].content


async def test_always_invalid_gives_none_with_raw_text_and_error() -> None:
    model = ScriptedModel([text("I cannot judge this."), text("Still prose."), text("score: four")])
    result = await ask_structured(model, PROMPT, Verdict, purpose=Purpose.RUBRIC_SINGLE, max_parse_retries=2)
    assert result.value is None
    assert not result.ok
    assert result.raw_text == "score: four"
    assert result.error == "no JSON object found in the reply"
    assert (result.attempts, result.calls) == (3, 3)
    assert len(model.requests[2].messages) == len(PROMPT) + 4


async def test_truncated_reply_is_not_repaired() -> None:
    cut = '{"trait": "clarity", "passed": true, "score": 4, "excerpts": ["Paris is the ca'
    model = ScriptedModel([text(cut, finish="length")])
    result = await ask_structured(model, PROMPT, Verdict, purpose=Purpose.RUBRIC_SINGLE, max_parse_retries=0)
    assert result.value is None
    assert result.error == "reply truncated (finish_reason=length)"
    assert result.raw_text == cut


async def test_truncated_even_if_parseable_then_retry_succeeds() -> None:
    # a cut-off list can still be valid JSON; finish_reason wins over the parse
    model = ScriptedModel([
        ChatReply(text=GOOD, parsed={"trait": "clarity", "passed": True, "score": 4}, finish_reason="max_tokens"),
        text(GOOD),
    ])  # fmt: skip
    result = await ask_structured(model, PROMPT, Verdict, purpose=Purpose.RUBRIC_SINGLE)
    assert result.value is not None and result.calls == 2
    assert "truncated" in model.requests[1].messages[-1].content
    assert "more briefly" in model.requests[1].messages[-1].content


async def test_no_retries_when_max_parse_retries_is_zero() -> None:
    model = ScriptedModel([text("nope")])
    result = await ask_structured(model, PROMPT, Verdict, purpose=Purpose.RUBRIC_SINGLE, max_parse_retries=0)
    assert (result.value, result.calls) == (None, 1)


async def test_model_errors_propagate() -> None:
    model = ScriptedModel([ModelError("gave up", "rate_limit")])
    with pytest.raises(ModelError) as caught:
        await ask_structured(model, PROMPT, Verdict, purpose=Purpose.RUBRIC_SINGLE)
    assert caught.value.category == "rate_limit"


async def test_ask_text() -> None:
    model = ScriptedModel([text("<think>x</think>Paris.", usage=Usage(7, 3))])
    reply = await ask_text(model, PROMPT, purpose=Purpose.ANSWER, trait=None)
    assert reply == TextReply("<think>x</think>Paris.", Usage(7, 3), 1, "stop")
    assert model.requests[0].schema is None and model.requests[0].purpose is Purpose.ANSWER
