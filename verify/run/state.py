"""The typed state one task carries through the stages, and the dependencies stages may use."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from verify.benchmark.traits import Rubric
from verify.judging.embedding import Embedder, get_embedder
from verify.llm.recording import RecordingModel
from verify.results.models import (
    DeepJudgmentRubricSection,
    DeepJudgmentSection,
    Failure,
    RubricSection,
    StageError,
    TemplateSection,
)
from verify.templates.time_limit import DEFAULT_CODE_TIME_LIMIT

if TYPE_CHECKING:
    from verify.benchmark.question import Question
    from verify.config.models import ModelConfig
    from verify.config.verification import VerificationConfig
    from verify.judging.transcript import Transcript
    from verify.llm.ports import ChatModel, Message, Search
    from verify.templates.answer_base import BaseAnswer
    from verify.templates.compiler import CompiledTemplate


@dataclass(frozen=True)
class Task:
    """One unit of work: question x answering model x parsing (judge) model x replicate."""

    question: Question
    rubric: Rubric
    provenance: dict[str, str]
    answering: ModelConfig
    parsing: ModelConfig
    replicate: int | None
    key: str


@dataclass
class TemplateState:
    """What the template stages found: the result's ``template`` section as it fills in, and the
    in-flight values that never reach the result.

    ``section`` holds every result field the stages set; finalize adds ``raw_llm_response``,
    ``answer_source``, ``abstention_detected`` and ``usage_metadata`` from the task state.
    """

    compiled: CompiledTemplate | None = None
    validation_error: str | None = None
    answer_needed: bool = True  # False in template_only mode once the template is refused
    instance: BaseAnswer | None = None
    field_verification_result: bool | None = None  # verify() alone; None when it raised or did not run
    verify_reason: str | None = None  # why verify_result is False (the content failure's reason)
    deep_judgment: DeepJudgmentSection | None = None
    caveats: list[str] = field(default_factory=list)
    section: TemplateSection = field(default_factory=TemplateSection)


@dataclass
class TaskState:
    """What the stages know about a task so far. ``None`` means "did not run"."""

    task: Task
    answer: str | None = None  # a transcript's submission when the recorded answer is a transcript
    transcript: Transcript | None = None
    answer_source: str | None = None
    rubric: RubricSection | None = None
    deep_judgment_rubric: DeepJudgmentRubricSection | None = None
    failure: Failure | None = None
    errors: list[StageError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    stages: list[str] = field(default_factory=list)
    abstention_detected: bool | None = None
    template: TemplateState = field(default_factory=TemplateState)
    revision_turns: list[Message] | None = None
    """Revise until satisfied: the conversation to answer from (the question, each earlier answer and
    the feedback on it); None for a first answer. :mod:`verify.run.revision` sets it."""

    def fail(self, category: str, stage: str, reason: str, group: str) -> None:
        """Record an auto-fail; the first one wins (later ones become warnings)."""
        if self.failure is None:
            self.failure = Failure(category=category, stage=stage, reason=reason[:500], group=group)
        else:
            self.warnings.append(f"{stage}: {reason}")


class AnswerMemo:
    """One generated answer per (question, answering model, replicate), shared by every judge.

    ``sharers`` is how many tasks share one answer (the number of judge models): an entry is
    dropped once that many tasks have claimed or taken it, so a long run does not keep every
    answer in memory. ``0`` keeps every entry.
    """

    def __init__(self, sharers: int = 0) -> None:
        self.sharers = sharers
        self._futures: dict[tuple[str, str, int | None], asyncio.Future[tuple[str, str]]] = {}
        self._taken: dict[tuple[str, str, int | None], int] = {}

    def get(self, key: tuple[str, str, int | None]) -> asyncio.Future[tuple[str, str]] | None:
        future = self._futures.get(key)
        if future is not None and self.sharers:
            taken = self._taken.get(key, 1) + 1  # the claiming task was the first
            if taken >= self.sharers:
                del self._futures[key]
                self._taken.pop(key, None)
            else:
                self._taken[key] = taken
        return future

    def claim(self, key: tuple[str, str, int | None]) -> asyncio.Future[tuple[str, str]]:
        future: asyncio.Future[tuple[str, str]] = asyncio.get_running_loop().create_future()
        if self.sharers != 1:  # with one judge nobody else will ask
            self._futures[key] = future
        return future


@dataclass(frozen=True)
class Deps:
    """What stages may use besides the state: config, the task's models, search, recorded answers."""

    config: VerificationConfig
    answerer: RecordingModel | None
    judge: RecordingModel
    search: Search | None
    template_search: Search | None = None
    recorded_answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    answers: AnswerMemo = field(default_factory=AnswerMemo)
    run_name: str | None = None
    code_time_limit: float = DEFAULT_CODE_TIME_LIMIT
    """Seconds each call into checkpoint code (template compile/build/verify(), regex and callable
    traits, template regex checks) may take; overrunning code is stopped (its worker is killed)."""
    embedder_for: Callable[[str], Embedder] = get_embedder
    """The embedding model of a name (``embedding_check_model``), for the embedding check."""
    judge_for: Callable[[str | None, str | None, float | None], ChatModel] | None = None
    """The judge with a trait's own model name, provider and temperature (None: ``judge`` only);
    its calls are recorded with ``judge``'s."""
