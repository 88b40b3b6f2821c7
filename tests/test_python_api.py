"""The Python API of a finished run: summary (coverage, pass rate, verdict counts), gates, a pandas
table, reading an export back into the same objects, and the run's seed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes import SIM_JUDGE, ScriptedModel, honest

import verify
from verify.benchmark.jsonld import Benchmark
from verify.benchmark.question import Question
from verify.benchmark.traits import LLMTrait, Rubric
from verify.config.verification import VerificationConfig
from verify.errors import ConfigError, UserError
from verify.llm.ports import ChatRequest

GOOD = {"id": "good", "model_provider": "simulated", "model_name": "good-model", "interface": "simulated"}
BAD = {"id": "bad", "model_provider": "simulated", "model_name": "bad-model", "interface": "simulated"}
ANSWERS = {"good": {"q1": "Paris, clearly.", "q2": "Rome, clearly."}, "bad": {"q1": "dunno", "q2": "dunno"}}
TRAITS = [LLMTrait(name="correct", kind="boolean", description="The response is correct"),
          LLMTrait(name="clarity", kind="score", min_score=1, max_score=5, description="How clear it is")]
SPECIFIC = LLMTrait(name="names_city", kind="boolean", description="It names a city")


def bench() -> Benchmark:
    return Benchmark(name="api", global_rubric=Rubric(traits=TRAITS), questions=[
        Question(id="q1", text="What is the capital of France?", raw_answer="Paris", finished=True,
                 rubric=Rubric(traits=[SPECIFIC])),
        Question(id="q2", text="What is the capital of Italy?", raw_answer="Rome", finished=True)])


def judge_script(request: ChatRequest) -> str:
    """Good answers: correct, clarity 5, names a city; the others: wrong, clarity 2, no city."""
    if request.purpose != "rubric_batch":
        return honest(request)
    good = "clearly" in "\n".join(m.content for m in request.messages)
    scores: dict[str, Any] = {"correct": good, "clarity": 5 if good else 2, "names_city": good}
    return json.dumps({"scores": scores})


def run(tmp_path: Path | None = None, *, output: str = "results.json", **config: Any) -> verify.RunOutcome:
    cfg = VerificationConfig(answering_models=[GOOD, BAD], parsing_models=[SIM_JUDGE],
                             evaluation_mode="rubric_only", **config)
    judge = ScriptedModel(judge_script)
    path = tmp_path / output if tmp_path else None
    return verify.run_verification(bench(), cfg, answers=ANSWERS, adapter_factory=lambda m: judge, output=path)


def test_a_run_without_a_pass_rule_has_no_pass_rate_only_judged_tasks() -> None:
    outcome = run()
    assert outcome.summary.pass_rate is None
    assert outcome.summary.coverage == 1.0
    assert outcome.summary.verdict_counts == {"passed": 0, "failed": 0, "judged": 4, "incomplete": 0}
    assert set(outcome.verdicts.values()) == {"judged"}


def test_pass_rate_verdicts_and_gates_of_a_run_with_a_pass_rule() -> None:
    outcome = run(rubric_pass_threshold=0.8, gates=["pass_rate >= 0.9", "coverage >= 0.99"])
    assert outcome.summary.pass_rate == 0.5
    assert outcome.summary.verdict_counts == {"passed": 2, "failed": 2, "judged": 0, "incomplete": 0}
    assert sorted(outcome.verdicts.values()) == ["failed", "failed", "passed", "passed"]
    assert [(g.gate, g.value, g.passed) for g in outcome.gate_results] == [
        ("pass_rate >= 0.9", 0.5, False), ("coverage >= 0.99", 1.0, True)]
    mine = outcome.gates(["pass_rate >= 0.5", "mean(clarity) > 3", "mean(absent) >= 1"])
    assert [(g.gate, g.passed) for g in mine] == [
        ("pass_rate >= 0.5", True), ("mean(clarity) > 3", True), ("mean(absent) >= 1", False)]
    assert mine[1].value == 3.5
    assert mine[0].by_model  # measured per answering / judge pair too
    with pytest.raises(ConfigError, match="pas_rate"):
        outcome.gates(["pas_rate >= 0.9"])


def test_to_dataframe_has_karenina_columns_and_a_column_per_trait() -> None:
    pytest.importorskip("pandas")
    outcome = run(rubric_pass_threshold=0.8)
    frame = outcome.to_dataframe()
    assert len(frame) == 4
    for column in ("question_id", "success", "question_text", "answering_model", "parsing_model",
                   "rubric_correct", "rubric_clarity", "rubric_names_city", "verdict", "task_key"):
        assert column in frame.columns
    columns = list(frame.columns)
    assert columns.index("keywords") < columns.index("rubric_clarity") < columns.index("answering_model")
    good = frame[frame["answering_model"].str.contains("good-model")]
    assert sorted(good["rubric_clarity"]) == [5, 5]
    assert list(good["rubric_correct"]) == [True, True]
    assert set(good["verdict"]) == {"passed"}
    city = frame.set_index(["question_id", "answering_model"])["rubric_names_city"]
    assert [v for (q, _), v in city.items() if q == "q2"] == [None, None]  # q2 has no such trait


def test_to_dataframe_without_pandas_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = run()
    monkeypatch.setitem(sys.modules, "pandas", None)  # what an install without the extra sees
    with pytest.raises(UserError) as caught:
        outcome.to_dataframe()
    assert "pandas" in caught.value.message and "verify-judge[export]" in (caught.value.hint or "")


@pytest.mark.parametrize("output", ["results.json", "results.jsonl"])
def test_read_results_gives_back_the_same_summary(tmp_path: Path, output: str) -> None:
    ran = run(tmp_path, output=output, rubric_pass_threshold=0.8, gates=["pass_rate >= 0.9"], seed=7)
    read = verify.read_results(tmp_path / output)
    assert read.summary.verdict_counts == ran.summary.verdict_counts
    assert read.summary.pass_rate == ran.summary.pass_rate == 0.5
    assert read.verdicts == ran.verdicts
    assert read.tasks == 4 and read.output == tmp_path / output
    if output.endswith(".json"):  # the header holds the run's gates and seed (JSONL is results only)
        assert [(g.gate, g.passed) for g in read.gate_results] == [("pass_rate >= 0.9", False)]
        assert read.seed == 7
    assert read.gates(["pass_rate >= 0.5"])[0].passed


def test_read_results_reads_an_export_karenina_wrote(tmp_path: Path) -> None:
    run(tmp_path, rubric_pass_threshold=0.8)
    data = json.loads((tmp_path / "results.json").read_text())
    data["metadata"] = {k: v for k, v in data["metadata"].items() if k != "exported_by"}
    for result in data["results"]:  # karenina's form: no verify section
        result.pop("verify")
    theirs = tmp_path / "karenina.json"
    theirs.write_text(json.dumps(data))
    read = verify.read_results(theirs)
    assert read.tasks == 4 and read.seed is None
    assert read.summary.verdict_counts == {"passed": 2, "failed": 2, "judged": 0, "incomplete": 0}
    assert read.summary.coverage == 1.0
    assert {r.metadata.question_id for r in read.results} == {"q1", "q2"}


@pytest.mark.parametrize(("name", "text", "message"), [
    ("results.csv", "question_id\n", "only .json and .jsonl exports can be read back"),
    ("absent.json", None, "not found"),
    ("broken.json", "{not json", "is not a verify or karenina export"),
    ("other.json", '{"hello": 1}', "is not a verify or karenina export"),
])
def test_read_results_refuses_what_it_cannot_read_in_one_line(
        tmp_path: Path, name: str, text: str | None, message: str) -> None:
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(UserError, match=message) as caught:
        verify.read_results(path)
    assert str(path) in caught.value.message and caught.value.hint


def test_the_seed_is_recorded_in_the_results_header(tmp_path: Path) -> None:
    outcome = run(tmp_path, seed=42)
    assert outcome.seed == 42
    header = json.loads((tmp_path / "results.json").read_text())["metadata"]
    assert header["seed"] == 42
    assert run(tmp_path / "default").seed == 0  # unset: 0, and said so


def _simulated_replies(seed: int, log: Path) -> list[tuple[str, str, str]]:
    """Every reply of a simulated judge that garbles half its replies, as the call log has them."""
    judge = {**SIM_JUDGE, "extra_kwargs": {"imperfection_rate": 0.5}}
    cfg = VerificationConfig(answering_models=[GOOD], parsing_models=[judge], evaluation_mode="rubric_only", seed=seed)
    questions = [Question(id=f"q{i}", text=f"Question {i}?", raw_answer="Paris", finished=True) for i in range(12)]
    answers = {"good": {f"q{i}": f"Paris, clearly, answer {i}." for i in range(12)}}
    verify.run_verification(Benchmark(name="seeded", global_rubric=Rubric(traits=TRAITS), questions=questions),
                            cfg, answers=answers, log_calls=log)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    return sorted((line["task_key"], line["request"]["messages"][-1]["content"], line["reply"]["text"])
                  for line in lines)


def test_the_same_seed_gives_the_same_simulated_results(tmp_path: Path) -> None:
    first = _simulated_replies(3, tmp_path / "a.jsonl")
    assert first == _simulated_replies(3, tmp_path / "b.jsonl")
    assert first != _simulated_replies(4, tmp_path / "c.jsonl")  # the seed reaches the simulated judge's draws


def test_the_seed_flag_sets_the_config(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from verify.cli import app

    checkpoint = Path(__file__).parent / "fixtures" / "karenina" / "minimal.jsonld"
    result = CliRunner().invoke(app, ["run", str(checkpoint), "--seed", "11", "--show-config",
                                      "--answering-provider", "simulated", "--interface", "simulated"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout[result.stdout.index("{"):])["seed"] == 11
