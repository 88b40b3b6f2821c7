"""Inputs are regular files of bounded size, writers never clobber, and each input that used to end in
"internal error" is one located line (issue 24: writers, inputs that block, unlocated errors).

The FIFO and signal tests run the real CLI in a subprocess with a timeout: a blocking read would hang.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from verify.benchmark.jsonld import load_benchmark
from verify.benchmark.traits import CallableTrait, LLMTrait
from verify.cli import app
from verify.errors import BenchmarkError
from verify.files import JsonProblem, input_limit, parse_yaml, read_text

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "verify" / "examples" / "demo" / "demo.jsonld"
ANSWERS = REPO / "verify" / "examples" / "demo" / "answers.json"
PRESET = REPO / "verify" / "config" / "presets" / "demo.json"
KARENINA = REPO / "tests" / "fixtures" / "karenina"
OFFLINE = REPO / "verify" / "examples" / "suite" / "offline.json"
VERIFY = [sys.executable, "-m", "verify"]
runner = CliRunner()
no_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")


def invoke(*args: object, **kwargs: Any) -> Result:
    return runner.invoke(app, [str(a) for a in args], **kwargs)


def one_error(result: Result, *needles: str) -> str:
    """The result is exit 1 with one ``error:`` line (and a hint), not an internal error."""
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    assert "internal error" not in result.output and "bug in verify" not in result.output
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def suite(tmp_path: Path, graders: dict[str, Any] | None = None, name: str = "suite.yaml") -> Path:
    data: dict[str, Any] = {"name": "s", "tests": [{"id": "paris", "input": "Capital of France?", "output": "Paris.",
                                                   "assertions": ["Names Paris"]}]}
    if graders:
        data["graders"] = graders
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def run_cli(args: list[object], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*VERIFY, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False)


# --------------------------------------------------------------------------- inputs that block or exhaust


@no_fifo
def test_a_fifo_as_benchmark_is_refused_within_2_seconds(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "bench.jsonld")
    started = time.monotonic()
    proc = run_cli(["bench.jsonld", "--preset", PRESET, "--show-plan"], tmp_path, timeout=30)
    assert time.monotonic() - started < 30
    assert proc.returncode == 1 and "named pipe, not a regular file" in proc.stderr, proc.stderr
    assert "bench.jsonld" in proc.stderr


@no_fifo
def test_a_fifo_as_prompt_file_is_a_located_problem(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "prompt.txt")
    path = suite(tmp_path, {"quality": {"kind": "rubric", "prompt_path": "prompt.txt"}})
    started = time.monotonic()
    with pytest.raises(BenchmarkError) as info:
        from verify.benchmark.suite import load_suite

        load_suite(path)
    assert time.monotonic() - started < 2
    assert "grader 'quality'" in info.value.message and "named pipe" in info.value.message


@no_fifo
def test_a_fifo_as_the_saved_benchmark_path_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    progress = tmp_path / "out.json.progress.jsonl"
    os.mkfifo(tmp_path / "gone.jsonld")
    header = {"verify_progress": 1, "run": {"benchmark": str(tmp_path / "gone.jsonld")}}
    progress.write_text(json.dumps(header) + "\n", encoding="utf-8")
    proc = run_cli(["--resume", progress, "--preset", PRESET, "--answers", ANSWERS], tmp_path, timeout=30)
    assert proc.returncode == 1 and "named pipe" in proc.stderr and "gone.jsonld" in proc.stderr, proc.stderr
    assert not out.exists()


def test_dev_zero_as_prompt_file_is_refused_at_once(tmp_path: Path) -> None:
    path = suite(tmp_path, {"quality": {"kind": "rubric", "prompt_path": "/dev/zero"}})
    result = invoke(path, "--show-plan", "--allow-outside-paths")
    one_error(result, "grader 'quality'", "character device")


def test_a_prompt_file_over_1_mb_is_refused(tmp_path: Path) -> None:
    (tmp_path / "prompt.txt").write_text("x" * (1024 * 1024 + 1), encoding="utf-8")
    result = invoke(suite(tmp_path, {"quality": {"kind": "rubric", "prompt_path": "prompt.txt"}}), "--show-plan")
    one_error(result, "grader 'quality'", "prompt.txt")


@pytest.mark.parametrize("where", ["../outside.txt", "ABSOLUTE"])
def test_prompt_path_outside_the_suite_folder_needs_the_flag(tmp_path: Path, where: str) -> None:
    folder = tmp_path / "suite"
    folder.mkdir()
    (tmp_path / "outside.txt").write_text("Grade {submission} for {input}.", encoding="utf-8")
    prompt = str(tmp_path / "outside.txt") if where == "ABSOLUTE" else where
    path = suite(folder, {"quality": {"kind": "rubric", "prompt_path": prompt}})
    line = one_error(invoke(path, "--show-plan"), str(path), "grader 'quality'", "--allow-outside-paths")
    assert "outside the suite's folder" in line
    allowed = invoke(path, "--show-plan", "--allow-outside-paths")
    assert allowed.exit_code == 0, allowed.output


def test_a_file_over_the_input_limit_is_refused_and_the_flag_raises_it(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonld"
    path.write_text(DEMO.read_text(encoding="utf-8"), encoding="utf-8")
    with input_limit(0.001), pytest.raises(JsonProblem) as info:
        read_text(path)
    assert "--max-input-mb" in info.value.hint
    one_error(invoke(path, "--preset", PRESET, "--show-plan", "--max-input-mb", "0.005"), "big.jsonld", "more than the")
    assert invoke(path, "--preset", PRESET, "--show-plan", "--max-input-mb", "5").exit_code == 0


# --------------------------------------------------------------------------- YAML


def test_yaml_nesting_is_limited_as_json_and_never_crashes() -> None:
    for text in ("[" * 50_000 + "]" * 50_000, "- " * 50_000 + "x\n", "[" * 150 + "]" * 150):
        with pytest.raises(JsonProblem) as info:
            parse_yaml(text)
        assert "nested deeper than 100 levels" in info.value.problem
    assert parse_yaml("[" * 50 + "]" * 50) is not None


def test_yaml_aliases_that_expand_to_billions_are_refused() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    with pytest.raises(JsonProblem) as info:
        parse_yaml("\n".join(lines) + "\n")
    assert "aliases expand" in info.value.problem


def test_libyaml_is_used_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    if not hasattr(yaml, "CSafeLoader"):
        pytest.skip("libyaml is not installed")
    used: list[Any] = []

    class Spy(yaml.CSafeLoader):  # type: ignore[misc, name-defined]
        def __init__(self, stream: str) -> None:
            used.append(type(self).__mro__[1])
            super().__init__(stream)

    monkeypatch.setattr(yaml, "CSafeLoader", Spy)
    assert parse_yaml("a: 1\n") == {"a": 1}
    assert used and all(loader.__module__ == 'yaml.cyaml' for loader in used)


# --------------------------------------------------------------------------- the seven internal errors


def test_a_binary_yaml_suite_is_a_located_error(tmp_path: Path) -> None:
    (tmp_path / "bin.yaml").write_bytes(bytes(range(256)) * 8)
    one_error(invoke(tmp_path / "bin.yaml", "--show-plan"), "bin.yaml", "not UTF-8")


def test_yaml_nested_50000_deep_is_a_located_error(tmp_path: Path) -> None:
    (tmp_path / "deep.yaml").write_text("[" * 50_000 + "]" * 50_000, encoding="utf-8")
    one_error(invoke(tmp_path / "deep.yaml", "--show-plan"), "deep.yaml", "nested deeper than 100 levels")


def test_a_binary_progress_file_is_a_located_error(tmp_path: Path) -> None:
    progress = tmp_path / "run.json.progress.jsonl"
    progress.write_bytes(bytes(range(256)) * 8)
    one_error(invoke("--resume", progress, "--preset", PRESET), "run.json.progress.jsonl")


def test_a_replay_entry_with_an_object_model_id_is_a_located_error(tmp_path: Path) -> None:
    store = {"version": 1, "entries": [{"key": {"question_id": "q1", "answering_model_id": {"a": 1}},
                                        "entry": {"raw_trace": "x"}}]}
    (tmp_path / "replay.json").write_text(json.dumps(store), encoding="utf-8")
    one_error(invoke(DEMO, "--preset", PRESET, "--replay", tmp_path / "replay.json", "--output", tmp_path / "o.json"),
              "replay.json", "entry 0", "answering_model_id")


@pytest.mark.parametrize("case", ["long label", "root is a file", "root under /proc"])
def test_run_directory_problems_are_located_errors(tmp_path: Path, case: str) -> None:
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    root, label = {"long label": (tmp_path, "a" * 300), "root is a file": (tmp_path / "afile", "verification"),
                   "root under /proc": (Path("/proc/verify-test/x"), "verification")}[case]
    result = invoke(DEMO, "--preset", PRESET, "--answers", ANSWERS, "--no-cache", "--run-root", root, "--run-label", label)
    one_error(result, "--run-label" if case == "long label" else "--run-root")


def test_interactive_without_a_terminal_says_so(tmp_path: Path) -> None:
    proc = subprocess.run([*VERIFY, str(DEMO), "--interactive"], cwd=tmp_path, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60, check=False)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 1 and len(errors) == 1, proc.stderr
    assert "--interactive" in errors[0] and "not a terminal" in errors[0] and "internal" not in proc.stderr


# --------------------------------------------------------------------------- SIGTERM


def test_sigterm_before_the_run_loop_exits_143(tmp_path: Path) -> None:
    proc = subprocess.Popen([*VERIFY, str(DEMO), "--interactive"], cwd=tmp_path, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        proc.stdout.readline()  # the questions are listed: start-up is waiting for an answer
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 143


# --------------------------------------------------------------------------- writers that clobber


def _results(tmp_path: Path) -> Path:
    out = tmp_path / "run.json"
    result = invoke(DEMO, "--preset", PRESET, "--answers", ANSWERS, "--no-cache", "--output", out)
    assert result.exit_code == 0, result.output
    return out


def test_report_refuses_to_replace_a_file_it_did_not_write(tmp_path: Path) -> None:
    run = _results(tmp_path)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n", encoding="utf-8")
    one_error(invoke("report", run, "-o", notes), "notes.txt", "did not write")
    assert notes.read_text(encoding="utf-8") == "my notes\n"
    assert invoke("report", run, "-o", notes, "--overwrite").exit_code == 0
    page = tmp_path / "page.html"
    assert invoke("report", run, "-o", page).exit_code == 0
    assert invoke("report", run, "-o", page).exit_code == 0  # its own page is replaced


def test_run_refuses_a_report_path_it_did_not_write_before_any_call(tmp_path: Path) -> None:
    notes = tmp_path / "notes.html"
    notes.write_text("mine\n", encoding="utf-8")
    result = invoke(DEMO, "--preset", PRESET, "--answers", ANSWERS, "--no-cache", "--output", tmp_path / "o.json",
                    "--report", notes)
    one_error(result, "--report", "notes.html")
    assert not (tmp_path / "o.json").exists() and notes.read_text(encoding="utf-8") == "mine\n"


def test_convert_refuses_two_outputs_on_one_file_before_writing(tmp_path: Path) -> None:
    path = suite(tmp_path)
    one_error(invoke("convert", path, "-o", tmp_path / "x.jsonld", "--answers", tmp_path / "x.jsonld"),
              "--answers", "--output")
    assert not (tmp_path / "x.jsonld").exists()


# --------------------------------------------------------------------------- trait names, ranges, empty answers


@pytest.mark.parametrize("name", ["Clar\nity", "Clar\x00ity"])
def test_a_trait_name_with_a_control_character_is_located(tmp_path: Path, name: str) -> None:
    data = json.loads((KARENINA / "with_rubrics.jsonld").read_text(encoding="utf-8"))
    data["rating"][0]["name"] = name
    (tmp_path / "b.jsonld").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(BenchmarkError) as info:
        load_benchmark(tmp_path / "b.jsonld")
    assert "control character" in info.value.message and "global trait" in info.value.message


def test_a_score_trait_with_min_equal_to_max_is_located(tmp_path: Path) -> None:
    data = json.loads((KARENINA / "with_rubrics.jsonld").read_text(encoding="utf-8"))
    data["rating"][0]["additionalProperty"] += [{"@type": "PropertyValue", "name": "min_score", "value": 3},
                                                {"@type": "PropertyValue", "name": "max_score", "value": 3}]
    (tmp_path / "b.jsonld").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(BenchmarkError) as info:
        load_benchmark(tmp_path / "b.jsonld")
    assert "global trait 'Clarity'" in info.value.message and "min_score = max_score = 3" in info.value.message
    with pytest.raises(ValueError, match="min_score = max_score"):
        LLMTrait(name="x", kind="score", min_score=2, max_score=2)
    with pytest.raises(ValueError, match="min_score 2 and max_score 2; a score needs a range"):
        CallableTrait(name="x", kind="score", callable_code="", min_score=2, max_score=2)
    CallableTrait(name="x", kind="score", callable_code="", min_score=2)  # an unset bound is not checked (karenina)


def test_an_empty_recorded_answer_is_a_located_error_before_any_call(tmp_path: Path) -> None:
    answers = json.loads(ANSWERS.read_text(encoding="utf-8"))
    model = next(iter(answers))
    question = next(iter(answers[model]))
    answers[model][question] = "  "
    (tmp_path / "answers.json").write_text(json.dumps(answers), encoding="utf-8")
    result = invoke(DEMO, "--preset", PRESET, "--answers", tmp_path / "answers.json", "--no-cache",
                    "--output", tmp_path / "o.json")
    one_error(result, "answers.json", "empty", question)
    assert not (tmp_path / "o.json").exists()
