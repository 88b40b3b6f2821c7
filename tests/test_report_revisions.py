"""The evidence report and the CSV export for revised tasks and transcript answers.

Real data only: the offline demo revised until satisfied (``revision_max_iterations``), and a
recorded agent transcript judged on its full trace, on its final answer, and both at once (the
rubric on the trace, the template on the final answer). The page's data is read back the way its
script reads it (:func:`verify.report.page.data_of_page`); the browser side is in
``tests/test_report_browser.py``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.test_report_html import _parse
from verify import VerificationConfig, load_benchmark, load_preset, run_verification
from verify.report import write_report
from verify.report.highlight import Node, highlight, mark_text, plain_text, slice_tree
from verify.report.page import data_of_page
from verify.report.task_data import task_record
from verify.report.transcript_data import reading
from verify.results.export import export, load_results
from verify.results.export_csv import KARENINA_HEAD, KARENINA_TAIL, OWN_COLUMNS
from verify.results.models import VerificationResult
from verify.results.revisions import RevisionTally

DEMO = Path(__file__).resolve().parent.parent / "verify" / "examples" / "demo" / "demo.jsonld"
PAYLOAD = "<script>alert(1)</script>"
TRANSCRIPT: list[dict[str, Any]] = [
    {"role": "system", "content": "You answer with sources."},
    {"role": "user", "content": "At what temperature does pure water boil at sea level?"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "search", "arguments": json.dumps({"q": f"water boiling point {PAYLOAD}"})}}]},
    {"role": "tool", "tool_call_id": "c1", "content": f"The boiling point of water is 100 degrees Celsius at sea level. {PAYLOAD}"},
    {"role": "assistant", "content": "It boils at 100 degrees Celsius, which is 212 degrees Fahrenheit."},
]
FINAL = TRANSCRIPT[-1]["content"]


def _config(**overrides: Any) -> VerificationConfig:
    return VerificationConfig.from_overrides(load_preset("demo"), deep_judgment_rubric_mode="enable_all", **overrides)


def make_runs(folder: Path) -> dict[str, Path]:
    """The runs, written to ``folder``: ``revised`` (up to 3 passes), ``one_pass``, and the transcript
    judged on its ``full`` trace, its ``final`` answer, and ``mixed`` (each also as ``<name>_jsonl``)."""
    out: dict[str, Path] = {}
    benchmark = load_benchmark(DEMO)
    benchmark.questions[0].text += f" {PAYLOAD}"  # the revised answers repeat the question: markup in every pass
    for name, limit in (("revised", 3), ("one_pass", 1)):
        out[name] = folder / f"{name}.json"
        run_verification(benchmark, _config(evaluation_mode="rubric_only", revision_max_iterations=limit), output=out[name])
    answers = {"*": {"demo-boiling": TRANSCRIPT}}
    for name, overrides in (("full", {"evaluation_mode": "rubric_only"}),
                            ("final", {"evaluation_mode": "rubric_only", "use_full_trace_for_rubric": False}),
                            ("mixed", {"evaluation_mode": "template_and_rubric", "deep_judgment_mode": "full"})):
        out[name] = folder / f"{name}.json"
        run_verification(load_benchmark(DEMO), _config(**overrides), output=out[name], answers=answers,
                         question_ids=["demo-boiling"])
        out[name + "_jsonl"] = folder / f"{name}.jsonl"
        export(load_results(out[name]), out[name + "_jsonl"])
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_runs(tmp_path_factory.mktemp("revisions"))


def _page(paths: list[Path], tmp_path: Path) -> tuple[str, dict[str, Any]]:
    page = write_report(paths, tmp_path / "page.html").read_text(encoding="utf-8")
    return page, data_of_page(page)


def _by_key(results: list[VerificationResult]) -> dict[str, VerificationResult]:
    return {r.metadata.task_key: r for r in results}


def _block_nodes(task: dict[str, Any]) -> list[Node]:
    return [node for b in task["transcript"]["blocks"] for node in [*b["head"], *b["body"]]]


def _marks_match(task: dict[str, Any], where: str) -> int:
    """Each excerpt marked in ``where`` reads, piece by piece, exactly its own text; returns how many."""
    nodes = task["tree"] if where == "answer" else _block_nodes(task)
    found = 0
    for e in task["excerpts"]:
        if e["in"] != where:
            continue
        assert e["located"], e
        assert "".join(mark_text(nodes, e["n"])) == e["text"]
        found += 1
    return found


# --------------------------------------------------------------------------- revisions


def test_each_revised_task_shows_every_pass_its_status_and_first_vs_last(runs: dict[str, Path], tmp_path: Path) -> None:
    results = _by_key(load_results(runs["revised"]))
    page, data = _page([runs["revised"]], tmp_path)
    _parse(page)  # well formed, only the page's own script
    tasks = data["runs"][0]["tasks"]
    assert len(tasks) == len(results) == 8
    for t in tasks:
        revision = results[t["key"]].metadata.revision
        assert revision is not None and t["revision"] is not None
        record = t["revision"]
        assert record["status"] == revision.status and record["iterations"] == revision.iterations >= 2
        assert [p["iteration"] for p in record["evaluations"]] == list(range(revision.iterations))
        first, last = revision.evaluations[0], revision.evaluations[-1]
        assert record["first"] == {"iteration": 0, "result": first.result, "verdict": first.verdict, "score": first.score}
        assert record["last"]["result"] == last.result == "satisfied" and first.result == "needs_revision"
        failing = [c for c in record["evaluations"][0]["criteria"] if c["passed"] is False]
        assert failing and all(c["gap"] for c in failing)  # each failed criterion with its gap
        assert record["evaluations"][0]["answer"] == first.answer and record["evaluations"][-1]["answer"] != first.answer


def test_the_run_header_counts_iterations_and_how_tasks_moved(runs: dict[str, Path], tmp_path: Path) -> None:
    results = load_results(runs["one_pass"]) + load_results(runs["revised"])
    for name in ("revised", "one_pass"):
        tally = RevisionTally()
        mine = [r for r in results if r.metadata.revision and r.metadata.revision.max_iterations == (3 if name == "revised" else 1)]
        for r in mine:
            tally.add(r)
        figures = _page([runs[name]], tmp_path)[1]["runs"][0]["revision"]
        assert figures["tasks"] == tally.tasks == 8
        assert figures["iterations"] == tally.iterations == sum(r.metadata.revision.iterations for r in mine if r.metadata.revision)
        assert figures["changes"] == dict(tally.changes) and figures["statuses"] == dict(tally.statuses)
        assert sum(figures["verdict_changes"].values()) == 8
    one = _page([runs["one_pass"]], tmp_path)[1]["runs"][0]["revision"]
    assert one["statuses"] == {"max_iterations_reached": 8} and one["changes"] == {"needs_revision -> needs_revision": 8}


def test_runs_without_revisions_have_no_revision_data(runs: dict[str, Path], tmp_path: Path) -> None:
    data = _page([runs["full"]], tmp_path)[1]
    assert data["runs"][0]["revision"] is None and all(t["revision"] is None for t in data["runs"][0]["tasks"])


def test_markup_in_revised_answers_stays_text(runs: dict[str, Path], tmp_path: Path) -> None:
    page, data = _page([runs["revised"]], tmp_path)
    assert PAYLOAD not in page and "\\u003cscript\\u003ealert(1)" in page
    answers = [p["answer"] for t in data["runs"][0]["tasks"] for p in t["revision"]["evaluations"]]
    assert sum(PAYLOAD in (a or "") for a in answers) >= 4  # every pass of the question's tasks
    _parse(page)


# --------------------------------------------------------------------------- transcripts


def test_full_trace_excerpts_are_marked_in_the_blocks_at_their_offsets(runs: dict[str, Path], tmp_path: Path) -> None:
    results = _by_key(load_results(runs["full"]))
    _, data = _page([runs["full"]], tmp_path)
    for t in data["runs"][0]["tasks"]:
        result = results[t["key"]]
        assert result.template is not None and result.deep_judgment_rubric is not None
        rendered = result.template.raw_llm_response or ""
        tr = t["transcript"]
        assert tr["reads"]["trait"] == "trace" and tr["how"]["trait"] == "blocks"
        assert tr["messages"] == len(TRANSCRIPT) and tr["tool_calls"] == 1
        assert [(b["role"], b["kind"], b.get("tool")) for b in tr["blocks"]] == [
            ("system", "message", None), ("user", "message", None), ("assistant", "call", "search"),
            ("tool", "result", "search"), ("assistant", "message", None)]
        assert "\n\n".join(plain_text(b["head"]) + plain_text(b["body"]) for b in tr["blocks"]) == rendered
        assert _marks_match(t, "trace") == sum(len(v) for v in result.deep_judgment_rubric.extracted_rubric_excerpts.values()) > 0
        for e in t["excerpts"]:
            assert rendered[e["start"]:e["end"]] == e["text"]
            holder = next(b for b in tr["blocks"] if any(not isinstance(n, str) and n.get("id") and n["n"] == e["n"]
                                                        for n in _walk([*b["head"], *b["body"]])))
            assert holder["n"] == e["block"]  # the mark's first piece sits in the block the quote names
        assert plain_text(t["tree"]) == FINAL and mark_text(t["tree"], 1) == []  # the final answer, unmarked


def _walk(nodes: list[Node]) -> list[Node]:
    out: list[Node] = []
    for n in nodes:
        out.append(n)
        if not isinstance(n, str):
            out.extend(_walk(n["c"]))
    return out


def test_final_answer_excerpts_are_marked_in_the_submission_not_the_trace(runs: dict[str, Path], tmp_path: Path) -> None:
    for path in (runs["final"], runs["final_jsonl"]):  # with the run's config, and without (a JSONL export)
        results = _by_key(load_results(path))
        _, data = _page([path], tmp_path)
        for t in data["runs"][0]["tasks"]:
            result = results[t["key"]]
            assert result.deep_judgment_rubric is not None and result.template is not None
            tr = t["transcript"]
            assert tr["reads"]["trait"] == "answer" and tr["how"]["trait"] == "offsets" and tr["extractor"] == "last_assistant"
            assert plain_text(t["tree"]) == FINAL
            count = sum(len(v) for v in result.deep_judgment_rubric.extracted_rubric_excerpts.values())
            assert _marks_match(t, "answer") == count > 0
            assert all(mark_text(_block_nodes(t), e["n"]) == [] for e in t["excerpts"])
            # the offsets index the submission: read in the rendered trace they would be wrong
            rendered = result.template.raw_llm_response or ""
            assert any(rendered[e["start"]:e["end"]] != e["text"] for e in t["excerpts"])


def test_one_task_may_be_judged_on_both_texts(runs: dict[str, Path], tmp_path: Path) -> None:
    for path in (runs["mixed"], runs["mixed_jsonl"]):
        _, data = _page([path], tmp_path)
        for t in data["runs"][0]["tasks"]:
            tr = t["transcript"]
            assert tr["reads"] == {"trait": "trace", "attribute": "answer"}
            assert _marks_match(t, "trace") > 0 and _marks_match(t, "answer") > 0
            assert {e["kind"] for e in t["excerpts"] if e["in"] == "answer"} == {"attribute"}


def test_quotes_without_blocks_are_placed_by_their_offsets(runs: dict[str, Path]) -> None:
    # a full-trace result whose quotes lost their block numbers (an older verify): the offsets decide
    (result,) = load_results(runs["full"])[:1]
    dj = result.deep_judgment_rubric
    assert dj is not None and result.template is not None
    stripped = {k: [q.model_copy(update={"block": None}) for q in v] for k, v in dj.extracted_rubric_excerpts.items()}
    read = reading(result.template, {"trait": stripped, "attribute": {}}, {"use_full_trace_for_rubric": False})
    assert read is not None and read.reads["trait"] == "trace" and read.how["trait"] == "offsets"
    # and a tool result chosen as the submission is found by its quotes, whatever the config says
    final = load_results(runs["final"])[0]
    assert final.template is not None and final.deep_judgment_rubric is not None
    read = reading(final.template, {"trait": final.deep_judgment_rubric.extracted_rubric_excerpts},
                   {"transcript_extractor": "tool_output:search"})
    assert read is not None and read.extractor == "last_assistant" and read.submission == FINAL


def test_markup_in_a_transcript_stays_text(runs: dict[str, Path], tmp_path: Path) -> None:
    page, data = _page([runs["full"]], tmp_path)
    _parse(page)
    assert PAYLOAD not in page
    bodies = [plain_text(b["body"]) for t in data["runs"][0]["tasks"] for b in t["transcript"]["blocks"]]
    assert sum(PAYLOAD in b for b in bodies) == 2 * 2  # the call's arguments and the tool result, per task


def test_a_string_answer_has_no_transcript(runs: dict[str, Path]) -> None:
    result = load_results(runs["revised"])[0]
    assert task_record(result, "t0")["transcript"] is None


def test_the_comparison_reads_runs_with_revisions_and_transcripts(runs: dict[str, Path], tmp_path: Path) -> None:
    _, data = _page([runs["one_pass"], runs["revised"]], tmp_path)
    assert data["compare"]["matched"] == 8 and len(data["runs"]) == 2
    _, data = _page([runs["final"], runs["full"]], tmp_path)
    assert data["compare"]["matched"] == 2
    assert {t["transcript"]["reads"]["trait"] for t in data["runs"][0]["tasks"]} == {"answer"}
    assert {t["transcript"]["reads"]["trait"] for t in data["runs"][1]["tasks"]} == {"trace"}


# --------------------------------------------------------------------------- CSV


def _csv(results: list[VerificationResult], path: Path) -> tuple[list[str], list[dict[str, str]]]:
    export(results, path)
    with path.open(newline="", encoding="utf-8") as handle:
        columns = next(csv.reader(handle))
        handle.seek(0)
        return columns, list(csv.DictReader(handle))


def test_the_csv_adds_revision_and_transcript_columns_after_kareninas(runs: dict[str, Path], tmp_path: Path) -> None:
    revised, full = load_results(runs["revised"]), load_results(runs["full"])
    columns, rows = _csv(revised + full, tmp_path / "both.csv")
    assert columns[:len(KARENINA_HEAD)] == KARENINA_HEAD
    assert columns[-len(OWN_COLUMNS):] == OWN_COLUMNS
    assert columns[-len(OWN_COLUMNS) - len(KARENINA_TAIL):-len(OWN_COLUMNS)] == KARENINA_TAIL
    assert OWN_COLUMNS[-4:] == ["revision_status", "revision_iterations", "transcript_messages", "transcript_tool_calls"]
    for result, row in zip(revised + full, rows, strict=True):
        revision = result.metadata.revision
        assert row["revision_status"] == (revision.status if revision else "")
        assert row["revision_iterations"] == (str(revision.iterations) if revision else "")
        transcript = result.template is not None and bool(result.template.trace_messages)
        assert row["transcript_messages"] == (str(len(TRANSCRIPT)) if transcript else "")
        assert row["transcript_tool_calls"] == ("1" if transcript else "")
    assert {r["revision_status"] for r in rows[:8]} == {"satisfied"} and {r["revision_iterations"] for r in rows[:8]} == {"2"}
    assert [r["transcript_messages"] for r in rows[8:]] == ["5", "5"]


# --------------------------------------------------------------------------- blocks cut from one tree


@given(st.text(min_size=1, max_size=60), st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60)), max_size=6),
       st.lists(st.integers(0, 60), max_size=5))
def test_cutting_a_tree_into_blocks_keeps_every_excerpts_pieces(text: str, pairs: list[tuple[int, int]],
                                                                cuts: list[int]) -> None:
    ranges = [(n, min(a, b), max(a, b)) for n, (a, b) in enumerate(pairs, 1)]
    tree = highlight(text, ranges)
    bounds = sorted({0, len(text), *(min(c, len(text)) for c in cuts)})
    parts = [slice_tree(tree, a, b) for a, b in zip(bounds, bounds[1:], strict=False)]
    assert [plain_text(p) for p in parts] == [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    joined = [node for p in parts for node in p]
    for n, s, e in ranges:
        if s < e <= len(text):
            assert "".join(mark_text(joined, n)) == text[s:e]
            # one first piece (an id) in all the blocks together: the one the excerpt starts in
            assert sum(1 for node in _walk(joined) if not isinstance(node, str) and node["n"] == n and node.get("id")) == 1
