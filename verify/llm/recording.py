"""Usage and call counts measured at the port: wrap a task's models, read the records afterwards."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from verify.llm.ports import ChatModel, ChatReply, ChatRequest, Purpose, Usage
from verify.llm.resilience import attempts_of


@dataclass(frozen=True)
class CallRecord:
    """One logical call. ``attempts`` is how many HTTP requests it took (retries and re-sends
    included; 0 when the cache answered), for a failed call the requests made before giving up."""

    purpose: Purpose
    trait: str | None
    usage: Usage
    latency_s: float
    cached: bool
    failed: bool = False
    attempts: int = 1


@dataclass
class RecordingModel:
    """Passes every request to ``inner`` and records purpose, trait, usage and latency.

    It also stamps the task's replicate number on each request, so the response cache keeps
    replicates apart.
    """

    inner: ChatModel
    replicate: int | None = None
    records: list[CallRecord] = field(default_factory=list)

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    async def complete(self, request: ChatRequest) -> ChatReply:
        if self.replicate is not None:
            request = replace(request, replicate=self.replicate)
        started = time.perf_counter()
        try:
            reply = await self.inner.complete(request)
        except Exception as exc:
            # A call that failed for good still counts as a call (and is visible in usage).
            elapsed = time.perf_counter() - started
            self.records.append(
                CallRecord(request.purpose, request.trait, Usage(), elapsed, False, True, attempts_of(exc))
            )
            raise
        self.records.append(
            CallRecord(
                request.purpose, request.trait, reply.usage, reply.latency_s, reply.cached, attempts=reply.attempts
            )
        )
        return reply

    def calls_for(self, trait: str, where: Callable[[Purpose], bool] | None = None) -> int:
        """Calls made for ``trait`` (only those whose purpose satisfies ``where``, when given)."""
        return sum(1 for r in self.records if r.trait == trait and (where is None or where(r.purpose)))
