"""A letta grader's own ``model``/``temperature`` and a Docent judge's ``judge_model`` are the models
their calls go to (letta's rule: reasoning models at temperature 1.0); their calls count with the task's."""

from __future__ import annotations

from typing import Any

from verify.benchmark.jsonld import Benchmark
from verify.benchmark.question import Question
from verify.benchmark.traits import LLMTrait, Rubric, SchemaJudgeTrait
from verify.config.models import ModelConfig
from verify.config.verification import VerificationConfig
from verify.llm.ports import ChatReply, ChatRequest, Purpose
from verify.llm.simulated.model import SimulatedModel
from verify.run.runner import run_verification

SCHEMA = {"type": "object", "properties": {"label": {"type": "string", "enum": ["pass", "fail"]},
                                           "evidence": {"type": "string", "citations": True}},
          "required": ["label", "evidence"], "additionalProperties": False}


def sim(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "model_provider": "simulated", "model_name": f"simulated-{model_id}",
            "interface": "simulated"}


def benchmark(*traits: Any) -> Benchmark:
    question = Question(id="q1", text="What is the capital of France?", raw_answer="Paris", finished=True,
                        rubric=Rubric(traits=list(traits)))
    return Benchmark(name="models", questions=[question])


def test_graders_and_judges_call_their_own_models() -> None:
    seen: list[tuple[str, str, float | None]] = []

    def factory(model: ModelConfig) -> Any:
        inner = SimulatedModel(model)

        class Seen:
            model_id = inner.model_id

            async def complete(self, request: ChatRequest) -> ChatReply:
                seen.append((str(request.purpose), model.model_name or "", model.temperature))
                return await inner.complete(request)

        return Seen()

    traits = [
        LLMTrait(name="plain", kind="boolean", description="Says Paris."),
        LLMTrait(name="reasoner", description="Accurate?", prompt="{input}\n{submission}", model="o3-mini",
                 temperature=0.2),
        LLMTrait(name="cheap", description="Accurate?", prompt="{input}\n{submission}", temperature=0.5),
        SchemaJudgeTrait(name="docent", description="Correct?", judge={
            "rubric_text": "Is it Paris?", "output_schema": SCHEMA, "verdict_field": "label",
            "judge_model": {"provider": "simulated", "model_name": "simulated-docent"}}),
    ]
    config = VerificationConfig.model_validate({
        "answering_models": [sim("answerer")], "parsing_models": [sim("judge")], "evaluation_mode": "rubric_only"})
    outcome = run_verification(benchmark(*traits), config, answers={"*": {"q1": "Paris is the capital."}},
                               adapter_factory=factory)
    (result,) = outcome.results
    by_purpose: dict[str, set[tuple[str, float | None]]] = {}
    for purpose, name, temperature in seen:
        by_purpose.setdefault(purpose, set()).add((name, temperature))
    assert by_purpose[str(Purpose.RUBRIC_GRADER)] == {("o3-mini", 1.0), ("simulated-judge", 0.5)}
    assert {name for name, _ in by_purpose[str(Purpose.RUBRIC_SCHEMA_JUDGE)]} == {"simulated-docent"}
    others = {p: names for p, names in by_purpose.items()
              if p not in (str(Purpose.RUBRIC_GRADER), str(Purpose.RUBRIC_SCHEMA_JUDGE))}
    assert others and all(names == {("simulated-judge", 0.1)} for names in others.values())  # "plain": the judge
    # every call, on whichever model, counts with the task's usage (the answer was recorded: no answer call)
    assert result.template is not None and result.template.usage_metadata["total"].calls == len(seen)
    assert result.rubric is not None and result.rubric.trait_status["reasoner"].status == "scored"
