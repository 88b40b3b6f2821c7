"""Docent-style schema judges as rubric traits: rendered prompts, problems sent back, Docent's
direct_result / failure, citations proven against the answer, the verdict field as the trait's score,
and the checkpoint karenina still loads.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakes import ScriptedModel, honest, prompt_of, run_pipeline, simulated_judge
from peers import karenina_python
from pydantic import ValidationError

from verify.benchmark.jsonld import Benchmark, load_benchmark, save_benchmark
from verify.benchmark.judge_spec import SchemaJudgeSpec
from verify.benchmark.question import Question
from verify.benchmark.traits import Rubric, SchemaJudgeTrait
from verify.errors import ModelError
from verify.judging.citations import numbered
from verify.llm.ports import ChatRequest, Purpose

ANSWER = "The capital of France is Paris. It has about 2.1 million inhabitants.\nThe Seine flows through it."
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "label": {"type": "string", "enum": ["pass", "fail"]},
        "explanation": {"type": "string", "citations": True},
    },
    "required": ["label", "explanation"],
    "additionalProperties": False,
}
GOOD = {"label": "pass", "explanation": 'It names Paris [E1] and says "about 2.1 million inhabitants".'}
KARENINA_PYTHON = karenina_python()


def judge_trait(**kw: Any) -> SchemaJudgeTrait:
    """The trait; ``weight``, ``required`` and ``pass_threshold`` are the trait's, the rest the spec's."""
    own = {k: kw.pop(k) for k in ("weight", "required", "pass_threshold") if k in kw}
    data: dict[str, Any] = {"rubric_text": "Does the answer name the capital of France?", "output_schema": SCHEMA,
                            "verdict_field": "label", **kw}
    return SchemaJudgeTrait(name="capital", description="names the capital", judge=SchemaJudgeSpec(**data), **own)


def tagged(output: Any) -> str:
    return f"Thinking it over.\n<response>{json.dumps(output)}</response>"


def replying(*texts: str | Callable[[ChatRequest], str]) -> ScriptedModel:
    """The schema judge's replies in turn (the last again when they run out); others: the simulated judge."""
    seen: list[int] = []

    def script(request: ChatRequest) -> str:
        if request.purpose is not Purpose.RUBRIC_SCHEMA_JUDGE:
            return honest(request)
        seen.append(1)
        text = texts[min(len(seen), len(texts)) - 1]
        return text(request) if callable(text) else text

    return ScriptedModel(script)


# -- the trait ---------------------------------------------------------------------------------------------


def test_a_bad_spec_is_refused_with_located_problems() -> None:
    with pytest.raises(ValidationError, match=r"output_schema.properties.label: type 'text' is not supported"):
        judge_trait(output_schema={"type": "object", "properties": {"label": {"type": "text"}}})


# -- judging -----------------------------------------------------------------------------------------------


async def test_the_prompt_is_rendered_and_a_proven_pass_is_a_direct_result() -> None:
    judge = replying(tagged(GOOD))
    result = await run_pipeline([judge_trait(required=True)], ANSWER, judge)
    (request,) = judge.for_purpose(Purpose.RUBRIC_SCHEMA_JUDGE)
    text = prompt_of(request)
    assert numbered(ANSWER) in text and "Does the answer name the capital of France?" in text
    assert json.dumps(SCHEMA, indent=2) in text and request.schema is None  # xml_key: a plain completion
    rubric = result.rubric
    assert rubric is not None and rubric.schema_judgments is not None
    judgment = rubric.schema_judgments["capital"]
    assert judgment.result_type == "direct_result" and judgment.output == GOOD and judgment.proven is True
    (cited,) = judgment.citations
    assert cited.path == "explanation" and [c.kind for c in cited.citations] == ["reference", "quote"]
    quote = cited.citations[1]
    assert ANSWER[quote.start:quote.end] == "about 2.1 million inhabitants"
    assert rubric.llm_trait_scores == {"capital": True} and rubric.llm_trait_labels == {"capital": "pass"}
    assert rubric.trait_status["capital"].status == "scored" and result.verdict == "passed"


async def test_a_fail_label_fails_a_required_judge() -> None:
    result = await run_pipeline([judge_trait(required=True)], ANSWER, replying(tagged({**GOOD, "label": "fail"})))
    assert result.rubric is not None and result.rubric.llm_trait_scores == {"capital": False}
    assert result.verdict == "failed" and result.metadata.failure is not None
    assert result.metadata.failure.category == "required_trait"


async def test_problems_are_sent_back_and_a_later_reply_is_used() -> None:
    judge = replying("Looks fine: pass.", tagged({**GOOD, "label": "maybe"}), tagged(GOOD))
    result = await run_pipeline([judge_trait()], ANSWER, judge)
    requests = judge.for_purpose(Purpose.RUBRIC_SCHEMA_JUDGE)
    assert len(requests) == 3
    assert "no <response>...</response> block" in requests[1].messages[-1].content
    assert "attempt 2 of 3" in requests[1].messages[-1].content
    assert '"maybe" is not one of' in requests[2].messages[-1].content and "attempt 3 of 3" in requests[2].messages[-1].content
    assert result.rubric is not None and result.rubric.schema_judgments is not None
    judgment = result.rubric.schema_judgments["capital"]
    assert judgment.result_type == "direct_result" and judgment.attempts == 3
    assert result.verdict == "judged"


async def test_a_reply_never_usable_is_a_failure_and_the_trait_unscored() -> None:
    result = await run_pipeline([judge_trait()], ANSWER, replying("pass"))
    rubric = result.rubric
    assert rubric is not None and rubric.schema_judgments is not None
    judgment = rubric.schema_judgments["capital"]
    assert judgment.result_type == "failure" and judgment.output is None and judgment.attempts == 3
    assert judgment.result_metadata is not None and judgment.result_metadata["raw_reply"] == "pass"
    outcome = rubric.trait_status["capital"]
    assert outcome.status == "unscored" and outcome.raw_reply == "pass" and outcome.score is None
    assert not rubric.llm_trait_scores and result.verdict == "incomplete"


async def test_citations_that_never_hold_auto_fail_the_task() -> None:
    made_up = {"label": "pass", "explanation": 'It says "Paris has 9 million inhabitants" [E7].'}
    judge = replying(tagged(made_up))
    result = await run_pipeline([judge_trait()], ANSWER, judge)
    requests = judge.for_purpose(Purpose.RUBRIC_SCHEMA_JUDGE)
    assert len(requests) == 3 and "there is no segment E7" in requests[1].messages[-1].content
    rubric = result.rubric
    assert rubric is not None and rubric.schema_judgments is not None
    judgment = rubric.schema_judgments["capital"]
    assert judgment.result_type == "direct_result" and judgment.proven is False
    assert rubric.trait_status["capital"].status == "auto_failed"
    assert not rubric.llm_trait_scores  # an unproven pass is no pass
    assert result.verdict == "failed" and result.metadata.failure is not None
    assert (result.metadata.failure.category, result.metadata.failure.group) == ("deep_judgment_rubric", "autofail")


async def test_constrained_decoding_sends_the_schema_and_reads_the_whole_reply() -> None:
    number = {"type": "object", "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5},
                                               "why": {"type": "string", "citations": True}},
              "required": ["score", "why"], "additionalProperties": False}
    trait = judge_trait(output_schema=number, verdict_field="score", output_parsing_mode="constrained_decoding")
    judge = replying(json.dumps({"score": 4, "why": "Names Paris [E1]."}))
    result = await run_pipeline([trait], ANSWER, judge)
    (request,) = judge.for_purpose(Purpose.RUBRIC_SCHEMA_JUDGE)
    assert request.schema is not None and request.schema["properties"] == {  # Docent's marker is not sent
        "score": number["properties"]["score"], "why": {"type": "string"}}
    assert result.rubric is not None and result.rubric.llm_trait_scores == {"capital": 4}
    assert result.rubric.rubric_verdict is not None
    assert result.rubric.rubric_verdict.traits["capital"].normalised == 0.75  # (4 - 1) / (5 - 1)


async def test_an_outage_leaves_only_the_judge_unscored() -> None:
    judge = replying(lambda _request: (_ for _ in ()).throw(ModelError("down", category="timeout")))
    result = await run_pipeline([judge_trait()], ANSWER, judge)
    assert result.rubric is not None
    outcome = result.rubric.trait_status["capital"]
    assert outcome.status == "unscored" and outcome.error_category == "timeout"


# -- the simulated judge, end to end -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["xml_key", "constrained_decoding"])
async def test_the_simulated_judge_fills_the_schema_and_cites_real_segments(mode: str) -> None:
    result = await run_pipeline([judge_trait(output_parsing_mode=mode)], ANSWER, simulated_judge())
    rubric = result.rubric
    assert rubric is not None and rubric.schema_judgments is not None
    judgment = rubric.schema_judgments["capital"]
    assert judgment.result_type == "direct_result" and judgment.proven is True and judgment.attempts == 1
    assert judgment.output is not None and judgment.output["label"] == "pass"
    assert result.verdict == "judged"


async def test_the_simulated_judge_under_fabrication_quotes_what_is_not_there() -> None:
    result = await run_pipeline([judge_trait()], ANSWER, simulated_judge(fabricate_rate=1.0))
    rubric = result.rubric
    assert rubric is not None and rubric.schema_judgments is not None
    judgment = rubric.schema_judgments["capital"]
    assert judgment.proven is False and judgment.attempts == 3
    bad = [c for f in judgment.citations for c in f.citations if not c.valid]
    assert bad and bad[0].kind == "quote" and bad[0].text not in ANSWER
    assert result.verdict == "failed"


# -- the checkpoint ----------------------------------------------------------------------------------------


def judge_benchmark() -> Benchmark:
    question = Question(id="q1", text="What is the capital of France?", raw_answer="Paris", finished=True,
                        rubric=Rubric(traits=[judge_trait(weight=2.0)]))
    return Benchmark(name="judges", questions=[question])


def test_a_schema_judge_round_trips_through_the_checkpoint(tmp_path: Path) -> None:
    bench = judge_benchmark()
    loaded = load_benchmark(save_benchmark(bench, tmp_path / "judges.jsonld"))
    rubric = loaded.questions[0].rubric
    assert rubric is not None and rubric.traits == bench.questions[0].rubric.traits  # type: ignore[union-attr]


def test_a_bad_stored_spec_is_a_located_problem(tmp_path: Path) -> None:
    path = save_benchmark(judge_benchmark(), tmp_path / "judges.jsonld")
    data = json.loads(path.read_text())
    rating = data["dataFeedElement"][0]["item"]["rating"][0]
    for prop in rating["additionalProperty"]:
        if prop["name"] == "schema_judge":
            prop["value"] = json.dumps({**json.loads(prop["value"]), "verdict_field": "grade"})
    path.write_text(json.dumps(data))
    with pytest.raises(Exception, match="trait 'capital'.*verdict_field: 'grade' is not a property"):
        load_benchmark(path)


@pytest.mark.skipif(KARENINA_PYTHON is None, reason="karenina is not importable (set KARENINA_PYTHON)")
def test_karenina_loads_a_checkpoint_with_a_schema_judge(tmp_path: Path) -> None:
    path = save_benchmark(judge_benchmark(), tmp_path / "judges.jsonld")
    code = ("import json, sys\nfrom karenina.benchmark import Benchmark\nb = Benchmark.load(sys.argv[1])\n"
            "q = b.get_all_questions(ids_only=False)[0]\nt = b.get_question_rubric(q['id']).llm_traits[0]\n"
            "print(json.dumps([t.name, t.kind, t.description]))\n")
    out = subprocess.run([KARENINA_PYTHON, "-c", code, str(path)], capture_output=True, text=True, check=True,
                         timeout=120)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == ["capital", "boolean", "names the capital"]
