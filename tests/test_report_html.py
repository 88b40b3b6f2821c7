"""The evidence report (``verify.report``): a well-formed page that holds everything the results hold,
marks every excerpt at its offsets (overlaps too), lists every flip between two runs, and keeps
untrusted text as text.

Real data: the offline demo run with deep judgment on (rubric and template), judged by the simulated
judge honestly, by one that fabricates every quote, and by one whose replies are unusable. The page's
data is read back the way its script reads it (:func:`verify.report.page.data_of_page`); the browser
behaviour itself is tested elsewhere.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verify import VerificationConfig, load_benchmark, load_preset, run_verification
from verify.errors import UserError
from verify.report import page as page_module
from verify.report import write_report
from verify.report.evidence import collect, reasoning_parts
from verify.report.highlight import Node, highlight, mark_text, plain_text
from verify.report.page import SCRIPT, data_of_page
from verify.report.task_data import task_id, task_status
from verify.results.export import load_results
from verify.results.models import Excerpt, VerificationResult

DEMO = Path(__file__).resolve().parent.parent / "verify" / "examples" / "demo"
HOSTILE = ('The capital of France is Paris. <script>alert(1)</script> He said "yes" & \'no\' &amp; '
           "</mark></script><!-- --> end\u2028line. Paris has been the political centre of France for centuries.")


# --------------------------------------------------------------------------- runs


def _run(folder: Path, name: str, answers: dict[str, dict[str, str]] | None = None, **judge: Any) -> Path:
    """The demo benchmark judged with deep judgment everywhere; ``judge`` goes to the simulated
    judge's extra_kwargs (fabricate_rate, imperfection_rate, ...)."""
    config = VerificationConfig.from_overrides(
        load_preset("demo"), evaluation_mode="template_and_rubric", deep_judgment_mode="full",
        deep_judgment_rubric_mode="enable_all",
    )
    if judge:
        config.parsing_models = [m.model_copy(update={"extra_kwargs": judge}) for m in config.parsing_models]
    out = folder / name
    run_verification(load_benchmark(DEMO / "demo.jsonld"), config, output=out,
                     answers=answers or json.loads((DEMO / "answers.json").read_text(encoding="utf-8")))
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("report-runs")
    hostile = {"model-a": {"demo-capital": HOSTILE}, "model-b": {"demo-capital": "Paris."}}
    return {
        "honest": _run(folder, "honest.json"),
        "fabricating": _run(folder, "fabricating.json", fabricate_rate=1.0),
        "unusable": _run(folder, "unusable.json", imperfection_rate=1.0, imperfections="schema_echo", seed=5),
        "elided": _run(folder, "elided.json", imperfection_rate=0.7, imperfections="elide,insert_words", seed=3),
        "hostile": _run_hostile(folder, hostile),
    }


def _run_hostile(folder: Path, answers: dict[str, dict[str, str]]) -> Path:
    config = VerificationConfig.from_overrides(
        load_preset("demo"), evaluation_mode="template_and_rubric", deep_judgment_mode="full",
        deep_judgment_rubric_mode="enable_all",
    )
    out = folder / "hostile.json"
    run_verification(load_benchmark(DEMO / "demo.jsonld"), config, output=out, answers=answers,
                     question_ids=["demo-capital"])
    return out


def _page(paths: list[Path], tmp_path: Path, **kw: Any) -> tuple[str, dict[str, Any]]:
    out = write_report(paths, tmp_path / "report.html", **kw)
    text = out.read_text(encoding="utf-8")
    return text, data_of_page(text)


def _tasks(data: dict[str, Any], run: int = -1) -> dict[str, dict[str, Any]]:
    return {t["id"]: t for t in data["runs"][run]["tasks"]}


# --------------------------------------------------------------------------- a well-formed page

_VOID = {"meta", "input", "br", "hr", "img", "link"}


class _StrictParser(HTMLParser):
    """Fails on an end tag that does not close the element open last; records scripts and ids."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.scripts: list[dict[str, str | None]] = []
        self.ids: list[str] = []
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.append(str(found["id"]))
        if tag == "script":
            self.scripts.append(found)
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'} at {self.getpos()}")
        else:
            self.stack.pop()


def _parse(text: str) -> _StrictParser:
    parser = _StrictParser()
    parser.feed(text)
    parser.close()
    return parser


def test_the_page_is_well_formed_with_the_page_script_and_the_data_only(runs: dict[str, Path], tmp_path: Path) -> None:
    text, _ = _page([runs["honest"]], tmp_path)
    parsed = _parse(text)
    assert parsed.problems == [] and parsed.stack == []
    assert len(parsed.ids) == len(set(parsed.ids))
    assert parsed.scripts == [{"type": "application/json", "id": "report-data"}, {}]
    assert text.startswith("<!DOCTYPE html>")
    # the DOM contract's static parts
    assert re.search(r'<input id="search"', text)
    assert re.findall(r'<option value="([a-z_]+)"', text.split('id="status-filter"')[1].split("</select>")[0]) == [
        "all", "passed", "judged", "failed", "incomplete", "auto_failed"]
    assert '<table id="tasks">' in text
    assert "document.body.dataset.ready = '1'" in SCRIPT


def test_only_the_pages_own_script_may_run(runs: dict[str, Path], tmp_path: Path) -> None:
    text, _ = _page([runs["honest"]], tmp_path)
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', text)
    assert policy is not None
    script = text.split("<script>", 1)[1].split("</script>", 1)[0]
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    assert f"script-src 'sha256-{digest}';" in policy.group(1)
    assert "default-src 'none'" in policy.group(1) and "unsafe-inline" not in policy.group(1)
    # nothing from the data is ever parsed as markup by the page's script
    assert "innerHTML" not in SCRIPT and "outerHTML" not in SCRIPT and "insertAdjacentHTML" not in SCRIPT
    assert "document.write" not in SCRIPT and "eval(" not in SCRIPT


# --------------------------------------------------------------------------- everything is there


def _excerpts(result: VerificationResult) -> list[tuple[str, str, Excerpt]]:
    out = []
    if result.deep_judgment_rubric is not None:
        out += [("trait", n, e) for n, items in result.deep_judgment_rubric.extracted_rubric_excerpts.items() for e in items]
    if result.deep_judgment is not None:
        out += [("attribute", n, e) for n, items in result.deep_judgment.extracted_excerpts.items() for e in items]
    return out


@pytest.mark.parametrize("run", ["honest", "elided", "hostile"])
def test_every_excerpt_is_marked_exactly_at_its_offsets(runs: dict[str, Path], tmp_path: Path, run: str) -> None:
    results = load_results(runs[run])
    _, data = _page([runs[run]], tmp_path)
    tasks = _tasks(data)
    assert len(tasks) == len(results)
    checked = split = 0
    for result in results:
        task = tasks[task_id(result.metadata.task_key)]
        answer = result.template.raw_llm_response if result.template else None
        assert answer is not None and plain_text(task["tree"]) == answer  # the answer, whole and unchanged
        excerpts = _excerpts(result)
        assert [(e["kind"], e["trait"], e["text"]) for e in task["excerpts"]] == [(k, n, e.text) for k, n, e in excerpts]
        for record, (_, _, excerpt) in zip(task["excerpts"], excerpts, strict=True):
            pieces = mark_text(task["tree"], record["n"])
            parts = excerpt.spans or [(excerpt.start, excerpt.end)]
            assert record["located"]
            assert "".join(pieces) == "".join(answer[s:e] for s, e in parts)
            if excerpt.match_method == "exact":
                assert "".join(pieces) == excerpt.text
            assert _first_pieces(task["tree"]).count(record["n"]) == 1  # one id per excerpt
            checked += 1
            split += len(pieces) > 1
    assert checked >= 2 * len(results)
    if run == "elided":
        assert split > 0  # quotes in parts ('A ... B') are marked part by part


def _first_pieces(nodes: list[Node]) -> list[int]:
    out: list[int] = []
    for node in nodes:
        if isinstance(node, dict):
            if node.get("id"):
                out.append(node["n"])
            out += _first_pieces(node["c"])
    return out


def test_each_reasoning_reference_points_at_its_traits_excerpt(runs: dict[str, Path], tmp_path: Path) -> None:
    results = load_results(runs["honest"])
    _, data = _page([runs["honest"]], tmp_path)
    tasks = _tasks(data)
    linked = 0
    for result in results:
        task = tasks[task_id(result.metadata.task_key)]
        dj = result.deep_judgment_rubric
        assert dj is not None
        for trait in task["traits"]:
            deep = trait.get("deep")
            if not deep or "reasoning" not in deep:
                continue
            parts = deep["reasoning"]
            own = deep["excerpts"]
            for part in parts:
                if isinstance(part, int):
                    assert part in own
                    assert task["excerpts"][part - 1]["trait"] == trait["name"]
                    linked += 1
            # the judge's words are kept: references written back give the reasoning again
            local = {n: i + 1 for i, n in enumerate(own)}
            text = "".join(p if isinstance(p, str) else f"[E{local[p]}]" for p in parts)
            assert text == dj.rubric_trait_reasoning[trait["name"]]
    assert linked >= 10


def test_an_excerpt_whose_offsets_do_not_fit_is_listed_not_marked() -> None:
    stray = Excerpt(text="elsewhere", similarity_score=1.0, start=40, end=49, match_method="exact")
    fine = Excerpt(text="Paris", similarity_score=1.0, start=0, end=5, match_method="exact")
    evidence = collect("Paris is the capital.", {"clarity": [stray, fine]}, {})
    assert [e["located"] for e in evidence.excerpts] == [False, True]
    assert mark_text(evidence.tree, 1) == [] and mark_text(evidence.tree, 2) == ["Paris"]
    assert evidence.numbers == {("trait", "clarity"): [1, 2]}
    assert re.fullmatch(r"t[0-9a-f]{12}", task_id("q1\tmodel\tjudge"))


def test_reasoning_references_are_mapped_per_trait() -> None:
    parts = reasoning_parts("I looked at [E2] and [E1, E3], not [E9]; see [e1].", [4, 5, 6])
    assert parts == ["I looked at ", 5, " and ", 4, ", ", 6, ", not [E9]; see ", 4, "."]
    assert reasoning_parts("No references here.", [1]) == ["No references here."]


def test_scores_reasons_raw_replies_and_failures_are_all_there(runs: dict[str, Path], tmp_path: Path) -> None:
    for run in ("honest", "fabricating", "unusable"):
        results = load_results(runs[run])
        _, data = _page([runs[run]], tmp_path)
        tasks = _tasks(data)
        for result in results:
            task = tasks[task_id(result.metadata.task_key)]
            assert task["status"] == task_status(result)
            failure = result.metadata.failure
            assert (task["failure"] or {}).get("reason") == (failure.reason if failure else None)
            assert result.rubric is not None
            by_name = {t["name"]: t for t in task["traits"]}
            for name, outcome in result.rubric.trait_status.items():
                shown = by_name[name]
                for key in ("status", "score", "label", "reason", "raw_reply", "unscored_category", "error_category"):
                    assert shown.get(key) == getattr(outcome, key), (run, name, key)
            dj = result.deep_judgment_rubric
            assert dj is not None
            for name, meta in dj.trait_metadata.items():
                rejected = by_name[name]["deep"].get("rejected_excerpts", [])
                assert [r["text"] for r in rejected] == [r.text for r in meta.rejected_excerpts]
            if result.template is not None:
                assert task["template"]["verify_result"] == result.template.verify_result
                assert task["template"].get("parsed_llm_response") == result.template.parsed_llm_response
    fabricated = _tasks(_page([runs["fabricating"]], tmp_path)[1])
    assert {t["status"] for t in fabricated.values()} == {"auto_failed"}
    assert any(t["deep"].get("rejected_excerpts") for task in fabricated.values() for t in task["traits"] if "deep" in t)
    unusable = _tasks(_page([runs["unusable"]], tmp_path)[1])
    assert any(t.get("raw_reply") and t["status"] == "unscored" for task in unusable.values() for t in task["traits"])


def test_the_header_carries_the_runs_figures(runs: dict[str, Path], tmp_path: Path) -> None:
    _, data = _page([runs["honest"]], tmp_path)
    run = data["runs"][0]
    header = json.loads(runs["honest"].read_text(encoding="utf-8"))["metadata"]
    assert run["header"]["config"] == header["config"] and run["header"]["plan"] == header["plan"]
    results = load_results(runs["honest"])
    figures = run["figures"]
    assert figures["tasks"] == len(results) == 8
    assert figures["passed"] == sum(r.passed for r in results)
    assert figures["coverage"] == 1.0 and figures["tokens"] > 0
    assert {p["pair"] for p in run["pairs"]} == {f"{r.metadata.answering.display} / {r.metadata.parsing.display}" for r in results}
    assert {t["name"] for t in run["traits"]} >= {"clarity", "states_fact", "register", "has_number"}


# --------------------------------------------------------------------------- overlaps


def test_overlapping_excerpts_nest_and_split() -> None:
    text = "0123456789abcdefghij"
    tree = highlight(text, [(1, 0, 10), (2, 5, 15), (3, 0, 10), (4, 12, 12), (5, 2, 4), (6, 30, 40)])
    assert plain_text(tree) == text
    assert mark_text(tree, 1) == mark_text(tree, 3) == ["0123456789"]  # identical ranges nest whole
    assert mark_text(tree, 5) == ["23"]
    assert mark_text(tree, 2) == ["56789", "abcde"]  # crossing: split where the outer mark ends
    assert mark_text(tree, 4) == mark_text(tree, 6) == []  # empty and out of range: not marked
    assert sorted(_first_pieces(tree)) == [1, 2, 3, 5]


@given(st.text(min_size=1, max_size=40), st.lists(st.tuples(st.integers(0, 45), st.integers(0, 45)), max_size=8))
def test_any_ranges_give_pieces_that_rebuild_each_excerpt(text: str, pairs: list[tuple[int, int]]) -> None:
    ranges = [(i + 1, s, e) for i, (s, e) in enumerate(pairs)]
    tree = highlight(text, ranges)
    assert plain_text(tree) == text
    for n, s, e in ranges:
        valid = 0 <= s < e <= len(text)
        assert "".join(mark_text(tree, n)) == (text[s:e] if valid else "")
        assert _first_pieces(tree).count(n) == (1 if valid else 0)


# --------------------------------------------------------------------------- two runs


def test_the_comparison_lists_every_flipped_task(runs: dict[str, Path], tmp_path: Path) -> None:
    before, after = load_results(runs["honest"]), load_results(runs["fabricating"])
    was = {r.metadata.task_key: task_status(r) for r in before}
    expected = {task_id(r.metadata.task_key) for r in after if was[r.metadata.task_key] != task_status(r)}
    assert expected  # the honest run passes tasks the fabricating one auto-fails
    text, data = _page([runs["honest"], runs["fabricating"]], tmp_path)
    compare = data["compare"]
    assert {f["id"] for f in compare["flips"]} == expected
    assert len(compare["flips"]) == len(expected)
    for flip in compare["flips"]:
        assert flip["after"]["status"] == "auto_failed" and flip["before"]["status"] != "auto_failed"
    assert compare["trait_flips"] and {f["trait"] for f in compare["trait_flips"]} >= {"clarity", "states_fact"}
    rates = {row[0]: row[1:3] for row in compare["figures"]}
    assert rates["pass rate (of complete tasks)"][0] > rates["pass rate (of complete tasks)"][1] == 0.0
    assert compare["only"] == {"before": [], "after": []}
    assert _parse(text).problems == []
    # both runs' task views are in the page: the view switches between them
    assert set(_tasks(data, 0)) == set(_tasks(data, 1))


def test_tasks_are_matched_by_task_key_not_by_order(runs: dict[str, Path], tmp_path: Path) -> None:
    data = json.loads(runs["fabricating"].read_text(encoding="utf-8"))
    data["results"].reverse()
    shuffled = tmp_path / "shuffled.json"
    shuffled.write_text(json.dumps(data), encoding="utf-8")
    _, straight = _page([runs["honest"], runs["fabricating"]], tmp_path)
    _, reversed_ = _page([runs["honest"], shuffled], tmp_path)
    assert sorted(f["id"] for f in reversed_["compare"]["flips"]) == sorted(f["id"] for f in straight["compare"]["flips"])


# --------------------------------------------------------------------------- untrusted text


def test_hostile_answers_stay_text(runs: dict[str, Path], tmp_path: Path) -> None:
    text, data = _page([runs["hostile"]], tmp_path, title='<img src=x onerror="alert(2)"> & report')
    assert len(re.findall(r"<script", text, re.I)) == 2 and len(re.findall(r"</script", text, re.I)) == 2
    assert "alert(1)" not in text.split('id="report-data">', 1)[0]
    blob = text.split('<script type="application/json" id="report-data">', 1)[1].split("</script>", 1)[0]
    assert not set("<>&\u2028\u2029") & set(blob)
    assert "\\u003cscript\\u003ealert(1)\\u003c/script\\u003e" in blob and "\\u2028" in blob
    assert "<title>&lt;img src=x onerror=&quot;alert(2)&quot;&gt; &amp; report</title>" in text
    parsed = _parse(text)
    assert parsed.problems == [] and [s.get("type") for s in parsed.scripts] == ["application/json", None]
    hostile = next(t for t in data["runs"][0]["tasks"] if plain_text(t["tree"]) == HOSTILE)
    assert hostile["excerpts"]  # the judge quoted the hostile answer, and each quote is still only text
    assert any("<script>" in e["text"] or "</mark>" in e["text"] for e in hostile["excerpts"])


def test_a_large_run_is_embedded_gzipped_with_the_same_data(
    runs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain_text_page, plain = _page([runs["hostile"]], tmp_path)
    monkeypatch.setattr(page_module, "COMPRESS_ABOVE", 0)
    packed_page, packed = _page([runs["hostile"]], tmp_path)
    assert '{"gzip":"' in packed_page and '{"gzip":"' not in plain_text_page
    assert packed == plain
    assert len(packed_page) < len(plain_text_page)


# --------------------------------------------------------------------------- inputs


def test_a_jsonl_export_makes_a_page_too(runs: dict[str, Path], tmp_path: Path) -> None:
    lines = tmp_path / "honest.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in json.loads(runs["honest"].read_text())["results"]))
    _, data = _page([lines], tmp_path)
    assert len(data["runs"][0]["tasks"]) == 8 and data["runs"][0]["header"]["config"] == {}


def test_unusable_inputs_are_user_errors(runs: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not a results format"):
        write_report([tmp_path / "x.csv"], tmp_path / "r.html")
    with pytest.raises(UserError, match="one results file, or two"):
        write_report([runs["honest"]] * 3, tmp_path / "r.html")
    with pytest.raises(UserError, match="overwrite its own input"):
        write_report([runs["honest"]], runs["honest"])
    broken = tmp_path / "broken.json"
    broken.write_text('{"results": [{"metadata": 1}]}')
    with pytest.raises(UserError, match="broken.json"):
        write_report([broken], tmp_path / "r.html")
    with pytest.raises(UserError, match="file not found"):
        write_report([tmp_path / "missing.jsonl"], tmp_path / "r.html")
