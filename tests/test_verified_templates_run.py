"""VerifiedField, regex-only and trace-only templates in whole runs: a checkpoint written by karenina,
a scripted judge, verdicts from the automatic verify(), no parse call where karenina makes none,
null fields, an unchecked SemanticMatch, and the plan (``--show-plan``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import SIM_ANSWERER, SIM_JUDGE, ScriptedModel, prompt_of
from typer.testing import CliRunner

from verify.benchmark.jsonld import Benchmark, load_benchmark
from verify.benchmark.question import Question
from verify.cli import app
from verify.config.verification import VerificationConfig
from verify.llm.ports import ChatRequest, Purpose
from verify.results.models import VerificationResult
from verify.run.runner import run_verification
from verify.run.tasks import preflight
from verify.sandbox import calls

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "verified" / "karenina_verified_fields.jsonld"
RIGHT = {
    "vf-mixed": "Venetoclax targets BCL2; a human somatic cell has 46 chromosomes (MURANO, NCT02005471).",
    "vf-regex-only": "The drug inhibits the target [1] [2] [3]",
    "vf-trace-only": "The pivotal trial was MURANO (NCT02005471).",
    "vf-any-of": "Water boils at 103 C; the primaries are red and green.",
}
WRONG = {
    "vf-mixed": "Venetoclax targets MCL1; a human somatic cell has 47 chromosomes.",
    "vf-regex-only": "The drug activates the target [1]",
    "vf-trace-only": "Venclexta was tested in MURANO (NCT02005471).",
    "vf-any-of": "Water boils at 110 C; the primaries are red and green.",
}
# what the judge extracts from each answer (it never sees, nor is asked for, the trace fields)
PARSED = {
    RIGHT["vf-mixed"]: {"gene": "BCL2", "chromosomes": 46},
    WRONG["vf-mixed"]: {"gene": "MCL1", "chromosomes": 47},
    RIGHT["vf-any-of"]: {"boiling_c": 103, "colors": ["red", "green"]},
    WRONG["vf-any-of"]: {"boiling_c": 110, "colors": ["red", "green"]},
}


def judge_of(parsed: dict[str, dict[str, Any]]) -> ScriptedModel:
    def script(request: ChatRequest) -> str:
        assert request.purpose == Purpose.PARSING, request.purpose
        prompt = prompt_of(request)
        (values,) = [v for text, v in parsed.items() if f"<response>{text}</response>" in prompt]
        return json.dumps(values)

    return ScriptedModel(script)


def config(mode: str = "template_only") -> VerificationConfig:
    return VerificationConfig(answering_models=[SIM_ANSWERER], parsing_models=[SIM_JUDGE], evaluation_mode=mode)


def run(benchmark: Benchmark, answers: dict[str, str], judge: ScriptedModel,
        ids: list[str] | None = None) -> dict[str, VerificationResult]:
    outcome = run_verification(benchmark, config(), answers={"*": answers}, question_ids=ids,
                               adapter_factory=lambda _: judge)
    return {r.metadata.question_id: r for r in outcome.results}


def template(result: VerificationResult) -> Any:
    assert result.template is not None
    return result.template


def test_karenina_checkpoint_verdicts_come_from_the_automatic_verify() -> None:
    judge = judge_of(PARSED)
    right = run(load_benchmark(FIXTURE), RIGHT, judge)
    assert all(r.passed for r in right.values()), {k: r.metadata.failure for k, r in right.items()}
    mixed = template(right["vf-mixed"])
    assert mixed.verify_result is True and mixed.verify_granular_result == 1.0
    assert mixed.parsed_llm_response == {"gene": "BCL2", "chromosomes": 46.0}  # no trace field
    assert mixed.parsed_gt_response == {"gene": "BCL2", "chromosomes": 46, "cites_trial": True}
    assert template(right["vf-any-of"]).verify_granular_result == 0.5
    # the judge was asked twice (mixed, any-of): never for regex-only or trace-only templates
    parse_prompts = [prompt_of(r) for r in judge.requests]
    assert len(parse_prompts) == 2 and all(r.purpose == Purpose.PARSING for r in judge.requests)
    mixed_prompt = next(p for p in parse_prompts if "chromosomes" in p)
    assert "(extraction hint: Use the official HGNC symbol)" in mixed_prompt
    assert "cites_trial" not in mixed_prompt and "__verification__" not in mixed_prompt
    assert '"BCL2"' not in mixed_prompt.split("<response>")[0] + mixed_prompt.split("</response>")[1]

    wrong = run(load_benchmark(FIXTURE), WRONG, judge_of(PARSED))
    assert not any(r.passed for r in wrong.values())
    for qid in wrong:
        failure = wrong[qid].metadata.failure
        assert failure is not None and failure.category == "content", (qid, failure)
    mixed = template(wrong["vf-mixed"])
    assert mixed.verify_result is False and mixed.verify_granular_result == 0.5  # chromosomes (weight 2) passes
    failure = wrong["vf-mixed"].metadata.failure
    assert failure is not None and failure.reason.startswith(
        "verify() returned False (VerifiedFields failed: gene, cites_trial; parsed ")
    assert template(wrong["vf-any-of"]).verify_granular_result == pytest.approx(1 / 3)
    regex = template(wrong["vf-regex-only"])
    assert regex.regex_validation_results == {"has_mechanism_keyword": False, "has_three_citations": False}
    assert regex.verify_result is False and regex.regex_validations_performed


def test_regex_only_and_trace_only_templates_make_no_judge_call() -> None:
    judge = judge_of({})
    results = run(load_benchmark(FIXTURE), RIGHT, judge, ids=["vf-regex-only", "vf-trace-only"])
    assert judge.requests == []
    regex, trace = template(results["vf-regex-only"]), template(results["vf-trace-only"])
    assert results["vf-regex-only"].passed and regex.verify_result is True and regex.regex_overall_success is True
    assert regex.parsed_llm_response == {} and regex.field_verification_error is None
    assert results["vf-trace-only"].passed and trace.verify_result is True and trace.verify_granular_result == 1.0
    assert trace.parsed_gt_response == {"cites_trial": True, "avoids_brand": False}
    wrong = run(load_benchmark(FIXTURE), WRONG, judge, ids=["vf-trace-only"])
    assert judge.requests == [] and template(wrong["vf-trace-only"]).verify_granular_result == 0.5  # brand named


NULLABLE = '''class Answer(BaseAnswer):
    approved: bool = VerifiedField(description="Whether the drug is approved", ground_truth=False,
                                   verify_with=BooleanMatch())
    target: str = VerifiedField(description="The drug's target", ground_truth="BCL2", verify_with=ExactMatch())
'''
SEMANTIC = '''class Answer(BaseAnswer):
    mechanism: str = VerifiedField(description="The mechanism", ground_truth="inhibits BCL2",
                                   verify_with=SemanticMatch(threshold=0.8))
'''


def bench(**codes: str) -> Benchmark:
    return Benchmark(name="t", questions=[Question(id=qid, text="Which target?", raw_answer="BCL2", template_code=code,
                                                   finished=True) for qid, code in codes.items()])


def test_a_field_the_judge_leaves_null_fails_the_answer_not_the_parse() -> None:
    text = "It targets BCL2; its approval status is not given."
    judge = judge_of({text: {"approved": None, "target": "bcl2"}})
    result = run(bench(nullable=NULLABLE), {"nullable": text}, judge)["nullable"]
    assert len(judge.requests) == 1  # a usable reply: not retried for the null
    tpl = template(result)
    assert tpl.parsed_llm_response == {"approved": None, "target": "bcl2"}
    assert tpl.verify_result is False and tpl.verify_granular_result == 0.5
    failure = result.metadata.failure
    assert failure is not None and failure.category == "content"
    assert failure.reason.startswith("verify() returned False (left null by the judge: approved; parsed ")


def test_semantic_match_is_a_located_field_verification_error_and_is_announced() -> None:
    judge = judge_of({"It inhibits BCL2.": {"mechanism": "inhibits BCL2"}})
    result = run(bench(semantic=SEMANTIC), {"semantic": "It inhibits BCL2."}, judge)["semantic"]
    tpl = template(result)
    assert not result.passed and tpl.verify_result is None
    assert tpl.field_verification_error.startswith(
        "FieldCheckError: field 'mechanism' (SemanticMatch): NotImplementedError: SemanticMatch needs an embedding model")
    failure = result.metadata.failure
    assert failure is not None and (failure.category, failure.group) == ("field_verification_error", "system")
    (warning,) = preflight(bench(semantic=SEMANTIC), config(), bench(semantic=SEMANTIC).questions)
    assert warning == ("the benchmark: question 'semantic': VerifiedField(s) mechanism use SemanticMatch, which needs "
                       "an embedding model: its tasks will fail with field_verification_error")


def test_show_plan_names_each_template_style() -> None:
    result = CliRunner().invoke(app, [str(FIXTURE), "--preset", "demo", "--evaluation-mode", "template_only",
                                      "--show-plan"])
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:4]]
            for line in result.stdout.splitlines() if line.startswith("│")}
    assert rows == {
        "vf-mixed": ["ok", "Answer: VerifiedField (3 fields: ExactMatch, NumericTolerance, TraceRegex)"],
        "vf-regex-only": ["ok", "RegexAnswer: regex-only"],
        "vf-trace-only": ["ok", "TraceAnswer: trace-only (2 fields: TraceRegex, TraceContains)"],
        "vf-any-of": ["ok", "AnyOfAnswer: VerifiedField (2 fields: NumericGraded, SetContainment; AnyOf)"],
    }
    assert "answer templates: 4 compile, 0 broken" in result.stdout


async def test_the_worker_reports_each_fields_outcome_as_karenina_records_it() -> None:
    (code,) = [q.template_code or "" for q in load_benchmark(FIXTURE).questions if q.id == "vf-any-of"]
    compiled = await calls.compile_template_checked(code, "vf-any-of", 10)
    built = await calls.build_answer(compiled, code, {"boiling_c": 110, "colors": ["red", "green"]}, 10, trace="x")
    reply = await calls.run_verify(built, 10)
    assert (reply.verdict, reply.fields, reply.strategy) == (False, {"boiling_c": False, "colors": False}, "any_of")
    assert reply.scores == pytest.approx({"boiling_c": 2 / 3, "colors": 0.0})  # karenina's field_scores
    assert await calls.run_granular(built, 10) == pytest.approx(1 / 3)
