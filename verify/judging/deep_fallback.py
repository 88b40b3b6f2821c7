"""The per-trait fallback of batched deep judgment (:mod:`verify.judging.deep_batched`).

A trait the batched replies never judged usably (each reply unparseable, or its entry invalid every
time) is judged again on its own by :func:`verify.judging.deep_judgment.judge_trait`, so a judge that
cannot follow the batch format still judges as many traits as with ``per_trait``. Outages are not
retried here (the run's resume does that), nor contradictions (the judge was asked and answered).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace

from verify.benchmark.traits import LLMTrait
from verify.config.deep_judgment import TraitDJSettings
from verify.judging.deep_judgment import TraitContext, TraitJudgment, judge_trait
from verify.llm.ports import ChatModel, ChatReply, ChatRequest

__all__ = ["FALLBACK_STAGE", "fall_back"]

log = logging.getLogger("verify")

FALLBACK_STAGE = "per_trait_fallback"
"""Listed first in ``stages_completed`` of a trait judged on its own after the batched replies failed."""


@dataclass
class _Counted:
    """The judge, counting the calls made through it (the per-trait fallback's share of ``model_calls``)."""

    judge: ChatModel
    calls: int = 0

    @property
    def model_id(self) -> str:
        return self.judge.model_id

    async def complete(self, request: ChatRequest) -> ChatReply:
        self.calls += 1
        return await self.judge.complete(request)


async def fall_back(traits: list[LLMTrait], settings: dict[str, TraitDJSettings], ctx: TraitContext,
                     results: dict[str, TraitJudgment], calls: dict[str, int]) -> None:
    """Traits the batched replies never judged usably (unparseable or invalid every time) go through the
    per-trait path, as ``per_trait`` would judge them; outages and contradictions are not retried here."""
    lost = [t for t in traits if results[t.name].status == "unscored" and not results[t.name].error_category
            and results[t.name].unscored_category in ("unparseable", "invalid_reply")]
    if not lost:
        return
    log.info("batched deep judgment: %d trait(s) judged one by one after unusable batch replies: %s",
             len(lost), ", ".join(t.name for t in lost))

    async def one(trait: LLMTrait) -> None:
        counted = _Counted(ctx.judge)
        judged = await judge_trait(trait, settings[trait.name], replace(ctx, judge=counted))
        judged.metadata.stages_completed.insert(0, FALLBACK_STAGE)
        calls[trait.name] += counted.calls
        results[trait.name] = judged

    await asyncio.gather(*(one(t) for t in lost))
