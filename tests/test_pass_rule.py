"""No pass without a pass rule (issue 24): a task no rule decided is ``judged``, never ``passed``; a
``pass_rate`` gate on such a run is refused before any call; the progress bar and the summary count
outcomes the same way; an untrusted callable is a deliberate skip in karenina's form; ``verify
report`` reads results karenina wrote."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from fakes import SIM_JUDGE, ScriptedModel, honest
from typer.testing import CliRunner

from verify.benchmark.jsonld import Benchmark
from verify.benchmark.question import Question
from verify.benchmark.traits import LLMTrait, Rubric
from verify.cli import app
from verify.config.verification import VerificationConfig
from verify.errors import ConfigError
from verify.llm.ports import ChatRequest
from verify.results.export import export
from verify.results.karenina_form import to_karenina
from verify.results.models import VerificationResult
from verify.results.report import render_summary
from verify.results.summary import Summary
from verify.run.progress import ProgressBar
from verify.run.runner import RunOutcome, run_verification

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "compat" / "golden"
MODEL = {"id": "a", "model_provider": "simulated", "model_name": "a", "interface": "simulated"}
TRAITS = [LLMTrait(name="Accuracy", kind="boolean", description="The response is accurate"),
          LLMTrait(name="clarity", kind="score", min_score=1, max_score=5, description="How clear it is")]
ANSWERS = {"a": {f"q{i}": ("Right, clearly." if i < 2 else "wrong") for i in range(6)}}


def bench() -> Benchmark:
    return Benchmark(name="rule", global_rubric=Rubric(traits=TRAITS), questions=[
        Question(id=f"q{i}", text=f"Question {i}?", raw_answer="Right", finished=True) for i in range(6)])


def script(request: ChatRequest) -> str:
    """Right answers: accurate, clarity 5; wrong ones: not accurate, clarity 2 (q5: an unusable reply)."""
    if request.purpose != "rubric_batch":
        return honest(request)
    text = "\n".join(m.content for m in request.messages)
    if "Question 5?" in text:
        return "no idea"
    good = "clearly" in text
    return json.dumps({"scores": {"Accuracy": good, "clarity": 5 if good else 2}})


def run(judge: ScriptedModel, tmp_path: Path | None = None, **config: Any) -> RunOutcome:
    cfg = VerificationConfig(answering_models=[MODEL], parsing_models=[SIM_JUDGE],
                             **{"evaluation_mode": "rubric_only", **config})
    output = tmp_path / "results.json" if tmp_path else None
    return run_verification(bench(), cfg, answers=ANSWERS, adapter_factory=lambda m: judge, output=output,
                            keep_results=True)


def test_rubric_only_without_a_rule_passes_no_task(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run(ScriptedModel(script))
    verdicts = [r.verdict for r in outcome.results]
    assert "passed" not in verdicts
    assert verdicts.count("judged") == 5 and verdicts.count("incomplete") == 1  # Accuracy false for 3: judged
    s = outcome.summary
    assert (s.passed, s.judged_tasks, s.failed, s.incomplete, s.has_pass_rule) == (0, 5, 0, 1, False)
    render_summary(outcome)
    out = capsys.readouterr().out
    assert "passed 0 | judged (no pass rule) 5 | failed 0 | incomplete 1" in out
    assert "pass rate no pass rule" in out and "pass rate 1.000" not in out


def test_a_rubric_verdict_is_a_rule_so_tasks_pass_and_fail() -> None:
    outcome = run(ScriptedModel(script), rubric_pass_threshold=0.8)
    s = outcome.summary
    assert (s.passed, s.judged_tasks, s.failed, s.incomplete, s.has_pass_rule) == (2, 0, 3, 1, True)
    assert s.pass_rate_text() == "0.400"


@pytest.mark.parametrize("gate", ["pass_rate >= 0.9", "pass_rate > 0"])
def test_a_pass_rate_gate_without_a_rule_is_refused_before_any_call(gate: str) -> None:
    judge = ScriptedModel(script)
    with pytest.raises(ConfigError) as caught:
        run(judge, gates=[gate])
    assert judge.requests == []  # before any call
    message = str(caught.value)
    assert f"gate {gate!r}" in message and "no pass rule" in message
    for option in ("rubric_pass_threshold", "weight", "required", "pass_threshold", "template_and_rubric"):
        assert option in message


def test_a_pass_rate_gate_with_a_rule_is_accepted() -> None:
    outcome = run(ScriptedModel(script), gates=["pass_rate >= 0.9"], rubric_pass_threshold=0.8)
    (rate,) = outcome.summary.gate_results()
    assert rate.value == pytest.approx(0.4) and not rate.passed


def test_fail_under_on_the_cli_is_refused_before_any_call(tmp_path: Path) -> None:
    from verify.llm.simulated import brain

    calls: list[str] = []
    real = brain.reply

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append("call")
        return real(*args, **kwargs)

    demo = REPO / "verify" / "examples" / "demo"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(brain, "reply", counting)
        result = CliRunner().invoke(app, [str(demo / "demo.jsonld"), "--preset", "demo", "--answers",
                                          str(demo / "answers.json"), "--no-cache", "--output",
                                          str(tmp_path / "out.json"), "--fail-under", "0.9"])
    assert result.exit_code != 0
    assert "no pass rule" in result.output and "rubric_pass_threshold" in result.output
    assert calls == [] and not (tmp_path / "out.json").exists()


def test_exports_say_judged_and_leave_verify_result_null(tmp_path: Path) -> None:
    outcome = run(ScriptedModel(script))
    judged = next(r for r in outcome.results if r.verdict == "judged")
    k = to_karenina(judged)
    assert k["template"]["verify_result"] is None and k["metadata"]["failure"] is None
    assert k["verify"]["verdict"] == "judged"
    export(outcome.results, tmp_path / "r.csv")
    with (tmp_path / "r.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(row["verdict"] for row in rows) == ["incomplete"] + ["judged"] * 5
    assert all(row["verify_result"] == "" for row in rows)


def test_the_page_says_no_pass_rule(tmp_path: Path) -> None:
    from verify.report.figures import run_figures
    from verify.report.runs import read_run

    run(ScriptedModel(script), tmp_path)
    figures = run_figures(read_run(tmp_path / "results.json"))
    assert figures["figures"]["pass_rule"] is False and figures["figures"]["pass_rate"] is None
    assert figures["figures"]["judged_tasks"] == 5 and figures["figures"]["passed"] == 0
    assert figures["pairs"][0]["judged"] == 5


# -- progress and summary count outcomes from one source ---------------------------------------------------------


def test_the_progress_bar_counts_outcomes_as_the_summary_does() -> None:
    ruled = run(ScriptedModel(script), rubric_pass_threshold=0.8)  # 3 failed, 1 incomplete
    bar = ProgressBar(total=len(ruled.results), resumed=0)
    summary = Summary()
    for result in ruled.results:
        bar.advance(result)
        summary.add(result)
    assert (bar.outcomes["failed"], bar.outcomes["incomplete"]) == (summary.failed, summary.incomplete) == (3, 1)
    task = bar.progress.tasks[0]
    assert (task.fields["failed"], task.fields["incomplete"]) == (3, 1)


# -- untrusted callables: a deliberate skip, not a system failure, in karenina's form ------------------------------


def untrusted_result() -> VerificationResult:
    return VerificationResult.model_validate({"metadata": {
        "question_id": "q1", "template_id": "t1", "task_key": "q1\ta\tjudge", "result_id": "r1", "question_text": "Q?",
        "answering": {"interface": "simulated", "model_name": "a"},
        "parsing": {"interface": "simulated", "model_name": "judge"}, "evaluation_mode": "rubric_only",
        "verdict": "incomplete", "coverage": {"judged": 1, "total": 2, "unscored": {"tone": "untrusted"}},
    }, "rubric": {"trait_status": {"tone": {"status": "skipped", "unscored_category": "untrusted"},
                                   "clarity": {"status": "scored", "score": 4}}}})


def test_an_untrusted_callable_is_exported_as_a_skip_not_a_system_failure() -> None:
    failure = to_karenina(untrusted_result())["metadata"]["failure"]
    assert failure["group"] not in ("system", "content", "autofail", "abstained")
    assert (failure["category"], failure["group"]) == ("connection", "retry")
    assert "tone (untrusted)" in failure["reason"] and "--trust-checkpoint-code" in failure["reason"]


def test_a_real_gap_beside_an_untrusted_one_decides_the_category() -> None:
    result = untrusted_result()
    assert result.metadata.coverage is not None
    result.metadata.coverage.unscored = {"tone": "untrusted", "clarity": "unparseable"}
    assert to_karenina(result)["metadata"]["failure"]["category"] == "parsing"


# -- verify report reads karenina's own results ----------------------------------------------------------------------


@pytest.mark.parametrize(("name", "passed", "judged", "failed"), [
    ("classic", 1, 0, 1), ("verified_field", 1, 0, 1), ("regex_only", 1, 0, 1), ("callable", 0, 2, 0)])
def test_verify_report_reads_results_karenina_wrote(name: str, passed: int, judged: int, failed: int,
                                                    tmp_path: Path) -> None:
    from verify.report.figures import run_figures
    from verify.report.runs import read_run

    source = GOLDEN / f"{name}.results.json"
    assert "verify" not in json.loads(source.read_text())["results"][0]  # written by karenina
    page = tmp_path / "page.html"
    result = CliRunner().invoke(app, ["report", str(source), "-o", str(page)])
    assert result.exit_code == 0, result.output
    assert page.stat().st_size > 10_000 and "could not be read" not in result.output
    figures = run_figures(read_run(source))["figures"]
    assert (figures["tasks"], figures["passed"], figures["judged_tasks"], figures["failed"]) == (2, passed, judged, failed)
    assert figures["incomplete"] == 0 and figures["coverage"] == 1.0
