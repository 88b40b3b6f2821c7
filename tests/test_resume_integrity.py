"""A resumed run is the run it continues, no more: its progress file is read strictly (only a torn
last line is skipped), lines of another run are refused, permissions are never taken from a file,
the summary counts this process's calls only, and a 401 has one name everywhere."""

from __future__ import annotations

import errno
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from verify.benchmark.jsonld import load_benchmark
from verify.cli import _resume_advice, app
from verify.config.models import ModelConfig
from verify.config.preset import load_preset
from verify.errors import ModelError, RunStopped
from verify.llm.ports import ChatRequest
from verify.llm.simulated.model import SimulatedModel
from verify.results.store import progress_path, rerun_reason
from verify.results.writer import ResultWriter
from verify.run.runner import run_verification

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "verify" / "examples" / "demo" / "demo.jsonld"
ANSWERS = REPO / "verify" / "examples" / "demo" / "answers.json"
OFFLINE = REPO / "verify" / "examples" / "suite" / "offline.json"
TASKS = 8  # the demo: 4 questions x 2 answering models


def invoke(*args: object) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def demo(out: Path, *extra: object) -> Result:
    return invoke(DEMO, "--preset", "demo", "--answers", ANSWERS, "--no-cache", "--output", out, *extra)


def demo_answers() -> dict[str, dict[str, str]]:
    data: dict[str, dict[str, str]] = json.loads(ANSWERS.read_text(encoding="utf-8"))
    return data


def unfinished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep: int = 3) -> Path:
    """A run stopped (disk full) after ``keep`` results: its progress file as verify wrote it."""
    out = tmp_path / "r.json"
    real_append = ResultWriter.append

    def append(self: ResultWriter, lines: list[str]) -> None:
        if self.written >= keep:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_append(self, lines)

    monkeypatch.setattr(ResultWriter, "append", append)
    config = load_preset("demo").model_copy(update={"async_max_workers": 1})
    with pytest.raises(RunStopped):
        run_verification(load_benchmark(DEMO), config, answers=demo_answers(), output=out)
    monkeypatch.setattr(ResultWriter, "append", real_append)
    assert len(progress_path(out).read_text(encoding="utf-8").splitlines()) == keep + 1  # + the header
    return out


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- strict reading


def test_appended_foreign_lines_refuse_the_resume_naming_the_count_and_first_keys(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = unfinished(tmp_path, monkeypatch)
    other = tmp_path / "other.jsonl"  # results of another benchmark (a suite), as lines
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"name": "other", "tests": [
        {"id": f"t{n}", "input": f"Question {n}?", "output": f"Answer {n}.", "assertions": ["Answers it"]}
        for n in range(3)]}), encoding="utf-8")
    assert invoke(suite, "--preset", OFFLINE, "--no-cache", "--output", other).exit_code == 0
    progress = progress_path(out)
    before = lines_of(progress)
    write_lines(progress, [*before, *lines_of(other)])
    result = demo(out, "--resume")
    assert result.exit_code == 1, result.output
    message = result.stderr
    assert f"line {len(before) + 1}: 3 of its task(s) are not tasks of this benchmark x models x replicates" in message
    assert "(e.g. t0 / simulated:simulated-answerer:recorded / simulated:simulated-judge:judge, t1 / " in message
    assert not out.exists()  # nothing ran, nothing was exported
    assert lines_of(progress) == [*before, *lines_of(other)]  # and the file is left as it was


def test_an_invalid_line_before_the_last_refuses_the_resume_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = unfinished(tmp_path, monkeypatch)
    progress = progress_path(out)
    lines = lines_of(progress)
    lines[2] = lines[2][:40]  # a line cut in the middle of the file is not a torn write
    lines.append("not json")
    write_lines(progress, lines)
    result = demo(out, "--resume")
    assert result.exit_code == 1, result.output
    assert f"{progress} line 3: not valid JSON" in result.stderr and "(2 invalid lines in all)" in result.stderr


def test_a_torn_last_line_is_dropped_with_a_warning_and_its_task_runs_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = unfinished(tmp_path, monkeypatch)
    progress = progress_path(out)
    with progress.open("a", encoding="utf-8") as handle:
        handle.write(lines_of(progress)[1][:50])  # what a killed write leaves: no newline
    result = demo(out, "--resume")
    assert result.exit_code == 0, result.output
    assert "last line of" in result.stderr and "cut off" in result.stderr
    assert f"tasks: {TASKS} (resumed 3)" in result.stdout
    assert len(json.loads(out.read_text(encoding="utf-8"))["results"]) == TASKS


def test_a_task_repeated_after_it_finished_refuses_the_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = unfinished(tmp_path, monkeypatch)
    progress = progress_path(out)
    lines = lines_of(progress)
    write_lines(progress, [*lines, lines[1]])
    result = demo(out, "--resume")
    assert result.exit_code == 1, result.output
    key = json.loads(lines[1])["verify"]["task_key"].replace("\t", " / ")  # progress lines are in karenina's form
    assert f"line {len(lines) + 1}: 1 result(s) repeat a task that was already finished (e.g. {key})" in result.stderr


def test_a_task_saved_again_after_a_failure_resume_reruns_is_not_a_repeat(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = unfinished(tmp_path, monkeypatch)
    progress = progress_path(out)
    lines = lines_of(progress)
    failed = json.loads(lines[1])
    failed["verify"]["errors"] = [{"stage": "rubric_evaluation", "category": "timeout", "message": "judge timed out"}]
    assert rerun_reason(failed["verify"]) == "timeout"
    write_lines(progress, [lines[0], json.dumps(failed), *lines[1:]])  # the failed try, then its rerun
    result = demo(out, "--resume")
    assert result.exit_code == 0, result.output
    assert len({r["verify"]["task_key"] for r in json.loads(out.read_text(encoding="utf-8"))["results"]}) == TASKS


def test_a_run_whose_results_are_lost_before_the_export_never_exits_0(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def append(self: ResultWriter, lines: list[str]) -> None:
        self.written += len(lines)  # says it wrote, writes nothing: the results are lost

    monkeypatch.setattr(ResultWriter, "append", append)
    out = tmp_path / "r.json"
    result = demo(out)
    assert result.exit_code == 1, result.output
    assert f"holds 0 result(s), but the run finished {TASKS}" in result.stderr
    assert not out.exists()


# --------------------------------------------------------------------------- permissions


def command_suite(tmp_path: Path, marker: Path) -> Path:
    """A suite whose grader runs a command (it creates ``marker``) before it grades."""
    command = f"{sys.executable} -c \"import pathlib; pathlib.Path('{marker}').touch()\""
    tests = [{"id": name, "input": f"What is the capital of {country}?", "output": f"{city} is its capital.",
              "assertions": [f"Names {city}"]} for name, country, city in (("paris", "France", "Paris"),
                                                                          ("tokyo", "Japan", "Tokyo"))]
    graders = {"checked": {"kind": "rubric", "prompt": "Check {submission}, then call submit_grade.",
                           "tools": [{"name": "run", "commands": [command], "timeout": 20}, "submit_grade"]}}
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump({"name": "commands", "tests": tests, "graders": graders}), encoding="utf-8")
    return path


def test_a_resume_without_the_trust_flag_is_refused_before_the_command_runner_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    suite, out = command_suite(tmp_path, marker), tmp_path / "run.json"
    first = invoke(suite, "--preset", OFFLINE, "--no-cache", "--output", out, "--question-ids", "paris",
                   "--trust-checkpoint-code")
    assert first.exit_code == 0, first.output
    assert marker.exists()  # the command runner works: it ran for the trusted first run
    assert json.loads(out.read_text(encoding="utf-8"))["metadata"]["config"]["trust_checkpoint_code"] is True
    marker.unlink()
    refused = invoke("--resume", out, "--no-cache")  # the saved config says trust_checkpoint_code: true
    assert refused.exit_code == 1, refused.output
    assert "runs commands" in refused.stderr and "--trust-checkpoint-code" in refused.stderr
    assert not marker.exists()
    allowed = invoke("--resume", out, "--no-cache", "--trust-checkpoint-code")  # given again: it runs
    assert allowed.exit_code == 0, allowed.output
    assert marker.exists() and "(resumed 1)" in allowed.stdout


def test_a_resume_of_a_trusted_run_without_the_flag_names_the_flag(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert demo(out, "--trust-checkpoint-code").exit_code == 0
    result = invoke("--resume", out, "--answers", ANSWERS, "--no-cache")
    assert result.exit_code == 1, result.output
    assert "was started with --trust-checkpoint-code, and permissions are never taken from a saved run" in result.stderr
    assert "pass --trust-checkpoint-code again" in result.stderr


def test_a_preset_never_grants_trust(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    preset = json.loads((REPO / "verify" / "config" / "presets" / "demo.json").read_text(encoding="utf-8"))
    preset["config"]["trust_checkpoint_code"] = True
    path = tmp_path / "trusting.json"
    path.write_text(json.dumps(preset), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="verify"):
        config = load_preset(path)
    assert config.trust_checkpoint_code is False
    assert "trust_checkpoint_code: ignored" in caplog.text and "pass --trust-checkpoint-code" in caplog.text
    shown = invoke(DEMO, "--preset", path, "--show-config")
    assert json.loads(shown.stdout)["trust_checkpoint_code"] is False
    assert shown.stderr.count("trust_checkpoint_code: ignored") == 1
    given = invoke(DEMO, "--preset", path, "--show-config", "--trust-checkpoint-code")
    assert json.loads(given.stdout)["trust_checkpoint_code"] is True


def test_a_saved_preset_holds_no_permission(tmp_path: Path) -> None:
    from verify.config.preset import save_preset

    config = load_preset("demo").model_copy(update={"trust_checkpoint_code": True})
    saved = json.loads(save_preset(config, tmp_path / "p.json", "p").read_text(encoding="utf-8"))
    assert "trust_checkpoint_code" not in saved["config"]


# --------------------------------------------------------------------------- live calls, 401


def calls_line(result: Result) -> str:
    return next(line for line in result.stdout.splitlines() if line.startswith("model calls:"))


def test_a_resume_counts_only_this_processs_calls_as_live(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    first = demo(out)
    assert first.exit_code == 0
    live = int(calls_line(first).split()[2])
    assert live > 0
    again = demo(out, "--resume")  # a finished run: nothing to do, no call made
    assert again.exit_code == 0, again.output
    line = calls_line(again)
    assert line.startswith("model calls: 0 live") and "tokens 0 " in line
    assert f"not counted: {live} calls" in line


def test_a_401_is_summarised_as_authentication_as_the_resume_hint_says() -> None:
    def factory(model: ModelConfig) -> Any:
        inner = SimulatedModel(model)

        class Unauthorised:
            model_id = inner.model_id

            async def complete(self, request: ChatRequest) -> Any:
                raise ModelError("judge: AuthenticationError: Error code: 401 - invalid api key", "permanent")

        return Unauthorised() if model.id == "judge" else inner  # the answers are recorded

    config = load_preset("demo").model_copy(update={"async_max_workers": 1})
    outcome = run_verification(load_benchmark(DEMO), config, answers=demo_answers(), adapter_factory=factory)
    failures = [r.metadata.failure for r in outcome.results]
    assert all(f is not None and f.category == "authentication" for f in failures)
    assert dict(outcome.summary.failure_categories) == {"authentication": TASKS}
    assert set(outcome.summary.unscored) == {"authentication"}  # the traits it left unjudged say so too
    assert {rerun_reason(r.metadata.model_dump()) for r in outcome.results} == {"authentication"}
    assert f"({TASKS} authentication)" in _resume_advice(outcome.summary.rerun_reasons)  # the hint the CLI prints
