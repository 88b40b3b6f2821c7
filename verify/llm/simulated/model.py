"""The in-process simulated model: the ChatModel port over ``brain.reply``, no network.

The brain answers by the request's ``purpose`` (and the schema), as the HTTP server does by the
``X-Verify-Purpose`` header.

Selected by ``"interface": "simulated"`` in a preset. ``extra_kwargs`` may set ``latency_ms``,
``fabricate_rate``, ``malformed_rate`` and ``seed`` to inject the same faults as the HTTP server,
and make it an imperfect judge (``verify.llm.simulated.imperfect``): ``imperfection_rate`` (the
share of replies, 0..1, that get one imperfection), ``imperfections`` (which behaviours, a list or
a comma-separated string; default all) and ``constant_reply`` (every judge call answered with
that text).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from verify.llm.ports import ChatReply, ChatRequest, Purpose, ToolCall, Usage
from verify.llm.simulated import agent_brain, brain, tool_brain
from verify.llm.simulated.imperfect import Imperfections


def _tokens(text: str) -> int:
    return len(text) // 4 + 1


class SimulatedModel:
    """A deterministic offline model. Its model id always says "simulated"."""

    def __init__(self, config: Any, *, seed: int = 0) -> None:
        extra = dict(getattr(config, "extra_kwargs", None) or {})
        name = getattr(config, "model_name", None) or "simulated"
        self._name = name if "simulated" in name else f"simulated-{name}"
        self.latency_s = float(extra.get("latency_ms", 0)) / 1000
        self.faults = brain.Faults(
            malformed_json=float(extra.get("malformed_rate", 0)),
            fabricate_excerpts=float(extra.get("fabricate_rate", 0)),
            seed=int(extra.get("seed", seed)),  # the model's own seed wins over the run's
            imperfections=Imperfections.of(
                float(extra.get("imperfection_rate", 0)), extra.get("imperfections"),
                None if extra.get("constant_reply") is None else str(extra["constant_reply"]),
            ),
        )
        self.calls = 0

    @property
    def model_id(self) -> str:
        f = self.faults
        imperfect = f":{f.imperfections.label}" if f.imperfections.label else ""
        return f"simulated:{self._name}:v{brain.VERSION}:f{f.malformed_json}:{f.fabricate_excerpts}:{f.seed}{imperfect}"

    async def complete(self, request: ChatRequest) -> ChatReply:
        self.calls += 1
        started = time.perf_counter()
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        calls: tuple[ToolCall, ...] = ()
        if request.tools and request.purpose is Purpose.ANSWER:  # an answering model with tools
            text, calls = agent_brain.turn(request, self.faults)
        elif request.tools:  # a judge that may call tools (verify.llm.simulated.tool_brain)
            text, calls = tool_brain.turn(request)
        else:
            text = brain.reply(request.purpose, request.messages, request.schema, self.faults)
        parsed = None
        if request.schema is not None:
            try:
                value = json.loads(text)
                parsed = value if isinstance(value, dict) else None
            except ValueError:
                parsed = None
        prompt_tokens = sum(_tokens(m.content) for m in request.messages)
        return ChatReply(
            text=text, parsed=parsed, usage=Usage(prompt_tokens, _tokens(text)),
            latency_s=time.perf_counter() - started, finish_reason="tool_calls" if calls else "stop",
            model=self.model_id, tool_calls=calls,
        )
