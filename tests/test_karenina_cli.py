"""karenina's ``verify`` command line and environment, accepted by verify with karenina's meaning.

Every one of karenina's 50 option strings is accepted with ``--show-config``; the options whose
feature verify lacks (agent workspaces) warn once; ``--resume PATH`` continues the run PATH belongs
to, next to the boolean ``--resume``; ``--run-root`` writes karenina's run directory; ``--replay``
answers from a karenina replay store; ``--interactive`` builds the config from answers; karenina's
environment variables sit between the defaults and the preset.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from peers import karenina_python
from typer.testing import CliRunner, Result

from verify.cli import app
from verify.cli.karenina import rewrite_resume
from verify.config.verification import VerificationConfig

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "verify" / "examples" / "demo" / "demo.jsonld"
ANSWERS = REPO / "verify" / "examples" / "demo" / "answers.json"

runner = CliRunner()


def invoke(*args: object, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(app, [str(a) for a in args], input=input, env=env)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run") / "out.json"
    result = invoke(DEMO, "--preset", "demo", "--answers", ANSWERS, "--no-cache", "--output", out)
    assert result.exit_code == 0, result.output
    return out


def _karenina_options(tmp: Path, finished: Path) -> list[tuple[str, list[str]]]:
    traces = tmp / "traces.json"
    traces.write_text(json.dumps({"demo-capital": "Paris"}))
    dj = tmp / "dj.json"
    dj.write_text(json.dumps({"global": {}, "question_specific": {}}))
    replay = tmp / "replay.json"
    replay.write_text(json.dumps({"version": 1, "miss_policy": "fall_through", "entries": []}))
    value = {
        "--preset": ["demo"], "--mode": ["basic"], "--output": [str(tmp / "o.json")], "--run-root": [str(tmp / "runs")],
        "--run-label": ["lbl"], "--questions": ["0"], "--question-ids": ["demo-capital"],
        "--answering-model": ["gpt-4.1-mini"], "--answering-provider": ["openai"], "--answering-id": ["a1"],
        "--parsing-model": ["gpt-4.1-mini"], "--parsing-provider": ["openai"], "--parsing-id": ["p1"],
        "--temperature": ["0.2"], "--interface": ["langchain"], "--replicate-count": ["2"],
        "--deep-judgment-rubric-mode": ["enable_all"], "--deep-judgment-rubric-max-excerpts": ["3"],
        "--deep-judgment-rubric-fuzzy-threshold": ["0.7"], "--deep-judgment-rubric-retry-attempts": ["1"],
        "--deep-judgment-rubric-search-tool": ["tavily"], "--deep-judgment-rubric-config": [str(dj)],
        "--evaluation-mode": ["template_and_rubric"], "--embedding-threshold": ["0.8"],
        "--embedding-model": ["all-MiniLM-L6-v2"], "--async-workers": ["3"], "--workspace-output-mode": ["full"],
        "--workspace-output-dir": [str(tmp / "ws")], "--workspace-output-exclude": ["*.tmp"],
        "--manual-traces": [str(traces), "--interface", "manual"], "--replay": [str(replay)],
        "--resume": [str(finished)],
    }
    flags = [
        "--interactive", "--verbose", "--abstention", "--no-abstention", "--sufficiency", "--no-sufficiency",
        "--embedding-check", "--no-embedding-check", "--deep-judgment", "--no-deep-judgment",
        "--deep-judgment-rubric-excerpts", "--deep-judgment-rubric-search", "--use-full-trace-for-template",
        "--use-final-message-for-template", "--use-full-trace-for-rubric", "--use-final-message-for-rubric",
        "--no-async", "--progressive-save",
    ]
    return [*((k, v) for k, v in value.items()), *((f, []) for f in flags)]


KARENINA_OPTION_COUNT = 50  # karenina 0.1.0's `verify`: 44 options, 6 of them with a --no-/--use-final- form


def test_each_of_karenina_s_50_options_is_accepted(tmp_path: Path, finished_run: Path) -> None:
    options = _karenina_options(tmp_path, finished_run)
    assert len(options) == KARENINA_OPTION_COUNT
    base = ["--answering-model", "gpt-4.1-mini", "--parsing-model", "gpt-4.1-mini", "--show-config"]
    for option, values in options:
        args = [*values] if option == "--resume" else [DEMO, *base, option, *values]
        if option == "--resume":
            args = ["--resume", *values, "--show-config"]
        if option in ("--preset", "--manual-traces"):  # a preset brings its models; traces are the answerer
            args = [DEMO, "--show-config", "--parsing-model", "gpt-4.1-mini", option, *values]
        result = invoke(*args, input="\n" * 40 if option == "--interactive" else None)
        assert result.exit_code == 0, f"{option}: {result.output}"


def test_inert_workspace_options_warn_once_each(tmp_path: Path) -> None:
    result = invoke(DEMO, "--preset", "demo", "--show-config", "--workspace-output-mode", "full",
                    "--workspace-output-exclude", "a", "--workspace-output-exclude", "b")
    assert result.exit_code == 0, result.output
    assert result.output.count("--workspace-output-mode has no effect") == 1
    assert result.output.count("--workspace-output-exclude has no effect") == 1
    assert "--mode has no effect" in invoke(DEMO, "--preset", "demo", "--show-config", "--mode", "advanced").output


def test_resume_path_is_told_apart_from_the_flag(finished_run: Path) -> None:
    out = finished_run
    assert rewrite_resume(["b.jsonld", "--resume", "--output", "o.json"]) == ["b.jsonld", "--resume", "--output", "o.json"]
    assert rewrite_resume(["--resume", "b.jsonld", "--output", "o.json"]) == ["--resume", "b.jsonld", "--output", "o.json"]
    assert rewrite_resume(["--resume", "x.json.state"]) == ["--resume-from", "x.json.state"]
    assert rewrite_resume(["--resume=o.json"]) == ["--resume-from", "o.json"]
    assert rewrite_resume(["--resume", str(out)]) == ["--resume-from", str(out)]


def test_resume_path_continues_the_saved_run_with_its_benchmark_and_config(finished_run: Path) -> None:
    for target in (finished_run, Path(f"{finished_run}.state")):
        result = invoke("--resume", target, "--answers", ANSWERS, "--no-cache")
        assert result.exit_code == 0, result.output
        assert "resumed 8" in result.output
    changed = invoke("--resume", finished_run, "--answers", ANSWERS, "--no-cache", "--evaluation-mode", "template_only")
    assert changed.exit_code == 1 and "judging config differs" in changed.output


def test_resume_path_refuses_karenina_s_own_state_and_missing_runs(tmp_path: Path) -> None:
    state = tmp_path / "k.json.state"
    state.write_text(json.dumps({"format_version": "2.0", "task_manifest": []}))
    result = invoke("--resume", state)
    assert result.exit_code == 1 and "karenina's progressive-save state" in result.output
    missing = invoke("--resume", tmp_path / "none.json.state")
    assert missing.exit_code == 1 and "no run to continue" in missing.output


def test_run_root_writes_karenina_s_run_directory(tmp_path: Path) -> None:
    result = invoke(DEMO, "--preset", "demo", "--answers", ANSWERS, "--no-cache", "--run-root", tmp_path / "runs",
                    "--run-label", "nightly")
    assert result.exit_code == 0, result.output
    (directory,) = (tmp_path / "runs").iterdir()
    assert directory.name.startswith("nightly_")
    manifest = json.loads((directory / "run_manifest.json").read_text())
    assert manifest["status"] == "completed" and manifest["completed_at"]
    assert manifest["results_path"] == "results.json" and (directory / "results.json").is_file()
    assert {"traces", "workspaces"} <= {p.name for p in directory.iterdir()}
    assert [m["config_id"] for m in manifest["answering_models"]] == ["model-a", "model-b"]
    assert json.loads((directory / "results.json").read_text())["results"]
    both = invoke(DEMO, "--preset", "demo", "--run-root", tmp_path / "runs", "--output", tmp_path / "o.json")
    assert both.exit_code == 1 and "cannot be combined with --output" in both.output
    bad = invoke(DEMO, "--preset", "demo", "--answers", ANSWERS, "--run-root", tmp_path / "runs", "--run-label", "../x")
    assert bad.exit_code == 1 and "not a safe directory name" in bad.output


def _replay(path: Path, policy: str, skip: str) -> None:
    answers: dict[str, dict[str, str]] = json.loads(ANSWERS.read_text())
    entries = [
        {"key": {"question_id": q, "scenario_id": None, "scenario_node": None, "answering_model_id": m,
                 "visit_index": None, "replicate": None}, "entry": {"raw_trace": text}}
        for m, by_question in answers.items() for q, text in by_question.items() if q != skip
    ]
    path.write_text(json.dumps({"version": 1, "miss_policy": policy, "entries": entries}))


def test_replay_answers_from_the_store_and_live_for_misses(tmp_path: Path) -> None:
    store = tmp_path / "replay.json"
    _replay(store, "strict", skip="demo-cold")
    strict = invoke(DEMO, "--preset", "demo", "--replay", store, "--no-cache", "--output", tmp_path / "a.json")
    assert strict.exit_code == 1 and "no recorded answer for 2 of 8" in strict.output
    _replay(store, "fall_through", skip="demo-cold")
    out = tmp_path / "b.json"
    live = invoke(DEMO, "--preset", "demo", "--replay", store, "--no-cache", "--output", out)
    assert live.exit_code == 0, live.output
    results = json.loads(out.read_text())["results"]
    answers: dict[str, dict[str, str]] = json.loads(ANSWERS.read_text())
    by_key = {(r["metadata"]["question_id"], r["metadata"]["answering"]["config_id"]): r for r in results}
    assert by_key[("demo-capital", "model-a")]["template"]["raw_llm_response"] == answers["model-a"]["demo-capital"]
    assert len(by_key) == 8  # the two demo-cold tasks were answered live


def test_interactive_builds_the_config_from_answers(tmp_path: Path) -> None:
    answers = "\n".join([
        "0,1", "", "template_and_rubric", "", "", "", "", "enable_all",
        "simulated", "model-a", "", "", "",  # answering model: interface, id, name, provider, no other
        "simulated", "", "", "", "",  # judge
        "y", "mine", "",  # save as preset "mine"
    ]) + "\n"
    out = tmp_path / "i.json"
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = invoke(DEMO, "--interactive", "--answers", ANSWERS, "--no-cache", "--output", out, input=answers)
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert {r["metadata"]["question_id"] for r in data["results"]} == {"demo-capital", "demo-boiling"}
    saved = VerificationConfig.from_preset(tmp_path / "presets" / "mine.json")
    assert saved.evaluation_mode == "template_and_rubric" and saved.deep_judgment_rubric_mode == "enable_all"
    again = invoke(DEMO, "--interactive", "--mode", "expert", input="\n")
    assert again.exit_code == 1 and "not a mode" in again.output


def test_a_refused_interactive_answer_is_asked_again(tmp_path: Path) -> None:
    answers = "\n".join(["0", "zero", "1", "", "", "", "", "", "simulated", "model-a", "", "", "",
                         "simulated", "", "", "", "", ""]) + "\n"
    result = invoke(DEMO, "--interactive", "--show-config", input=answers)
    assert result.exit_code == 0, result.output
    assert "not accepted" in result.output


@pytest.mark.parametrize(
    ("variable", "value", "field", "expected"),
    [
        ("EMBEDDING_CHECK", "true", "embedding_check_enabled", True),
        ("EMBEDDING_CHECK_MODEL", "m2", "embedding_check_model", "m2"),
        ("EMBEDDING_CHECK_THRESHOLD", "0.5", "embedding_check_threshold", 0.5),
        ("KARENINA_ASYNC_ENABLED", "false", "async_enabled", False),
        ("KARENINA_ASYNC_MAX_WORKERS", "7", "async_max_workers", 7),
    ],
)
def test_karenina_environment_variables_sit_between_defaults_and_preset(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, field: str, expected: Any,
) -> None:
    monkeypatch.setenv(variable, value)
    assert getattr(VerificationConfig.from_overrides(answering_model="m", parsing_model="m"), field) == expected
    explicit: Any = {"embedding_check_enabled": False, "embedding_check_model": "x", "embedding_check_threshold": 0.9,
                "async_enabled": True, "async_max_workers": 2}[field]
    given = VerificationConfig.from_overrides(answering_model="m", parsing_model="m", **{field: explicit})
    assert getattr(given, field) == explicit  # a preset or a flag wins over the variable
    result = invoke(DEMO, "--preset", "demo", "--show-config", env={variable: value})
    shown = json.loads(result.output[result.output.index("{"):])
    preset = json.loads((REPO / "verify/config/presets/demo.json").read_text())["config"]
    assert shown[field] == preset.get(field, expected)  # the preset's value wins when it has one


def test_an_unparseable_environment_value_falls_back_with_a_warning(monkeypatch: pytest.MonkeyPatch,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("KARENINA_ASYNC_MAX_WORKERS", "many")
    config = VerificationConfig.from_overrides(answering_model="m", parsing_model="m")
    assert config.async_max_workers == VerificationConfig.model_fields["async_max_workers"].default
    assert "KARENINA_ASYNC_MAX_WORKERS='many'" in caplog.text


def test_the_real_process_reads_resume_path(finished_run: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "verify", "--resume", str(finished_run), "--answers", str(ANSWERS),
                           "--no-cache"], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "resumed 8" in proc.stdout + proc.stderr


def test_karenina_reads_the_run_manifest(tmp_path: Path) -> None:
    python = karenina_python()
    if python is None:
        pytest.skip("karenina is not importable (set KARENINA_PYTHON to an interpreter that has it)")
    result = invoke(DEMO, "--preset", "demo", "--answers", ANSWERS, "--no-cache", "--run-root", tmp_path)
    assert result.exit_code == 0, result.output
    (manifest,) = tmp_path.glob("*/run_manifest.json")
    code = ("import sys; from karenina.benchmark.run_artifacts import RunManifest; "
            "m = RunManifest.model_validate_json(open(sys.argv[1]).read()); print(m.status, len(m.answering_models))")
    proc = subprocess.run([python, "-c", code, str(manifest)], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["completed", "2"]


def test_resume_path_continues_an_unfinished_run_from_its_progress_file(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    stopped = invoke(DEMO, "--preset", "demo", "--answers", ANSWERS, "--no-cache", "--output", out, "--deadline", "0.001")
    assert stopped.exit_code != 0 and not out.exists()
    progress = Path(f"{out}.progress.jsonl")
    header = json.loads(progress.read_text().splitlines()[0])
    assert header["run"]["benchmark"] == str(DEMO) and "parsing_models" in header["run"]["config"]
    result = invoke("--resume", progress, "--answers", ANSWERS, "--no-cache")
    assert result.exit_code == 0, result.output
    assert len(json.loads(out.read_text())["results"]) == 8
