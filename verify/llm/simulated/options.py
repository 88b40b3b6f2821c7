"""What a simulated server does: its latency, capacity and HTTP faults (``simulated/server.py`` serves them)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from verify.llm.simulated.imperfect import Imperfections

__all__ = ["OVER_CAPACITY", "ServerOptions"]

OVER_CAPACITY = ("queue", "429")  # beyond its capacity the server queues requests, or refuses them


@dataclass(frozen=True)
class ServerOptions:
    latency_ms: float = 0.0
    rate_429: float = 0.0
    rate_500: float = 0.0
    malformed_rate: float = 0.0
    fabricate_rate: float = 0.0
    truncate_rate: float = 0.0
    fail_first: int = 0
    fail_status: int = 429
    seed: int = 0
    retry_after_ms: float | None = 10.0
    record: bool = True
    imperfections: Imperfections = Imperfections()
    reject_json_schema: bool = False
    reject_json_object: bool = False
    no_tools: bool = False
    echo_auth_rate: float = 0.0
    latency_cv: float = 0.0
    capacity: int | None = None
    over_capacity: str = "queue"  # or "429"

    def latency_s(self, rng: random.Random, in_flight: int) -> float:
        """One request's latency in seconds, ``in_flight`` counting it."""
        seconds = self.latency_ms / 1000
        if self.latency_cv > 0:
            seconds *= rng.lognormvariate(0.0, math.sqrt(math.log1p(self.latency_cv**2)))
        if self.capacity and in_flight > self.capacity:
            seconds *= in_flight / self.capacity
        return seconds
