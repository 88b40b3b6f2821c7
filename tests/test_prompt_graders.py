"""letta-style prompt graders: an LLM trait with its own prompt, scored 0.0-1.0 with a rationale.

The prompt is checked when the trait is built; the judge's ``{score, rationale}`` is read through
ask_structured (an out-of-range score or the schema echoed back is asked again); an unusable reply
leaves the trait unscored with the raw text, never 0.0. The checkpoint keeps the prompt as extra
properties that karenina ignores.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fakes import ScriptedModel, honest, prompt_of, run_pipeline, simulated_judge
from peers import karenina_python
from pydantic import ValidationError

from verify.benchmark.grader_prompt import grader_temperature, is_reasoning_model
from verify.benchmark.jsonld import Benchmark, load_benchmark, save_benchmark
from verify.benchmark.question import Question
from verify.benchmark.traits import LLMTrait, Rubric
from verify.judging.prompt_grader import SYSTEM_PROMPT
from verify.llm.ports import ChatRequest, Purpose

ANSWER = "The capital of France is Paris, on the Seine."
PROMPT = ("Evaluate accuracy.\nInput: {input}\nExpected answer: {ground_truth}\nCriteria: {rubric}\n"
          "Agent response: {submission}\nReturn JSON like {{\"score\": 0.5}}.")
KARENINA_PYTHON = karenina_python()


def grader(**kw: Any) -> LLMTrait:
    data: dict[str, Any] = {"name": "quality", "description": "names the capital", "prompt": PROMPT}
    return LLMTrait(**{**data, **kw})


def replying(*texts: str) -> ScriptedModel:
    """A judge giving ``texts`` in turn to the grader (the last one again when they run out)."""
    seen: list[int] = []

    def script(request: ChatRequest) -> str:
        if request.purpose is not Purpose.RUBRIC_GRADER:
            return honest(request)
        seen.append(1)
        return texts[min(len(seen), len(texts)) - 1]

    return ScriptedModel(script)


# -- the definition ---------------------------------------------------------------------------------------


def test_a_grader_is_a_0_to_1_score_trait_and_literal_braces_are_text() -> None:
    trait = grader()
    assert (trait.kind, trait.min_score, trait.max_score) == ("score", 0, 1)


@pytest.mark.parametrize(("prompt", "expected"), [
    ("Grade {submission} against {answer}", "trait 'quality': prompt: unknown placeholder {answer}"),
    ("Grade the answer to {input}", "trait 'quality': prompt has no {submission} placeholder"),
    ("Grade {submission", "trait 'quality': prompt: "),
])
def test_bad_prompts_are_refused_naming_the_trait(prompt: str, expected: str) -> None:
    with pytest.raises(ValidationError, match="trait 'quality'") as info:
        grader(prompt=prompt)
    assert expected in str(info.value)


def test_a_grader_is_not_boolean_and_scores_0_to_1() -> None:
    with pytest.raises(ValidationError, match="a prompt grader is a plain 0-1 score trait"):
        grader(kind="boolean")
    with pytest.raises(ValidationError, match="scores 0-1"):
        grader(min_score=1, max_score=5)


@pytest.mark.parametrize(("model", "expected"), [
    ("o1", 1.0), ("o1-mini", 1.0), ("o3-mini", 1.0), ("o4-mini", 1.0), ("gpt-5", 1.0), ("gpt-5-nano", 1.0),
    ("openai/gpt-5.1", 1.0), ("gpt-4o-mini", 0.0), ("gpt-4o", 0.0), ("claude-3-5-sonnet", 0.0), (None, 0.0),
])
def test_letta_forces_temperature_1_for_reasoning_models(model: str | None, expected: float) -> None:
    assert grader_temperature(model, 0.0) == expected
    assert is_reasoning_model(model) is (expected == 1.0)
    assert grader(model=model, temperature=0.0).grader_temperature == expected


# -- judging ----------------------------------------------------------------------------------------------


async def test_the_prompt_is_rendered_and_score_and_rationale_are_stored() -> None:
    judge = replying(json.dumps({"score": 0.85, "rationale": "Accurate, could be shorter."}))
    result = await run_pipeline([grader(pass_threshold=0.8)], ANSWER, judge)
    (request,) = judge.for_purpose(Purpose.RUBRIC_GRADER)
    assert request.messages[0].content == SYSTEM_PROMPT and request.trait == "quality"
    assert prompt_of(request) == PROMPT.format(input="What is the capital of France?", ground_truth="Paris",
                                               rubric="names the capital", submission=ANSWER)
    assert result.rubric is not None and result.rubric.llm_trait_scores == {"quality": 0.85}
    outcome = result.rubric.trait_status["quality"]
    assert (outcome.status, outcome.rationale) == ("scored", "Accurate, could be shorter.")
    assert result.rubric.rubric_verdict is not None
    assert result.rubric.rubric_verdict.traits["quality"].normalised == 0.85  # the score as is
    assert result.verdict == "passed"


async def test_a_score_under_the_bar_fails_the_rubric_verdict() -> None:
    judge = replying(json.dumps({"score": 0.3, "rationale": "Wrong city."}))
    result = await run_pipeline([grader(required=True)], ANSWER, judge)
    assert result.verdict == "failed" and result.metadata.failure is not None
    assert result.metadata.failure.category == "required_trait"


async def test_out_of_range_scores_and_echoed_schemas_are_asked_again() -> None:
    echoed = json.dumps({"title": "GraderScore", "type": "object", "properties": {
        "score": {"type": "number"}, "rationale": {"type": "string"}}, "required": ["score", "rationale"]})
    judge = replying(json.dumps({"score": 8, "rationale": "out of ten"}), echoed,
                     json.dumps({"score": 0.9, "rationale": "fine"}))
    result = await run_pipeline([grader()], ANSWER, judge)
    assert len(judge.for_purpose(Purpose.RUBRIC_GRADER)) == 3
    assert result.rubric is not None and result.rubric.llm_trait_scores == {"quality": 0.9}


async def test_an_unusable_reply_is_unscored_with_the_raw_text_never_0() -> None:
    judge = replying("I would say it is pretty good!")
    result = await run_pipeline([grader()], ANSWER, judge)
    assert result.rubric is not None
    outcome = result.rubric.trait_status["quality"]
    assert outcome.status == "unscored" and outcome.raw_reply == "I would say it is pretty good!"
    assert outcome.score is None and not result.rubric.llm_trait_scores
    assert result.verdict == "incomplete"
    assert result.metadata.coverage is not None and result.metadata.coverage.unscored == {"quality": "unparseable"}


async def test_the_simulated_judge_grades_deterministically_end_to_end() -> None:
    first = await run_pipeline([grader()], ANSWER, simulated_judge())
    again = await run_pipeline([grader()], ANSWER, simulated_judge())
    assert first.rubric is not None and again.rubric is not None
    outcome = first.rubric.trait_status["quality"]
    assert outcome.status == "scored" and outcome.rationale
    assert isinstance(outcome.score, float) and 0.4 <= outcome.score <= 1.0
    assert again.rubric.trait_status["quality"] == outcome


# -- the checkpoint ---------------------------------------------------------------------------------------


def grader_benchmark() -> Benchmark:
    trait = grader(model="o3-mini", temperature=0.0, weight=2.0)
    question = Question(id="q1", text="What is the capital of France?", raw_answer="Paris", finished=True,
                        rubric=Rubric(traits=[trait]))
    return Benchmark(name="graders", questions=[question])


def test_a_grader_round_trips_through_the_checkpoint(tmp_path: Path) -> None:
    bench = grader_benchmark()
    loaded = load_benchmark(save_benchmark(bench, tmp_path / "graders.jsonld"))
    rubric = loaded.questions[0].rubric
    assert rubric is not None and rubric.traits == bench.questions[0].rubric.traits  # type: ignore[union-attr]


@pytest.mark.skipif(KARENINA_PYTHON is None, reason="karenina is not importable (set KARENINA_PYTHON)")
def test_karenina_loads_a_checkpoint_with_a_grader(tmp_path: Path) -> None:
    path = save_benchmark(grader_benchmark(), tmp_path / "graders.jsonld")
    code = ("import json, sys\nfrom karenina.benchmark import Benchmark\nb = Benchmark.load(sys.argv[1])\n"
            "q = b.get_all_questions(ids_only=False)[0]\nt = b.get_question_rubric(q['id']).llm_traits[0]\n"
            "print(json.dumps([t.name, t.kind, t.min_score, t.max_score]))\n")
    out = subprocess.run([KARENINA_PYTHON, "-c", code, str(path)], capture_output=True, text=True, check=True,
                         timeout=120)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == ["quality", "score", 0, 1]
