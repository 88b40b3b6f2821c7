"""The batch runner: progressive save, resume after SIGKILL, exports, replicates, cache."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from verify.benchmark.jsonld import load_benchmark
from verify.config.verification import VerificationConfig
from verify.results.export import export, load_results
from verify.results.store import progress_path
from verify.run.runner import run_verification

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "verify" / "examples" / "demo" / "demo.jsonld"
ANSWERS = ROOT / "verify" / "examples" / "demo" / "answers.json"
VOLATILE = {"execution_time", "timestamp"}


def sim(model_id: str, **extra: object) -> dict[str, object]:
    return {"id": model_id, "model_provider": "simulated", "model_name": f"simulated-{model_id}",
            "interface": "simulated", "extra_kwargs": extra or None}


def demo_config(**kw: object) -> VerificationConfig:
    base: dict[str, object] = dict(
        answering_models=[sim("model-a"), sim("model-b")],
        parsing_models=[sim("judge", latency_ms=kw.pop("latency_ms", 0))],
        evaluation_mode="rubric_only", deep_judgment_rubric_mode="enable_all",
    )
    base.update(kw)
    return VerificationConfig.model_validate(base)


def stable(result_json: dict) -> dict:
    meta = {k: v for k, v in result_json["metadata"].items() if k not in VOLATILE}
    return {**result_json, "metadata": meta}


def by_key(path: Path) -> dict[str, dict]:
    out = {}
    for r in load_results(path):
        out[r.metadata.task_key] = stable(json.loads(r.model_dump_json()))
    return out


def test_every_task_gets_one_result_and_progress_file_is_removed(tmp_path: Path) -> None:
    answers = json.loads(ANSWERS.read_text())
    out = tmp_path / "r.jsonl"
    outcome = run_verification(load_benchmark(DEMO), demo_config(), answers=answers, output=out)
    assert outcome.tasks == 8 and outcome.summary.total == 8
    assert len(load_results(out)) == 8
    assert not progress_path(out).exists()
    keys = [r.metadata.task_key for r in load_results(out)]
    assert len(set(keys)) == 8


def test_replicates_multiply_tasks_and_are_numbered(tmp_path: Path) -> None:
    answers = json.loads(ANSWERS.read_text())
    outcome = run_verification(load_benchmark(DEMO), demo_config(replicate_count=2), answers=answers)
    reps = sorted({r.metadata.replicate for r in outcome.results})
    assert outcome.summary.total == 16 and reps == [1, 2]


def test_exports_json_jsonl_csv(tmp_path: Path) -> None:
    answers = json.loads(ANSWERS.read_text())
    outcome = run_verification(load_benchmark(DEMO), demo_config(), answers=answers)
    for suffix in (".json", ".jsonl", ".csv"):
        path = tmp_path / f"out{suffix}"
        assert export(outcome.results, path) == 8
        assert path.stat().st_size > 0
    assert len(load_results(tmp_path / "out.json")) == 8
    header = (tmp_path / "out.csv").read_text().splitlines()[0]
    assert "rubric_clarity" in header and "traits_without_valid_excerpts" in header


def test_rerun_with_cache_makes_zero_live_calls(tmp_path: Path) -> None:
    answers = json.loads(ANSWERS.read_text())
    bench, config = load_benchmark(DEMO), demo_config()
    first = run_verification(bench, config, answers=answers, cache_dir=tmp_path / "cache")
    second = run_verification(bench, config, answers=answers, cache_dir=tmp_path / "cache")
    assert first.summary.model_calls > 0
    total_first = first.summary.model_calls + first.summary.cached_calls
    assert second.summary.model_calls == 0 and second.summary.cached_calls == total_first


def _write_preset(tmp_path: Path, latency_ms: int) -> Path:
    config = demo_config(latency_ms=latency_ms, async_max_workers=2)
    path = tmp_path / "preset.json"
    path.write_text(json.dumps({"config": json.loads(config.model_dump_json(exclude={"deep_judgment_rubric_search_tool"}))}))
    return path


def _cli(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "verify", *args]


def test_sigkill_then_resume_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    preset = _write_preset(tmp_path, latency_ms=40)
    common = [str(DEMO), "--preset", str(preset), "--answers", str(ANSWERS), "--no-cache"]
    reference = tmp_path / "reference.jsonl"
    done = subprocess.run(_cli([*common, "--output", str(reference)]), capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr

    out = tmp_path / "killed.jsonl"
    proc = subprocess.Popen(_cli([*common, "--output", str(out)]), cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    progress = progress_path(out)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if progress.exists() and progress.read_text().count("\n") >= 4:  # header + 3 results
            break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    lines_before = progress.read_text().count("\n") - 1  # the header line holds the run's identity
    assert 3 <= lines_before < 8, "the run must be killed part-way"
    assert not out.exists()

    resumed = subprocess.run(_cli([*common, "--output", str(out), "--resume"]), capture_output=True, text=True, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed {lines_before}" in resumed.stdout
    got, want = by_key(out), by_key(reference)
    assert len(load_results(out)) == 8
    assert got == want


def test_price_table_gives_a_cost_from_live_tokens(tmp_path: Path) -> None:
    answers = json.loads(ANSWERS.read_text())
    prices = {"simulated-judge": {"input_per_million": 1.0, "output_per_million": 2.0}}
    outcome = run_verification(load_benchmark(DEMO), demo_config(), answers=answers, prices=prices)
    live_in = live_out = 0
    for r in outcome.results:
        for stage, u in r.template.usage_metadata.items():
            if stage != "total" and u.calls:
                share = (u.calls - u.cached_calls) / u.calls
                live_in += share * u.input_tokens
                live_out += share * u.output_tokens
    assert outcome.summary.cost_usd > 0
    assert abs(outcome.summary.cost_usd - (live_in * 1.0 + live_out * 2.0) / 1e6) < 1e-9
    assert outcome.summary.unpriced_models == set()


def test_done_keys_reruns_tasks_with_any_transient_error(tmp_path: Path) -> None:
    from verify.results.store import done_keys

    def line(key: str, failure: dict | None, errors: list[dict]) -> str:
        return json.dumps({"metadata": {"task_key": key, "failure": failure, "errors": errors}}) + "\n"

    path = tmp_path / "p.jsonl"
    content = {"category": "content", "stage": "verify_template", "reason": "no", "group": "content"}
    path.write_text(
        line("passed", None, [])
        + line("content-only", content, [])
        + line("content-and-outage", content, [{"stage": "rubric_evaluation", "message": "x", "category": "rate_limit"}])
        + line("timed-out", {"category": "timeout", "stage": "s", "reason": "r", "group": "retry"}, [])
        + '{"metadata": {"task_key": "torn"'  # a killed write
    )
    assert done_keys(path) == {"passed", "content-only"}


def test_rubric_trait_names_limits_the_traits_evaluated() -> None:
    answers = json.loads(ANSWERS.read_text())
    config = demo_config(rubric_trait_names=["clarity", "has_number"], deep_judgment_rubric_mode="disabled")
    outcome = run_verification(load_benchmark(DEMO), config, answers=answers)
    tasks = {(r.metadata.answering.config_id, r.metadata.question_id) for r in outcome.results}
    assert len(outcome.results) == 8
    assert tasks == {(m, q) for m, per_q in answers.items() for q in per_q}
    for r in outcome.results:
        assert r.rubric is not None and set(r.rubric.trait_status) == {"clarity", "has_number"}
