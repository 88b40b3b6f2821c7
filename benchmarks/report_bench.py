"""The HTML evidence report at scale: a 5,000-task results export, written and opened in headless Chromium.

Usage::

    python benchmarks/report_bench.py               # 5,000 tasks
    python benchmarks/report_bench.py --tasks 20000 --keep /tmp/big.html

The results are a real verify export (``verify.results.export.export``) built from one real run: the
offline demo (``verify/examples/demo``: simulated answerers and judge, template and rubric, template deep
judgment and rubric deep judgment for every LLM trait, so every result has validated excerpts and
reasoning citing them). Its 8 results are replicated with varied question ids and texts, answering
models (4), answers (extra sentences appended, so the excerpts' offsets stay true; some with HTML
markup and non-ASCII text), trait scores and reasoning, and verdicts: about 60% passed, 25% failed on
content, 10% incomplete (a trait unscored after a judge time-out) and 5% auto-failed (a trait whose
quotes could not be validated). The same ``seed`` gives the same file.

Figures (``name: value``; notes start with ``#`` and go to stderr):

* ``report_tasks``: results in the export;
* ``report_results_bytes``: size of the export;
* ``report_generate_seconds``: building and exporting the synthetic results (not part of the report);
* ``report_write_seconds``: ``verify.report.write_report`` on that export (best of ``--repeats``);
* ``report_bytes``: size of the HTML page;
* ``report_open_seconds``: navigation start -> ``document.body.dataset.ready === "1"``, measured inside
  the page (``performance.now()`` when a ``MutationObserver`` sees the attribute set), page loaded from
  disk (file://) in headless Chromium, median of ``--repeats`` fresh loads; target < 2;
* ``report_open_painted_seconds``: the same until the first frame after ready has been produced;
* ``report_open_wall_seconds``: the same as seen by the driver (``Page.navigate`` sent -> ready seen);
* ``report_rows``: task rows in the page's table; ``report_page_errors``: console errors and exceptions.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if __package__ in (None, ""):
    sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))  # the Chromium driver lives with the tests

from verify.benchmark.jsonld import load_benchmark  # noqa: E402
from verify.config.preset import load_preset  # noqa: E402
from verify.config.verification import VerificationConfig  # noqa: E402
from verify.results.export import export, load_results, read_export_header  # noqa: E402
from verify.results.models import VerificationResult  # noqa: E402
from verify.run.runner import run_verification  # noqa: E402

DEMO = HERE.parent / "verify" / "examples" / "demo"
TARGET_OPEN_SECONDS = 2.0
#: The answering models of the synthetic run: (config id, model name).
MODELS = (("model-a", "answerer-large"), ("model-b", "answerer-small"), ("model-c", "answerer-tuned"),
          ("model-d", "answerer-distilled"))
#: Sentences appended to answers, so that answers differ in length and content (some with markup).
EXTRA = (
    "This is well documented in standard references.",
    "Measurements at 37 °C gave an IC₅₀ of 4.2 µM in two independent assays.",
    "In short: the evidence points the same way across sources & reviews.",
    "Note that <b>bold</b> text and a <a href=\"https://example.org\">link</a> are shown as written.",
    "Some say x < y && y > z, which is a comparison, not markup.",
    "A café in Zürich would describe it the same way — naïvely, perhaps.",
    "Under the hood, the mechanism involves several steps that are summarised here briefly.",
    "First, the conditions are checked; second, the outcome is measured; third, it is reported.",
    "Further detail is available on request, but the answer above covers the question.",
    "数値は参考値です。",
)
#: Verdicts of the synthetic tasks and their shares.
MIX = (("passed", 0.60), ("failed", 0.25), ("incomplete", 0.10), ("auto_failed", 0.05))


def say(text: str) -> None:
    print(f"# {text}", file=sys.stderr, flush=True)


def figure(name: str, value: float | int) -> None:
    print(f"{name}: {value:.3f}" if isinstance(value, float) else f"{name}: {value}", flush=True)


# --- the real run -------------------------------------------------------------------------------


def demo_config() -> VerificationConfig:
    """The demo preset with template and rubric, template deep judgment and rubric deep judgment for every trait
    (as ``verify DEMO --preset demo --deep-judgment --deep-judgment-rubric-mode enable_all
    --evaluation-mode template_and_rubric``)."""
    base = load_preset("demo")
    return VerificationConfig.model_validate({
        **base.model_dump(), "evaluation_mode": "template_and_rubric", "deep_judgment_mode": "full",
        "deep_judgment_rubric_mode": "enable_all",
    })


def demo_answers() -> dict[str, dict[str, str]]:
    answers: dict[str, dict[str, str]] = json.loads((DEMO / "answers.json").read_text(encoding="utf-8"))
    return answers


def demo_run(output: Path, answers: dict[str, dict[str, str]] | None = None,
             run_name: str | None = None) -> list[VerificationResult]:
    """Run the offline demo (no cache) and write its export to ``output``; returns the results in task order."""
    outcome = run_verification(load_benchmark(DEMO / "demo.jsonld"), demo_config(),
                               answers=demo_answers() if answers is None else answers, output=output,
                               overwrite=True, run_name=run_name)
    return sorted(outcome.results, key=lambda r: r.metadata.task_key)


# --- the synthetic results ----------------------------------------------------------------------


def _pick(rng: random.Random) -> str:
    roll, total = rng.random(), 0.0
    for name, share in MIX:
        total += share
        if roll < total:
            return name
    return MIX[0][0]


def _drop_trait(d: dict[str, Any], trait: str) -> None:
    """Take a trait's score and evidence out of a result's rubric sections."""
    rubric, dj = d["rubric"], d["deep_judgment_rubric"]
    for key in ("llm_trait_scores", "llm_trait_labels"):
        if rubric.get(key):
            rubric[key].pop(trait, None)
    for key in ("extracted_rubric_excerpts", "rubric_trait_reasoning", "deep_judgment_rubric_scores"):
        dj[key].pop(trait, None)


def _vary(d: dict[str, Any], i: int, rng: random.Random) -> None:
    """Make the copy ``d`` of a real result into synthetic task ``i``: identity, answer, scores, verdict."""
    meta = d["metadata"]
    config_id, model_name = MODELS[i % len(MODELS)]
    number = i // len(MODELS)
    question_id = f"{meta['question_id']}-{number:05d}"
    meta["question_id"] = question_id
    meta["question_text"] = f"{meta['question_text']} (set {number % 97}, item {number})"
    meta["answering"] = {**meta["answering"], "model_name": model_name, "config_id": config_id}
    judge = meta["task_key"].split("\t")[2]
    meta["task_key"] = "\t".join((question_id, f"{meta['answering']['interface']}:{model_name}:{config_id}", judge))
    meta["result_id"] = hashlib.sha256(meta["task_key"].encode()).hexdigest()[:16]
    meta["execution_time"] = round(rng.uniform(0.5, 9.0), 3)

    template, dj = d["template"], d["deep_judgment_rubric"]
    answer = template["raw_llm_response"]
    extra = " ".join(rng.sample(EXTRA, rng.randint(2, 6)))
    start = len(answer) + 1
    template["raw_llm_response"] = f"{answer} {extra}"
    # a second quote for clarity, on the appended text (its offsets are exact), cited in the reasoning
    first_extra = extra.split(". ")[0]
    clarity = dj["extracted_rubric_excerpts"].get("clarity")
    if clarity is not None:
        clarity.append({**clarity[0], "text": first_extra, "start": start, "end": start + len(first_extra),
                        "similarity_score": 1.0, "match_method": "exact", "spans": None})
    # scores: clarity 1..5 everywhere it appears; the reasoning cites every quote and ends with the verdict
    score = rng.randint(1, 5)
    rubric = d["rubric"]
    for section in (rubric["llm_trait_scores"] or {}, dj["deep_judgment_rubric_scores"]):
        if "clarity" in section:
            section["clarity"] = score
    if "clarity" in rubric["trait_status"]:
        rubric["trait_status"]["clarity"]["score"] = score
    for name, text in dj["rubric_trait_reasoning"].items():
        quotes = dj["extracted_rubric_excerpts"].get(name) or []
        cited = ", ".join(f"[E{k}]" for k in range(1, len(quotes) + 1)) or "the whole response"
        head = text.split(", I looked at")[0]
        verdict = text.rsplit("VERDICT:", 1)[-1].strip()
        if name == "clarity":
            verdict = str(score)
        dj["rubric_trait_reasoning"][name] = (
            f"{head}, I looked at {cited}. The quoted passages {'support' if rng.random() < 0.7 else 'only partly support'} "
            f"the criterion. VERDICT: {verdict}"
        )

    status = _pick(rng)
    coverage = meta["coverage"]
    if status == "passed":
        meta.update(failure=None, verdict="passed")
        template["verify_result"] = True
    elif status == "failed":
        parsed = template.get("parsed_llm_response") or {}
        expected = template.get("parsed_gt_response") or {}
        reason = f"verify() returned False (parsed {json.dumps(parsed)}; expected {json.dumps(expected)})"
        meta.update(verdict="failed", failure={"category": "content", "stage": "verify_template",
                                               "reason": reason, "group": "content"})
        template["verify_result"] = False
    else:
        llm_traits = sorted(dj["rubric_trait_reasoning"])
        trait = llm_traits[i % len(llm_traits)]
        outcome = rubric["trait_status"][trait]
        tmeta = dj["trait_metadata"][trait]
        _drop_trait(d, trait)
        outcome.update(score=None, label=None)
        if status == "incomplete":
            outcome.update(status="unscored", error_category="timeout",
                           reason="judge call failed (timeout): no reply within 60 s after 3 attempts")
            tmeta.update(stages_completed=["excerpt_extraction"], error="no reply within 60 s after 3 attempts")
            coverage["judged"] -= 1
            coverage["unscored"] = {trait: "timeout"}
            meta.update(failure=None, verdict="incomplete")
        else:  # auto-failed: no quote the judge gave could be found in the answer
            outcome.update(status="auto_failed", reason="no excerpt could be validated against the answer")
            tmeta.update(stages_completed=["excerpt_extraction"], had_excerpts=False, excerpt_retry_count=2,
                         excerpt_validation_failed=True, evidence="failed",
                         rejected_excerpts=[{"text": f"The response states that {w} is always the case.",
                                             "similarity_score": round(0.3 + 0.1 * k, 2),
                                             "reason": "not found in the response", "attempt": k + 1}
                                            for k, w in enumerate(("this", "the mechanism", "the value"))])
            dj["traits_without_valid_excerpts"] = [trait]
            reason = f"traits without valid excerpts: {trait} (2 retries)"
            meta.update(verdict="failed", failure={"category": "deep_judgment_rubric",
                                                   "stage": "deep_judgment_rubric_auto_fail",
                                                   "reason": reason, "group": "autofail"})
            meta["warnings"] = [reason]
            meta["stages"] = [*meta["stages"][:-1], "deep_judgment_rubric_auto_fail", meta["stages"][-1]]


def synthetic_results(n: int, pool: Sequence[VerificationResult], seed: int = 16) -> Iterator[VerificationResult]:
    """``n`` results made from the real ``pool`` (each a validated ``VerificationResult``), streamed."""
    rng = random.Random(seed)
    bases = [json.dumps(r.model_dump(mode="json")) for r in pool]
    for i in range(n):
        d = json.loads(bases[i % len(bases)])
        _vary(d, i, rng)
        yield VerificationResult.model_validate(d)


def run_header(demo_export: Path, n: int) -> dict[str, Any]:
    """verify's run header for the synthetic export: the demo run's, with the task count and a run name."""
    meta = read_export_header(demo_export) or {}
    keep = ("schema_version", "verify_version", "evaluation_mode", "plan", "config_warnings", "structured_output",
            "config", "benchmark", "identity")
    header = {k: meta[k] for k in keep if k in meta}
    rubric = json.loads(demo_export.read_text(encoding="utf-8")).get("shared_data", {}).get("rubric_definition")
    return {**header, "run_name": f"report-bench-{n}", "tasks": n, "rubric_definition": rubric}


def make_results(n: int, folder: Path, seed: int = 16) -> Path:
    """A real verify JSON export of ``n`` synthetic tasks in ``folder`` (built from one demo run); its path."""
    folder.mkdir(parents=True, exist_ok=True)
    demo = folder / "demo-results.json"
    pool = demo_run(demo)
    path = folder / f"results-{n}.json"
    written = export(synthetic_results(n, pool, seed), path, header=run_header(demo, n))
    assert written == n
    return path


# --- opening the page ---------------------------------------------------------------------------

#: Installed before the page's scripts: records performance.now() when the body gets data-ready="1",
#: and again once the next frame after that has been produced.
READY_PROBE = """
(() => {
  const seen = () => document.body && document.body.dataset.ready === '1';
  const mark = () => {
    if (window.__readyAt !== undefined || !seen()) return false;
    window.__readyAt = performance.now();
    requestAnimationFrame(() => setTimeout(() => { window.__paintedAt = performance.now(); }, 0));
    return true;
  };
  new MutationObserver((_, observer) => { if (mark()) observer.disconnect(); })
    .observe(document, {attributes: true, attributeFilter: ['data-ready'], subtree: true, childList: true});
})();
"""


def open_times(browser: Any, page: Path, timeout: float = 60.0) -> tuple[float, float, float]:
    """Load ``page`` from disk in ``browser`` (a ``tests/browser.Chromium`` with ``READY_PROBE`` installed);
    returns (navigation -> ready, navigation -> first frame after ready, both in-page; driver's wall time)."""
    started = time.perf_counter()
    browser.navigate(page, timeout=timeout)
    browser.wait_for("document.body && document.body.dataset.ready === '1'", timeout=timeout, interval=0.005)
    wall = time.perf_counter() - started
    ready, painted = browser.wait_for(
        "window.__paintedAt !== undefined && [window.__readyAt, window.__paintedAt]", timeout=timeout, interval=0.005)
    return ready / 1000, painted / 1000, wall


def measure_open(page: Path, repeats: int = 3, timeout: float = 60.0) -> dict[str, float]:
    """Median open times of ``page`` over ``repeats`` fresh loads in one headless Chromium, the task rows it
    shows and how many problems (console errors, exceptions) it reported."""
    from browser import Chromium

    with Chromium(timeout=timeout) as browser:
        browser.add_init_script(READY_PROBE)
        browser.open(Path(__file__))  # warm the browser (first navigation starts the renderer)
        runs = [open_times(browser, page, timeout) for _ in range(repeats)]
        rows = browser.evaluate("document.querySelectorAll('#tasks tr.task').length")
        browser.settle(0.2)
        problems = browser.errors
    if problems:
        say("page problems: " + "; ".join(map(str, problems[:5])))
    return {
        "report_open_seconds": statistics.median(r[0] for r in runs),
        "report_open_painted_seconds": statistics.median(r[1] for r in runs),
        "report_open_wall_seconds": statistics.median(r[2] for r in runs),
        "report_rows": rows,
        "report_page_errors": len(problems),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--tasks", type=int, default=5000, help="synthetic tasks (default 5,000)")
    parser.add_argument("--repeats", type=int, default=3, help="report writes and page loads to time (default 3)")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--keep", type=Path, help="also copy the HTML page here")
    args = parser.parse_args(argv)
    import logging

    logging.getLogger("verify").setLevel(logging.ERROR)
    from verify.report import write_report

    with tempfile.TemporaryDirectory(prefix="verify-report-bench-") as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        results = make_results(args.tasks, folder, args.seed)
        generate = time.perf_counter() - started
        figure("report_tasks", len(load_results(results)))
        figure("report_results_bytes", results.stat().st_size)
        figure("report_generate_seconds", generate)
        page = folder / "report.html"
        writes = []
        for _ in range(max(1, args.repeats)):
            started = time.perf_counter()
            write_report([results], page)
            writes.append(time.perf_counter() - started)
        figure("report_write_seconds", min(writes))
        figure("report_bytes", page.stat().st_size)
        if args.keep:
            args.keep.parent.mkdir(parents=True, exist_ok=True)
            args.keep.write_bytes(page.read_bytes())
        from browser import chromium_path

        if chromium_path() is None:
            say("no chromium installed: open times not measured (apt-get install chromium)")
            return 0
        for name, value in measure_open(page, max(1, args.repeats)).items():
            figure(name, value)
    return 0


if __name__ == "__main__":
    sys.exit(main())
