"""Exports in karenina's form, read back by verify (no karenina needed; karenina's own readers are
run by test_karenina_readers.py)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from verify.results.export import export, is_export, load_results, read_export_header
from verify.results.export_csv import KARENINA_HEAD, KARENINA_TAIL, OWN_COLUMNS
from verify.results.karenina_form import from_export, to_karenina, verify_metadata
from verify.results.models import VerificationResult
from verify.results.store import latest_results, saved_tasks

#: karenina's result metadata keys: its model refuses any other.
KARENINA_METADATA = {
    "question_id", "template_id", "failure", "caveats", "warnings", "partial_content", "retry_counts",
    "question_text", "raw_answer", "keywords", "answering", "parsing", "answering_system_prompt",
    "parsing_system_prompt", "execution_time", "timestamp", "result_id", "run_name", "replicate",
    "few_shot_enabled", "few_shot_example_count", "evaluation_mode", "scenario_id", "scenario_node",
    "scenario_turn", "scenario_path",
}
KARENINA_FAILURES = {
    "content", "recursion_limit", "trace_validation", "deep_judgment", "deep_judgment_rubric", "timeout",
    "connection", "rate_limit", "server_error", "abstention", "sufficiency", "template_validation", "parsing",
    "unexpected_error",
}


def result(**meta: Any) -> VerificationResult:
    """A small result; ``meta`` replaces metadata fields, ``template``/``rubric`` whole sections."""
    template = meta.pop("template", {"raw_llm_response": "It is Paris.", "template_verification_performed": True,
                                     "verify_result": True, "parsed_llm_response": {"capital": "Paris"}})
    rubric = meta.pop("rubric", {
        "llm_trait_scores": {"clarity": 4}, "regex_trait_scores": {"cites": True},
        "trait_provenance": {"clarity": "global", "cites": "question_specific", "tone": "global"},
        "trait_status": {"clarity": {"status": "scored", "score": 4}, "cites": {"status": "scored", "score": True},
                         "tone": {"status": "unscored", "reason": "no JSON", "unscored_category": "unparseable"}},
    })
    data: dict[str, Any] = {
        "metadata": {
            "question_id": "q1", "template_id": "t1", "task_key": "q1\tsim:a\tsim:judge", "result_id": "r1",
            "question_text": "What is the capital of France?",
            "answering": {"interface": "simulated", "model_name": "a", "config_id": "a"},
            "parsing": {"interface": "simulated", "model_name": "judge", "config_id": "judge"},
            "evaluation_mode": "template_and_rubric", "stages": ["generate_answer", "finalize_result"],
            "verdict": "passed", "coverage": {"judged": 3, "total": 3},
            "execution_time": 0.5, "timestamp": "2025-01-01 10:00:00", **meta,
        },
        "template": template, "rubric": rubric,
    }
    return VerificationResult.model_validate(data)


INCOMPLETE = {"verdict": "incomplete", "coverage": {"judged": 2, "total": 3, "unscored": {"tone": "unparseable"}}}
ODD_FAILURE = {"verdict": "incomplete", "failure": {"category": "field_verification_error", "stage": "verify_template",
                                                    "reason": "verify() raised", "group": "system"},
               "errors": [{"stage": "verify_template", "message": "boom", "category": "field_verification_error"}]}
SAMPLES = {
    "passed": result(),
    "incomplete": result(**INCOMPLETE),
    "odd_failure": result(**ODD_FAILURE),
    "no_answer": result(template={"raw_llm_response": None}, caveats=["embedding_override", "our_own"],
                        verdict="incomplete", coverage={"judged": 0, "total": 1, "unscored": {"template": "no_answer"}}),
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_the_karenina_form_has_only_kareninas_metadata_keys(name: str) -> None:
    k = to_karenina(SAMPLES[name])
    assert set(k["metadata"]) == KARENINA_METADATA
    failure = k["metadata"]["failure"]
    assert failure is None or (failure["category"] in KARENINA_FAILURES and len(failure["reason"]) <= 500)
    assert isinstance(k["template"]["raw_llm_response"], str)
    assert {"task_key", "stages", "verdict", "coverage", "errors"} <= set(k["verify"])


def test_an_incomplete_result_is_not_a_pass_for_karenina() -> None:
    k = to_karenina(SAMPLES["incomplete"])
    assert k["metadata"]["failure"]["category"] == "parsing"
    assert "tone (unparseable)" in k["metadata"]["failure"]["reason"]
    assert k["verify"]["failure"] is None  # verify's own: no failure, just a gap
    assert to_karenina(SAMPLES["passed"])["metadata"]["failure"] is None


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_a_result_reads_back_unchanged(name: str) -> None:
    original = SAMPLES[name]
    assert from_export(json.loads(json.dumps(to_karenina(original)))) == original


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_exports_read_back_and_are_recognised(suffix: str, tmp_path: Path) -> None:
    path = tmp_path / f"out{suffix}"
    assert export(SAMPLES.values(), path, header={"identity": {"x": 1}, "config": {}}) == len(SAMPLES)
    assert load_results(path) == list(SAMPLES.values())
    assert is_export(path)
    if suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["format_version"] == "2.2" and set(data) == {"format_version", "metadata", "shared_data", "results"}
        assert read_export_header(path) == data["metadata"] and data["metadata"]["identity"] == {"x": 1}
        summary = data["metadata"]["job_summary"]
        assert (summary["total_questions"], summary["successful_count"], summary["failed_count"]) == (4, 1, 3)
        assert data["shared_data"]["rubric_definition"] == {"trait_names": ["clarity", "tone"]}


def test_an_export_line_in_a_progress_file_counts_as_its_task(tmp_path: Path) -> None:
    progress = tmp_path / "out.jsonl.progress.jsonl"
    lines = [json.dumps(to_karenina(SAMPLES["passed"])), SAMPLES["odd_failure"].model_dump_json()]
    progress.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert list(latest_results(progress)) == [SAMPLES["odd_failure"]]  # same task key: the last line wins
    assert saved_tasks(progress) == {"q1\tsim:a\tsim:judge": None}


def test_metadata_written_by_hand_wins_over_the_section() -> None:
    k = to_karenina(SAMPLES["passed"])
    k["metadata"]["task_key"] = "edited"
    assert verify_metadata(k)["task_key"] == "edited"  # type: ignore[index]
    assert from_export(k).metadata.task_key == "edited"


def test_an_older_verify_export_still_reads_back(tmp_path: Path) -> None:
    old = tmp_path / "old.json"
    old.write_text('{"format_version": "verify-1", "metadata": {"identity": {"x": 1}}, "results": [\n'
                   + SAMPLES["passed"].model_dump_json() + "\n]}\n", encoding="utf-8")
    assert is_export(old) and read_export_header(old) == {"identity": {"x": 1}}
    assert load_results(old) == [SAMPLES["passed"]]


def test_the_csv_starts_with_kareninas_columns(tmp_path: Path) -> None:
    path = tmp_path / "out.csv"
    export(SAMPLES.values(), path)
    with path.open(newline="", encoding="utf-8") as handle:
        columns = next(csv.reader(handle))
        handle.seek(0)
        rows = list(csv.DictReader(handle))
    # only traits with a score get a column (as in karenina): the unscored "tone" has none
    assert columns == [*KARENINA_HEAD, "rubric_clarity", "question_specific_rubrics", *KARENINA_TAIL,
                       *OWN_COLUMNS]
    assert is_export(path)
    assert [r["success"] for r in rows] == ["True", "False", "False", "False"]
    assert [r["verdict"] for r in rows] == ["passed", "incomplete", "incomplete", "incomplete"]
    assert rows[0]["rubric_clarity"] == "4" and json.loads(rows[0]["question_specific_rubrics"]) == {"cites": True}
    assert rows[1]["trait_status"] == '{"tone": "unscored"}' and rows[2]["failure_category"] == "field_verification_error"
