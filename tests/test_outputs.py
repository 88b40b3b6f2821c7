"""Runs that never lose, mix or clobber results: exclusive outputs, refusal to overwrite, resume that
checks identity, exact recorded answers, clean stops on a full disk, SIGTERM and Ctrl-C, --deadline."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from verify.benchmark.jsonld import load_benchmark
from verify.cli import app
from verify.config.verification import VerificationConfig
from verify.errors import ConfigError, RunStopped, fixable_reason
from verify.results import store
from verify.results.lock import OutputLock, lock_path
from verify.results.store import progress_path, rerun_reason
from verify.results.writer import ResultWriter
from verify.run.runner import run_verification

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "verify" / "examples" / "demo" / "demo.jsonld"
ANSWERS = REPO / "verify" / "examples" / "demo" / "answers.json"
DEMO_PRESET = REPO / "verify" / "config" / "presets" / "demo.json"


def invoke(*args: object) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def demo(tmp_path: Path, *extra: object, output: str = "out.json") -> tuple[Result, Path]:
    out = tmp_path / output
    return invoke(DEMO, "--preset", "demo", "--answers", ANSWERS, "--no-cache", "--output", out, *extra), out


def slow_preset(tmp_path: Path, latency_ms: int = 150) -> Path:
    preset: dict[str, Any] = json.loads(DEMO_PRESET.read_text(encoding="utf-8"))
    preset["config"]["parsing_models"][0].setdefault("extra_kwargs", {})["latency_ms"] = latency_ms
    preset["config"]["async_max_workers"] = 1
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(preset), encoding="utf-8")
    return path


def cli(*args: object) -> list[str]:
    return [sys.executable, "-m", "verify", *map(str, args)]


def task_keys(path: Path) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [r["verify"]["task_key"] for r in data["results"]]


def wait_for_results(progress: Path, count: int, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if progress.exists() and progress.read_text(encoding="utf-8").count("\n") >= count + 1:  # + header
            return
        time.sleep(0.02)
    raise AssertionError(f"{progress} never held {count} results")


# --------------------------------------------------------------------------- exclusive outputs


def test_a_second_run_on_the_same_output_fails_at_once_and_the_first_completes(tmp_path: Path) -> None:
    preset = slow_preset(tmp_path)
    out = tmp_path / "shared.json"
    args = [DEMO, "--preset", preset, "--answers", ANSWERS, "--no-cache", "--output", out]
    first = subprocess.Popen(cli(*args), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_results(progress_path(out), 1)
    second = subprocess.run(cli(*args), cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert first.poll() is None  # "at once": the second run failed while the first still ran, never waiting for it
    assert second.returncode == 1
    assert f"output {out} is in use by another verify run (pid {first.pid}" in second.stderr
    assert "Traceback" not in second.stderr
    _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    keys = task_keys(out)
    assert len(keys) == 8 and len(set(keys)) == 8
    assert not lock_path(out).exists() and not progress_path(out).exists()


def test_the_lock_names_its_holder_and_is_released(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    with OutputLock(out), pytest.raises(ConfigError, match=f"pid {os.getpid()}"):
        OutputLock(out).acquire()
    with OutputLock(out):  # released: a later run takes it
        pass
    assert not lock_path(out).exists()


# --------------------------------------------------------------------------- never clobber


@pytest.mark.parametrize("victim", ["preset", "answers", "unrelated"])
def test_output_naming_an_input_or_a_foreign_file_is_refused_and_the_file_is_unchanged(tmp_path: Path, victim: str) -> None:
    preset = tmp_path / "mine.json"
    preset.write_text(DEMO_PRESET.read_text(encoding="utf-8"), encoding="utf-8")
    answers = tmp_path / "answers.json"
    answers.write_text(ANSWERS.read_text(encoding="utf-8"), encoding="utf-8")
    unrelated = tmp_path / "notes.json"
    unrelated.write_text('{"mine": true}\n', encoding="utf-8")
    target = {"preset": preset, "answers": answers, "unrelated": unrelated}[victim]
    before = target.read_bytes()
    result = invoke(DEMO, "--preset", preset, "--answers", answers, "--no-cache", "--output", target)
    assert result.exit_code == 1
    expected = "is not a verify results file" if victim == "unrelated" else "an input of this run"
    assert expected in result.stderr
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["answers.json", "mine.json", "notes.json"]


def test_output_naming_the_checkpoint_is_refused(tmp_path: Path) -> None:
    checkpoint = tmp_path / "demo.json"
    checkpoint.write_text(DEMO.read_text(encoding="utf-8"), encoding="utf-8")
    result = invoke(checkpoint, "--preset", "demo", "--answers", ANSWERS, "--no-cache", "--output", checkpoint)
    assert result.exit_code == 1 and "an input of this run" in result.stderr


def test_an_earlier_export_is_kept_unless_resume_or_overwrite(tmp_path: Path) -> None:
    first, out = demo(tmp_path)
    assert first.exit_code == 0
    before = out.read_bytes()
    again, _ = demo(tmp_path)
    assert again.exit_code == 1 and "holds the results of an earlier run" in again.stderr
    assert "--overwrite" in again.stderr and out.read_bytes() == before
    replaced, _ = demo(tmp_path, "--overwrite")
    assert replaced.exit_code == 0 and len(task_keys(out)) == 8


# --------------------------------------------------------------------------- resume checks identity


def other_benchmark(tmp_path: Path) -> Path:
    data = json.loads(DEMO.read_text(encoding="utf-8"))
    data["dataFeedElement"][0]["item"]["text"] += " Answer in one word."
    path = tmp_path / "other.jsonld"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_resume_onto_another_benchmarks_results_is_refused_saying_what_differs(tmp_path: Path) -> None:
    first, out = demo(tmp_path)
    assert first.exit_code == 0
    before = out.read_bytes()
    other = other_benchmark(tmp_path)
    changed = load_benchmark(other).questions[0].id
    result = invoke(other, "--preset", "demo", "--answers", ANSWERS, "--no-cache", "--output", out, "--resume")
    assert result.exit_code == 1
    assert "belongs to another run: the benchmark differs (changed questions: " + changed in result.stderr
    assert out.read_bytes() == before


def test_resume_with_another_judging_config_is_refused_naming_the_field(tmp_path: Path) -> None:
    first, out = demo(tmp_path)
    assert first.exit_code == 0
    result, _ = demo(tmp_path, "--resume", "--evaluation-mode", "template_and_rubric")
    assert result.exit_code == 1
    assert "the judging config differs (evaluation_mode" in result.stderr


def test_resume_with_other_execution_settings_is_the_same_run(tmp_path: Path) -> None:
    first, out = demo(tmp_path)
    assert first.exit_code == 0
    result, _ = demo(tmp_path, "--resume", "--async-workers", "1", "--max-concurrent-requests", "3")
    assert result.exit_code == 0, result.output
    assert "tasks: 8 (resumed 8)" in result.stdout


def test_resume_onto_a_foreign_file_is_refused_and_never_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    out.write_text('{"results": "someone else\'s"}', encoding="utf-8")
    result, _ = demo(tmp_path, "--resume", output="results.json")
    assert result.exit_code == 1 and "is not a verify results file" in result.stderr
    assert out.read_text(encoding="utf-8") == '{"results": "someone else\'s"}'


def test_resume_of_a_jsonl_export_checks_its_tasks_belong_to_this_run(tmp_path: Path) -> None:
    first, out = demo(tmp_path, output="out.jsonl")
    assert first.exit_code == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    foreign = json.loads(lines[0])
    foreign["verify"]["task_key"] = "someone-else\tx\ty"
    out.write_text("\n".join([json.dumps(foreign), *lines[1:]]) + "\n", encoding="utf-8")
    result, _ = demo(tmp_path, "--resume", output="out.jsonl")
    assert result.exit_code == 1 and "1 of its task(s) are not tasks of this benchmark" in result.stderr


def test_the_export_header_carries_the_identity(tmp_path: Path) -> None:
    first, out = demo(tmp_path)
    assert first.exit_code == 0
    identity = json.loads(out.read_text(encoding="utf-8"))["metadata"]["identity"]
    assert set(identity) >= {"benchmark", "config", "verify_version", "questions"}
    assert len(identity["questions"]) == len(load_benchmark(DEMO).questions)
    assert "async_max_workers" not in identity["judging_config"]


# --------------------------------------------------------------------------- resume re-runs fixable failures


def test_failures_the_user_fixes_outside_the_run_are_run_again() -> None:
    auth = "judge: AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect API key provided'}}"
    assert fixable_reason("permanent", auth) == "authentication"
    assert fixable_reason("permanent", "judge: NotFoundError: Error code: 404 - model 'gpt-9' does not exist") == "model_not_found"
    assert fixable_reason("permanent", "No module named 'langchain_ollama'") == "missing_package"
    assert fixable_reason("timeout", "anything") == "timeout"
    assert fixable_reason("permanent", "BadRequestError: Error code: 400 - context length exceeded") is None
    meta = {"failure": None, "errors": [{"stage": "rubric_evaluation", "message": auth, "category": "permanent"}]}
    assert rerun_reason(meta) == "authentication"
    assert rerun_reason({"failure": {"category": "content", "reason": "wrong", "stage": "x", "group": "content"}}) is None


def test_resume_runs_the_401_tasks_again(tmp_path: Path) -> None:
    first, out = demo(tmp_path)
    assert first.exit_code == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    broken = data["results"][0]["metadata"]
    broken["errors"] = [{"stage": "rubric_evaluation", "category": "permanent",
                         "message": "judge: AuthenticationError: Error code: 401 - invalid api key"}]
    out.write_text(json.dumps(data), encoding="utf-8")
    result, _ = demo(tmp_path, "--resume")
    assert result.exit_code == 0, result.output
    assert "tasks: 8 (resumed 7)" in result.stdout


# --------------------------------------------------------------------------- recorded answers are exact


def test_answers_that_match_nothing_are_an_error_naming_the_expected_ids(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"gpt-4o": {"q1": "Paris"}}), encoding="utf-8")
    result = invoke(DEMO, "--preset", "demo", "--answers", answers, "--no-cache", "--output", tmp_path / "o.json")
    assert result.exit_code == 1
    assert f"{answers} matches none of the" in result.stderr
    assert "model-a" in result.stderr and "demo-capital" in result.stderr
    assert not (tmp_path / "o.json").exists()


def test_missing_recorded_answers_are_an_error_unless_generation_is_asked_for(tmp_path: Path) -> None:
    data = json.loads(ANSWERS.read_text(encoding="utf-8"))
    del data["model-a"]["demo-capital"]
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(data), encoding="utf-8")
    args = [DEMO, "--preset", "demo", "--answers", answers, "--no-cache"]
    refused = invoke(*args, "--output", tmp_path / "a.json")
    assert refused.exit_code == 1
    assert "no recorded answer for 1 of 8 question/model pair(s): demo-capital (model-a)" in refused.stderr
    assert "--generate-missing-answers" in refused.stderr
    allowed = invoke(*args, "--output", tmp_path / "b.json", "--generate-missing-answers")
    assert allowed.exit_code == 0, allowed.output
    sources = [r["template"]["answer_source"] for r in json.loads((tmp_path / "b.json").read_text())["results"]]
    assert sources.count("model") == 1 and sources.count("recorded") == 7


# --------------------------------------------------------------------------- clean failures


def demo_config() -> VerificationConfig:
    from verify.config.preset import load_preset

    return load_preset("demo")


def demo_answers() -> dict[str, dict[str, str]]:
    data: dict[str, dict[str, str]] = json.loads(ANSWERS.read_text(encoding="utf-8"))
    return data


def test_a_full_disk_mid_run_says_what_is_safe_and_resume_finishes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "r.json"
    real_append = ResultWriter.append

    def append(self: ResultWriter, lines: list[str]) -> None:
        if self.written >= 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_append(self, lines)

    monkeypatch.setattr(ResultWriter, "append", append)
    config = demo_config().model_copy(update={"async_max_workers": 1})
    with pytest.raises(RunStopped) as info:
        run_verification(load_benchmark(DEMO), config, answers=demo_answers(), output=out)
    assert "No space left on device; 3 finished result(s) are safe in" in info.value.message
    assert "--resume" in (info.value.hint or "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json.progress.jsonl"]  # no hidden partial files
    monkeypatch.setattr(ResultWriter, "append", real_append)
    done = run_verification(load_benchmark(DEMO), config, answers=demo_answers(), output=out, resume=True)
    assert done.resumed == 3 and done.summary.total == 8 and len(set(task_keys(out))) == 8


def test_a_failing_export_keeps_every_result_in_the_progress_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import verify.run.finish as finish

    def export(*args: Any, **kwargs: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(finish, "export_lines", export)
    out = tmp_path / "r.json"
    with pytest.raises(RunStopped, match=r"cannot write .*r\.json: No space left on device; all 8 result\(s\) are safe"):
        run_verification(load_benchmark(DEMO), demo_config(), answers=demo_answers(), output=out)
    assert len(list(store.read_lines(progress_path(out)))) == 8


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_sigterm_and_ctrl_c_save_what_finished_and_say_how_to_resume(tmp_path: Path, sig: int, code: int) -> None:
    preset = slow_preset(tmp_path)
    out = tmp_path / "r.json"
    args = [DEMO, "--preset", preset, "--answers", ANSWERS, "--no-cache", "--output", out]
    proc = subprocess.Popen(cli(*args), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_results(progress_path(out), 2)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    name = "SIGTERM" if sig == signal.SIGTERM else "SIGINT"
    assert f"interrupted: stopped by {name}: " in err and "--resume" in err and "Traceback" not in err
    saved = len(list(store.read_lines(progress_path(out))))
    assert saved >= 2 and not lock_path(out).exists()
    resumed = subprocess.run(cli(*args, "--resume"), cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed {saved}" in resumed.stdout and len(set(task_keys(out))) == 8


def test_deadline_stops_the_run_and_keeps_what_finished(tmp_path: Path) -> None:
    result = invoke(DEMO, "--preset", slow_preset(tmp_path, 400), "--answers", ANSWERS, "--no-cache",
                    "--output", tmp_path / "r.json", "--deadline", "1")
    assert result.exit_code == 1
    assert "the run reached --deadline=1 s" in result.stderr and "--resume" in result.stderr


def test_deadline_must_be_a_duration() -> None:
    result = invoke(DEMO, "--preset", "demo", "--deadline", "soon", "--show-plan")
    assert result.exit_code == 1 and "--deadline 'soon' is not a duration" in result.stderr


def test_fields_added_later_at_their_defaults_leave_the_identity_as_earlier_versions_saved_it() -> None:
    from verify.config.verification import VerificationConfig
    from verify.results.identity import ADDED_DEFAULTS, MODEL_ADDED_DEFAULTS, judging_config

    judge = {"id": "j", "model_name": "m", "interface": "simulated"}
    plain = judging_config(VerificationConfig.model_validate({"answering_models": [judge], "parsing_models": [judge]}))
    assert not set(ADDED_DEFAULTS) & set(plain)  # a run saved before these fields existed still resumes
    assert not set(MODEL_ADDED_DEFAULTS) & set(plain["answering_models"][0])
    batched = VerificationConfig.model_validate({"answering_models": [{**judge, "tool_rounds": 2}], "parsing_models": [judge],
                                                 "deep_judgment_rubric_strategy": "batched"})  # fmt: skip
    changed = judging_config(batched)
    assert changed["deep_judgment_rubric_strategy"] == "batched" and changed["answering_models"][0]["tool_rounds"] == 2
