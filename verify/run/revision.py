"""Revise until satisfied (``revision_max_iterations``): answer, grade, and ask again with the gaps.

The loop sits around the stage pipeline rather than inside it: each iteration runs every planned
stage on a fresh :class:`TaskState` (so every result section is that answer's own), grades the
result (:func:`verify.results.revisions.assess`) and, while a criterion fails and iterations are
left, sends the answering model the conversation so far (the question, each earlier answer, the
feedback on it) plus a user turn listing each failing criterion with its gap. The last iteration's
result is the task's result, with every pass kept in ``metadata.revision``. Model calls of every
iteration go through the same recording models, so the result's usage counts them all.

Only answers the answering model wrote can be revised: recorded answers (``--answers``, manual
traces, a replay store) are refused before any call. A tool-using answering model's follow-up turn
continues its transcript (every tool call and result so far, then the feedback), and it may call
its tools again before revising; the judges of each pass read that pass's whole transcript.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from verify.errors import ConfigError
from verify.llm.ports import Message
from verify.results.revisions import Criterion, Revision, RevisionEvaluation, assess
from verify.run.pipeline import run_task
from verify.run.state import TaskState
from verify.stages.answer import answer_messages

if TYPE_CHECKING:
    from verify.benchmark.traits import Rubric
    from verify.config.verification import VerificationConfig
    from verify.results.models import VerificationResult
    from verify.run.state import Deps, Task
    from verify.stages import Stage

__all__ = ["OnEvaluation", "check_revisable", "feedback", "run_revising"]

log = logging.getLogger("verify")

OnEvaluation = Callable[[RevisionEvaluation], None]
"""Called after every grading pass (its exceptions are logged and suppressed)."""


def check_revisable(config: VerificationConfig, answers: Mapping[str, object]) -> None:
    """Before any call: revising needs a rubric and answers the answering models write."""
    if config.revision_max_iterations is None:
        return
    if not config.rubric_enabled:
        raise ConfigError("revision_max_iterations needs a rubric to satisfy, but evaluation_mode is template_only",
                          "use --evaluation-mode rubric_only or template_and_rubric, or drop --revise-until-satisfied")
    manual = [m.id or m.model_name or "?" for m in config.answering_models if m.interface == "manual" or m.manual_traces]
    if answers or manual:
        what = f"answering model(s) {', '.join(manual)} answer from manual traces" if manual else "the answers are recorded"
        raise ConfigError(f"recorded answers cannot be revised ({what}); revise until satisfied asks the "
                          "answering model for a new answer", "drop --answers / --manual-traces / --replay so the "
                          "answering models answer, or drop --revise-until-satisfied")


def feedback(criteria: Sequence[Criterion], rubric: Rubric) -> str:
    """The follow-up user turn: each failing criterion, what it asks for, and its gap."""
    described = {t.name: (getattr(t, "description", None) or "").strip() for t in rubric.traits}
    items = "\n".join(
        f'<criterion name="{c.name}"><description>{described.get(c.name, "")}</description>'
        f"<gap>{c.gap or ''}</gap></criterion>" for c in criteria if c.passed is False
    )
    return ("<revision_request>\nYour answer was checked against these criteria and does not meet them yet:\n"
            f"{items}\nRevise your answer so that it meets every criterion, keeping what already meets the others. "
            "Reply with the full revised answer only.\n</revision_request>")


def _notify(on_evaluation: OnEvaluation | None, evaluation: RevisionEvaluation) -> None:
    if on_evaluation is None:
        return
    try:
        on_evaluation(evaluation)
    except Exception as exc:  # a callback is for watching; it never steers or stops the loop
        log.warning("on_evaluation raised %s: %s (ignored)", type(exc).__name__, exc)


def _conversation(state: TaskState, deps: Deps, turns: list[Message] | None) -> list[Message]:
    """The conversation so far, the last answer included. A tool-using answering model's is its whole
    transcript (tool calls and results too), so the follow-up turn continues it."""
    if state.transcript is not None and state.task.answering.tools:
        return state.transcript.port_messages()
    asked = turns if turns is not None else answer_messages(deps.config, state)
    return [*asked, Message("assistant", state.answer or "")]


async def run_revising(task: Task, deps: Deps, stages: Sequence[Stage],
                       on_evaluation: OnEvaluation | None = None) -> VerificationResult:
    """The task's result: one pass through ``stages``, or (with ``revision_max_iterations``) up to
    that many answer-and-grade passes."""
    limit = deps.config.revision_max_iterations
    if limit is None:
        return await run_task(TaskState(task), deps, stages)
    started = time.perf_counter()
    evaluations: list[RevisionEvaluation] = []
    turns: list[Message] | None = None
    for iteration in range(limit):
        state = TaskState(task, revision_turns=turns)
        result = await run_task(state, deps, stages)
        evaluation = assess(result, task.rubric, iteration)
        evaluations.append(evaluation)
        _notify(on_evaluation, evaluation)
        if evaluation.result != "needs_revision" or iteration == limit - 1:
            break
        turns = [*_conversation(state, deps, turns), Message("user", feedback(evaluation.criteria, task.rubric))]
    last = evaluations[-1].result
    status = "max_iterations_reached" if last == "needs_revision" else last
    result.metadata.revision = Revision(status=status, max_iterations=limit, evaluations=evaluations)
    result.metadata.execution_time = round(time.perf_counter() - started, 4)
    return result
