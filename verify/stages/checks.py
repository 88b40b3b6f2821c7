"""The checks around the template: AbstentionCheck, SufficiencyCheck, EmbeddingCheck.

* ``abstention_check`` (``abstention_enabled``, every mode): the judge decides whether the answer
  refuses or abstains. Detected: the task fails (category ``abstention``), parsing and
  verification are skipped; rubric evaluation still runs, as in karenina.
* ``sufficiency_check`` (``sufficiency_enabled``, template modes): the judge decides whether the
  answer holds enough to fill the template. Insufficient: the task fails (category
  ``sufficiency``) and parsing is skipped. A *sufficient* answer is not a failure (karenina's
  classifier has this inverted).
* ``embedding_check`` (``embedding_check_enabled``, only after ``verify()`` returned False): the
  cosine similarity of the expected and parsed values' embeddings; at or above
  ``embedding_check_threshold`` the judge is asked whether they are semantically equivalent, and a
  yes turns the verdict into a pass (regex checks still apply) with the caveat
  ``embedding_override``.

A reply the judge could not produce leaves the check "not performed" with a warning; it never
fails the task by itself.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

from verify.judging.embedding import cosine
from verify.judging.prompts import JudgeInstructions
from verify.llm.ports import Purpose
from verify.llm.structured import ask_structured
from verify.templates import prompts as tp

if TYPE_CHECKING:
    from verify.config.verification import VerificationConfig
    from verify.run.state import Deps, TaskState


class AbstentionCheck:
    name = "abstention_check"
    summary = "the judge decides whether the answer refuses or abstains"

    def enabled(self, config: VerificationConfig) -> bool:
        return config.abstention_enabled

    def should_run(self, state: TaskState) -> bool:
        return state.answer is not None

    async def run(self, state: TaskState, deps: Deps) -> None:
        sec = state.template.section
        prompt = tp.abstention_prompt(state.task.question.text, state.answer or "")
        messages = JudgeInstructions.of(state.task.parsing, deps.config).messages("abstention_detection", prompt)
        reply = await ask_structured(deps.judge, messages, tp.AbstentionResult, purpose=Purpose.ABSTENTION_CHECK)
        if reply.value is None:
            state.warnings.append(f"abstention check not performed: judge reply unusable after {reply.attempts} attempt(s): {reply.error}")
            return
        sec.abstention_check_performed = True
        sec.abstention_reasoning = reply.value.reasoning or None
        state.abstention_detected = reply.value.abstention_detected
        if reply.value.abstention_detected:
            sec.abstention_override_applied = True
            if deps.config.template_enabled:
                sec.verify_result = False
            state.fail("abstention", self.name, reply.value.reasoning or "the answer abstains", "abstained")


class SufficiencyCheck:
    name = "sufficiency_check"
    summary = "the judge decides whether the answer holds enough to fill the template"

    def enabled(self, config: VerificationConfig) -> bool:
        return config.sufficiency_enabled and config.template_enabled

    def should_run(self, state: TaskState) -> bool:
        return state.answer is not None and state.template.compiled is not None and not state.abstention_detected

    async def run(self, state: TaskState, deps: Deps) -> None:
        compiled, sec = state.template.compiled, state.template.section
        assert compiled is not None
        prompt = tp.sufficiency_prompt(state.task.question.text, state.answer or "", compiled.class_name,
                                       compiled.fields(), compiled.judge_schema())
        messages = JudgeInstructions.of(state.task.parsing, deps.config).messages("sufficiency_detection", prompt)
        reply = await ask_structured(deps.judge, messages, tp.SufficiencyResult, purpose=Purpose.SUFFICIENCY_CHECK)
        if reply.value is None:
            state.warnings.append(f"sufficiency check not performed: judge reply unusable after {reply.attempts} attempt(s): {reply.error}")
            return
        sec.sufficiency_check_performed = True
        sec.sufficiency_detected = reply.value.sufficient  # True = sufficient (karenina's meaning)
        sec.sufficiency_reasoning = reply.value.reasoning or None
        if not reply.value.sufficient:
            sec.sufficiency_override_applied = True
            sec.verify_result = False
            state.fail("sufficiency", self.name, reply.value.reasoning or "the answer cannot fill the template",
                       "abstained")


class EmbeddingCheck:
    name = "embedding_check"
    summary = "after a failed verify(): embedding similarity, then the judge may confirm equivalence"

    def enabled(self, config: VerificationConfig) -> bool:
        return config.embedding_check_enabled and config.template_enabled

    def should_run(self, state: TaskState) -> bool:
        tpl = state.template
        return tpl.field_verification_result is False and tpl.section.parsed_gt_response is not None

    async def run(self, state: TaskState, deps: Deps) -> None:
        tpl, config = state.template, deps.config
        sec = tpl.section
        expected, parsed = sec.parsed_gt_response, sec.parsed_llm_response or {}
        embedder = await asyncio.to_thread(deps.embedder_for, config.embedding_check_model)
        texts = [json.dumps(expected, sort_keys=True, default=str), json.dumps(parsed, sort_keys=True, default=str)]
        vectors = await asyncio.to_thread(embedder.embed, texts)
        score = round(cosine(vectors[0], vectors[1]), 4)
        sec.embedding_check_performed = True
        sec.embedding_similarity_score = score
        sec.embedding_model_used = embedder.name
        if score < config.embedding_check_threshold:
            return
        prompt = tp.equivalence_prompt(state.task.question.text, expected, parsed)
        # no prompt_config field covers this call (as in karenina); the judge's own system prompt does
        messages = JudgeInstructions.of(state.task.parsing, config).messages(None, prompt)
        reply = await ask_structured(deps.judge, messages, tp.EquivalenceResult, purpose=Purpose.EMBEDDING_CHECK)
        if reply.value is None:
            state.warnings.append(f"embedding check: equivalence reply unparseable: {reply.error}")
            return
        if not reply.value.equivalent:
            return
        sec.embedding_override_applied = True
        tpl.field_verification_result = True
        sec.verify_result = sec.regex_overall_success is not False
        if sec.verify_result:
            tpl.verify_reason = None
        note = (f"embedding_override: similarity {score:.2f} >= {config.embedding_check_threshold:.2f} and the "
                f"judge confirmed equivalence ({reply.value.reasoning[:120]})")
        tpl.caveats.append("embedding_override")
        state.warnings.append(note)
