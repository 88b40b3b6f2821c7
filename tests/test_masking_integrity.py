"""Masking removes secrets from values, never names or structure: a trait called ``password`` or a
question called ``api_key`` runs, resumes and renders like any other, and a secret planted in an
answer, a header and a URL shows in no file a run writes.

Runs use the offline demo (simulated judge, recorded answers) through the CLI. A run whose final
export fails keeps its progress file, so the progress lines themselves can be read and resumed.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import Chromium, chromium_path
from typer.testing import CliRunner, Result

import verify.run.finish as finish
from verify.cli import app
from verify.report.page import data_of_page
from verify.results.store import progress_path
from verify.results.writer import HEADER_KEY
from verify.secrets import MASK, clear_secrets

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "verify" / "examples" / "demo"
SUITE_PRESET = REPO / "verify" / "examples" / "suite" / "offline.json"
RENAMED = {"demo-capital": "reset-password", "demo-boiling": "api_key"}
TRAIT = "password"  # the demo's global trait "clarity", renamed

ENV_SECRET = "envS3cretValue"  # registered from the environment; not key-shaped
HEADER_SECRET = "hdr12345xyz"  # under a header of the judge's config
URL_PASSWORD = "pw98765432"  # in the judge's endpoint URL
QUERY_SECRET = "qk55555555"  # in its ?api_key= parameter
PLANTED = (ENV_SECRET, HEADER_SECRET, URL_PASSWORD, QUERY_SECRET)


@pytest.fixture(autouse=True)
def empty_registry() -> Iterator[None]:
    clear_secrets()
    yield
    clear_secrets()


def invoke(*args: object) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def credential_named_checkpoint(folder: Path, changed: str | None = None) -> tuple[Path, Path]:
    """The demo with its global trait called ``password`` and two questions called ``reset-password``
    and ``api_key`` (``changed``: also a question whose text is edited); its recorded answers."""
    data = json.loads((DEMO / "demo.jsonld").read_text(encoding="utf-8"))
    assert data["rating"][0]["name"] == "clarity"
    data["rating"][0]["name"] = TRAIT
    for element in data["dataFeedElement"]:
        element["@id"] = RENAMED.get(element["@id"], element["@id"])
        if element["@id"] == changed:
            element["item"]["text"] += " Explain briefly."
    answers = json.loads((DEMO / "answers.json").read_text(encoding="utf-8"))
    answers = {model: {RENAMED.get(q, q): text for q, text in by_q.items()} for model, by_q in answers.items()}
    name = "changed.jsonld" if changed else "named.jsonld"
    return write_json(folder / name, data), write_json(folder / "answers.json", answers)


def keep_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    """The final export fails, so the progress file stays, as after a crash."""

    def export(*args: Any, **kwargs: Any) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(finish, "export_lines", export)


def progress_lines(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]  # every line is valid JSON, or this fails


def question_ids(results: list[dict[str, Any]]) -> set[str]:
    return {r["metadata"]["question_id"] for r in results}


def trait_names(results: list[dict[str, Any]]) -> set[str]:
    return {name for r in results for name in ((r.get("rubric") or {}).get("llm_trait_scores") or {})}


# --------------------------------------------------------------------------- names like credentials


def test_names_like_credentials_run_every_task_and_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bench, answers = credential_named_checkpoint(tmp_path)
    out = tmp_path / "r.json"
    args = ["--preset", "demo", "--answers", answers, "--no-cache", "--output", out]
    with monkeypatch.context() as patch:
        keep_progress(patch)
        first = invoke(bench, *args)
    assert first.exit_code != 0 and "all 8 result(s) are safe" in first.output, first.output

    progress = progress_path(out)
    header, *results = progress_lines(progress)
    assert HEADER_KEY in header and len(results) == 8
    assert question_ids(results) == {"reset-password", "api_key", "demo-bcl2", "demo-cold"}
    assert TRAIT in trait_names(results)
    fingerprints = json.dumps(header["identity"])
    assert '"reset-password"' in fingerprints and '"api_key"' in fingerprints and "***" not in fingerprints
    assert "***" not in progress.read_text(encoding="utf-8")

    # another question changed: resume names that one only
    changed, _ = credential_named_checkpoint(tmp_path, changed="demo-cold")
    refused = invoke(changed, *args, "--resume")
    assert refused.exit_code != 0
    assert "changed questions: demo-cold)" in refused.output, refused.output

    resumed = invoke(bench, *args, "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert "tasks: 8 (resumed 8)" in resumed.output
    exported = json.loads(out.read_text(encoding="utf-8"))["results"]
    assert len(exported) == 8 and question_ids(exported) == question_ids(results)
    assert TRAIT in trait_names(exported) and "***" not in out.read_text(encoding="utf-8")


def test_names_like_credentials_survive_jsonl_and_csv(tmp_path: Path) -> None:
    bench, answers = credential_named_checkpoint(tmp_path)
    for name in ("r.jsonl", "r.csv"):
        result = invoke(bench, "--preset", "demo", "--answers", answers, "--no-cache", "--output", tmp_path / name)
        assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 8 and {"reset-password", "api_key"} <= question_ids(lines) and TRAIT in trait_names(lines)
    with (tmp_path / "r.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {"reset-password", "api_key"} <= {row["question_id"] for row in rows}
    assert all(row[f"rubric_{TRAIT}"] not in ("", "***") for row in rows)
    assert all(json.loads(row["usage_metadata"]) for row in rows)  # JSON cells stay JSON


@pytest.mark.skipif(chromium_path() is None, reason="no chromium installed")
def test_the_evidence_page_of_names_like_credentials_renders(tmp_path: Path) -> None:
    bench, answers = credential_named_checkpoint(tmp_path)
    out, page = tmp_path / "r.json", tmp_path / "run.html"
    result = invoke(bench, "--preset", "demo", "--answers", answers, "--no-cache", "--output", out, "--report", page)
    assert result.exit_code == 0, result.output
    again = invoke("report", out, "-o", tmp_path / "report.html")
    assert again.exit_code == 0, again.output
    for path in (page, tmp_path / "report.html"):
        assert "reset-password" in json.dumps(data_of_page(path.read_text(encoding="utf-8")))
        with Chromium(timeout=30) as browser:
            browser.open(path)
            browser.wait_for("document.body && document.body.dataset.ready === '1'", timeout=15)
            browser.settle(0.1)
            assert not browser.errors, [str(p) for p in browser.errors]
            text = browser.evaluate("document.body.innerText")
            tasks = browser.evaluate("[...document.querySelectorAll('#tasks tr.task')].map(r => r.textContent)")
        assert "could not be read" not in text
        assert len(tasks) == 8 and any("reset-password" in t for t in tasks) and any("api_key" in t for t in tasks)


def test_a_suite_criterion_named_like_a_credential(tmp_path: Path) -> None:
    suite = {"name": "named", "tests": [
        {"id": "tokyo", "input": "What is the capital of Japan?", "ground_truth": "Tokyo",
         "output": "Tokyo is the capital of Japan and its largest city by far, home to millions.",
         "assertions": [{"type": "rubrics", "criteria": [
             {"id": "api_key", "outcome": "Names Tokyo as the capital of Japan", "weight": 2, "required": True},
             {"id": "client_secret", "outcome": "Adds a detail about Tokyo", "weight": 1}]}]},
        {"id": "auth-token", "input": "What is the capital of France?", "expected_output": "Paris",
         "output": "The capital of France is Paris.", "assertions": ["Names Paris as the capital of France"]},
    ]}
    out = tmp_path / "r.json"
    with pytest.MonkeyPatch.context() as patch:
        keep_progress(patch)
        invoke(write_json(tmp_path / "suite.json", suite), "--preset", SUITE_PRESET, "--no-cache", "--output", out)
    _, *results = progress_lines(progress_path(out))
    assert question_ids(results) == {"tokyo", "auth-token"}
    assert {"api_key", "client_secret"} <= trait_names(results)
    resumed = invoke(tmp_path / "suite.json", "--preset", SUITE_PRESET, "--no-cache", "--output", out, "--resume")
    assert resumed.exit_code == 0 and "tasks: 2 (resumed 2)" in resumed.output, resumed.output
    assert {"api_key", "client_secret"} <= trait_names(json.loads(out.read_text(encoding="utf-8"))["results"])


# --------------------------------------------------------------------------- planted secrets


def planted_run_inputs(folder: Path) -> tuple[Path, Path, Path]:
    """The demo with a judge whose config holds a header secret and URL credentials, and recorded
    answers that echo every planted secret (as a leaky tool or a prompt injection would)."""
    preset = json.loads((REPO / "verify" / "config" / "presets" / "demo.json").read_text(encoding="utf-8"))
    judge = preset["config"]["parsing_models"][0]
    judge["endpoint_base_url"] = f"http://eval:{URL_PASSWORD}@127.0.0.1:9/v1?api_key={QUERY_SECRET}"
    judge["extra_kwargs"] = {"default_headers": {"X-Custom-Auth": HEADER_SECRET}}
    answers = json.loads((DEMO / "answers.json").read_text(encoding="utf-8"))
    echo = f" (debug: env {ENV_SECRET}, header {HEADER_SECRET}, url {URL_PASSWORD}, param {QUERY_SECRET})"
    answers = {model: {q: text + echo for q, text in by_q.items()} for model, by_q in answers.items()}
    return DEMO / "demo.jsonld", write_json(folder / "planted.json", preset), write_json(folder / "answers.json", answers)


def written_files(folder: Path) -> Iterator[Path]:
    return (path for path in sorted(folder.rglob("*")) if path.is_file())


def test_planted_secrets_show_in_no_file_the_run_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bench, preset, answers = planted_run_inputs(tmp_path)
    monkeypatch.setenv("MY_SERVICE_API_KEY", ENV_SECRET)
    runs = tmp_path / "runs"
    args = [bench, "--preset", preset, "--answers", answers, "--no-cache"]
    with monkeypatch.context() as patch:
        keep_progress(patch)
        invoke(*args, "--output", runs / "kept.json")
    assert len(progress_lines(progress_path(runs / "kept.json"))) == 9  # header and 8 results, all valid JSON
    cached = [bench, "--preset", preset, "--answers", answers, "--cache-dir", runs / "cache"]  # the cache is a file too
    for output, extra in (("r.json", ["--report", runs / "run.html"]), ("r.jsonl", []), ("r.csv", [])):
        result = invoke(*(cached if output == "r.json" else args), "--output", runs / output, *extra)
        assert result.exit_code == 0, result.output
    assert invoke("report", runs / "r.json", "-o", runs / "report.html").exit_code == 0

    files = list(written_files(runs))
    assert {p.name for p in files} >= {"kept.json.progress.jsonl", "r.json", "r.jsonl", "r.csv", "run.html", "report.html",
                                       "responses.sqlite"}
    leaks = [(path.name, secret) for path in files for secret in PLANTED
             if secret in path.read_text(encoding="utf-8", errors="replace")]
    assert leaks == []
    # the answers were written, masked: the search above looked where the secrets would be
    masked = json.loads((runs / "r.json").read_text(encoding="utf-8"))["results"][0]["template"]["raw_llm_response"]
    assert f"env {MASK}, header {MASK}, url {MASK}, param {MASK}" in masked
