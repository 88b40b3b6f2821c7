"""Test-suite files (AgentV tests/assertions, letta graders/gates, Docent judges): load, convert and
round-trip, located errors for bad suites, and offline runs through the CLI.

Runs use the simulated judge (``verify/examples/suite/offline.json``) and the suite's recorded outputs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from verify.benchmark.jsonld import load_benchmark
from verify.benchmark.suite import is_suite_file, load_suite, write_suite
from verify.benchmark.traits import LLMTrait, SchemaJudgeTrait
from verify.cli import app
from verify.errors import BenchmarkError

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "verify" / "examples" / "suite" / "suite.yaml"
OFFLINE = REPO / "verify" / "examples" / "suite" / "offline.json"
DEMO = REPO / "verify" / "examples" / "demo" / "demo.jsonld"

runner = CliRunner()

BASIC: dict[str, Any] = {
    "name": "basic",
    "tests": [
        {"id": "paris", "input": "What is the capital of France?", "expected_output": "Paris",
         "output": "The capital of France is Paris, a city on the river Seine in the north of the country.",
         "assertions": ["Names Paris as the capital of France"]},
        {"id": "tokyo", "input": "What is the capital of Japan?", "ground_truth": "Tokyo",
         "outputs": {"recorded": "Tokyo is the capital of Japan and its largest city by far, home to millions."},
         "assertions": [{"type": "rubrics", "criteria": [
             {"id": "names-tokyo", "outcome": "Names Tokyo as the capital of Japan", "weight": 2, "required": True},
             {"id": "detail", "outcome": "Adds a detail about Tokyo", "min_score": 0.3,
              "score_ranges": {0: "No detail", 4: "Some detail", 8: "Rich detail"}},
         ]}]},
    ],
}


def invoke(*args: object) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def write(tmp_path: Path, data: dict[str, Any], name: str = "suite.yaml") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data) if name.endswith(".json") else yaml.safe_dump(data, sort_keys=False),
                    encoding="utf-8")
    return path


def with_changes(**changes: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(BASIC))
    data.update(changes)
    return data


# --------------------------------------------------------------------------------------- loading


def test_load_maps_tests_criteria_outputs_and_gates(tmp_path: Path) -> None:
    data = with_changes(gates=["rubric_score >= 0.5"], gate={"metric_key": "pass_rate", "op": "gte", "value": 0.9})
    suite = load_suite(write(tmp_path, data))
    paris, tokyo = suite.benchmark.questions
    assert (paris.id, paris.text, paris.raw_answer, paris.finished) == ("paris", "What is the capital of France?",
                                                                       "Paris", True)
    assert tokyo.raw_answer == "Tokyo"  # letta's ground_truth
    (plain,) = paris.rubric.traits  # type: ignore[union-attr]
    assert isinstance(plain, LLMTrait) and plain.kind == "boolean" and plain.required  # plain string: required
    assert plain.name == "names-paris-as-the-capital-of-france"
    names, detail = tokyo.rubric.traits  # type: ignore[union-attr]
    assert isinstance(names, LLMTrait) and isinstance(detail, LLMTrait)
    assert (names.weight, names.required, names.kind) == (2.0, True, "boolean")
    assert (detail.required, detail.pass_threshold, detail.kind, detail.min_score, detail.max_score) == (
        False, 0.3, "score", 0, 10)  # AgentV's min_score is the 0-1 bar; score_ranges put it on 0-10
    assert [r.range for r in detail.score_ranges or []] == [(0, 3), (4, 7), (8, 10)]
    assert suite.answers == {"*": {"paris": BASIC["tests"][0]["output"]},
                             "recorded": {"tokyo": BASIC["tests"][1]["outputs"]["recorded"]}}
    assert suite.gates == ["pass_rate >= 0.9", "rubric_score >= 0.5"]


def test_graders_and_judges_become_suite_wide_traits(tmp_path: Path) -> None:
    (tmp_path / "rubrics").mkdir()
    (tmp_path / "rubrics" / "q.txt").write_text("Grade {submission} for {input} against {ground_truth}.", encoding="utf-8")
    schema = {"type": "object", "properties": {"verdict": {"type": "boolean"},
                                               "evidence": {"type": "string", "citations": True}}}
    data = with_changes(
        graders={"quality": {"kind": "rubric", "prompt_path": "rubrics/q.txt", "model": "gpt-4o-mini",
                             "temperature": 0.2, "weight": 2}},
        judges={"grounded": {"rubric_text": "Names a city", "output_schema": schema, "verdict_field": "verdict"}},
        gate={"metric_key": "quality", "op": "gte", "value": 0.75})
    suite = load_suite(write(tmp_path, data))
    quality, grounded = suite.benchmark.global_rubric.traits  # type: ignore[union-attr]
    assert isinstance(quality, LLMTrait) and quality.prompt == "Grade {submission} for {input} against {ground_truth}."
    assert (quality.model, quality.temperature, quality.weight, quality.max_score) == ("gpt-4o-mini", 0.2, 2.0, 1)
    assert isinstance(grounded, SchemaJudgeTrait) and grounded.judge.citation_paths() == [("evidence",)]
    assert (suite.judge_model, suite.judge_temperature) == ("gpt-4o-mini", 0.2)
    assert suite.gates == ["mean(quality) >= 0.75"]  # letta's metric_key names the grader


def test_json_suites_are_detected_and_checkpoints_are_not(tmp_path: Path) -> None:
    assert is_suite_file(write(tmp_path, BASIC, "suite.json"))
    assert load_suite(tmp_path / "suite.json").benchmark.questions[1].id == "tokyo"
    (tmp_path / "other.json").write_text('{"questions": []}', encoding="utf-8")
    assert not is_suite_file(tmp_path / "other.json")
    assert not is_suite_file(DEMO)


def test_example_suite_loads_with_every_feature() -> None:
    suite = load_suite(EXAMPLE)
    kinds = {type(t).__name__ for q in suite.benchmark.questions for t in q.rubric.traits}  # type: ignore[union-attr]
    assert kinds == {"LLMTrait"}
    wide = suite.benchmark.global_rubric.traits  # type: ignore[union-attr]
    assert [type(t).__name__ for t in wide] == ["LLMTrait", "SchemaJudgeTrait"]
    assert suite.gates and set(suite.answers["*"]) == {q.id for q in suite.benchmark.questions}


# --------------------------------------------------------------------------------- bad suites


def _bad(tmp_path: Path, data: dict[str, Any]) -> str:
    path = write(tmp_path, data)
    with pytest.raises(BenchmarkError) as caught:
        load_suite(path)
    message = caught.value.message
    assert message.startswith(str(path)) and "\n" not in message
    return message


def test_unknown_placeholder_in_a_grader_prompt_is_located(tmp_path: Path) -> None:
    message = _bad(tmp_path, with_changes(graders={"quality": {"kind": "rubric", "prompt": "Grade {answer}: {submission}"}}))
    assert "grader 'quality'" in message and "unknown placeholder {answer}" in message


def test_judge_schema_against_the_metaschema_is_located(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"tags": {"type": "array"}, "n": {"type": "integer", "citations": True}}}
    message = _bad(tmp_path, with_changes(judges={"grounded": {"rubric_text": "x", "output_schema": schema}}))
    assert "judge 'grounded'" in message
    assert 'output_schema.properties.tags: an array needs "items"' in message
    assert "output_schema.properties.n" in message and "citations" in message


def test_a_test_with_no_criteria_is_located(tmp_path: Path) -> None:
    data = with_changes()
    del data["tests"][0]["assertions"]
    message = _bad(tmp_path, data)
    assert "test 'paris': assertions: the test has no criteria" in message
    # suite-wide assertions give every test criteria
    data["assertions"] = ["Is polite"]
    assert load_suite(write(tmp_path, data)).benchmark.global_rubric is not None


@pytest.mark.parametrize("weight", [0, -1, "heavy"])
def test_weights_must_be_positive(tmp_path: Path, weight: Any) -> None:
    data = with_changes()
    data["tests"][1]["assertions"][0]["criteria"][0]["weight"] = weight
    message = _bad(tmp_path, data)
    assert "test 'tokyo' criterion 'names-tokyo': weight: must be a number > 0" in message


def test_unknown_keys_say_did_you_mean(tmp_path: Path) -> None:
    data = with_changes(gatte="pass_rate >= 1")
    data["tests"][1]["assertions"][0]["criteria"][1]["min_scor"] = 0.5
    data["tests"][0]["expected_outptu"] = "Paris"
    message = _bad(tmp_path, data)
    assert "top level: unknown key 'gatte'; did you mean gate?" in message
    assert "test 'tokyo' criteria[1]: unknown key 'min_scor'; did you mean min_score?" in message
    assert "test 'paris': unknown key 'expected_outptu'; did you mean expected_output?" in message


def test_bad_min_score_and_gate_are_located(tmp_path: Path) -> None:
    data = with_changes(gate={"metric_key": "pass_rat", "op": "gte", "value": 0.5})
    data["tests"][1]["assertions"][0]["criteria"][1]["min_score"] = 3
    message = _bad(tmp_path, data)
    assert "test 'tokyo' criterion 'detail': min_score:" in message
    assert "gate: gate 'pass_rat gte 0.5': unknown metric 'pass_rat'" in message and "did you mean pass_rate" in message


def test_bad_suite_on_the_command_line_is_one_located_line(tmp_path: Path) -> None:
    data = with_changes()
    data["tests"][0]["assertions"] = []
    path = write(tmp_path, data)
    result = invoke(path, "--preset", OFFLINE, "--output", tmp_path / "out.json", "--no-cache")
    assert result.exit_code == 1
    error = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and str(path) in error[0] and "test 'paris'" in error[0]


# ------------------------------------------------------------------------------------- convert


def test_convert_suite_to_checkpoint_and_back_round_trips(tmp_path: Path) -> None:
    source = write(tmp_path, with_changes(gate="pass_rate >= 0.5"))
    checkpoint, answers = tmp_path / "bench.jsonld", tmp_path / "answers.json"
    result = invoke("convert", source, "-o", checkpoint, "--answers", answers)
    assert result.exit_code == 0, result.output
    assert 'run it with --gate "pass_rate >= 0.5"' in result.output
    bench = load_benchmark(checkpoint)
    assert [(q.id, q.text, q.raw_answer, q.rubric) for q in bench.questions] == [
        (q.id, q.text, q.raw_answer, q.rubric) for q in load_suite(source).benchmark.questions]
    assert json.loads(answers.read_text(encoding="utf-8")) == load_suite(source).answers
    back = tmp_path / "back.yaml"
    result = invoke("convert", checkpoint, "-o", back)
    assert result.exit_code == 0, result.output
    again = load_suite(back).benchmark
    for before, after in zip(bench.questions, again.questions, strict=True):
        assert (before.id, before.text, before.raw_answer) == (after.id, after.text, after.raw_answer)
        assert before.rubric == after.rubric  # weights, required, thresholds and score ranges kept


def test_graders_and_judges_are_written_back(tmp_path: Path) -> None:
    back, checkpoint, again = tmp_path / "back.yaml", tmp_path / "b.jsonld", tmp_path / "again.yaml"
    assert write_suite(load_suite(EXAMPLE).benchmark, back) == []
    assert load_suite(back).benchmark.global_rubric == load_suite(EXAMPLE).benchmark.global_rubric
    assert invoke("convert", EXAMPLE, "-o", checkpoint).exit_code == 0  # and through a checkpoint
    result = invoke("convert", checkpoint, "-o", again)
    assert result.exit_code == 0, result.output
    assert load_suite(again).benchmark.global_rubric == load_suite(EXAMPLE).benchmark.global_rubric


def test_yaml_syntax_errors_are_located(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\ntests:\n  - id: a\n    input: [unclosed\n", encoding="utf-8")
    with pytest.raises(BenchmarkError) as caught:
        load_suite(path)
    assert str(path) in caught.value.message and "line 5, column 1: not valid YAML" in caught.value.message


def test_convert_says_what_a_suite_cannot_hold_and_never_clobbers(tmp_path: Path) -> None:
    out = tmp_path / "demo.yaml"
    result = invoke("convert", DEMO, "-o", out)
    assert result.exit_code == 0 and "has no suite form" in result.output
    assert yaml.safe_load(out.read_text(encoding="utf-8"))["tests"]
    result = invoke("convert", DEMO, "-o", out)
    assert result.exit_code == 1 and "exists" in result.output and "--overwrite" in result.output


# ----------------------------------------------------------------------------------------- runs


def test_suite_config_takes_graders_model_gates_and_rubric_only(tmp_path: Path) -> None:
    data = with_changes(graders={"quality": {"prompt": "Grade {submission}", "model": "gpt-4o-mini"}},
                        gate={"metric_key": "quality", "op": "gte", "value": 0.7})
    path = write(tmp_path, data)
    config = json.loads(invoke(path, "--show-config").output)
    assert [m["model_name"] for m in config["parsing_models"]] == ["gpt-4o-mini"]
    assert config["evaluation_mode"] == "rubric_only" and config["gates"] == ["mean(quality) >= 0.7"]
    config = json.loads(invoke(path, "--preset", OFFLINE, "--show-config").output)
    assert [m["model_name"] for m in config["parsing_models"]] == ["simulated-judge"]  # the preset's judge stays


def _run(tmp_path: Path, gate: dict[str, Any]) -> tuple[Result, dict[str, Any]]:
    path = write(tmp_path, with_changes(gate=gate))
    out = tmp_path / f"run-{gate['value']}.json"
    result = invoke(path, "--preset", OFFLINE, "--output", out, "--no-cache")
    return result, json.loads(out.read_text(encoding="utf-8"))


def test_offline_run_records_criteria_score_verdict_and_gate(tmp_path: Path) -> None:
    result, data = _run(tmp_path, {"metric_key": "rubric_score", "op": "gte", "value": 0.0})
    assert result.exit_code == 0, result.output
    by_id = {r["metadata"]["question_id"]: r for r in data["results"]}
    assert set(by_id) == {"paris", "tokyo"}
    tokyo = by_id["tokyo"]
    assert tokyo["template"]["raw_llm_response"] == BASIC["tests"][1]["outputs"]["recorded"]  # the recorded output
    verdict = tokyo["rubric"]["rubric_verdict"]
    assert set(verdict["traits"]) == {"names-tokyo", "detail"}
    assert verdict["traits"]["names-tokyo"]["weight"] == 2.0 and verdict["traits"]["names-tokyo"]["required"]
    assert verdict["traits"]["detail"]["pass_at"] == 0.3
    assert all(isinstance(t["passed"], bool) for t in verdict["traits"].values())
    weighted = sum(t["normalised"] * t["weight"] for t in verdict["traits"].values()) / 3
    assert verdict["score"] == pytest.approx(weighted)
    assert tokyo["verify"]["verdict"] in ("passed", "failed")
    (gate,) = data["metadata"]["gates"]
    assert gate["gate"] == "rubric_score >= 0" and gate["passed"] is True


def test_exit_code_follows_the_gate(tmp_path: Path) -> None:
    result, data = _run(tmp_path, {"metric_key": "rubric_score", "op": "gt", "value": 1})
    assert result.exit_code == 4, result.output
    assert data["metadata"]["gates"][0]["passed"] is False
    assert "rubric_score > 1" in result.output


def test_a_suite_run_resumes(tmp_path: Path) -> None:
    path, out = write(tmp_path, BASIC), tmp_path / "run.json"
    first = invoke(path, "--preset", OFFLINE, "--output", out, "--no-cache", "--question-ids", "paris")
    assert first.exit_code == 0, first.output
    again = invoke(path, "--preset", OFFLINE, "--output", out, "--no-cache", "--resume")
    assert again.exit_code == 0, again.output
    assert "(resumed 1)" in again.output
    assert len(json.loads(out.read_text(encoding="utf-8"))["results"]) == 2


def test_the_example_suite_runs_offline(tmp_path: Path) -> None:
    out = tmp_path / "example.json"
    result = invoke(EXAMPLE, "--preset", OFFLINE, "--output", out, "--no-cache")
    data = json.loads(out.read_text(encoding="utf-8"))
    gates = data["metadata"]["gates"]
    assert [g["gate"] for g in gates] == ["mean(quality) >= 0.4", "pass_rate >= 0.5"]
    assert result.exit_code == (0 if all(g["passed"] for g in gates) else 4), result.output
    verdicts = {r["metadata"]["question_id"]: r["verify"]["verdict"] for r in data["results"]}
    assert verdicts["capital-australia"] == "failed"  # "Sydney" breaks a required criterion
    australia = next(r for r in data["results"] if r["metadata"]["question_id"] == "capital-australia")
    assert australia["rubric"]["rubric_verdict"]["failed_required"] == ["does-not-claim-that-sydney-is-the-capital"]
