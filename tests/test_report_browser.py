"""The HTML evidence report in a real browser: headless Chromium driven over the DevTools protocol.

Skipped when no Chromium is installed (``apt-get install chromium``). The pages are written by
``verify.report.write_report`` from real results files of the offline demo (template and rubric,
deep judgment for the template and for every LLM trait) and loaded from disk (file://). Each test
checks that the page raised no console error and no exception, then uses it as a user would:
the status filter, the search box, a click on a task row, a click on an ``[E1]`` reference.
"""

from __future__ import annotations

import json
import struct
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from browser import BrowserError, Chromium, chromium_path

from verify.results.export import load_results
from verify.results.models import VerificationResult

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import report_bench  # noqa: E402 - the demo run and the synthetic 5,000-task export, shared

pytestmark = pytest.mark.skipif(chromium_path() is None, reason="no chromium installed")

READY = "document.body && document.body.dataset.ready === '1'"
PAYLOAD = "<script>alert(1)</script>"
IMG_PAYLOAD = '<img src=x onerror="alert(2)">'

ROWS = """[...document.querySelectorAll('#tasks tr.task')].map(r => ({
    task: r.dataset.task, status: r.dataset.status, hidden: r.hidden, text: r.textContent}))"""


def write_report(paths: list[Path], out: Path, **kw: Any) -> Path:
    from verify.report import write_report as write

    return write(paths, out, **kw)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two real demo runs: the recorded answers, and the same with model-b's cold answer corrected
    (so its verdict flips) and markup in two answers (which the page must show as text)."""
    folder = tmp_path_factory.mktemp("runs")
    report_bench.demo_run(folder / "demo.json", run_name="demo")
    answers = report_bench.demo_answers()
    answers["model-b"]["demo-cold"] = answers["model-a"]["demo-cold"]
    answers["model-b"]["demo-capital"] = f"It's Paris lol {PAYLOAD} really."
    answers["model-a"]["demo-boiling"] += f" {IMG_PAYLOAD}"
    report_bench.demo_run(folder / "changed.json", answers, run_name="changed")
    return {"demo": folder / "demo.json", "changed": folder / "changed.json"}


@pytest.fixture
def chromium() -> Any:
    with Chromium(timeout=30) as browser:
        yield browser


def load(browser: Chromium, page: Path) -> None:
    browser.open(page)
    browser.wait_for(READY, timeout=15)
    browser.settle(0.1)
    assert not browser.errors, [str(p) for p in browser.errors]


def status_of(result: VerificationResult) -> str:
    """A task's status as the page names it: its verdict, with auto-fails apart from other failures."""
    failure = result.metadata.failure
    return "auto_failed" if failure is not None and failure.group == "autofail" else result.verdict


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_driver_sees_errors_exceptions_and_dialogs(chromium: Chromium, tmp_path: Path) -> None:
    """The driver itself: otherwise "no errors" below would prove nothing."""
    page = tmp_path / "bad.html"
    page.write_text("<!doctype html><body><button id=b style='width:90px;height:30px'>x</button><script>"
                    "document.getElementById('b').addEventListener('click', () => { document.body.dataset.clicked = '1'; });"
                    "console.error('broken on purpose'); alert('hi');"
                    "setTimeout(() => { throw new Error('thrown on purpose'); }, 0);"
                    "document.body.dataset.ready = '1';</script></body>", encoding="utf-8")
    chromium.open(page)
    chromium.wait_for(READY)
    chromium.settle(0.2)
    kinds = Counter(p.kind for p in chromium.errors)
    assert kinds["console"] == 1 and kinds["exception"] == 1, chromium.errors
    assert "thrown on purpose" in " ".join(map(str, chromium.errors))
    assert [d["message"] for d in chromium.dialogs] == ["hi"]
    chromium.click("#b")  # a real mouse click reaches the page's listener
    assert chromium.wait_for("document.body.dataset.clicked === '1'", timeout=5)
    with pytest.raises(BrowserError, match="no element"):
        chromium.click("#missing")
    with pytest.raises(BrowserError, match="timed out"):
        chromium.wait_for("false", timeout=0.2)


def test_demo_report_filter_search_and_evidence(runs: dict[str, Path], chromium: Chromium, tmp_path: Path) -> None:
    page = write_report([runs["demo"]], tmp_path / "demo.html")
    results = load_results(runs["demo"])
    load(chromium, page)

    rows = chromium.evaluate(ROWS)
    assert len(rows) == len(results) == 8
    assert not any(r["hidden"] for r in rows)
    assert Counter(r["status"] for r in rows) == Counter(status_of(r) for r in results)

    # status filter: only the failed tasks stay
    chromium.select("#status-filter", "failed")
    rows = chromium.evaluate(ROWS)
    assert {r["task"] for r in rows if not r["hidden"]} == {r["task"] for r in rows if r["status"] == "failed"}
    assert sum(not r["hidden"] for r in rows) == sum(status_of(r) == "failed" for r in results) == 3
    chromium.select("#status-filter", "all")
    assert not any(r["hidden"] for r in chromium.evaluate(ROWS))

    # search: the two tasks of the question about France
    chromium.type_text("#search", "capital of France")
    chromium.settle(0.4)  # a search box may debounce its input
    shown = [r for r in chromium.evaluate(ROWS) if not r["hidden"]]
    assert len(shown) == 2, shown
    chromium.type_text("#search", "")
    chromium.settle(0.4)
    assert not any(r["hidden"] for r in chromium.evaluate(ROWS))

    # a click on a task row shows its task view; a click on [E1] highlights the quoted excerpt
    failed = next(r for r in chromium.evaluate(ROWS) if r["status"] == "failed")
    task = failed["task"]
    chromium.click(f"#tasks tr.task[data-task={json.dumps(task)}]")
    view = f"section.task-view[data-task={json.dumps(task)}]"
    chromium.wait_for(f"(() => {{ const s = document.querySelector({json.dumps(view)});"
                      " return s && !s.hidden && s.getClientRects().length > 0; })()", timeout=5)
    refs = chromium.evaluate(f"[...document.querySelectorAll({json.dumps(view + ' a.ref')})]"
                             ".map(a => [a.textContent, a.getAttribute('href')])")
    assert refs, "no [E<n>] reference in the task view"
    text, href = next((t, h) for t, h in refs if t == "[E1]")
    assert href.startswith(f"#{task}-E")
    target = href[1:]
    assert chromium.evaluate(f"document.getElementById({json.dumps(target)}).matches('mark.excerpt')")
    chromium.click(f"{view} a.ref[href={json.dumps(href)}]")
    assert chromium.wait_for(f"document.getElementById({json.dumps(target)}).classList.contains('active')",
                             timeout=5)
    # every excerpt mark of the view names its trait and lies in the task's id space
    marks = chromium.evaluate(f"[...document.querySelectorAll({json.dumps(view + ' mark.excerpt')})]"
                              ".map(m => [m.id, m.dataset.trait])")
    assert marks and all(m_id.startswith(f"{task}-E") and trait for m_id, trait in marks)

    shot = chromium.screenshot(tmp_path / "demo-report.png")
    assert png_size(shot) == (chromium.width, chromium.height)
    assert shot.stat().st_size > 10_000  # a blank page compresses to a few hundred bytes
    chromium.settle(0.1)
    assert not chromium.errors, [str(p) for p in chromium.errors]


def test_markup_in_answers_is_shown_as_text(runs: dict[str, Path], chromium: Chromium, tmp_path: Path) -> None:
    page = write_report([runs["changed"]], tmp_path / "changed.html")
    assert b"<script>alert(1)" not in page.read_bytes()
    load(chromium, page)
    shown = []
    for row in chromium.evaluate(ROWS):  # open every task: its answer and quotes are rendered
        view = f"section.task-view[data-task={json.dumps(row['task'])}]"
        chromium.click(f"#tasks tr.task[data-task={json.dumps(row['task'])}]")
        shown.append(chromium.wait_for(f"document.querySelector({json.dumps(view)})?.innerText", timeout=5))
    chromium.settle(0.3)
    assert chromium.dialogs == []
    assert not chromium.errors, [str(p) for p in chromium.errors]
    assert any(PAYLOAD in text for text in shown) and any(IMG_PAYLOAD in text for text in shown)
    # nothing from the answers became an element: no injected script, no image
    assert chromium.evaluate("[...document.scripts].filter(s => s.textContent.trim() === 'alert(1)').length") == 0
    assert chromium.evaluate("document.querySelectorAll('img[onerror], img[src=\"x\"]').length") == 0


def test_comparison_page_lists_the_flips(runs: dict[str, Path], chromium: Chromium, tmp_path: Path) -> None:
    before = {r.metadata.task_key: r.verdict for r in load_results(runs["demo"])}
    after = {r.metadata.task_key: r.verdict for r in load_results(runs["changed"])}
    flips = sorted(k for k in before.keys() & after.keys() if before[k] != after[k])
    assert len(flips) >= 1  # model-b's corrected cold answer now passes
    page = write_report([runs["demo"], runs["changed"]], tmp_path / "compare.html", title="demo vs changed")
    load(chromium, page)
    assert chromium.evaluate("document.querySelectorAll('#flips tr.flip').length") == len(flips)
    assert "demo vs changed" in chromium.evaluate("document.title + ' ' + document.body.textContent")
    chromium.screenshot(tmp_path / "compare.png")
    chromium.settle(0.1)
    assert chromium.dialogs == [] and not chromium.errors, [str(p) for p in chromium.errors]


@pytest.mark.slow
def test_5000_tasks_open_without_errors(tmp_path: Path) -> None:
    # How fast it opens is a benchmark figure (benchmarks/report_bench.py: report_open_seconds, target < 2),
    # not a test: a test must pass on a busy machine.
    results = report_bench.make_results(5000, tmp_path)
    page = write_report([results], tmp_path / "big.html")
    figures = report_bench.measure_open(page, repeats=1)
    assert figures["report_page_errors"] == 0 and figures["report_rows"] == 5000, figures


def test_revisions_and_transcripts_render_without_errors(chromium: Chromium, tmp_path: Path) -> None:
    from tests.test_report_revisions import PAYLOAD as TRACE_PAYLOAD
    from tests.test_report_revisions import make_runs
    from verify.report.page import data_of_page

    agent = make_runs(tmp_path / "runs")
    page = write_report([agent["revised"]], tmp_path / "revised.html")
    load(chromium, page)
    assert chromium.evaluate("!!document.querySelector('#revision-summary') && !document.getElementById('revision-filter').hidden")
    assert chromium.evaluate("document.querySelectorAll('#tasks th[data-key=\"revision\"]').length") == 1
    chromium.select("#revision-filter", "satisfied")
    assert chromium.evaluate("document.querySelectorAll('#tasks tr.task:not([hidden])').length") == 8
    chromium.click("#tasks tr.task")
    passes = chromium.wait_for("document.querySelectorAll('section.task-view section.revisions tr.revision-pass').length", timeout=5)
    assert passes == 2
    assert chromium.evaluate("document.querySelectorAll('section.revisions li.criterion[data-passed=\"false\"]').length") > 0
    assert chromium.evaluate("document.querySelectorAll('section.revisions tr.revision-pass details').length") == 2

    # the full trace: blocks, and each excerpt's pieces read exactly its text, labelled with its block
    for name, where in (("full", ".transcript"), ("final", ".answer")):
        page = write_report([agent[name]], tmp_path / f"{name}.html")
        load(chromium, page)
        task = data_of_page(page.read_text(encoding="utf-8"))["runs"][0]["tasks"][0]
        chromium.click(f"#tasks tr.task[data-task={json.dumps(task['id'])}]")
        chromium.wait_for("document.querySelectorAll('section.task-view .transcript .block').length === 5", timeout=5)
        pieces = chromium.evaluate(f"""[...document.querySelectorAll('section.task-view mark.excerpt[id]')].map(m =>
            [m.id, m.closest({json.dumps(where)}) !== null, m.dataset.label, [m, ...document.querySelectorAll(
            'mark.excerpt[data-cont="' + CSS.escape(m.id) + '"]')].map(x => x.textContent).join('')])""")
        assert len(pieces) == len(task["excerpts"]) > 0
        for (mark_id, inside, label, text), e in zip(sorted(pieces), sorted(task["excerpts"], key=lambda e: f"{task['id']}-E{e['n']}"), strict=True):
            assert mark_id == f"{task['id']}-E{e['n']}" and inside and text == e["text"]
            assert label == (f"E{e['n']}·B{e['block']}" if name == "full" else f"E{e['n']}")
        bodies = chromium.evaluate("[...document.querySelectorAll('.transcript .block-body')].map(b => b.textContent)")
        assert sum(TRACE_PAYLOAD in b for b in bodies) == 2
    chromium.settle(0.2)
    assert chromium.dialogs == [] and not chromium.errors, [str(p) for p in chromium.errors]
