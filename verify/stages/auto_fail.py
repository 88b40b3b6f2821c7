"""DeepJudgmentAutoFail and DeepJudgmentRubricAutoFail: fail the task on unvalidated evidence.

DeepJudgmentAutoFail (template deep judgment, ``deep_judgment_mode='full'``): template attributes
left without a valid excerpt fail the task (category ``deep_judgment``). The list is computed from
the final extraction attempt's state (karenina accumulates it over retries).

DeepJudgmentRubricAutoFail: fail the task when a deep-judgment trait's quotes were never found in
the answer (:data:`verify.results.reasons.NO_VALID_QUOTE`, the trait's reason too). A verdict that
contradicts the judge's own evidence is not such a trait: it is unscored (``contradiction``).

Included whenever rubric evaluation is (karenina only includes it when template deep judgment is
also on, so rubric-only deep judgment there never auto-fails). Skipped when abstention was
detected: abstention takes priority. Writes ``state.failure`` and a warning naming the traits and
their retry counts.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from verify.results.reasons import NO_VALID_QUOTE

if TYPE_CHECKING:
    from verify.config.verification import VerificationConfig
    from verify.run.state import Deps, TaskState

log = logging.getLogger("verify")


class DeepJudgmentAutoFail:
    name = "deep_judgment_auto_fail"
    summary = "fail the task if a template attribute has no valid excerpt (template deep judgment)"

    def enabled(self, config: VerificationConfig) -> bool:
        return config.template_enabled and config.deep_judgment_mode == "full"

    def should_run(self, state: TaskState) -> bool:
        dj = state.template.deep_judgment
        return dj is not None and bool(dj.attributes_without_excerpts) and not state.abstention_detected

    async def run(self, state: TaskState, deps: Deps) -> None:
        dj = state.template.deep_judgment
        assert dj is not None
        rejected = sum(len(dj.rejected_excerpts.get(n, [])) for n in dj.attributes_without_excerpts)
        reason = (
            f"template attributes without valid excerpts: {', '.join(dj.attributes_without_excerpts)} "
            f"({rejected} quote(s) rejected, {dj.deep_judgment_excerpt_retry_count} retries)"
        )
        log.warning("task %s auto-failed: %s", state.task.key, reason)
        state.warnings.append(reason)
        state.template.section.verify_result = False
        state.fail("deep_judgment", self.name, reason, "autofail")


class DeepJudgmentRubricAutoFail:
    name = "deep_judgment_rubric_auto_fail"
    summary = "fail the task if a deep-judgment trait has no valid excerpts"

    def enabled(self, config: VerificationConfig) -> bool:
        return config.rubric_enabled

    def should_run(self, state: TaskState) -> bool:
        dj = state.deep_judgment_rubric
        return dj is not None and bool(dj.traits_without_valid_excerpts) and not state.abstention_detected

    async def run(self, state: TaskState, deps: Deps) -> None:
        dj = state.deep_judgment_rubric
        assert dj is not None
        details = []
        for name in dj.traits_without_valid_excerpts:
            meta = dj.trait_metadata.get(name)
            retries = meta.excerpt_retry_count if meta else 0
            details.append(f"{name} ({retries} retries)")
        reason = f"{NO_VALID_QUOTE}: " + ", ".join(details)
        log.warning("task %s auto-failed: %s", state.task.key, reason)
        state.warnings.append(reason)
        state.fail("deep_judgment_rubric", self.name, reason, "autofail")
