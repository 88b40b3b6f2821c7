"""``--junit`` and ``--summary-md``: the JUnit file validates against the JUnit schema and is read by a
JUnit parser (junitparser) with one case per task, failures naming the failing traits with their
evidence, incomplete tasks as errors; the markdown summary gives the pass rate with its rule, the
coverage and the failing tasks with reasons. Offline: recorded answers, the simulated judge.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import xmlschema
from junitparser import Error, Failure, JUnitXml
from typer.testing import CliRunner

from verify.benchmark.jsonld import Benchmark
from verify.benchmark.question import Question
from verify.benchmark.suite import parse_assertions
from verify.benchmark.traits import CallableTrait, Rubric
from verify.cli import app
from verify.results.junit import junit_xml
from verify.results.markdown import summary_markdown
from verify.run.runner import RunOutcome, run_verification
from verify.testing import offline_config

REPO = Path(__file__).resolve().parent.parent
SCHEMA = xmlschema.XMLSchema(REPO / "tests" / "fixtures" / "ci" / "junit.xsd")
QUESTIONS = REPO / "verify" / "examples" / "suite" / "questions.csv"
OFFLINE = REPO / "verify" / "examples" / "suite" / "offline.json"


def question(qid: str, *assertions: str, extra: list[object] | None = None) -> Question:
    traits = [*parse_assertions(list(assertions)), *(extra or [])] if assertions else list(extra or [])
    return Question(id=qid, text=f"question {qid}?", raw_answer="", finished=True, rubric=Rubric(traits=traits))


@pytest.fixture(scope="module")
def outcome() -> RunOutcome:
    pickled = CallableTrait(name="pickled", callable_code=base64.b64encode(b"\x80\x05 not run").decode())
    bench = Benchmark(name="ci", questions=[
        question("good", {"type": "contains", "value": "Paris"}),  # type: ignore[arg-type]
        question("bad", {"type": "contains", "value": "Paris"}, {"type": "not-contains", "value": "sorry"}),  # type: ignore[arg-type]
        question("gap", extra=[pickled]),
    ])
    answers = {"*": {"good": "It is Paris.", "bad": "I am sorry, it is Lyon\x00.", "gap": "anything"}}
    return run_verification(bench, offline_config(), answers=answers)


def test_junit_validates_and_a_junit_parser_reads_each_task(outcome: RunOutcome, tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(junit_xml(outcome.results, outcome.summary, "ci"))
    SCHEMA.validate(str(path))  # raises on any element or attribute the schema does not allow
    xml = JUnitXml.fromfile(str(path))
    (suite,) = list(xml)
    assert (suite.tests, suite.failures, suite.errors) == (3, 1, 1)
    cases = {case.name: case for case in suite}
    assert cases["good"].is_passed
    (failure,) = cases["bad"].result
    assert isinstance(failure, Failure)
    assert failure.message == "failed: 2 failed: contains-paris, not-contains-sorry"
    assert "contains-paris: failed (false, required) - not found in the answer" in (failure.text or "")
    assert "found 'sorry' at character 5" in (failure.text or "")
    (error,) = cases["gap"].result
    assert isinstance(error, Error) and error.type == "incomplete"
    assert "pickled: not judged (untrusted)" in (error.text or "")
    assert "Lyon\ufffd." in (cases["bad"].system_out or "")  # a NUL in an answer cannot break the file


def test_markdown_summary_gives_rate_rule_coverage_and_failing_tasks(outcome: RunOutcome) -> None:
    text = summary_markdown(outcome.results, outcome.summary, "ci")
    assert "**did not pass**: 3 task(s): 1 passed, 1 failed, 1 incomplete" in text
    assert "- **pass rate**: 0.500" in text and "pass rate = passed / (passed + failed)" in text
    assert "- **coverage**: judged 3 of 4 evaluations" in text
    assert "| bad | recorded | failed | contains-paris: failed (false, required) - not found" in text
    assert "| gap | recorded | incomplete | pickled: not judged (untrusted)" in text
    assert "| good |" not in text


def test_cli_writes_both_files_and_refuses_clashes(tmp_path: Path) -> None:
    junit, summary = tmp_path / "j.xml", tmp_path / "s.md"
    args = [str(QUESTIONS), "--preset", str(OFFLINE), "--output", str(tmp_path / "r.json"), "--no-cache"]
    result = CliRunner().invoke(app, [*args, "--junit", str(junit), "--summary-md", str(summary)])
    assert result.exit_code == 0, result.output
    SCHEMA.validate(str(junit))
    assert sum(1 for _ in next(iter(JUnitXml.fromfile(str(junit))))) == 10
    assert "**passed**: 10 task(s)" in summary.read_text()
    again = CliRunner().invoke(app, [*args, "--overwrite", "--junit", str(junit)])  # CI reruns replace them
    assert again.exit_code == 0, again.output
    clash = CliRunner().invoke(app, [*args, "--overwrite", "--junit", str(tmp_path / "r.json")])
    assert clash.exit_code == 1 and "--junit" in clash.output and "same file as --output" in clash.output
    log = CliRunner().invoke(app, [*args, "--overwrite", "--log-calls", str(tmp_path / "c.jsonl"),
                                   "--junit", str(tmp_path / "c.jsonl")])
    assert log.exit_code == 1 and "same file as --log-calls" in log.output
    nested = tmp_path / "build" / "test-results" / "verify.xml"  # a folder CI has not made yet
    made = CliRunner().invoke(app, [*args, "--overwrite", "--junit", str(nested)])
    assert made.exit_code == 0 and nested.is_file(), made.output


def test_a_failing_criterion_shows_the_judges_reasoning_and_quotes() -> None:
    from verify.config.verification import VerificationConfig
    from verify.testing import Judge

    judge = Judge(VerificationConfig.from_overrides(offline_config(), deep_judgment_rubric_mode="enable_all"))
    judgment = judge.check("Bananas are yellow. Apples grow on trees.", question="What is the capital of France?",
                           criteria=["Names Paris as the capital of France"])
    assert judgment.outcome == "failed"
    text = judgment.explain()
    assert "names-paris-as-the-capital-of-france: failed (false, required) - Considering the trait" in text
    assert '    quote: "Bananas are yellow."' in text
    with pytest.raises(AssertionError, match="quote: \"Apples grow on trees.\""):
        judge.assert_passes("Bananas are yellow. Apples grow on trees.", criteria=["Names Paris as the capital"])


def test_the_markdown_headline_never_says_passed_without_a_rule_or_with_a_failed_gate() -> None:
    from verify.results.markdown import summary_markdown
    from verify.results.summary import Summary

    assert "**nothing ran**" in summary_markdown([], Summary(), "x")
    assert "**passed**" not in summary_markdown([], Summary(gates=["pass_rate >= 0.9"]), "x")


def test_a_suite_test_without_an_output_is_not_judged_on_a_made_up_answer(tmp_path: Path) -> None:
    from verify.errors import UserError
    from verify.testing import Judge

    path = tmp_path / "s.csv"
    path.write_text("id,question,assert\nq1,Capital of France?,contains:Paris\n")
    with pytest.raises(UserError, match="'q1' has no recorded output"):
        Judge().check_test(path, "q1")
    assert Judge().check_test(path, "q1", answer="Paris.").passed
