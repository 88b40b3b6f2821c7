"""The ``verify`` command end to end: config and plan output, errors, runs, deep judgment, resume, README.

Everything runs offline with the simulated provider. Runs go through ``typer.testing.CliRunner`` on
``verify.cli.app``; a few go through ``python -m verify`` in a subprocess where the real process
matters (exit status, stderr, tracebacks). Every run passes ``--no-cache`` (or a tmp
``--cache-dir``) and an ``--output`` under ``tmp_path``.
"""

from __future__ import annotations

import csv
import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner, Result

from verify.benchmark.jsonld import load_benchmark
from verify.benchmark.traits import LLMTrait
from verify.cli import app
from verify.llm.simulated.brain import Faults, fabricates

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "verify" / "examples" / "demo" / "demo.jsonld"
ANSWERS = REPO / "verify" / "examples" / "demo" / "answers.json"
DEMO_PRESET = REPO / "verify" / "config" / "presets" / "demo.json"
KARENINA = REPO / "tests" / "fixtures" / "karenina"
SEED_003 = KARENINA / "deep-judgment-rubrics.md"  # karenina's "Deep Judgment for Rubrics" page (seed 003)
STAGES = "stages: generate_answer -> rubric_evaluation -> deep_judgment_rubric_auto_fail -> finalize_result"
DJ_FAIL = "deep_judgment_rubric"

runner = CliRunner()


# --------------------------------------------------------------------------- helpers


def invoke(*args: object) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def load_results(path: Path) -> list[dict[str, Any]]:
    """The results of an export, whatever its format (csv rows are dicts of strings)."""
    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["format_version"] == "2.2"  # karenina's; verify's own data is in each result's "verify"
        results: list[dict[str, Any]] = data["results"]
        return results
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def demo_preset(**config: Any) -> dict[str, Any]:
    """The shipped demo preset (simulated answerers and judge), with config fields replaced."""
    preset: dict[str, Any] = json.loads(DEMO_PRESET.read_text(encoding="utf-8"))
    preset["config"].update(config)
    return preset


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def judge_preset(tmp_path: Path, name: str, **extra_kwargs: Any) -> Path:
    """The demo preset with ``extra_kwargs`` (fabricate_rate, seed, ...) on the simulated judge."""
    preset = demo_preset()
    preset["config"]["parsing_models"][0]["extra_kwargs"] = extra_kwargs
    return write_json(tmp_path / name, preset)


def run_demo(tmp_path: Path, *extra: object, output: str = "out.json", preset: object = "demo") -> tuple[Result, Path]:
    out = tmp_path / output
    result = invoke(DEMO, "--preset", preset, "--answers", ANSWERS, "--no-cache", "--output", out, *extra)
    return result, out


def assert_ok(result: Result) -> None:
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}\n{result.exception!r}"


def table_rows(output: str) -> list[list[str]]:
    """The body rows of the rich tables in ``output``, as lists of stripped cells."""
    rows = []
    for line in output.splitlines():
        if line.startswith(("│", "|")):
            rows.append([cell.strip() for cell in re.split(r"[│|]", line)[1:-1]])
    return rows


def show_config(*args: object) -> dict[str, Any]:
    result = invoke(*args, "--show-config")
    assert_ok(result)
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def llm_traits(path: Path) -> list[tuple[str, str]]:
    bench = load_benchmark(path)
    pairs = []
    for q in bench.questions:
        rubric, _ = bench.rubric_for(q)
        pairs.extend((q.id, t.name) for t in rubric.traits if isinstance(t, LLMTrait))
    return pairs


# --------------------------------------------------------------------------- 1. --show-config


def test_show_config_equals_karenina_preset() -> None:
    preset = json.loads((KARENINA / "preset-full.json").read_text(encoding="utf-8"))["config"]
    shown = show_config(KARENINA / "with_rubrics.jsonld", "--preset", KARENINA / "preset-full.json")
    for field in ("evaluation_mode", "deep_judgment_rubric_mode", "replicate_count", "rubric_evaluation_strategy",
                  "deep_judgment_rubric_max_excerpts_default", "async_max_workers"):
        assert shown[field] == preset[field], field
    for role in ("answering_models", "parsing_models"):
        assert len(shown[role]) == len(preset[role])
        for got, want in zip(shown[role], preset[role], strict=True):
            for key in ("id", "model_provider", "model_name", "temperature", "interface"):
                assert got[key] == want[key], (role, key)


def test_show_config_keeps_preset_modes_when_flags_are_not_given(tmp_path: Path) -> None:
    # karenina's CLI resets evaluation_mode / deep_judgment_rubric_mode to its flag defaults: we must not.
    preset = write_json(tmp_path / "modes.json", demo_preset(evaluation_mode="template_and_rubric",
                                                              deep_judgment_rubric_mode="enable_all"))
    shown = show_config(DEMO, "--preset", preset)
    assert shown["evaluation_mode"] == "template_and_rubric"
    assert shown["deep_judgment_rubric_mode"] == "enable_all"
    assert shown["deep_judgment_rubric_max_excerpts_default"] == 7
    assert shown["deep_judgment_rubric_search_enabled"] is False


def test_show_config_flags_override_the_preset(tmp_path: Path) -> None:
    preset = write_json(tmp_path / "modes.json", demo_preset(evaluation_mode="template_and_rubric",
                                                              deep_judgment_rubric_mode="enable_all"))
    shown = show_config(
        DEMO, "--preset", preset, "--deep-judgment-rubric-max-excerpts", 5, "--deep-judgment-rubric-search",
        "--deep-judgment-rubric-fuzzy-threshold", "0.9", "--deep-judgment-rubric-retry-attempts", 3,
        "--evaluation-mode", "rubric_only", "--temperature", "0.5",
    )
    assert shown["deep_judgment_rubric_max_excerpts_default"] == 5
    assert shown["deep_judgment_rubric_search_enabled"] is True
    assert shown["deep_judgment_rubric_fuzzy_match_threshold_default"] == 0.9
    assert shown["deep_judgment_rubric_excerpt_retry_attempts_default"] == 3
    assert shown["evaluation_mode"] == "rubric_only"
    assert shown["deep_judgment_rubric_mode"] == "enable_all"  # not given: kept
    assert {m["temperature"] for m in shown["answering_models"] + shown["parsing_models"]} == {0.5}
    assert [m["id"] for m in shown["answering_models"]] == ["model-a", "model-b"]  # never collapsed


def test_show_config_never_prints_secrets(tmp_path: Path) -> None:
    preset = demo_preset()
    preset["config"]["answering_models"] = [{
        "id": "local", "model_name": "llama3.1:8b", "interface": "openai_endpoint",
        "endpoint_base_url": "http://localhost:11434/v1", "endpoint_api_key": "sk-secret-123",
        "extra_kwargs": {"api_key": "sk-secret-123", "top_p": 0.5},
    }]
    path = write_json(tmp_path / "secret.json", preset)
    result = invoke(DEMO, "--preset", path, "--show-config")
    assert_ok(result)
    assert "sk-secret-123" not in result.output
    shown = json.loads(result.stdout)
    model = shown["answering_models"][0]
    assert model["endpoint_api_key"] == "**********"
    assert model["extra_kwargs"] == {"api_key": "**********", "top_p": 0.5}


# --------------------------------------------------------------------------- 2. --show-plan

CHECKPOINTS = sorted(KARENINA.glob("*.jsonld")) + sorted((REPO / "tests" / "fixtures").glob("*.jsonld")) + [DEMO]


@pytest.mark.parametrize("checkpoint", CHECKPOINTS, ids=lambda p: p.name)
def test_show_plan_on_every_fixture_checkpoint(checkpoint: Path) -> None:
    result = invoke(checkpoint, "--preset", "demo", "--include-unfinished", "--show-plan")
    assert_ok(result)
    assert STAGES in result.stdout
    questions = load_benchmark(checkpoint).questions
    assert f"tasks: {len(questions) * 2} = {len(questions)} question(s) x 2 answering" in result.stdout
    shown = {(row[0], row[1]) for row in table_rows(result.stdout)}
    for pair in llm_traits(checkpoint):  # question ids and trait names are shown in full
        assert pair in shown


def test_show_plan_enable_all_lists_each_trait_with_default_settings() -> None:
    result = invoke(DEMO, "--preset", "demo", "--deep-judgment-rubric-mode", "enable_all", "--show-plan")
    assert_ok(result)
    assert "deep_judgment_rubric_mode: enable_all" in result.stdout
    assert STAGES in result.stdout
    rows = {(r[0], r[1]): r for r in table_rows(result.stdout)}
    expected = llm_traits(DEMO)
    assert len(expected) == 13
    for key in expected:
        _, _, kind, dj, excerpts, max_excerpts, threshold, retries, search, source = rows[key]
        assert kind.startswith("llm/")
        assert (dj, excerpts, max_excerpts, threshold, retries, search, source) == (
            "on", "True", "7", "0.80", "2", "False", "enable_all"
        )
    assert rows[("demo-capital", "has_number")][2:4] == ["regex", "n/a"]
    assert rows[("demo-bcl2", "bcl2_facts")][2:4] == ["metric", "n/a"]


def test_show_plan_custom_mode_question_specific_beats_global(tmp_path: Path) -> None:
    config = write_json(tmp_path / "dj.json", {
        "global": {"clarity": {"max_excerpts": 4, "fuzzy_match_threshold": 0.85},
                   "register": {"excerpt_enabled": False}},
        "question_specific": {"demo-capital": {"clarity": {"max_excerpts": 2, "fuzzy_match_threshold": 0.9,
                                                           "excerpt_retry_attempts": 1, "search_enabled": True}}},
    })
    result = invoke(DEMO, "--preset", "demo", "--deep-judgment-rubric-mode", "custom",
                    "--deep-judgment-rubric-config", config, "--deep-judgment-rubric-search-tool", "simulated",
                    "--show-plan")
    assert_ok(result)
    rows = {(r[0], r[1]): r[3:] for r in table_rows(result.stdout)}
    assert rows[("demo-capital", "clarity")] == ["on", "True", "2", "0.90", "1", "True", "custom:question_specific"]
    for qid in ("demo-boiling", "demo-bcl2", "demo-cold"):
        assert rows[(qid, "clarity")] == ["on", "True", "4", "0.85", "2", "False", "custom:global"]
    assert rows[("demo-cold", "register")] == ["on", "False", "7", "0.80", "2", "False", "custom:global"]
    assert rows[("demo-cold", "states_fact")][0] == "off"  # in neither section: no deep judgment
    assert rows[("demo-cold", "no_antibiotic_advice")][0] == "off"


# --------------------------------------------------------------------------- 3. errors


def _truncated(tmp: Path) -> list[object]:
    path = tmp / "truncated.jsonld"
    path.write_text(DEMO.read_text(encoding="utf-8")[:2000], encoding="utf-8")
    return [path, "--preset", "demo"]


def _demo_with(tmp: Path, name: str, edit: Callable[[dict[str, Any]], None]) -> Path:
    data = json.loads(DEMO.read_text(encoding="utf-8"))
    edit(data)
    return write_json(tmp / name, data)


def _trait(data: dict[str, Any], name: str) -> dict[str, Any]:
    trait: dict[str, Any] = next(t for t in data["rating"] if t["name"] == name)
    return trait


def _foo_trait(tmp: Path) -> list[object]:
    path = _demo_with(tmp, "foo.jsonld", lambda d: _trait(d, "has_number").update(additionalType="karenina:FooTrait"))
    return [path, "--preset", "demo"]


def _bad_regex(tmp: Path) -> list[object]:
    def edit(data: dict[str, Any]) -> None:
        for prop in _trait(data, "has_number")["additionalProperty"]:
            if prop["name"] == "pattern":
                prop["value"] = "(unclosed["

    return [_demo_with(tmp, "badregex.jsonld", edit), "--preset", "demo"]


def _preset_typo(tmp: Path) -> list[object]:
    preset = demo_preset()
    preset["config"]["evalution_mode"] = preset["config"].pop("evaluation_mode")
    return [DEMO, "--preset", write_json(tmp / "typo.json", preset)]


def _not_json_answers(tmp: Path) -> list[object]:
    path = tmp / "answers.json"
    path.write_text("model-a: Paris\n", encoding="utf-8")
    return [DEMO, "--preset", "demo", "--answers", path]


ERRORS: dict[str, tuple[Callable[[Path], list[object]], list[str]]] = {
    "truncated-checkpoint": (_truncated, ["truncated.jsonld", "invalid JSON"]),
    "unknown-trait-kind": (_foo_trait, ["foo.jsonld", "karenina:FooTrait", "has_number"]),
    "bad-regex": (_bad_regex, ["badregex.jsonld", "has_number", "(unclosed["]),
    "preset-typo": (_preset_typo, ["typo.json", "evalution_mode", "did you mean evaluation_mode"]),
    "custom-without-config": (
        lambda tmp: [DEMO, "--preset", "demo", "--deep-judgment-rubric-mode", "custom"],
        ["deep_judgment_rubric_config", "--deep-judgment-rubric-config"],
    ),
    "missing-preset": (
        lambda tmp: [DEMO, "--preset", "no-such-preset"],
        ["no-such-preset", "available presets", "demo", "deep-judgment"],
    ),
    "answers-not-json": (_not_json_answers, ["answers.json", "invalid JSON at line 1"]),
    "resume-without-output": (lambda tmp: [DEMO, "--preset", "demo", "--resume"], ["--resume", "--output"]),
    "unknown-question-id": (lambda tmp: [DEMO, "--preset", "demo", "--question-ids", "nope"], ["nope"]),
    "question-index-out-of-range": (lambda tmp: [DEMO, "--preset", "demo", "--questions", "0,7"], ["'7'", "0-3"]),
    "missing-checkpoint": (lambda tmp: [tmp / "absent.jsonld", "--preset", "demo"], ["absent.jsonld"]),
}


def assert_clean_error(result: Result, needles: list[str]) -> None:
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, lines
    assert lines[0] == errors[0]
    assert any(line.startswith("hint: ") and len(line) > len("hint: ") for line in lines), lines
    assert len(lines) == 2, lines  # one error line, one hint line, nothing else
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_are_one_line_with_a_hint(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    make_args, needles = ERRORS[case]
    result = invoke(*make_args(tmp_path), "--no-cache")
    assert_clean_error(result, needles)
    assert not (tmp_path / "verify-results").exists()  # nothing was run or written


def test_debug_prints_the_traceback(tmp_path: Path) -> None:
    result = invoke(*_truncated(tmp_path), "--no-cache", "--output", tmp_path / "out.json", "--debug")
    assert result.exit_code == 1
    assert "Traceback" in result.stderr and "BenchmarkError" in result.stderr
    assert "truncated.jsonld" in result.stderr


def test_an_unexpected_exception_is_one_line_unless_debug(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import verify.cli as cli

    def boom(flags: dict[str, Any]) -> int:
        raise KeyError("sk-proj-abcdefghijklmnopqrstuvwxyz0123")

    monkeypatch.setattr(cli, "_main", boom)
    result = invoke(DEMO, "--preset", "demo")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: internal error: KeyError") and "Traceback" not in result.stderr
    assert "abcdefghijklmnop" not in result.stderr and "--debug" in result.stderr
    debug = invoke(DEMO, "--preset", "demo", "--debug")
    assert "Traceback" in debug.stderr and "abcdefghijklmnop" not in debug.stderr


def _python_m_verify(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "verify", *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=60,
    )


def test_real_process_error_and_debug_traceback(tmp_path: Path) -> None:
    args = [*_truncated(tmp_path), "--no-cache", "--output", tmp_path / "out.json"]
    plain = _python_m_verify(*args, cwd=tmp_path)
    assert plain.returncode == 1
    assert plain.stdout == ""
    assert "Traceback" not in plain.stderr
    assert plain.stderr.splitlines()[0].startswith("error: ")
    assert plain.stderr.splitlines()[1].startswith("hint: ")
    debug = _python_m_verify(*args, "--debug", cwd=tmp_path)
    assert debug.returncode == 1
    assert "Traceback" in debug.stderr
    assert "BenchmarkError" in debug.stderr


def test_real_process_usage_error_exits_2(tmp_path: Path) -> None:
    proc = _python_m_verify(DEMO, "--no-such-flag", cwd=tmp_path)
    assert proc.returncode == 2
    assert "--no-such-flag" in proc.stderr


# --------------------------------------------------------------------------- 4. end-to-end runs


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".csv"])
def test_demo_run_writes_every_format(suffix: str, tmp_path: Path) -> None:
    result, out = run_demo(tmp_path, output=f"results{suffix}")
    assert_ok(result)
    assert "coverage: judged 44 of 44 evaluations (100.0%; by the judge 28 of 28, by code 16 of 16)" in result.stdout
    assert ("tasks: 8 (resumed 0) | passed 0 | judged (no pass rule) 8 | failed 0 | incomplete 0 | with errors 0 | "
            "pass rate no pass rule"
            in result.stdout)
    assert f"results: {out}" in result.stdout
    assert out.exists()
    assert not (tmp_path / f"results{suffix}.progress.jsonl").exists()
    results = load_results(out)
    assert len(results) == 8
    if suffix == ".csv":
        assert {r["success"] for r in results} == {"True"}
        assert {r["verdict"] for r in results} == {"judged"} and {r["unscored"] for r in results} == {""}
        assert {r["judged"] for r in results} >= {"5/5"}
        assert {r["question_id"] for r in results} == {"demo-capital", "demo-boiling", "demo-bcl2", "demo-cold"}
    else:
        keys = {(r["metadata"]["question_id"], r["metadata"]["answering"]["config_id"]) for r in results}
        assert len(keys) == 8
        assert all(r["template"]["answer_source"] == "recorded" for r in results)


def wrong_answers(tmp_path: Path) -> Path:
    """The demo answers with model-a's capital of France wrong (its template fails on content)."""
    data = json.loads(ANSWERS.read_text(encoding="utf-8"))
    data["model-a"]["demo-capital"] = "Berlin is the capital of France."
    return write_json(tmp_path / "wrong.json", data)


def test_fail_under_exits_4(tmp_path: Path) -> None:
    templates = ("--evaluation-mode", "template_and_rubric")  # the demo's templates fail 3 of 8 tasks
    result, out = run_demo(tmp_path, *templates, "--fail-under", "0.7")
    assert result.exit_code == 4, result.output
    assert "gate 'pass_rate >= 0.7' not met: 0.625" in result.stderr
    assert len(load_results(out)) == 8  # the results are still saved
    assert run_demo(tmp_path, *templates, "--fail-under", "0.6", output="again.json")[0].exit_code == 0


def test_gates_exit_4_and_are_in_the_results_header(tmp_path: Path) -> None:
    templates = ("--evaluation-mode", "template_and_rubric")
    result, out = run_demo(tmp_path, *templates, "--gate", "coverage >= 0.99", "--gate", "pass_rate > 0.9")
    assert result.exit_code == 4, result.output
    assert "gate 'pass_rate > 0.9' not met: 0.625" in result.stderr and "coverage >= 0.99' not met" not in result.stderr
    gates = json.loads(out.read_text())["metadata"]["gates"]
    assert [(g["gate"], g["passed"]) for g in gates] == [("coverage >= 0.99", True), ("pass_rate > 0.9", False)]
    bad = run_demo(tmp_path, "--gate", "pas_rate >= 0.9", output="bad.json")[0]
    assert bad.exit_code == 1 and "did you mean pass_rate" in bad.output


def test_fail_under_outside_0_1_is_a_usage_error_before_the_run(tmp_path: Path) -> None:
    result, out = run_demo(tmp_path, "--fail-under", "2")
    assert result.exit_code == 2
    assert "--fail-under" in result.output and not out.exists()


def test_fail_under_exit_status_of_the_real_process(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    proc = _python_m_verify(DEMO, "--preset", "demo", "--answers", wrong_answers(tmp_path), "--no-cache",
                            "--output", out, "--fail-under", "0.9", "--question-ids", "demo-capital",
                            "--evaluation-mode", "template_and_rubric", cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    assert "pass rate 0.500" in proc.stdout
    assert len(load_results(out)) == 2


@pytest.mark.parametrize(
    ("flags", "count", "question_ids"),
    [
        (["--replicate-count", "2"], 16, {"demo-capital", "demo-boiling", "demo-bcl2", "demo-cold"}),
        (["--question-ids", "demo-capital"], 2, {"demo-capital"}),
        (["--questions", "0,2-3"], 6, {"demo-capital", "demo-bcl2", "demo-cold"}),
    ],
    ids=["replicates", "question-ids", "question-indices"],
)
def test_demo_run_selection(flags: list[str], count: int, question_ids: set[str], tmp_path: Path) -> None:
    result, out = run_demo(tmp_path, *flags)
    assert_ok(result)
    assert f"tasks: {count} (resumed 0)" in result.stdout
    results = load_results(out)
    assert len(results) == count
    assert {r["metadata"]["question_id"] for r in results} == question_ids
    if "--replicate-count" in flags:
        assert sorted({r["metadata"]["replicate"] for r in results}) == [1, 2]
        assert len({r["metadata"]["result_id"] for r in results}) == 16


def test_default_output_path_is_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke(DEMO, "--preset", "demo", "--answers", ANSWERS, "--no-cache", "--question-ids", "demo-cold")
    assert_ok(result)
    assert len(load_results(tmp_path / "verify-results" / "demo.json")) == 2


def test_cache_dir_serves_a_second_run(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    args = [DEMO, "--preset", "demo", "--answers", ANSWERS, "--cache-dir", cache, "--question-ids", "demo-capital"]
    first = invoke(*args, "--output", tmp_path / "first.json")
    second = invoke(*args, "--output", tmp_path / "second.json")
    assert_ok(first)
    assert_ok(second)
    assert (cache / "responses.sqlite").exists()
    assert re.search(r"model calls: 0 live \(0 HTTP attempts\), [1-9]\d* from cache", second.stdout), second.stdout
    # exports list results in the order tasks finished, which concurrency may change: compare by task
    scores = [{r["verify"]["task_key"]: r["rubric"]["trait_status"] for r in load_results(tmp_path / n)}
              for n in ("first.json", "second.json")]
    assert len(scores[0]) == 2 and scores[0] == scores[1]


# --------------------------------------------------------------------------- 5. deep judgment through the CLI


def failures(results: list[dict[str, Any]]) -> dict[tuple[str, str], str | None]:
    return {
        (r["metadata"]["answering"]["config_id"], r["metadata"]["question_id"]):
            (r["metadata"]["failure"] or {}).get("category")
        for r in results
    }


def demo_tasks() -> set[tuple[str, str]]:
    """(answering model id, question id) of every task of the demo run."""
    answers: dict[str, dict[str, str]] = json.loads(ANSWERS.read_text(encoding="utf-8"))
    return {(m, q) for m, per_q in answers.items() for q in per_q}


def test_fabricated_excerpts_fail_every_task(tmp_path: Path) -> None:
    preset = judge_preset(tmp_path, "fabricating.json", fabricate_rate=1.0)
    result, out = run_demo(tmp_path, preset=preset)
    assert result.exit_code == 0, result.output  # the run completed; failing tasks are results, not errors
    assert "passed 0 | failed 8 | incomplete 0 | with errors 0 | pass rate no pass rule" in result.stdout
    assert f"failures: {DJ_FAIL} 8" in result.stdout
    assert "0 excerpts validated" in result.stdout and "26 traits with no quote found in the answer" in result.stdout
    results = load_results(out)
    assert len(results) == 8
    assert set(failures(results)) == demo_tasks()
    assert set(failures(results).values()) == {DJ_FAIL}
    for r in results:
        assert r["metadata"]["failure"]["stage"] == "deep_judgment_rubric_auto_fail"
        assert r["verify"]["errors"] == []
        dj = r["deep_judgment_rubric"]
        assert set(dj["traits_without_valid_excerpts"]) >= {"clarity", "states_fact", "register"}
        assert all(m["excerpt_validation_failed"] for m in dj["trait_metadata"].values())


def test_honest_excerpts_pass_every_task(tmp_path: Path) -> None:
    preset = judge_preset(tmp_path, "honest.json", fabricate_rate=0.0)
    result, out = run_demo(tmp_path, preset=preset)
    assert_ok(result)
    assert "passed 0 | judged (no pass rule) 8 | failed 0" in result.stdout  # the demo has no pass rule
    assert "failures:" not in result.stdout
    results = load_results(out)
    assert len(results) == 8
    assert set(failures(results)) == demo_tasks()
    assert set(failures(results).values()) == {None}
    for r in results:
        assert r["deep_judgment_rubric"]["traits_without_valid_excerpts"] == []
        assert all(m["evidence"] in ("excerpts", "absence") for m in r["deep_judgment_rubric"]["trait_metadata"].values())


def test_partial_fabrication_fails_exactly_the_predicted_tasks(tmp_path: Path) -> None:
    answers: dict[str, dict[str, str]] = json.loads(ANSWERS.read_text(encoding="utf-8"))

    def predicted(seed: int) -> set[tuple[str, str]]:
        faults = Faults(fabricate_excerpts=0.5, seed=seed)
        return {(m, q) for m, per_q in answers.items() for q, text in per_q.items() if fabricates(text, faults)}

    everything = {(m, q) for m, per_q in answers.items() for q in per_q}
    seed = next(s for s in range(100) if predicted(s) and predicted(s) != everything)
    expected_fail = predicted(seed)
    preset = judge_preset(tmp_path, "partial.json", fabricate_rate=0.5, seed=seed)
    result, out = run_demo(tmp_path, preset=preset)
    assert result.exit_code == 0, result.output
    got = failures(load_results(out))
    assert set(got) == everything
    assert {k for k, v in got.items() if v == DJ_FAIL} == expected_fail
    assert {k for k, v in got.items() if v is None} == everything - expected_fail
    n = len(expected_fail)
    assert f"passed 0 | judged (no pass rule) {8 - n} | failed {n}" in result.stdout
    assert f"failures: {DJ_FAIL} {n}" in result.stdout


# --------------------------------------------------------------------------- 6. seed-003 CLI examples

SEED_EXAMPLES = [
    "karenina verify benchmark.jsonld --preset my_preset.json --deep-judgment-rubric-mode enable_all",
    "karenina verify benchmark.jsonld --preset my_preset.json --deep-judgment-rubric-mode custom "
    "--deep-judgment-rubric-config rubric_dj_config.json",
    "karenina verify benchmark.jsonld --preset my_preset.json --deep-judgment-rubric-mode enable_all "
    "--deep-judgment-rubric-max-excerpts 5 --deep-judgment-rubric-fuzzy-threshold 0.90 "
    "--deep-judgment-rubric-retry-attempts 3",
]
RUBRIC_DJ_CONFIG = {
    "global": {
        "clarity": {"enabled": True, "excerpt_enabled": True, "max_excerpts": 5},
        "register": {"enabled": True, "excerpt_enabled": False},
    },
    "question_specific": {
        "demo-capital": {"clarity": {"enabled": True, "excerpt_enabled": True, "fuzzy_match_threshold": 0.90}},
    },
}


def _settings(max_excerpts: int, threshold: float, retries: int, source: str, excerpts: bool = True) -> dict[str, Any]:
    return {"enabled": True, "excerpt_enabled": excerpts, "max_excerpts": max_excerpts,
            "fuzzy_match_threshold": threshold, "excerpt_retry_attempts": retries, "search_enabled": False,
            "source": source}


def _expected_enable_all(qid: str, trait: str, numbers: tuple[int, float, int]) -> dict[str, Any]:
    return _settings(*numbers, "enable_all")


def _expected_custom(qid: str, trait: str, numbers: tuple[int, float, int]) -> dict[str, Any] | None:
    if trait == "clarity" and qid == "demo-capital":
        return _settings(7, 0.90, 2, "custom:question_specific")
    if trait == "clarity":
        return _settings(5, 0.80, 2, "custom:global")
    if trait == "register":
        return _settings(7, 0.80, 2, "custom:global", excerpts=False)
    return None


SEED_CASES = [
    (SEED_EXAMPLES[0], _expected_enable_all, (7, 0.80, 2)),
    (SEED_EXAMPLES[1], _expected_custom, (7, 0.80, 2)),
    (SEED_EXAMPLES[2], _expected_enable_all, (5, 0.90, 3)),
]


def test_seed_examples_are_the_documented_ones() -> None:
    block = SEED_003.read_text(encoding="utf-8").split("### Via CLI", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    lines = block.replace("\\\n", " ").splitlines()
    assert [" ".join(line.split()) for line in lines if line.startswith("karenina ")] == SEED_EXAMPLES


@pytest.mark.parametrize(("command", "expected", "numbers"), SEED_CASES, ids=["enable_all", "custom", "tuned"])
def test_seed_003_cli_examples_run_as_written(
    command: str, expected: Callable[..., dict[str, Any] | None], numbers: tuple[int, float, int],
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(DEMO, tmp_path / "benchmark.jsonld")
    preset = demo_preset()
    del preset["config"]["deep_judgment_rubric_mode"]  # a simulated preset with deep judgment off
    write_json(tmp_path / "my_preset.json", preset)
    write_json(tmp_path / "rubric_dj_config.json", RUBRIC_DJ_CONFIG)
    argv = shlex.split(command)
    assert argv[:2] == ["karenina", "verify"]
    result = invoke(*argv[2:], "--no-cache", "--output", tmp_path / "results.json")
    assert_ok(result)
    assert "with errors 0" in result.stdout
    results = load_results(tmp_path / "results.json")
    assert len(results) == 8
    assert set(failures(results)) == demo_tasks()
    llm = llm_traits(DEMO)
    assert {q for q, _ in llm} == {qid for _, qid in demo_tasks()}
    for r in results:
        qid = r["metadata"]["question_id"]
        metadata = r["deep_judgment_rubric"]["trait_metadata"]
        for q, trait in llm:
            if q != qid:
                continue
            want = expected(qid, trait, numbers)
            if want is None:
                assert trait not in metadata
                assert trait in r["deep_judgment_rubric"]["standard_rubric_scores"]
            else:
                assert metadata[trait]["settings"] == want, (qid, trait)


# --------------------------------------------------------------------------- 7. resume


def test_resume_after_a_finished_run_does_nothing_again(tmp_path: Path) -> None:
    first, out = run_demo(tmp_path, output="out.jsonl")
    assert_ok(first)
    ids = sorted(r["metadata"]["result_id"] for r in load_results(out))
    stamps = sorted((r["metadata"]["result_id"], r["metadata"]["execution_time"]) for r in load_results(out))
    # the finished export seeds the resume, so every task counts as done and none runs again
    again, _ = run_demo(tmp_path, "--resume", output="out.jsonl")
    assert_ok(again)
    assert "tasks: 8 (resumed 8)" in again.stdout
    assert sorted((r["metadata"]["result_id"], r["metadata"]["execution_time"]) for r in load_results(out)) == stamps
    assert sorted(r["metadata"]["result_id"] for r in load_results(out)) == ids


def test_resume_skips_tasks_saved_in_the_progress_file(tmp_path: Path) -> None:
    full, out = run_demo(tmp_path, output="out.jsonl")
    assert_ok(full)
    lines = out.read_text(encoding="utf-8").splitlines(keepends=True)
    progress = tmp_path / "out.jsonl.progress.jsonl"
    progress.write_text("".join(lines[:3]) + lines[3][:40], encoding="utf-8")  # 3 saved + a torn line
    out.unlink()
    resumed, _ = run_demo(tmp_path, "--resume", output="out.jsonl")
    assert_ok(resumed)
    assert "tasks: 8 (resumed 3)" in resumed.stdout
    assert "judged (no pass rule) 8" in resumed.stdout
    results = load_results(out)
    assert len(results) == 8
    assert sorted(r["metadata"]["result_id"] for r in results) == sorted(json.loads(x)["metadata"]["result_id"]
                                                                        for x in lines)
    assert not progress.exists()


def test_without_resume_a_stale_progress_file_is_refused_unless_overwrite(tmp_path: Path) -> None:
    full, out = run_demo(tmp_path, output="out.jsonl")
    assert_ok(full)
    stale = tmp_path / "out.jsonl.progress.jsonl"
    stale.write_text(out.read_text(encoding="utf-8"), encoding="utf-8")
    refused, _ = run_demo(tmp_path, output="out.jsonl")
    assert refused.exit_code == 1
    assert "holds 8 finished task(s) of an earlier run" in refused.stderr and "--resume" in refused.stderr
    assert stale.read_text(encoding="utf-8") == out.read_text(encoding="utf-8")  # untouched
    fresh, _ = run_demo(tmp_path, "--overwrite", output="out.jsonl")
    assert_ok(fresh)
    assert "tasks: 8 (resumed 0)" in fresh.stdout
    assert len(load_results(out)) == 8


# --------------------------------------------------------------------------- 8. README


def readme_setup_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", setup, re.S)]


def test_readme_setup_commands_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    commands = readme_setup_commands()
    assert len(commands) == 2
    demo_cmd, test_cmd = commands
    assert "pytest" in test_cmd
    verify_part = next(part.strip() for part in demo_cmd.split("&&") if part.strip().startswith(".venv/bin/verify "))
    argv = shlex.split(verify_part)[1:]
    assert "--output" in argv
    at = argv.index("--output")
    argv[at + 1] = str(tmp_path / argv[at + 1])  # verify-results/demo.json, under tmp_path
    argv = [str(REPO / a) if (REPO / a).is_file() else a for a in argv]  # repo-relative files
    monkeypatch.chdir(tmp_path)
    result = invoke(*argv, "--no-cache")
    assert_ok(result)
    assert "tasks: 8 (resumed 0) | passed 0 | judged (no pass rule) 8" in result.stdout
    assert "pass rate no pass rule" in result.stdout
    assert "by model (answering / judge)" in result.stdout
    assert "by trait" in result.stdout
    assert len(load_results(tmp_path / "verify-results" / "demo.json")) == 8


def test_readme_flags_exist() -> None:
    """Every ``--flag`` the README's command-line section names is an option of the CLI."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    usage = text.split("## Use it from the command line", 1)[1].split("\n## ", 1)[0]
    group = typer.main.get_command(app)
    commands = list(getattr(group, "commands", {}).values()) or [group]
    options = {opt for command in commands for param in command.params for opt in [*param.opts, *param.secondary_opts]}
    named = {flag for flag in re.findall(r"--[a-z][a-z-]*[a-z]", usage) if flag != "--no"}  # "--no-..." = negation
    assert named, "no flags found in the README"
    assert sorted(named - options) == []


def test_missing_api_key_fails_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "o.json"
    result = runner.invoke(app, [str(DEMO), "--preset", "openai", "--no-cache", "--output", str(out)])
    assert result.exit_code == 1
    assert "OPENAI_API_KEY" in result.output and "hint:" in result.output
    assert not out.exists() and not Path(str(out) + ".progress.jsonl").exists()


# --------------------------------------------------------------------------- coverage: exit 5


def test_a_stub_judge_exits_5_and_nothing_passes(tmp_path: Path) -> None:
    """A judge that answers every call with the same sentence judged nothing: exit 5, 0 of N, no pass."""
    preset = judge_preset(tmp_path, "stub.json", constant_reply="The answer looks fine to me.")
    result, out = run_demo(tmp_path, preset=preset)
    assert result.exit_code == 5, result.output
    assert "coverage: judged 16 of 44 evaluations (36.4%; by the judge 0 of 28, by code 16 of 16); 28 unscored:" in result.stdout
    assert "passed 0 | failed 0 | incomplete 8" in result.stdout
    assert "pass rate no pass rule" in result.stdout
    assert "is below --min-coverage 1.0" in result.stderr
    results = load_results(out)
    assert len(results) == 8 and {r["verify"]["verdict"] for r in results} == {"incomplete"}
    # --fail-under cannot turn it green either, and a lower --min-coverage still refuses 0%
    assert run_demo(tmp_path, "--fail-under", "0.9", "--set", "rubric_pass_threshold=0.5", preset=preset,
                    output="b.json")[0].exit_code == 5
    assert run_demo(tmp_path, "--min-coverage", "0.5", preset=preset, output="c.json")[0].exit_code == 5


def test_min_coverage_zero_lets_an_incomplete_run_through_to_fail_under(tmp_path: Path) -> None:
    preset = judge_preset(tmp_path, "stub.json", constant_reply="The answer looks fine to me.")
    result, _ = run_demo(tmp_path, "--min-coverage", "0", "--fail-under", "0.5", "--set", "rubric_pass_threshold=0.5",
                         preset=preset)
    assert result.exit_code == 4, result.output


def test_connection_refused_says_so_in_one_line_and_fast(tmp_path: Path) -> None:
    import socket
    import time

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again when the block ends: nothing listens there
    preset = demo_preset(parsing_models=[{
        "id": "judge", "model_name": "local", "interface": "openai_endpoint",
        "endpoint_base_url": f"http://127.0.0.1:{port}", "request_timeout": 30,
    }])
    path = write_json(tmp_path / "local.json", preset)
    started = time.perf_counter()
    result, _ = run_demo(tmp_path, "--question-ids", "demo-capital", preset=path)
    assert time.perf_counter() - started < 10
    assert result.exit_code == 3, result.output
    # the first calls say "cannot connect to <url> (connection refused): is the server running?"; three of
    # those open the endpoint's breaker, and the calls after them are not even sent
    refused = f"endpoint http://127.0.0.1:{port}/v1 is not answering (3 connection failures in a row); call not sent"
    assert f"{refused} (connection refused: is the server running?)" in result.stderr
