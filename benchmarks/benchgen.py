"""Helpers for ``benchmarks/bench.py``: a generated benchmark, configs, counted models, the server.

Everything here is deterministic: the same ``n`` always gives the same questions, answers and
rubric, so call and token counts are exact and comparable between runs.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from verify.benchmark.jsonld import Benchmark
from verify.benchmark.question import Question
from verify.benchmark.traits import LLMTrait, RegexTrait, Rubric
from verify.config.models import ModelConfig
from verify.config.verification import VerificationConfig
from verify.llm.build import CountingModel, build_model
from verify.llm.ports import ChatModel

#: The generated rubric: five LLM traits of every scored kind (3 boolean, 1 score, 1 literal).
TRAITS: tuple[LLMTrait, ...] = (
    LLMTrait(
        name="explains_mechanism",
        kind="boolean",
        min_score=0,
        max_score=1,
        description="The response explains the underlying mechanism of the process",
    ),
    LLMTrait(
        name="clarity",
        kind="score",
        min_score=1,
        max_score=5,
        description="The response is clear and organized in steps that are easy to follow",
    ),
    LLMTrait(
        name="gives_numbers",
        kind="boolean",
        min_score=0,
        max_score=1,
        description="The response gives concrete numbers such as temperatures or durations",
    ),
    LLMTrait(
        name="mentions_safety",
        kind="boolean",
        min_score=0,
        max_score=1,
        description="The response mentions safety precautions or risks",
    ),
    LLMTrait(
        name="register",
        kind="literal",
        description="The register of the response",
        classes={
            "formal": "Formal, precise and technical register",
            "casual": "Casual, chatty register with informal words",
        },
    ),
)
#: The small rubric of the memory runs: one cheap LLM trait and one regex trait.
SMALL_TRAITS: tuple[Any, ...] = (
    TRAITS[2],
    RegexTrait(name="has_number", pattern=r"\d+", description="Contains a number"),
)

_PROCESSES = (
    "fermentation",
    "distillation",
    "annealing",
    "electrolysis",
    "composting",
    "tempering",
    "pasteurisation",
    "crystallisation",
    "sintering",
    "oxidation",
)


def answer_text(i: int) -> str:
    """A recorded answer of about 650 characters, six sentences, that every trait can quote."""
    process = _PROCESSES[i % len(_PROCESSES)]
    return (
        f"In sample {i}, {process} works because energy drives the underlying mechanism of the process "
        "step by step until the material changes state. "
        f"The process is run at {20 + i % 80} degrees Celsius and usually takes {3 + i % 7} minutes, "
        "according to the measurements reported by the laboratory. "
        "Safety precautions matter here: wear gloves and goggles, because the risks of burns are real. "
        "The explanation is organized in clear steps so that it is easy to follow for a new technician. "
        f"First the {process} vessel is prepared, then it is heated, and finally it is cooled slowly. "
        "Overall this is a formal, precise and technical description of a standard procedure."
    )


def question_id(i: int) -> str:
    return f"gen-{i:06d}"


def generated_benchmark(
    n: int, traits: tuple[Any, ...] = TRAITS
) -> tuple[Benchmark, dict[str, dict[str, str]]]:
    """``n`` finished questions sharing a global rubric, and their recorded answers ``{"*": {id: text}}``."""
    questions = [
        Question(
            id=question_id(i),
            text=f"How does {_PROCESSES[i % len(_PROCESSES)]} work in sample {i}?",
            raw_answer="A reference answer.",
            finished=True,
        )
        for i in range(n)
    ]
    bench = Benchmark(name=f"generated-{n}", global_rubric=Rubric(traits=list(traits)), questions=questions)
    return bench, {"*": {question_id(i): answer_text(i) for i in range(n)}}


def simulated(model_id: str, latency_ms: float = 0.0) -> dict[str, Any]:
    extra = {"latency_ms": latency_ms} if latency_ms else None
    return {
        "id": model_id,
        "model_provider": "simulated",
        "model_name": f"simulated-{model_id}",
        "interface": "simulated",
        "extra_kwargs": extra,
    }


def endpoint(url: str) -> dict[str, Any]:
    return {
        "id": "judge",
        "model_name": "simulated-judge",
        "interface": "openai_endpoint",
        "endpoint_base_url": url,
        "endpoint_api_key": "sk-test",
    }


def make_config(
    judge: dict[str, Any],
    *,
    mode: str = "deep_judgment",
    concurrency: int | None = None,
    workers: int = 16,
    **extra: Any,
) -> VerificationConfig:
    """A rubric-only config. ``mode``: ``standard`` (batch), ``deep_judgment`` (all LLM traits,
    with excerpts) or ``deep_judgment_search`` (plus excerpt search with the simulated search)."""
    fields: dict[str, Any] = dict(
        answering_models=[simulated("answerer")],
        parsing_models=[judge],
        evaluation_mode="rubric_only",
        deep_judgment_rubric_mode="disabled" if mode == "standard" else "enable_all",
        max_concurrent_requests=concurrency,
        async_max_workers=workers,
    )
    if mode == "deep_judgment_search":
        fields |= {
            "deep_judgment_rubric_search_enabled": True,
            "deep_judgment_rubric_search_tool": "simulated",
        }
    fields.update(extra)
    return VerificationConfig.model_validate(fields)


@dataclass
class Counted:
    """A ``adapter_factory`` that builds each model the way the runner does (``build_model``: cache ->
    retry -> limiter -> adapter) and counts calls at the port, outside that chain. Calls answered
    by the cache are flagged ``cached``, so ``live_calls`` is what reached the provider."""

    config: VerificationConfig
    cache: Any = None
    models: list[CountingModel] = field(default_factory=list)
    _limiter: asyncio.Semaphore | None = None

    def __call__(self, model: ModelConfig) -> ChatModel:
        limit = self.config.max_concurrent_requests
        if limit and self._limiter is None:
            self._limiter = asyncio.Semaphore(limit)  # binds to the run's loop on first use
        built = build_model(model, cache=self.cache, limiter=self._limiter, policy=self.config.retry_policy)
        counting = CountingModel(built)
        self.models.append(counting)
        return counting

    @property
    def calls(self) -> int:
        return sum(m.calls for m in self.models)

    @property
    def live_calls(self) -> int:
        return sum(m.calls - m.cached_calls for m in self.models)

    @property
    def input_tokens(self) -> int:
        return sum(m.usage.input_tokens for m in self.models)

    @property
    def output_tokens(self) -> int:
        return sum(m.usage.output_tokens for m in self.models)


@contextmanager
def server_process(*flags: object) -> Iterator[str]:
    """The simulated OpenAI-compatible server in its own process on 127.0.0.1 (as a real provider
    would be: its CPU time is not the client's), started with ``serve`` ``flags``; yields its base URL."""
    with url_process([sys.executable, "-m", "verify.llm.simulated", "serve", "--port", "0", *map(str, flags)],
                     "the simulated server") as url:  # fmt: skip
        yield url


@contextmanager
def url_process(cmd: list[str], what: str) -> Iterator[str]:
    """Run ``cmd``, a server that prints its base URL (on 127.0.0.1) on its first line; yield the URL
    and stop the server afterwards."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"{what} did not start (it said {url!r})")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
