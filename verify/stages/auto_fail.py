"""DeepJudgmentRubricAutoFail: fail the task when a deep-judgment trait has no valid evidence.

Included whenever rubric evaluation is (karenina only includes it when template deep judgment is
also on, so rubric-only deep judgment there never auto-fails). Skipped when abstention was
detected: abstention takes priority. Writes ``state.failure`` and a warning naming the traits and
their retry counts.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from verify.config import VerificationConfig
    from verify.state import Deps, TaskState

log = logging.getLogger("verify")


class DeepJudgmentRubricAutoFail:
    name = "deep_judgment_rubric_auto_fail"
    summary = "fail the task if a deep-judgment trait has no valid excerpts"

    def enabled(self, config: VerificationConfig) -> bool:
        return config.evaluation_mode != "template_only"

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
        reason = "traits without valid excerpts: " + ", ".join(details)
        log.warning("task %s auto-failed: %s", state.task.key, reason)
        state.warnings.append(reason)
        state.fail("deep_judgment_rubric", self.name, reason, "autofail")
