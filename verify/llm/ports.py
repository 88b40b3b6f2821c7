"""The two ports every stage uses: one for chat models, one for web search.

All LLM I/O goes through :class:`ChatModel.complete`; all search through :class:`Search.search`.
Real adapters live in ``verify.llm.adapters``; the offline simulated provider in ``verify.llm.simulated``.
Structured output is parsed on our side (``verify.llm.structured``), so the port stays one method.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


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
    ``None`` for free text. ``purpose`` says which step asks (``answer``, ``rubric_batch``,
    ``dj_excerpts``, ...) and ``trait`` which trait, for usage accounting and transcripts.
    ``replicate`` is part of the cache key, so replicates are independent samples.
    """

    messages: tuple[Message, ...]
    schema: dict[str, Any] | None = None
    purpose: str = "generic"
    trait: str | None = None
    replicate: int | None = None


@dataclass(frozen=True)
class ChatReply:
    """What a model said. ``parsed`` is set when the provider returned native structured output."""

    text: str
    parsed: dict[str, Any] | None = None
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    finish_reason: str | None = None
    model: str = ""
    cached: bool = False
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
