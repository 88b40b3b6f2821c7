"""The two ports every stage uses: one for chat models, one for web search.

All LLM I/O goes through :class:`ChatModel.complete`; all search through :class:`Search.search`.
Real adapters live in ``verify.llm.adapters``; the offline simulated provider in ``verify.llm.simulated``.
Structured output is parsed on our side (``verify.llm.structured``), so the port stays one method.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant", "tool"]


class Purpose(enum.StrEnum):
    """Which step makes a model call. Values are the strings written to records and transcripts.

    Code that needs to know what kind of call a request is asks the member (``usage_group``,
    ``is_template_deep_judgment``, ...), never a prefix of its value.
    """

    ANSWER = "answer"
    PARSING = "parsing"
    ABSTENTION_CHECK = "abstention_check"
    SUFFICIENCY_CHECK = "sufficiency_check"
    EMBEDDING_CHECK = "embedding_check"
    RUBRIC_BATCH = "rubric_batch"
    RUBRIC_LITERAL_BATCH = "rubric_literal_batch"
    RUBRIC_SINGLE = "rubric_single"
    RUBRIC_METRIC = "rubric_metric"
    RUBRIC_GRADER = "rubric_grader"  # a letta-style prompt grader: {score, rationale}
    RUBRIC_SCHEMA_JUDGE = "rubric_schema_judge"  # a Docent-style schema judge: its own output schema
    DJ_EXCERPTS = "dj_excerpts"
    DJ_HALLUCINATION = "dj_hallucination"
    DJ_REASONING = "dj_reasoning"
    DJ_SCORE = "dj_score"
    DJ_BATCH_EXCERPTS = "dj_batch_excerpts"  # strategy batched: quotes for every deep-judgment trait of a task
    DJ_BATCH_SCORE = "dj_batch_score"  # strategy batched: reasoning, verdict (and search risks) of every trait
    TEMPLATE_DJ_EXCERPTS = "template_dj_excerpts"
    TEMPLATE_DJ_HALLUCINATION = "template_dj_hallucination"
    TEMPLATE_DJ_REASONING = "template_dj_reasoning"

    @property
    def is_template_deep_judgment(self) -> bool:
        """A deep-judgment step of template verification."""
        return self in _TEMPLATE_DJ

    @property
    def is_rubric_deep_judgment(self) -> bool:
        """A deep-judgment step of one rubric trait."""
        return self in _RUBRIC_DJ

    @property
    def is_rubric_evaluation(self) -> bool:
        """A standard (not deep-judgment) rubric evaluation call."""
        return self in _RUBRIC_EVALUATION

    @property
    def usage_group(self) -> str:
        """The ``usage_metadata`` key this call's tokens are counted under.

        ``answer_generation``, ``deep_judgment`` (template deep judgment), ``deep_judgment_rubric``,
        ``rubric_evaluation``; parsing and the checks are counted under their own value.
        """
        if self is Purpose.ANSWER:
            return "answer_generation"
        if self.is_template_deep_judgment:
            return "deep_judgment"
        if self.is_rubric_deep_judgment:
            return "deep_judgment_rubric"
        if self.is_rubric_evaluation:
            return "rubric_evaluation"
        return self.value


PURPOSE_HEADER = "X-Verify-Purpose"
"""The HTTP header an OpenAI-compatible adapter sends the request's purpose in (the simulated
server answers by it; real providers ignore it)."""

_TEMPLATE_DJ = frozenset(
    {Purpose.TEMPLATE_DJ_EXCERPTS, Purpose.TEMPLATE_DJ_HALLUCINATION, Purpose.TEMPLATE_DJ_REASONING}
)
_RUBRIC_DJ = frozenset({Purpose.DJ_EXCERPTS, Purpose.DJ_HALLUCINATION, Purpose.DJ_REASONING, Purpose.DJ_SCORE,
                        Purpose.DJ_BATCH_EXCERPTS, Purpose.DJ_BATCH_SCORE})
_RUBRIC_EVALUATION = frozenset(
    {Purpose.RUBRIC_BATCH, Purpose.RUBRIC_LITERAL_BATCH, Purpose.RUBRIC_SINGLE, Purpose.RUBRIC_METRIC,
     Purpose.RUBRIC_GRADER, Purpose.RUBRIC_SCHEMA_JUDGE}
)


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model: its name, what it does, and its parameters as a JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model made: the provider's call id, the tool's name and its arguments."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Message:
    """One turn. An assistant turn that called tools carries ``tool_calls``; the result of each call
    comes back as a ``tool`` turn whose ``tool_call_id`` names the call."""

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens)


@dataclass(frozen=True)
class ChatRequest:
    """One model call.

    ``schema`` is the JSON schema of the structured reply wanted (its ``title`` names it), or
    ``None`` for free text. ``purpose`` (required, keyword-only) says which step asks, for usage
    accounting and transcripts (the simulated judge also answers by it), and ``trait`` which trait.
    ``replicate`` is part of the cache key, so replicates are independent samples. ``tools`` are
    the tools the model may call (the reply's ``tool_calls``); empty for every plain call.
    """

    messages: tuple[Message, ...]
    schema: dict[str, Any] | None = None
    purpose: Purpose = field(kw_only=True)
    trait: str | None = None
    replicate: int | None = None
    tools: tuple[ToolSpec, ...] = ()


@dataclass(frozen=True)
class ChatReply:
    """What a model said. ``parsed`` is set when the provider returned native structured output.

    ``attempts`` is how many requests the transport made for this reply: the tries of
    :class:`~verify.llm.resilience.RetryingModel` plus any re-sends of an adapter that stepped down
    its structured-output method; 0 for a reply served from the cache.
    """

    text: str
    parsed: dict[str, Any] | None = None
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    finish_reason: str | None = None
    model: str = ""
    cached: bool = False
    attempts: int = 1
    tool_calls: tuple[ToolCall, ...] = ()
    """The tools the model called (only when the request offered ``tools``)."""
    forget: Callable[[], None] | None = field(default=None, compare=False, repr=False)
    """Set by a caching layer: drops this reply from the cache (used when it proved unusable)."""


@runtime_checkable
class ChatModel(Protocol):
    """The one LLM port: messages in, text (and maybe parsed output), usage and latency out."""

    @property
    def model_id(self) -> str:
        """A stable identity (provider:model plus parameters) used in cache keys and results."""
        ...

    async def complete(self, request: ChatRequest) -> ChatReply: ...


@dataclass(frozen=True)
class SearchHit:
    content: str
    title: str | None = None
    url: str | None = None


@runtime_checkable
class Search(Protocol):
    """The one search port."""

    async def search(self, query: str) -> list[SearchHit]: ...
