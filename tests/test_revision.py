"""Revise until satisfied (``revision_max_iterations`` / ``--revise-until-satisfied``): the loop, its
statuses, the follow-up turn, the callback, the refusal of recorded answers, the record in results
and exports, the identity, the summary, and the offline demo end to end."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fakes import ScriptedModel, as_json, make_config, make_task, prompt_of
from peers import karenina_python
from pydantic import ValidationError
from typer.testing import CliRunner

from verify import load_benchmark, run_verification
from verify.benchmark.traits import LLMTrait, RegexTrait
from verify.cli import app
from verify.cli.karenina import rewrite_revise
from verify.errors import ConfigError, ModelError
from verify.llm.ports import ChatRequest, Purpose
from verify.llm.recording import RecordingModel
from verify.llm.simulated.reviser import example_of
from verify.llm.simulated.text import tag
from verify.results.export import export, load_results
from verify.results.identity import run_identity
from verify.results.models import VerificationResult
from verify.results.revisions import RevisionEvaluation
from verify.results.store import done_keys, latest_results
from verify.results.summary import Summary
from verify.results.writer import ResultWriter
from verify.run.pipeline import plan
from verify.run.revision import OnEvaluation, run_revising
from verify.run.state import Deps

DEMO = Path(__file__).resolve().parent.parent / "verify" / "examples" / "demo" / "demo.jsonld"
HAS_NUMBER = RegexTrait(name="has_number", description="Contains a number", pattern=r"\d+")
NAMES_CITY = LLMTrait(name="names_city", kind="boolean", description="The response names the city")


def judge_script(request: ChatRequest) -> str:
    """A batch judge: names_city is true when the response says Paris."""
    response = tag(prompt_of(request), "response") or ""
    return as_json({"scores": {"names_city": "Paris" in response}})


def revise(answers: list[str], judge: Any, limit: int | None, traits: list[Any] | None = None,
           on_evaluation: OnEvaluation | None = None) -> tuple[VerificationResult, ScriptedModel]:
    """Run one task with a scripted answerer that gives ``answers`` in turn (the last one repeated)."""
    replies = iter(answers)
    last = {"text": answers[-1]}

    def answer(request: ChatRequest) -> str:
        last["text"] = next(replies, last["text"])
        return last["text"]

    answerer = ScriptedModel(answer)
    config = make_config(revision_max_iterations=limit)
    task = make_task(traits or [HAS_NUMBER, NAMES_CITY], config=config)
    deps = Deps(config=config, answerer=RecordingModel(answerer), judge=RecordingModel(judge), search=None)
    result = asyncio.run(run_revising(task, deps, plan(config), on_evaluation))
    return result, answerer


def test_a_failing_criterion_is_sent_back_with_its_gap_and_the_revision_is_graded() -> None:
    result, answerer = revise(["It is Paris.", "It is Paris, home to 2 million people."], ScriptedModel(judge_script), 3)
    revision = result.metadata.revision
    assert revision is not None and revision.status == "satisfied"
    assert [e.result for e in revision.evaluations] == ["needs_revision", "satisfied"]
    first = revision.evaluations[0]
    assert {c.name: c.passed for c in first.criteria} == {"has_number": False, "names_city": True}
    assert first.criteria[0].gap == r"does not match the pattern /\d+/"
    # the follow-up: the question, the first answer, then the failing criterion with its gap
    follow_up = answerer.requests[1].messages
    assert [m.role for m in follow_up] == ["system", "user", "assistant", "user"]
    assert follow_up[2].content == "It is Paris."
    assert '<criterion name="has_number">' in follow_up[3].content and "names_city" not in follow_up[3].content
    assert r"/\d+/" in follow_up[3].content
    # the result is the last answer's; usage counts both answers
    assert result.template is not None and result.template.raw_llm_response == "It is Paris, home to 2 million people."
    assert result.template.usage_metadata["answer_generation"].calls == 2
    assert result.rubric is not None and result.rubric.regex_trait_scores == {"has_number": True}


def test_the_cap_ends_the_loop_with_max_iterations_reached() -> None:
    result, answerer = revise(["It is Paris."], ScriptedModel(judge_script), 2)
    revision = result.metadata.revision
    assert revision is not None and revision.status == "max_iterations_reached"
    assert [e.result for e in revision.evaluations] == ["needs_revision", "needs_revision"]
    assert [e.iteration for e in revision.evaluations] == [0, 1] and len(answerer.requests) == 2


def test_off_by_default_one_pass_and_no_record() -> None:
    result, answerer = revise(["It is Paris."], ScriptedModel(judge_script), None)
    assert result.metadata.revision is None and len(answerer.requests) == 1


def test_a_judge_that_fails_is_a_grader_error_and_nothing_is_revised() -> None:
    judge = ScriptedModel(lambda request: ModelError("the judge timed out", category="timeout"))
    result, answerer = revise(["It is Paris."], judge, 3)
    revision = result.metadata.revision
    assert revision is not None and revision.status == "grader_error"
    assert revision.evaluations[0].explanation.startswith("timeout: ") and "timed out" in revision.evaluations[0].explanation
    assert revision.evaluations[0].criteria == [] and len(answerer.requests) == 1


def test_a_rubric_the_judge_cannot_evaluate_is_failed() -> None:
    judge = ScriptedModel(lambda request: "I'd rather not say.")  # never JSON: names_city stays unscored
    result, answerer = revise(["It is Paris."], judge, 3, traits=[NAMES_CITY])
    revision = result.metadata.revision
    assert revision is not None and revision.status == "failed"
    assert "names_city" in revision.evaluations[0].explanation and len(answerer.requests) == 1
    assert revision.evaluations[0].criteria[0].passed is None


def test_on_evaluation_sees_every_pass_and_its_exceptions_are_logged_and_ignored(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[RevisionEvaluation] = []

    def watch(evaluation: RevisionEvaluation) -> None:
        seen.append(evaluation)
        raise RuntimeError("watcher broke")

    with caplog.at_level(logging.WARNING, logger="verify"):
        result, _ = revise(["It is Paris.", "Paris, 2 million people."], ScriptedModel(judge_script), 3, on_evaluation=watch)
    assert [(e.iteration, e.result) for e in seen] == [(0, "needs_revision"), (1, "satisfied")]
    assert len({e.grading_run_id for e in seen}) == 1 and seen[0].grading_run_id == result.metadata.result_id
    assert "watcher broke" in caplog.text


def test_recorded_answers_cannot_be_revised_and_nothing_is_called() -> None:
    calls: list[Any] = []

    def factory(model: Any) -> ScriptedModel:
        calls.append(model)
        return ScriptedModel(lambda request: "x")

    config = make_config(revision_max_iterations=2)
    with pytest.raises(ConfigError, match="recorded answers cannot be revised"):
        run_verification(load_benchmark(DEMO), config, answers={"*": {"demo-capital": "Paris"}}, adapter_factory=factory)
    traces = make_config(revision_max_iterations=2, answering_models=[
        {"id": "m", "interface": "manual", "manual_traces": {"demo-capital": "Paris"}}])
    with pytest.raises(ConfigError, match="manual traces"):
        run_verification(load_benchmark(DEMO), traces, adapter_factory=factory)
    with pytest.raises(ConfigError, match="needs a rubric"):
        run_verification(load_benchmark(DEMO), make_config(revision_max_iterations=2, evaluation_mode="template_only"),
                         adapter_factory=factory)
    assert calls == []


@pytest.mark.parametrize("bad", [0, 21])
def test_the_cap_is_1_to_20(bad: int) -> None:
    with pytest.raises(ValidationError):
        make_config(revision_max_iterations=bad)


def test_the_identity_includes_the_cap_and_is_unchanged_when_off() -> None:
    bench = load_benchmark(DEMO)
    off, on = run_identity(bench, make_config(), "v"), run_identity(bench, make_config(revision_max_iterations=3), "v")
    assert off["config"] != on["config"] and on["judging_config"]["revision_max_iterations"] == 3
    assert "revision_max_iterations" not in off["judging_config"]  # identities saved before the field still match


def test_the_simulated_answerer_revises_through_the_api_and_the_export_keeps_every_pass(tmp_path: Path) -> None:
    seen: list[RevisionEvaluation] = []
    config = make_config(revision_max_iterations=3)
    outcome = run_verification(load_benchmark(DEMO), config, question_ids=["demo-capital"], on_evaluation=seen.append,
                               output=tmp_path / "run.json")
    result = outcome.results[0]
    revision = result.metadata.revision
    assert revision is not None and revision.status == "satisfied" and len(seen) == revision.iterations == 2
    assert [e.result for e in revision.evaluations] == ["needs_revision", "satisfied"]
    data = json.loads((tmp_path / "run.json").read_text())
    record = data["results"][0]
    assert "revision" not in record["metadata"] and record["verify"]["revision"]["status"] == "satisfied"
    assert load_results(tmp_path / "run.json")[0].metadata.revision == revision
    summary = Summary()
    summary.add(result)
    line = summary.revision.line() or ""
    assert "needs_revision -> satisfied 1" in line and "2 iteration(s)" in line
    plain = tmp_path / "plain.jsonl"
    result.metadata.revision = None
    export([result], plain)
    assert "revision" not in json.loads(plain.read_text())["verify"]


def test_a_bare_flag_means_3() -> None:
    assert rewrite_revise(["b.jsonld", "--revise-until-satisfied"]) == ["b.jsonld", "--revise-until-satisfied", "3"]
    assert rewrite_revise(["--revise-until-satisfied", "b.jsonld"]) == ["--revise-until-satisfied", "3", "b.jsonld"]
    assert rewrite_revise(["--revise-until-satisfied", "5", "x"]) == ["--revise-until-satisfied", "5", "x"]
    shown = CliRunner().invoke(app, [str(DEMO), "--preset", "demo", "--revise-until-satisfied", "--show-config"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["revision_max_iterations"] == 3


def test_the_simulated_reviser_writes_text_a_simple_pattern_finds() -> None:
    assert example_of(r"\d+") == "7" and example_of(r"[A-Z]\d") == "A7"
    assert example_of(r"^\d{3}$") is None  # the crude rewrite gives "7": no example rather than a wrong one


def test_the_offline_demo_revises_until_satisfied_from_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "demo.json"
    done = CliRunner().invoke(app, [str(DEMO), "--preset", "demo", "--revise-until-satisfied", "3",
                                    "--evaluation-mode", "rubric_only", "--no-cache", "--output", str(out)])
    assert done.exit_code == 0, done.output
    assert "revisions: 8 task(s)" in done.stdout and "needs_revision -> satisfied" in done.stdout
    records = [r["verify"]["revision"] for r in json.loads(out.read_text())["results"]]
    assert any([e["result"] for e in r["evaluations"]] == ["needs_revision", "satisfied"] for r in records)
    assert all(r["status"] == "satisfied" for r in records)
    # the answering model was asked again: the revision is among the answer calls
    assert all(len(r["evaluations"]) >= 2 and r["evaluations"][-1]["answer"] != r["evaluations"][0]["answer"]
               for r in records)


def test_the_revision_turn_is_a_plain_answer_request() -> None:
    # the revision is asked with the answering purpose: the simulated server and caches treat it as an answer
    result, answerer = revise(["It is Paris."], ScriptedModel(judge_script), 2)
    assert [r.purpose for r in answerer.requests] == [Purpose.ANSWER, Purpose.ANSWER]
    assert result.metadata.revision is not None


def test_karenina_loads_an_export_with_revisions(tmp_path: Path) -> None:
    python = karenina_python()
    if python is None:
        pytest.skip("karenina is not importable (set KARENINA_PYTHON)")
    run_verification(load_benchmark(DEMO), make_config(revision_max_iterations=2), question_ids=["demo-capital"],
                     output=tmp_path / "run.json")
    assert "revision" in json.loads((tmp_path / "run.json").read_text())["results"][0]["verify"]
    code = ("import sys; from pathlib import Path; from karenina.benchmark.core.results_io import ResultsIOManager; "
            "print(len(ResultsIOManager.load_result_set_from_json(Path(sys.argv[1]))))")
    done = subprocess.run([python, "-c", code, str(tmp_path / "run.json")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "1"


def test_a_finished_task_keeps_its_passes_in_the_progress_file_for_resume(tmp_path: Path) -> None:
    result, _ = revise(["It is Paris.", "Paris, 2 million people."], ScriptedModel(judge_script), 3)
    progress = tmp_path / "run.json.progress.jsonl"
    writer = ResultWriter(progress, append=False, header={"identity": {}})
    writer.write(result)
    writer.close()
    assert done_keys(progress) == {result.metadata.task_key}  # --resume skips it, passes and all
    back = next(latest_results(progress)).metadata.revision
    assert back is not None and [e.result for e in back.evaluations] == ["needs_revision", "satisfied"]


def test_the_command_line_refuses_recorded_answers_in_one_line_and_plans_the_passes(tmp_path: Path) -> None:
    answers = DEMO.with_name("answers.json")
    done = CliRunner().invoke(app, [str(DEMO), "--preset", "demo", "--answers", str(answers), "--revise-until-satisfied",
                                    "2", "--output", str(tmp_path / "x.json")])
    assert done.exit_code == 1 and "error: recorded answers cannot be revised" in done.stderr
    assert not (tmp_path / "x.json").exists()
    shown = CliRunner().invoke(app, [str(DEMO), "--preset", "demo", "--revise-until-satisfied", "--show-plan"])
    assert "revise until satisfied: up to 3 answer-and-grade pass(es)" in shown.stdout
