"""GenerateAnswer: take a recorded answer, or ask the answering model.

Reads the question and few-shot settings; writes ``state.answer`` and ``state.answer_source``.
Recorded answers come from ``--answers FILE`` (per answering-model id, keyed by question id or by
md5 of the question text) or from karenina's ``manual`` interface (``manual_traces``).
One answer per (question, answering model, replicate) is shared by every judge model.
"""

from __future__ import annotations

import hashlib
import random
from typing import TYPE_CHECKING, Any

from verify.errors import ModelError
from verify.llm.ports import Message
from verify.llm.structured import ask_text

if TYPE_CHECKING:
    from verify.config.verification import VerificationConfig
    from verify.run.state import Deps, TaskState


def recorded_answer(state: TaskState, deps: Deps) -> str | None:
    task = state.task
    q = task.question
    keys = (q.id, q.question_hash)
    for table in (deps.recorded_answers.get(task.answering.id or ""), deps.recorded_answers.get("*")):
        if table:
            for key in keys:
                if key in table:
                    return table[key]
    traces = task.answering.manual_traces
    if isinstance(traces, dict):
        for key in keys:
            if key in traces:
                return str(traces[key])
    return None


def few_shot_examples(config: VerificationConfig, question: Any) -> list[dict[str, str]]:
    """Examples per ``few_shot_config``: question pool and/or global, all or a seeded k-shot."""
    fsc = config.few_shot_config
    if fsc is None or fsc.source == "disabled":
        return []
    pool: list[dict[str, str]] = []
    if fsc.source in ("both", "question_pool"):
        pool += [dict(e) for e in question.few_shot_examples or []]
    if fsc.source in ("both", "global"):
        pool += [e.model_dump() if hasattr(e, "model_dump") else dict(e) for e in fsc.global_examples or []]
    if fsc.pool_mode == "k-shot" and len(pool) > fsc.pool_k:
        # Same seeding as karenina, so k-shot picks are reproducible across tools.
        seed = int(hashlib.md5(question.id.encode()).hexdigest(), 16) & 0x7FFFFFFF
        pool = random.Random(seed).sample(pool, fsc.pool_k)
    return pool


def answer_messages(config: VerificationConfig, state: TaskState) -> list[Message]:
    task = state.task
    system = task.answering.system_prompt or ""
    generation = config.prompt_config.generation if config.prompt_config else None
    if generation:
        system = f"{system}\n\n{generation}".strip()
    examples = few_shot_examples(config, task.question)
    if examples:
        shots = "".join(f"Question: {e['question']}\nAnswer: {e['answer']}\n\n" for e in examples)
        user = f"{shots}Question: {task.question.text}\nAnswer:"
    else:
        user = task.question.text
    messages = [Message("system", system)] if system else []
    return [*messages, Message("user", user)]


class GenerateAnswer:
    name = "generate_answer"
    summary = "answer from the answering model, or a recorded answer"

    def enabled(self, config: VerificationConfig) -> bool:
        return True

    def should_run(self, state: TaskState) -> bool:
        return state.template.answer_needed

    async def run(self, state: TaskState, deps: Deps) -> None:
        task = state.task
        recorded = recorded_answer(state, deps)
        if recorded is not None:
            state.answer, state.answer_source = recorded, "recorded"
            return
        if task.answering.interface == "manual":
            raise ModelError(
                f"no recorded answer for question {task.question.id!r} and manual model "
                f"{task.answering.id!r}; add it to manual_traces or --answers"
            )
        if deps.answerer is None:
            raise ModelError(f"no answering model available for {task.answering.id!r}")
        key = (task.question.id, task.answering.id or task.answering.model_name or "", task.replicate)
        shared = deps.answers.get(key)
        if shared is not None:
            state.answer, state.answer_source = await shared
            return
        future = deps.answers.claim(key)
        try:
            reply = await ask_text(deps.answerer, answer_messages(deps.config, state), purpose="answer")
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: other judges of this answer see it when they await
            raise
        future.set_result((reply.text, "model"))
        state.answer, state.answer_source = reply.text, "model"
