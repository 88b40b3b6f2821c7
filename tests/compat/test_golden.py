"""verify against golden files made by karenina (``make_golden.py``; see README.md here).

Without karenina: verify reads each golden checkpoint, verifies it with the same recorded answers
and the same deterministic judge (``judge.py``, served on 127.0.0.1), writes its JSON export, and
that export must match karenina's golden results structurally: the same question ids and result
count, the keys karenina fills in each section are there, and the same verdicts and scores wherever
both judged (template verification, parsed values, field and regex checks, every kind of trait).

Suites exercising features other work is adding are named here; a mismatch there is reported, not
skipped: VerifiedField templates (``verified_field``: karenina also records each field's outcome in
``template.field_results`` / ``field_scores``), cloudpickle callables run only with
``trust_checkpoint_code`` (``callable``).
"""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path
from typing import Any

import judge
import pytest

from verify.benchmark.jsonld import load_benchmark
from verify.config.verification import VerificationConfig
from verify.results.export import export, load_results
from verify.run.runner import run_verification

GOLDEN = Path(__file__).resolve().parent / "golden"
SUITES = sorted(p.name.removesuffix(".jsonld") for p in GOLDEN.glob("*.jsonld"))
#: config fields a suite needs beyond the defaults
EXTRA_CONFIG: dict[str, dict[str, Any]] = {
    "callable": {"trust_checkpoint_code": True},  # feature: opt-in cloudpickle callables
}
#: Keys karenina fills that verify leaves empty, and why; everything else karenina fills, verify must.
NOT_FILLED = {
    "metadata.retry_counts": "verify counts retries per stage in usage_metadata (http_attempts), not as "
                             "karenina's per-category retry budget",
}
#: Template attributes checked with TraceRegex: karenina's judge schema asks for them too (and ignores
#: the reply); verify's leaves them out, since the check reads the raw answer. Not judged by both.
TRACE_FIELDS = {"year", "units"}
#: What is compared value for value where both judged.
VERDICTS = {
    "template": ("template_verification_performed", "verify_result", "verify_granular_result", "parsed_llm_response",
                 "parsed_gt_response", "field_results", "regex_validation_results", "regex_overall_success"),
    "rubric": ("llm_trait_scores", "llm_trait_labels", "regex_trait_scores", "callable_trait_scores",
               "metric_trait_scores", "metric_trait_confusion_lists"),
}


def golden(suite: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / f"{suite}.results.json").read_text(encoding="utf-8"))
    return data


def cases(suite: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / f"{suite}.cases.json").read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def verify_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """verify's JSON export of each suite, run once for every test of this module."""
    runs: dict[str, dict[str, Any]] = {}
    for suite in SUITES:
        spec = cases(suite)
        traces = {hashlib.md5(c["question"].encode("utf-8")).hexdigest(): c["answer"] for c in spec["cases"].values()}
        judge.register(spec["cases"])
        out = tmp_path_factory.mktemp(suite) / "verify.json"
        with judge.serve() as (url, _requests):
            config = VerificationConfig.model_validate({
                "answering_models": [{"interface": "manual", "manual_traces": traces}],
                "parsing_models": [{"id": "judge", "model_name": "judge", "interface": "openai_endpoint",
                                    "endpoint_base_url": url, "endpoint_api_key": "sk-golden-local",
                                    "temperature": 0.0}],
                "evaluation_mode": spec["evaluation_mode"],
                **EXTRA_CONFIG.get(suite, {}),
            })
            run_verification(load_benchmark(GOLDEN / f"{suite}.jsonld"), config, output=out, run_name=f"golden-{suite}")
        runs[suite] = json.loads(out.read_text(encoding="utf-8"))
    return runs


def by_question(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["metadata"]["question_id"]: r for r in results}


def filled(value: Any) -> bool:
    return value not in (None, False, "", [], {}, 0)


@pytest.mark.parametrize("suite", SUITES)
def test_verify_reads_the_golden_checkpoint(suite: str) -> None:
    bench = load_benchmark(GOLDEN / f"{suite}.jsonld")
    assert sorted(q.text for q in bench.questions) == sorted(c["question"] for c in cases(suite)["cases"].values())
    assert {r["metadata"]["question_id"] for r in golden(suite)["results"]} == {q.id for q in bench.questions}


@pytest.mark.parametrize("suite", SUITES)
def test_same_questions_and_result_count(suite: str, verify_runs: dict[str, dict[str, Any]]) -> None:
    theirs, ours = golden(suite)["results"], verify_runs[suite]["results"]
    assert len(ours) == len(theirs)
    assert sorted(by_question(ours)) == sorted(by_question(theirs))


@pytest.mark.parametrize("suite", SUITES)
def test_the_envelope_has_kareninas_parts(suite: str, verify_runs: dict[str, dict[str, Any]]) -> None:
    theirs, ours = golden(suite), verify_runs[suite]
    assert set(theirs) <= set(ours) and ours["format_version"] == theirs["format_version"]
    assert set(theirs["metadata"]) <= set(ours["metadata"])
    assert set(theirs["metadata"]["job_summary"]) == set(ours["metadata"]["job_summary"])
    assert set(theirs["shared_data"]) == set(ours["shared_data"])


@pytest.mark.parametrize("suite", SUITES)
def test_every_section_and_key_karenina_fills_is_filled(suite: str, verify_runs: dict[str, dict[str, Any]]) -> None:
    ours = by_question(verify_runs[suite]["results"])
    missing: list[str] = []
    for qid, their in by_question(golden(suite)["results"]).items():
        mine = ours[qid]
        for section, value in their.items():
            if not isinstance(value, dict):
                continue
            if mine.get(section) is None:
                missing.append(f"{qid}: section {section}")
                continue
            missing += [f"{qid}: {section}.{key}" for key, v in value.items()
                        if filled(v) and f"{section}.{key}" not in NOT_FILLED and not filled(mine[section].get(key))]
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize("suite", SUITES)
def test_same_verdicts_and_scores_where_both_judged(suite: str, verify_runs: dict[str, dict[str, Any]]) -> None:
    ours = by_question(verify_runs[suite]["results"])
    differences: list[str] = []
    for qid, their in by_question(golden(suite)["results"]).items():
        mine = ours[qid]
        their_failure, my_failure = their["metadata"]["failure"], mine["metadata"]["failure"]
        if (their_failure or {}).get("category") != (my_failure or {}).get("category"):
            differences.append(f"{qid}: failure {their_failure} != {my_failure}")
        for section, keys in VERDICTS.items():
            for key in keys:
                theirs_value = (their.get(section) or {}).get(key)
                mine_value = (mine.get(section) or {}).get(key)
                if key == "parsed_llm_response" and isinstance(theirs_value, dict):
                    theirs_value = {k: v for k, v in theirs_value.items() if k not in TRACE_FIELDS}
                if theirs_value is not None and theirs_value != mine_value:
                    differences.append(f"{qid}: {section}.{key} karenina {theirs_value!r} verify {mine_value!r}")
    assert not differences, "\n".join(differences)


@pytest.mark.parametrize("suite", SUITES)
def test_the_csv_has_kareninas_columns_and_cells(suite: str, verify_runs: dict[str, dict[str, Any]],
                                                 tmp_path: Path) -> None:
    json_path = tmp_path / "verify.json"
    json_path.write_text(json.dumps(verify_runs[suite]), encoding="utf-8")
    csv_path = tmp_path / "verify.csv"
    export(load_results(json_path), csv_path)
    with (GOLDEN / f"{suite}.results.csv").open(newline="", encoding="utf-8") as handle:
        their_columns = next(csv.reader(handle))
        handle.seek(0)
        theirs = {row["question_id"]: row for row in csv.DictReader(handle)}
    with csv_path.open(newline="", encoding="utf-8") as handle:
        my_columns = next(csv.reader(handle))
        handle.seek(0)
        mine = {row["question_id"]: row for row in csv.DictReader(handle)}
    assert my_columns[: len(their_columns)] == their_columns
    assert sorted(mine) == sorted(theirs)
    compared = ["success", "verify_result", "verify_granular_result", "rubric_evaluation_performed",
                "template_verification_performed", *(c for c in their_columns if c.startswith("rubric_"))]
    for qid, their in theirs.items():
        for column in compared:
            if column in ("verify_result", "verify_granular_result") and their[column] == "":
                assert mine[qid][column] in ("", "false", "0", "0.0"), (qid, column)  # karenina leaves false/0 empty
            else:
                assert mine[qid][column] == their[column], (qid, column)
        if "question_specific_rubrics" in their:
            assert json.loads(mine[qid]["question_specific_rubrics"]) == json.loads(their["question_specific_rubrics"])
