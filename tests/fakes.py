"""Test doubles for the ChatModel port, and quick builders for Task / TaskState / Deps.

``ScriptedModel`` answers each request with whatever a plain function returns for it: reply text,
a ``ChatReply``, or an exception to raise (``ModelError`` simulates an outage). It records every
request, so tests can look at purposes, traits and prompt text afterwards.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from verify.benchmark.question import Question
from verify.benchmark.traits import Rubric
from verify.config.models import ModelConfig
from verify.config.verification import VerificationConfig
from verify.llm.ports import ChatReply, ChatRequest, Purpose, Search, Usage
from verify.llm.recording import RecordingModel
from verify.llm.simulated import brain
from verify.llm.simulated.model import SimulatedModel
from verify.results.models import VerificationResult
from verify.run.pipeline import plan, run_task
from verify.run.state import Deps, Task, TaskState
from verify.stages.rubric import RubricEvaluation

Script = Callable[[ChatRequest], "str | ChatReply | BaseException"]

SIM_JUDGE = {"id": "judge", "model_provider": "simulated", "model_name": "simulated-judge", "interface": "simulated"}
SIM_ANSWERER = {"id": "answerer", "model_provider": "simulated", "model_name": "simulated-answerer",
                "interface": "simulated"}


@dataclass
class ScriptedModel:
    """The ChatModel port over a function ``(ChatRequest) -> str | ChatReply | Exception``.

    ``delay`` seconds are slept (asynchronously) before each reply, to make concurrency measurable.
    """

    script: Script
    delay: float = 0.0
    model_id: str = "scripted:test"
    requests: list[ChatRequest] = field(default_factory=list)

    async def complete(self, request: ChatRequest) -> ChatReply:
        self.requests.append(request)
        if self.delay:
            await asyncio.sleep(self.delay)
        out = self.script(request)
        if isinstance(out, BaseException):
            raise out
        if isinstance(out, ChatReply):
            return out
        return ChatReply(text=out, usage=Usage(10, 5), finish_reason="stop", model=self.model_id)

    def purposes(self, trait: str | None = None) -> list[Purpose]:
        return [r.purpose for r in self.requests if trait is None or r.trait == trait]

    def for_purpose(self, purpose: Purpose, trait: str | None = None) -> list[ChatRequest]:
        return [r for r in self.requests if r.purpose == purpose and (trait is None or r.trait == trait)]


def honest(request: ChatRequest, faults: brain.Faults | None = None) -> str:
    """What the deterministic simulated judge would say to ``request``."""
    return brain.reply(request.purpose, request.messages, request.schema, faults)


def simulated_judge(**extra: Any) -> SimulatedModel:
    """A SimulatedModel judge; ``extra`` goes to extra_kwargs (fabricate_rate, malformed_rate, ...)."""
    return SimulatedModel(ModelConfig(id="judge", model_name="simulated-judge", interface="simulated",
                                      extra_kwargs=extra or None))


def prompt_of(request: ChatRequest) -> str:
    """The non-system text of a request (where the prompt builders put everything)."""
    return "\n".join(m.content for m in request.messages if m.role != "system")


def as_json(value: Any) -> str:
    return json.dumps(value)


def make_config(**overrides: Any) -> VerificationConfig:
    """A rubric-only config with simulated answering and judge models; ``overrides`` win."""
    data: dict[str, Any] = {
        "answering_models": [SIM_ANSWERER],
        "parsing_models": [SIM_JUDGE],
        "evaluation_mode": "rubric_only",
    }
    data.update(overrides)
    return VerificationConfig(**data)


def make_task(
    traits: Sequence[Any],
    *,
    question: str = "What is the capital of France?",
    question_id: str = "q1",
    raw_answer: str = "Paris",
    config: VerificationConfig | None = None,
) -> Task:
    config = config or make_config()
    q = Question(id=question_id, text=question, raw_answer=raw_answer, finished=True)
    rubric = Rubric(traits=list(traits))
    provenance = {t.name: "question_specific" for t in rubric.traits}
    answering: ModelConfig = config.answering_models[0]
    parsing: ModelConfig = config.parsing_models[0]
    return Task(q, rubric, provenance, answering, parsing, None, f"{question_id}\ttest")


def make_deps(config: VerificationConfig, judge: Any, search: Search | None = None,
              answers: dict[str, dict[str, str]] | None = None) -> Deps:
    return Deps(config=config, answerer=None, judge=RecordingModel(judge), search=search,
                recorded_answers=answers or {})


async def run_rubric(
    traits: Sequence[Any],
    answer: str,
    judge: Any,
    *,
    config: VerificationConfig | None = None,
    search: Search | None = None,
    **task_kwargs: Any,
) -> tuple[TaskState, Deps]:
    """Run only the RubricEvaluation stage on ``answer``; returns the state and deps."""
    config = config or make_config()
    task = make_task(traits, config=config, **task_kwargs)
    state = TaskState(task, answer=answer, answer_source="recorded")
    deps = make_deps(config, judge, search)
    await RubricEvaluation().run(state, deps)
    return state, deps


async def run_pipeline(
    traits: Sequence[Any],
    answer: str,
    judge: Any,
    *,
    config: VerificationConfig | None = None,
    search: Search | None = None,
    abstention_detected: bool | None = None,
    **task_kwargs: Any,
) -> VerificationResult:
    """Run the planned pipeline for one task whose answer is recorded."""
    config = config or make_config()
    task = make_task(traits, config=config, **task_kwargs)
    state = TaskState(task, abstention_detected=abstention_detected)
    deps = make_deps(config, judge, search, answers={"*": {task.question.id: answer}})
    return await run_task(state, deps, plan(config))
