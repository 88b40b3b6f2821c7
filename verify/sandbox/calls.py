"""The calls into code from the checkpoint, typed: each runs in a worker of the shared pool.

Every call has a time limit and raises :class:`CodeTimeout` when it runs out (the worker is
killed), :class:`CodeFailed` when the code raised, :class:`WorkerLost` when the worker died.
Inputs and outputs are plain data: the template's source, the question id, the judge's values,
the answer text.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from pydantic import ConfigDict

from verify.benchmark.traits import CallableTrait
from verify.judging.deterministic import Verdict
from verify.sandbox.pool import CodeFailed, shared_pool
from verify.templates.answer_base import BaseAnswer
from verify.templates.compiler import CompiledTemplate, TemplateError, outline_template


class BuiltAnswer(BaseAnswer):
    """A template's answer as the run holds it (``TemplateState.instance``): the judge's values and
    what a worker found building the answer from them. The template's own class never gets an
    instance in the run's process; each later call (``verify()``, ``verify_granular()``) rebuilds
    the answer from these values in a worker."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    question_id: str
    code: str
    values: dict[str, Any]
    parsed: dict[str, Any]  # the answer's fields as data (``parsed_llm_response``)
    expected: dict[str, Any] | None = None  # ``self.correct`` after the build
    checks: dict[str, Any] | None = None  # the answer's ``regex`` checks
    trace: str | None = None  # the answer text, which trace primitives of VerifiedFields read


@dataclass(frozen=True)
class VerifyReply:
    verdict: bool  # the truth value of what verify() returned
    type_name: str  # the type it returned ("bool" for a well-behaved template)
    fields: dict[str, bool | None]  # each VerifiedField's result (None: left null); empty for other templates
    scores: dict[str, float | None]  # each VerifiedField's graded score, the detail behind verify_granular()
    strategy: str | None  # karenina's composition_strategy: all_of, any_of, at_least_n(2); None without one


async def compile_template_checked(code: str | None, question_id: str, timeout: float) -> CompiledTemplate:
    """Compile the template in a worker (running its ground truth) within ``timeout``; then build
    its classes here, for their schemas. Raises TemplateError (located) for an unusable template."""
    try:
        probe = await shared_pool().call("compile", {"code": code or "", "question_id": question_id},
                                         timeout=timeout, what="compiling the template")
    except CodeFailed as exc:
        if exc.kind == "TemplateError":
            raise TemplateError(exc.message) from None
        raise
    return await asyncio.to_thread(outline_template, code or "", question_id, probe["ground_truth"], probe["regex"])


async def build_answer(compiled: CompiledTemplate, code: str, values: dict[str, Any], timeout: float,
                       trace: str | None = None) -> BuiltAnswer:
    """The strict answer from the judge's values, built in a worker (validators, ``model_post_init``).
    CodeFailed of kind ``ValidationError`` carries pydantic's error lines. ``trace`` (the answer text)
    goes with the answer to each later call, for VerifiedFields checked on the text itself."""
    payload = {"code": code, "question_id": compiled.question_id, "values": values}
    found = await shared_pool().call("build", payload, timeout=timeout, what="the template's model_post_init")
    return BuiltAnswer(question_id=compiled.question_id, code=code, values=values, parsed=found["parsed"],
                       expected=found["ground_truth"], checks=found["regex"], trace=trace)


def _payload(answer: BuiltAnswer, timeout: float) -> dict[str, Any]:
    # the time limit lets a primitive's pattern fail with its own reason before the worker is killed
    return {"code": answer.code, "question_id": answer.question_id, "values": answer.values,
            "trace": answer.trace, "time_limit": timeout}


async def run_verify(answer: BuiltAnswer, timeout: float) -> VerifyReply:
    found = await shared_pool().call("verify", _payload(answer, timeout), timeout=timeout,
                                     what="the template's verify()")
    return VerifyReply(verdict=bool(found["verdict"]), type_name=str(found["type"]),
                       fields=dict(found.get("fields") or {}), scores=dict(found.get("scores") or {}),
                       strategy=found.get("strategy"))


async def run_granular(answer: BuiltAnswer, timeout: float) -> float:
    return float(await shared_pool().call("granular", _payload(answer, timeout), timeout=timeout,
                                          what="verify_granular()"))


async def run_callable(trait: CallableTrait, text: str, timeout: float, *, trusted: bool = False) -> Verdict:
    """The callable trait's verdict on ``text``. A failure of the code itself is a verdict with a
    reason (as ``eval_callable`` gives); only the time limit raises (CodeTimeout). ``trusted`` lets
    the worker unpickle a cloudpickle ``callable_code``; without it a pickle is refused, unrun."""
    payload = {"trait": trait.model_dump(mode="json"), "text": text, "trusted": trusted}
    try:
        found = await shared_pool().call("callable", payload, timeout=timeout, what="the callable")
    except CodeFailed as exc:
        return Verdict(score=None, reason=f"callable failed: {exc}")
    return Verdict(score=found["score"], label=found["label"], reason=found["reason"])
