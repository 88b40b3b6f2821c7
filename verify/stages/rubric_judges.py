"""The rubric stage's one-call-per-trait kinds added for AgentV/letta/Docent suites: prompt graders
(LLM traits with their own ``prompt``; with ``tools``, judges that call tools before they grade:
:mod:`verify.judging.tool_judge`) and schema judges (:class:`SchemaJudgeTrait`).

:func:`evaluate` runs them concurrently (an outage leaves only its trait unscored, as for every
kind); :func:`settle` adds their scores to karenina's ``llm_trait_scores`` / ``llm_trait_labels``,
their Docent results to ``rubric.schema_judgments``, and fails the task when a schema judge's
citations could not be proven (``deep_judgment_rubric``, group ``autofail``: the same failure as a
deep-judgment trait without valid evidence; skipped when abstention was detected).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from verify.benchmark.traits import LLMTrait, SchemaJudgeTrait
from verify.judging.prompt_grader import grade
from verify.judging.schema_judge import JudgeOutcome, judge_schema_trait
from verify.judging.tool_judge import judge_with_tools
from verify.results.models import RubricSection, TraitOutcome
from verify.stages.guard import guard

if TYPE_CHECKING:
    from verify.benchmark.question import Question
    from verify.benchmark.traits import Rubric
    from verify.llm.ports import ChatModel, Search
    from verify.run.state import TaskState

__all__ = ["Judged", "evaluate", "graders", "settle"]

log = logging.getLogger("verify")


@dataclass
class Judged:
    outcomes: dict[str, TraitOutcome] = field(default_factory=dict)
    judgments: list[JudgeOutcome] = field(default_factory=list)


def graders(rubric: Rubric) -> list[LLMTrait]:
    return [t for t in rubric.llm_traits if t.prompt is not None]


JudgeFor = Callable[[str | None, str | None, float | None], "ChatModel"]


def _model_for(judge: ChatModel, judge_for: JudgeFor | None, name: Any, provider: Any, temperature: Any) -> ChatModel:
    """The trait's own model (name, provider, temperature) when it names one, else the task's judge."""
    if judge_for is None or (name is None and provider is None and temperature is None):
        return judge
    return judge_for(name, provider, temperature)


async def _grade(judge: ChatModel, question: Question, answer: str, trait: LLMTrait,
                 search: Search | None = None) -> dict[str, TraitOutcome]:
    if trait.tools is not None:  # a judge that uses tools (verify.judging.tool_judge)
        return {trait.name: await judge_with_tools(judge, question.text, answer, trait, question.raw_answer, search)}
    outcome = await grade(judge, question.text, answer, trait, question.raw_answer)
    return {trait.name: outcome}


async def evaluate(judge: ChatModel, question: Question, answer: str, rubric: Rubric,
                   judge_for: JudgeFor | None = None, search: Search | None = None) -> Judged:
    judges: list[SchemaJudgeTrait] = rubric.of_type(SchemaJudgeTrait)
    calls = [guard([t.name], _grade(_model_for(judge, judge_for, t.model, None, t.grader_temperature),
                                    question, answer, t, search)) for t in graders(rubric)]
    for t in judges:
        chosen = t.judge.judge_model or {}
        model = _model_for(judge, judge_for, chosen.get("model_name"), chosen.get("provider"), chosen.get("temperature"))
        calls.append(guard([t.name], judge_schema_trait(model, t, answer)))
    judged = Judged()
    for item in await asyncio.gather(*calls):
        if isinstance(item, JudgeOutcome):
            judged.outcomes[item.name] = item.outcome
            judged.judgments.append(item)
        else:
            judged.outcomes.update(item)
    return judged


def settle(state: TaskState, section: RubricSection, rubric: Rubric, judged: Judged) -> None:
    judges = {t.name for t in rubric.of_type(SchemaJudgeTrait)}
    scores: dict[str, Any] = dict(section.llm_trait_scores or {})
    labels = dict(section.llm_trait_labels or {})
    for name in judges:
        outcome = section.trait_status.get(name)
        if outcome is not None and outcome.status == "scored" and outcome.score is not None:
            scores[name] = outcome.score
        if outcome is not None and outcome.label is not None:
            labels[name] = outcome.label
    section.llm_trait_scores, section.llm_trait_labels = scores or None, labels or None
    if judged.judgments:
        section.schema_judgments = {j.name: j.judgment for j in judged.judgments}
    unproven = [j.name for j in judged.judgments if j.judgment.proven is False]
    if unproven and not state.abstention_detected:
        reason = "schema judges with unproven citations: " + ", ".join(unproven)
        log.warning("task %s auto-failed: %s", state.task.key, reason)
        state.warnings.append(reason)
        state.fail("deep_judgment_rubric", "rubric_evaluation", reason, "autofail")
