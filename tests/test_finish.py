"""The end of a run: one pass over the progress file, no result built again from this process's lines,
the last line of each task kept, and the CLI holding no results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import verify.run.finish as finish
import verify.run.runner as runner
from verify.benchmark.jsonld import load_benchmark
from verify.cli import app
from verify.config.preset import load_preset
from verify.results import store
from verify.results.models import VerificationResult
from verify.results.store import saved_state
from verify.results.summary import Summary
from verify.results.writer import ResultWriter
from verify.run.finish import Finish, finish_run

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "benchmarks" / "demo" / "demo.jsonld"
ANSWERS = REPO / "benchmarks" / "demo" / "answers.json"


def answers() -> dict[str, dict[str, str]]:
    data: dict[str, dict[str, str]] = json.loads(ANSWERS.read_text(encoding="utf-8"))
    return data


def exported_keys(path: Path) -> list[str]:
    return [r["verify"]["task_key"] for r in json.loads(path.read_text(encoding="utf-8"))["results"]]


def test_a_run_reads_its_progress_file_once_and_builds_no_result_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scans: list[Path] = []
    real_scan = store.scan

    def scan(path: Path) -> Any:
        scans.append(path)
        return real_scan(path)

    def from_export(data: dict[str, Any]) -> VerificationResult:
        raise AssertionError("this process's lines are copied, not read back into results")

    monkeypatch.setattr(store, "scan", scan)
    monkeypatch.setattr(finish, "from_export", from_export)
    out = tmp_path / "r.json"
    outcome = runner.run_verification(load_benchmark(DEMO), load_preset("demo"), answers=answers(), output=out,
                                      keep_results=False)
    assert len(scans) == 1 and outcome.results == []
    assert outcome.summary.total == 8 and len(set(exported_keys(out))) == 8


def test_kept_results_follow_the_export_and_are_the_runs_own(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    outcome = runner.run_verification(load_benchmark(DEMO), load_preset("demo"), answers=answers(), output=out)
    saved = [json.loads(line)["verify"]["task_key"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r.metadata.task_key for r in outcome.results] == saved and len(saved) == 8


def test_the_last_line_of_each_task_is_exported_and_earlier_ones_count_as_earlier(tmp_path: Path) -> None:
    first = runner.run_verification(load_benchmark(DEMO), load_preset("demo"), answers=answers())
    a, b, c = first.results[:3]
    progress = tmp_path / "r.json.progress.jsonl"
    writer = ResultWriter(progress, append=False, header={"identity": {}})
    for result in (a, b, a):  # a was saved twice by earlier runs: the second line is its result
        writer.write(result)
    writer.close()
    before = saved_state(progress)
    writer = ResultWriter(progress, append=True)
    writer.write(b)  # this process ran b again
    writer.write(c)
    writer.close()
    live = Summary()
    live.add(b)
    live.add(c)
    end = Finish(progress, tmp_path / "r.json", before, {b.metadata.task_key, c.metadata.task_key}, live,
                 lambda s: {"tasks": s.total}, finished=3, kept={b.metadata.task_key: b, c.metadata.task_key: c})
    results = finish_run(end)
    keys = [r.metadata.task_key for r in (a, b, c)]
    assert exported_keys(tmp_path / "r.json") == keys and [r.metadata.task_key for r in results] == keys
    assert live.total == 3 and results[1] is b  # a was counted from the file; b and c were live
    assert json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["metadata"]["tasks"] == 3


def test_the_cli_keeps_no_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    real = runner.run_verification

    def run(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs["keep_results"])
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "run_verification", run)
    out = tmp_path / "r.json"
    done = CliRunner().invoke(app, [str(DEMO), "--preset", "demo", "--answers", str(ANSWERS), "--no-cache",
                                    "--output", str(out)])
    assert done.exit_code == 0, done.output
    assert seen == [False] and len(exported_keys(out)) == 8
