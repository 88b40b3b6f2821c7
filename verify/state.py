"""The typed state one task carries through the stages, and the dependencies stages may use."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from verify.recording import RecordingModel
from verify.results import DeepJudgmentRubricSection, Failure, RubricSection, StageError
from verify.rubric import Rubric

if TYPE_CHECKING:
    from verify.benchmark import Question
    from verify.config import ModelConfig, VerificationConfig
    from verify.ports import Search


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
class TaskState:
    """What the stages know about a task so far. ``None`` means "did not run"."""

    task: Task
    answer: str | None = None
    answer_source: str | None = None
    rubric: RubricSection | None = None
    deep_judgment_rubric: DeepJudgmentRubricSection | None = None
    failure: Failure | None = None
    errors: list[StageError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    stages: list[str] = field(default_factory=list)
    abstention_detected: bool | None = None

    def fail(self, category: str, stage: str, reason: str, group: str) -> None:
        """Record an auto-fail; the first one wins (later ones become warnings)."""
        if self.failure is None:
            self.failure = Failure(category=category, stage=stage, reason=reason[:500], group=group)
        else:
            self.warnings.append(f"{stage}: {reason}")


class AnswerMemo:
    """One generated answer per (question, answering model, replicate), shared by every judge."""

    def __init__(self) -> None:
        self._futures: dict[tuple[str, str, int | None], asyncio.Future[tuple[str, str]]] = {}

    def get(self, key: tuple[str, str, int | None]) -> asyncio.Future[tuple[str, str]] | None:
        return self._futures.get(key)

    def claim(self, key: tuple[str, str, int | None]) -> asyncio.Future[tuple[str, str]]:
        future: asyncio.Future[tuple[str, str]] = asyncio.get_running_loop().create_future()
        self._futures[key] = future
        return future


@dataclass(frozen=True)
class Deps:
    """What stages may use besides the state: config, the task's models, search, recorded answers."""

    config: VerificationConfig
    answerer: RecordingModel | None
    judge: RecordingModel
    search: Search | None
    recorded_answers: dict[str, dict[str, str]] = field(default_factory=dict)
    answers: AnswerMemo = field(default_factory=AnswerMemo)
    run_name: str | None = None
