"""Structured replies parsed on our side: ask for JSON, validate with pydantic, feed errors back.

:func:`ask_structured` sends the schema with the request (adapters use it for native structured
output when the provider has it) and then trusts nothing: the reply is validated with pydantic,
and when that fails the model gets its own reply back with the error and is asked again.

:func:`parse_json_reply` finds the JSON in free text: it drops ``<think>`` blocks, reads code
fences, extracts balanced ``{...}`` objects and repairs small mistakes (trailing commas, single
quotes, Python literals) with ``json_repair``. It never *completes* a cut-off object: a reply
that stopped on the token limit, or whose braces never close, is reported as truncated.

A reply that stays unusable is returned as ``Structured(value=None, error=..., raw_text=...)``;
callers record it as *unscored*, never as a failing score.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import json_repair
from pydantic import BaseModel, ValidationError

from verify.errors import validation_lines
from verify.llm.ports import ChatModel, ChatRequest, Message, Purpose, Usage

__all__ = [
    "TRUNCATED_FINISH_REASONS",
    "Structured",
    "TextReply",
    "ask_structured",
    "ask_text",
    "Check",
    "is_truncated",
    "looks_like_schema",
    "parse_json_reply",
    "retry_feedback",
    "strip_thinking",
]

T = TypeVar("T", bound=BaseModel)

TRUNCATED_FINISH_REASONS = frozenset({"length", "max_tokens", "max_output_tokens"})


@dataclass(frozen=True)
class Structured(Generic[T]):
    """The outcome of :func:`ask_structured`.

    ``value`` is the validated reply, or ``None`` when every attempt failed; then ``error``
    says why the last one was unusable and ``raw_text`` keeps that reply's text.
    ``attempts`` counts replies examined and ``calls`` model calls made (equal today; kept apart
    so callers need not assume it), ``usage`` sums the usage of all calls.
    """

    value: T | None
    raw_text: str
    error: str | None
    attempts: int
    usage: Usage = field(default_factory=Usage)
    calls: int = 0

    @property
    def ok(self) -> bool:
        return self.value is not None


@dataclass(frozen=True)
class TextReply:
    """The outcome of :func:`ask_text`."""

    text: str
    usage: Usage = field(default_factory=Usage)
    calls: int = 1
    finish_reason: str | None = None


def is_truncated(finish_reason: str | None) -> bool:
    """True when the provider says the reply stopped on the token limit."""
    return (finish_reason or "").lower() in TRUNCATED_FINISH_REASONS


_THINK_BLOCK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S | re.I)
_THINK_CLOSE = re.compile(r"</(think|thinking|reasoning)>", re.I)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n?(.*?)```", re.S)


def strip_thinking(text: str) -> str:
    """Drop ``<think>...</think>`` blocks (and anything before a stray closing tag)."""
    text = _THINK_BLOCK.sub("", text)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end() :]
    return text.strip()


def _balanced_objects(text: str) -> tuple[list[str], bool]:
    """Top-level ``{...}`` substrings in order (string-aware), and whether one never closed."""
    found: list[str] = []
    depth = 0
    start = -1
    in_string = False
    escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = depth > 0
        elif char == "{":
            if depth == 0:
                start = index
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                found.append(text[start : index + 1])
    return found, depth > 0


class _Conflict(ValueError):
    """One object gives a key twice with different values: which one the judge meant is unknown."""


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out and out[key] != value:  # an identical repeat says nothing new and is accepted
            raise _Conflict(f"the key {key!r} is given twice with different values "
                            f"({json.dumps(out[key])[:80]}, then {json.dumps(value)[:80]}); give each key once")
        out[key] = value
    return out


def _loads(candidate: str, *, repair: bool) -> Any:
    """The JSON value of ``candidate`` (repaired when asked), None when there is none; raises
    :class:`_Conflict` for a key given twice with different values (never settled by repair)."""
    try:
        return json.loads(candidate, object_pairs_hook=_once)
    except _Conflict:
        raise
    except (json.JSONDecodeError, ValueError):
        if not repair:
            return None
    try:
        return json_repair.loads(candidate)
    except Exception:  # noqa: BLE001 - json_repair is best effort
        return None


def _dicts(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict):
                yield item


def _candidates(text: str) -> tuple[list[dict[str, Any]], bool, str | None]:
    """Every JSON object we can find in ``text``, best guesses first; a truncation flag; and the first
    conflict (a key given twice with different values) that kept an object out."""
    results: list[dict[str, Any]] = []
    seen: set[str] = set()
    conflicts: dict[str, str] = {}  # candidate text -> its conflict: never repaired into one reading

    def load(candidate: str, repair: bool) -> Any:
        if candidate in conflicts:
            return None
        try:
            return _loads(candidate, repair=repair)
        except _Conflict as exc:
            conflicts[candidate] = str(exc)
            return None

    def add(value: Any) -> None:
        for item in _dicts(value):
            marker = json.dumps(item, sort_keys=True, default=str)
            if marker not in seen:
                seen.add(marker)
                results.append(item)

    stripped = text.strip()
    add(load(stripped, False))
    blocks = [body for _lang, body in _FENCE.findall(text)]
    for body in blocks:
        add(load(body.strip(), False))
    objects, unclosed = _balanced_objects(text)
    for obj in objects:
        add(load(obj, False))
    if not results:
        for body in blocks:
            inner, body_unclosed = _balanced_objects(body)
            if body_unclosed and not inner:
                continue
            add(load(body.strip(), True))
        for obj in objects:
            add(load(obj, True))
    return results, unclosed and not objects, next(iter(conflicts.values()), None)


def _unwrap(candidate: dict[str, Any], schema: type[BaseModel]) -> Iterator[dict[str, Any]]:
    yield candidate
    # small models sometimes wrap the object: {"Verdict": {...}} or {"properties": {...}}
    if len(candidate) == 1:
        ((key, inner),) = candidate.items()
        if isinstance(inner, dict) and key not in schema.model_fields:
            yield inner


Check = Callable[[dict[str, Any], Any], str | None]
"""A caller's own test of a validated reply: ``check(raw_object, value)`` returns why the reply is
unusable (fed back to the judge) or ``None``. Pydantic says the shape fits; a check says it means
something (a template parse that names no field of the template, say)."""


def looks_like_schema(raw: dict[str, Any], schema: type[BaseModel]) -> bool:
    """True when ``raw`` is a JSON schema (small judges echo the one in the prompt) rather than a reply."""
    if "properties" in schema.model_fields or not isinstance(raw.get("properties"), dict):
        return False
    return any(key in raw for key in ("type", "title", "required", "$defs", "$schema", "additionalProperties"))


def _usable(raw: dict[str, Any], value: T, schema: type[T], check: Check | None) -> str | None:
    if looks_like_schema(raw, schema):
        return "you returned the JSON schema itself; return an object with the values instead"
    return check(raw, value) if check is not None else None


def parse_json_reply(text: str, schema: type[T], check: Check | None = None) -> T:
    """Find, repair and validate the JSON object in a free-text reply.

    Candidates are tried in order; one that validates but fails ``check`` (or is an echoed schema)
    is passed over, so a reply that echoes the schema and then answers still counts.
    Raises ValueError with a short, model-readable message when no object validates.
    """
    body = strip_thinking(text)
    if not body:
        raise ValueError("the reply is empty")
    candidates, truncated, conflict = _candidates(body)
    if not candidates:
        if conflict is not None:
            raise ValueError(conflict)
        if truncated:
            raise ValueError("the reply looks truncated: a JSON object was opened but never closed")
        raise ValueError("no JSON object found in the reply")
    first_error: ValidationError | None = None
    unusable: str | None = None
    for candidate in candidates:
        for shaped in _unwrap(candidate, schema):
            try:
                value = schema.model_validate(shaped)
            except ValidationError as exc:
                first_error = first_error or exc
                continue
            problem = _usable(shaped, value, schema, check)
            if problem is None:
                return value
            unusable = unusable or problem
    if unusable is not None:
        raise ValueError(unusable)
    assert first_error is not None
    raise ValueError(f"the JSON does not match the schema: {'; '.join(validation_lines(first_error, limit=8))}")


@functools.lru_cache(maxsize=512)
def json_schema_of(schema: type[BaseModel]) -> dict[str, Any]:
    """``schema.model_json_schema()``, built once per class (building it takes about 2 ms).

    The dict is shared by every request for that schema: treat it as read-only.
    """
    return schema.model_json_schema()


def retry_feedback(error: str, attempt: int, attempts: int) -> str:
    """What the judge is told after an unusable reply.

    The attempt number makes every retry a new request: a retry identical to an earlier request
    would be answered from the response cache with the reply that was just rejected.
    """
    return (
        f"Your previous reply could not be used: {error}.\n"
        f"Reply again (attempt {attempt} of {attempts}) with only the corrected JSON object that matches "
        "the requested schema: no prose, no code fences."
    )


async def ask_structured(
    model: ChatModel,
    messages: Sequence[Message],
    schema: type[T],
    *,
    purpose: Purpose,
    trait: str | None = None,
    max_parse_retries: int = 2,
    check: Check | None = None,
) -> Structured[T]:
    """Ask ``model`` for a reply matching ``schema``; retry with the error up to ``max_parse_retries`` times.

    A reply is usable when it validates, is not the schema echoed back, and passes ``check``.
    Transport failures (``ModelError`` after the retry wrapper gave up) propagate.
    """
    json_schema = json_schema_of(schema)
    conversation = list(messages)
    forget: list[Callable[[], None]] = []
    try:
        return await _ask(model, conversation, json_schema, schema, purpose, trait, max_parse_retries, forget, check)
    except BaseException:
        for drop in forget:  # an outage mid-way: the earlier unusable replies must not be replayed either
            drop()
        raise


async def _ask(
    model: ChatModel, conversation: list[Message], json_schema: dict[str, Any], schema: type[T], purpose: Purpose,
    trait: str | None, max_parse_retries: int, forget: list[Callable[[], None]], check: Check | None,
) -> Structured[T]:
    usage = Usage()
    calls = 0
    raw_text = ""
    error: str | None = None
    attempts = 1 + max(0, max_parse_retries)
    for attempt in range(1, attempts + 1):
        reply = await model.complete(
            ChatRequest(tuple(conversation), schema=json_schema, purpose=purpose, trait=trait)
        )
        if reply.forget is not None:
            forget.append(reply.forget)
        calls += 1
        usage = usage + reply.usage
        raw_text = reply.text
        if is_truncated(reply.finish_reason):
            error = f"reply truncated (finish_reason={reply.finish_reason})"
        elif reply.parsed is not None:
            try:
                value = schema.model_validate(reply.parsed)
            except ValidationError as exc:
                error = f"the JSON does not match the schema: {'; '.join(validation_lines(exc, limit=8))}"
            else:
                error = _usable(reply.parsed, value, schema, check)
                if error is None:
                    return Structured(value, raw_text, None, calls, usage, calls)
        else:
            try:
                value = parse_json_reply(reply.text, schema, check)
            except ValueError as exc:
                error = str(exc)
            else:
                return Structured(value, raw_text, None, calls, usage, calls)
        feedback = error
        if is_truncated(reply.finish_reason):
            feedback = f"{error}; the reply hit the length limit, so answer more briefly"
        if attempt == attempts:
            break
        said = reply.text if reply.text.strip() else "(empty reply)"  # some APIs reject empty turns
        conversation += [Message("assistant", said), Message("user", retry_feedback(feedback, attempt + 1, attempts))]
    # Never replay a failure from the cache: the next run asks the model again.
    for drop in forget:
        drop()
    return Structured(None, raw_text, error, calls, usage, calls)


async def ask_text(
    model: ChatModel, messages: Sequence[Message], *, purpose: Purpose, trait: str | None = None
) -> TextReply:
    """One free-text call. The text is returned as the model wrote it (thinking included)."""
    reply = await model.complete(ChatRequest(tuple(messages), schema=None, purpose=purpose, trait=trait))
    return TextReply(reply.text, reply.usage, 1, reply.finish_reason)
