"""karenina's own readers take verify's exports (JSON, JSONL, CSV) of a deep-judgment run.

karenina is not a dependency of verify, so its readers run in a subprocess with an interpreter that
has it: ``KARENINA_PYTHON=/path/to/python`` (or karenina importable here). Without one these tests
are skipped. The run is the offline demo (recorded answers, the simulated judge) with the template
and the rubric, both through deep judgment.
"""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from peers import karenina_python

from verify.benchmark.jsonld import load_benchmark
from verify.config.verification import VerificationConfig
from verify.results.export import export
from verify.results.export_csv import KARENINA_HEAD, KARENINA_TAIL
from verify.run.runner import run_verification

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "verify" / "examples" / "demo" / "demo.jsonld"
ANSWERS = ROOT / "verify" / "examples" / "demo" / "answers.json"


PYTHON = karenina_python()
pytestmark = pytest.mark.skipif(PYTHON is None, reason="karenina is not importable (set KARENINA_PYTHON)")

# Runs under karenina's interpreter: argv is the JSON, JSONL and CSV exports; prints one JSON report.
READERS = r'''
import csv, io, json, sys
from pathlib import Path
from types import SimpleNamespace
from karenina.benchmark.core.results_io import ResultsIOManager
from karenina.benchmark.verification.stages.helpers.results_exporter import (
    export_verification_results_csv, export_verification_results_json_stream)
from karenina.schemas.verification import VerificationResult

json_path, jsonl_path, csv_path = map(Path, sys.argv[1:4])
report = {}
rs = ResultsIOManager.load_result_set_from_json(json_path)
report["loaded"] = len(rs)
report["metadata_keys"] = sorted(rs.metadata)
report["streamed"] = sum(1 for _ in ResultsIOManager.iter_from_json(json_path))
report["jsonl"] = sum(1 for line in jsonl_path.read_text().splitlines()
                      if line.strip() and VerificationResult.model_validate_json(line))
summary = rs.get_summary()
report["summary"] = {k: summary[k] for k in ("num_results", "num_with_template", "num_with_rubric",
                                             "num_with_judgment", "num_completed")}
report["frames"] = {
    "template": list(rs.get_template_results().to_dataframe().shape),
    "rubrics": list(rs.get_rubrics_results().to_dataframe().shape),
    "judgment": list(rs.get_judgment_results().to_dataframe().shape),
    "rubric_judgments": list(rs.get_rubric_judgments_results().to_dataframe().shape),
}
report["passed"] = {r.metadata.result_id: r.metadata.failure is None for r in rs}
ours = json.loads(json_path.read_text())
# every key karenina's model writes is in verify's result, section by section
missing = set()
for mine, theirs in zip(ours["results"], rs):
    dumped = theirs.model_dump(mode="json")
    for section, value in dumped.items():
        if isinstance(value, dict):
            missing |= {f"{section}.{k}" for k in value if k not in (mine.get(section) or {})}
        elif section not in mine:
            missing.add(section)
report["missing_keys"] = sorted(missing)
# karenina's JSON writer on the same results: the envelope verify writes has the same parts
definition = ours["shared_data"]["rubric_definition"] or {}
names = definition.get("trait_names") or []
rubric = SimpleNamespace(get_trait_names=lambda: list(names))
job = SimpleNamespace(job_id="job", start_time=None, end_time=None, total_questions=len(rs), successful_count=0,
                      failed_count=0, config=SimpleNamespace(answering_models=[], parsing_models=[]))
theirs_path = json_path.with_name("karenina.json")
export_verification_results_json_stream(job, iter(rs.results), rubric, is_complete=True, out_path=theirs_path)
theirs = json.loads(theirs_path.read_text())
report["envelope"] = {"ours": sorted(ours), "theirs": sorted(theirs),
                      "ours_meta": sorted(ours["metadata"]), "theirs_meta": sorted(theirs["metadata"]),
                      "ours_summary": sorted(ours["metadata"]["job_summary"]),
                      "theirs_summary": sorted(theirs["metadata"]["job_summary"]),
                      "format": [ours["format_version"], theirs["format_version"]]}
# karenina's CSV writer on the same results, next to verify's CSV
text = export_verification_results_csv(job, rs, rubric)
report["karenina_csv"] = list(csv.DictReader(io.StringIO(text)))
report["karenina_columns"] = next(csv.reader(io.StringIO(text)))
report["csv_loaded"] = len(ResultsIOManager.load_from_csv(csv_path))
own_csv = json_path.with_name("karenina.csv")
own_csv.write_text(text)
report["karenina_csv_loaded"] = len(ResultsIOManager.load_from_csv(own_csv))
print(json.dumps(report, default=str))
'''


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("exports")
    sim = {"model_provider": "simulated", "interface": "simulated", "temperature": 0.0}
    config = VerificationConfig.model_validate({
        "answering_models": [{"id": "model-a", "model_name": "simulated-answerer-a", **sim},
                             {"id": "model-b", "model_name": "simulated-answerer-b", **sim}],
        "parsing_models": [{"id": "judge", "model_name": "simulated-judge", **sim}],
        "evaluation_mode": "template_and_rubric", "deep_judgment_mode": "full",
        "deep_judgment_rubric_mode": "enable_all",
    })
    answers = json.loads(ANSWERS.read_text(encoding="utf-8"))
    outcome = run_verification(load_benchmark(DEMO), config, answers=answers, output=folder / "results.json",
                               keep_results=True)
    assert outcome.summary.total == 8
    assert any(r.deep_judgment is not None and r.deep_judgment.deep_judgment_performed for r in outcome.results)
    assert any(r.deep_judgment_rubric is not None for r in outcome.results)
    export(outcome.results, folder / "results.jsonl")
    export(outcome.results, folder / "results.csv")
    return {s: folder / f"results.{s}" for s in ("json", "jsonl", "csv")}


@pytest.fixture(scope="module")
def report(exports: dict[str, Path]) -> dict[str, Any]:
    assert PYTHON is not None
    done = subprocess.run([PYTHON, "-c", READERS, *map(str, exports.values())], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    data: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return data


def test_karenina_loads_the_json_jsonl_and_csv_exports(report: dict[str, Any]) -> None:
    assert report["loaded"] == report["streamed"] == report["jsonl"] == 8
    # karenina's CSV reader keys rows by question id (row_index is a column of another of its CSVs),
    # so it keeps one row per question, from verify's CSV as from its own
    assert report["csv_loaded"] == report["karenina_csv_loaded"] == 4
    assert {"identity", "config", "job_summary", "verification_config"} <= set(report["metadata_keys"])


def test_karenina_summarises_and_tabulates_the_results(report: dict[str, Any]) -> None:
    summary = report["summary"]
    assert summary["num_results"] == summary["num_with_template"] == summary["num_with_rubric"] == 8
    assert summary["num_with_judgment"] == 8  # template deep judgment ran on every task
    frames = report["frames"]
    assert all(rows > 0 and columns > 0 for rows, columns in frames.values()), frames


def test_the_results_have_every_key_karenina_writes(report: dict[str, Any]) -> None:
    assert report["missing_keys"] == []


def test_the_envelope_has_the_parts_karenina_writes(report: dict[str, Any]) -> None:
    envelope = report["envelope"]
    assert envelope["format"] == ["2.2", "2.2"]
    assert set(envelope["theirs"]) <= set(envelope["ours"]) and "shared_data" in envelope["ours"]
    assert set(envelope["theirs_meta"]) <= set(envelope["ours_meta"])
    assert envelope["ours_summary"] == envelope["theirs_summary"]


def test_karenina_agrees_on_who_passed(report: dict[str, Any], exports: dict[str, Path]) -> None:
    data = json.loads(exports["json"].read_text(encoding="utf-8"))
    verdicts = {r["metadata"]["result_id"]: r["verify"]["verdict"] for r in data["results"]}
    assert {rid: verdicts[rid] == "passed" for rid in report["passed"]} == report["passed"]


def test_the_csv_has_kareninas_columns_in_order_then_verifys(report: dict[str, Any], exports: dict[str, Path]) -> None:
    with exports["csv"].open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
        handle.seek(0)
        columns = next(csv.reader(handle))
    theirs = report["karenina_columns"]
    assert len(KARENINA_HEAD) + len(KARENINA_TAIL) == 53  # plus one per global trait, and question_specific_rubrics
    assert columns[: len(theirs)] == theirs and "rubric_clarity" in theirs
    assert columns[len(theirs):][:1] == ["verdict"]
    # cell by cell, in the order both wrote the results
    changing = {"export_timestamp", "karenina_version", "job_id"}
    for mine, their in zip(rows, report["karenina_csv"], strict=True):
        for column in theirs:
            if column in changing:
                continue
            if column in ("verify_result", "verify_granular_result") and their[column] == "":
                assert mine[column] in ("", "false", "0", "0.0"), column  # karenina leaves false/0 empty
            elif column == "question_specific_rubrics":
                assert json.loads(mine[column]) == json.loads(their[column])
            else:
                assert mine[column] == their[column], column
