"""Plain datasets (CSV, JSONL) and promptfoo-style assertions: reading, located errors, evaluation as
deterministic traits, ``load_benchmark`` on every input, and ``verify convert`` keeping what it can.

Runs use the simulated judge (offline); assertions are decided by code, so their outcomes are exact.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from verify import load_benchmark
from verify.benchmark.assertions import parse_assert_cell
from verify.benchmark.jsonld import Benchmark, save_benchmark
from verify.benchmark.jsonld import load_benchmark as load_checkpoint
from verify.benchmark.question import Question
from verify.benchmark.suite import load_suite, parse_assertions, suite_document
from verify.benchmark.tabular import parse_columns
from verify.benchmark.traits import AssertionTrait, CallableTrait, LLMTrait, RegexTrait, Rubric
from verify.cli import app
from verify.errors import BenchmarkError, UserError
from verify.judging.deterministic import eval_regex

REPO = Path(__file__).resolve().parent.parent
QUESTIONS = REPO / "verify" / "examples" / "suite" / "questions.csv"
OFFLINE = REPO / "verify" / "examples" / "suite" / "offline.json"
runner = CliRunner()


def invoke(*args: object) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def trait(kind: str, value: Any = None) -> AssertionTrait:
    (found,) = parse_assertions([{"type": kind, **({"value": value} if value is not None else {})}])
    assert isinstance(found, AssertionTrait)
    return found


@pytest.mark.parametrize(("kind", "value", "answer", "passed"), [
    ("contains", "Paris", "It is Paris.", True),
    ("contains", "paris", "It is Paris.", False),
    ("icontains", "paris", "It is Paris.", True),
    ("not-contains", "Lyon", "It is Paris.", True),
    ("not-contains", "Paris", "It is Paris.", False),
    ("equals", "H2O", "H2O", True),
    ("equals", "H2O", "H2O.", False),
    ("starts-with", "The", "The end", True),
    ("starts-with", "end", "The end", False),
    ("regex", r"^\d+$", "42", True),
    ("regex", r"^\d+$", "42 apples", False),
    ("not-regex", r"\bsorry\b", "Here you go", True),
    ("max-length", 5, "short", True),
    ("max-length", 5, "too long", False),
    ("is-json", None, '{"a": 1}', True),
    ("is-json", None, "{a: 1}", False),
    ("not-is-json", None, "plain", True),
    ("json-schema", {"type": "object", "required": ["city"]}, '{"city": "Rome"}', True),
    ("json-schema", {"type": "object", "required": ["city"]}, '{"town": "Rome"}', False),
])
def test_assertions_decide_as_promptfoo_does(kind: str, value: Any, answer: str, passed: bool) -> None:
    assert eval_regex(trait(kind, value), answer).score is passed


def test_a_failing_assertion_says_what_it_saw() -> None:
    assert "not found" in (eval_regex(trait("contains", "Paris"), "Lyon").reason or "")
    assert "'sorry' at character 2" in (eval_regex(trait("not-contains", "sorry"), "I sorry").reason or "")
    assert "8 characters (at most 5)" in (eval_regex(trait("max-length", 5), "too long").reason or "")
    reason = eval_regex(trait("json-schema", {"type": "object", "properties": {"n": {"type": "integer"}}}), '{"n": "x"}').reason
    assert reason is not None and "at n:" in reason and "integer" in reason


def test_bad_assertions_are_located() -> None:
    with pytest.raises(BenchmarkError) as caught:
        parse_assertions([{"type": "contians", "value": "x"}, {"type": "regex", "value": "("},
                          {"type": "max-length", "value": "ten"}, {"type": "is-json", "value": 1},
                          {"type": "json-schema", "value": {"type": "nope"}}])
    text = str(caught.value)
    assert "assertions[0]: type 'contians' is not supported; did you mean contains?" in text
    assert "assertions[1] (regex)" in text and "does not compile" in text
    assert "assertions[2] (max-length)" in text and "whole number" in text
    assert "is-json takes no value" in text
    assert "the schema is not valid" in text


def test_assert_cells_split_on_known_types_only() -> None:
    assert parse_assert_cell(r"contains:a;b; regex:^\d+$; is-json; max-length:20; llm-rubric:Says hi; ok") == [
        {"type": "contains", "value": "a;b"}, {"type": "regex", "value": r"^\d+$"}, {"type": "is-json"},
        {"type": "max-length", "value": 20}, {"type": "llm-rubric", "value": "Says hi; ok"}]


def test_csv_reads_questions_answers_assertions_and_criteria() -> None:
    suite = load_suite(QUESTIONS)
    questions = suite.benchmark.questions
    assert len(questions) == 10 and questions[0].id == "capital-france" and questions[0].raw_answer == "Paris"
    assert suite.answers["*"]["chem-water"] == "H2O"
    kinds = {type(t).__name__ for q in questions for t in (q.rubric.traits if q.rubric else [])}
    assert kinds == {"AssertionTrait", "LLMTrait"}
    first = questions[0].rubric
    assert first is not None and [t.name for t in first.traits] == ["contains-paris", "names-paris-as-the-capital-of-france"]
    assert load_benchmark(QUESTIONS).name == "questions"  # the public loader reads datasets and suites
    assert load_benchmark(REPO / "verify" / "examples" / "suite" / "suite.yaml").name == "capitals-suite"


def test_jsonl_with_renamed_columns_answers_per_model_and_metadata(tmp_path: Path) -> None:
    rows = [{"qid": "q1", "prompt": "2+2?", "gold": "4", "answer": "4", "answering_model": "m1", "topic": "math",
             "assert": [{"type": "equals", "value": "4"}]},
            {"qid": "q1", "prompt": "2+2?", "gold": "4", "answer": "5", "answering_model": "m2", "topic": "math",
             "assert": [{"type": "equals", "value": "4"}]},
            {"qid": "q2", "prompt": "Capital of Peru?", "gold": "Lima"}]
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    suite = load_suite(path, columns=parse_columns("id=qid,question=prompt,expected_answer=gold"))
    q1, q2 = suite.benchmark.questions
    assert suite.answers == {"m1": {"q1": "4"}, "m2": {"q1": "5"}}
    assert q1.custom_metadata == {"topic": "math"}
    # a row with only an expected answer is judged against it by one required criterion
    assert q2.rubric is not None
    (agrees,) = q2.rubric.traits
    assert isinstance(agrees, LLMTrait) and agrees.include_ground_truth and agrees.required


def test_a_repeated_id_with_other_assertions_is_refused_not_merged(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("id,question,assert,answer,answering_model\nq1,Capital?,contains:Paris,Paris,m1\n"
                    "q1,Capital?,contains:Lyon,Lyon is it,m2\n")
    with pytest.raises(BenchmarkError) as caught:
        load_suite(path)
    assert "id 'q1' is also in" in str(caught.value) and "assertions" in str(caught.value)


def test_dataset_errors_name_file_row_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text('id,question,assert\na,"Two\nlines",contains:x\na,Again,contains:y\nb,,contains:z\n'
                    "c,Q,frobnicate:1\nd,Q\ne,Q,x,extra\n")
    with pytest.raises(BenchmarkError) as caught:
        load_suite(path)
    text = str(caught.value)
    assert str(path) in text
    assert "row 2 (line 4): column 'id': id 'a' is also in row 1 (lines 2-3)" in text
    assert "row 3 (line 5): column 'question': the question text is missing" in text
    assert "row 4 (line 6) column 'assert': 'frobnicate' is not an assertion type" in text
    assert "row 5 (line 7): nothing to judge" in text
    assert "row 6 (line 8): 4 cells but 3 columns" in text
    no_question = tmp_path / "q.csv"
    no_question.write_text("id,prompt\n1,hi\n")
    with pytest.raises(BenchmarkError, match="no column 'question'.*--columns question=COLUMN"):
        load_suite(no_question)
    lines = tmp_path / "bad.jsonl"
    lines.write_text('{"question": "ok", "expected_answer": "x"}\n{oops\n[1]\n')
    with pytest.raises(BenchmarkError) as caught:
        load_suite(lines)
    assert "line 2: not JSON" in str(caught.value) and "line 3: a line holds one JSON object" in str(caught.value)
    with pytest.raises(UserError, match="'qestion' is not a column verify reads"):
        parse_columns("qestion=q")


def test_csv_of_ten_questions_runs_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = invoke(QUESTIONS, "--preset", OFFLINE, "--output", out, "--no-cache")
    assert result.exit_code == 0, result.output
    assert "passed 10 | failed 0 | incomplete 0" in result.output
    assert "by code 14 of 14" in result.output  # the assertions, decided without the judge
    broken = tmp_path / "broken.csv"
    broken.write_text(QUESTIONS.read_text().replace('"H2O","equals:H2O"', '"H2O is water","equals:H2O"'))
    result = invoke(broken, "--preset", OFFLINE, "--output", tmp_path / "b.json", "--no-cache")
    assert "passed 9 | failed 1" in result.output


def test_columns_flag_is_for_datasets_only(tmp_path: Path) -> None:
    result = invoke(REPO / "verify" / "examples" / "suite" / "suite.yaml", "--columns", "id=x", "--show-plan")
    assert result.exit_code == 1 and "--columns names the columns of a CSV or JSONL dataset" in result.output
    checkpoint = invoke(REPO / "verify" / "examples" / "demo" / "demo.jsonld", "--preset", "demo",
                        "--columns", "id=x", "--show-plan")  # a checkpoint is not read by columns either
    assert checkpoint.exit_code == 1 and "not of demo.jsonld" in checkpoint.output


def test_assertions_round_trip_through_a_checkpoint_and_back(tmp_path: Path) -> None:
    source = {"name": "s", "tests": [{"id": "t", "input": "Q?", "assertions": [
        {"type": "icontains", "value": "paris"}, {"type": "json-schema", "value": {"type": "object"}},
        {"type": "not-regex", "value": "sorry", "id": "no-apology", "required": False, "weight": 2}]}]}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(source))
    checkpoint = tmp_path / "s.jsonld"
    save_benchmark(load_suite(path).benchmark, checkpoint)
    text = checkpoint.read_text()
    assert "karenina:QuestionSpecificRegexTrait" in text  # karenina runs the pattern of a regex-stated assertion
    assert "karenina:QuestionSpecificAssertionTrait" in text  # json-schema: karenina refuses it, never misjudges
    doc, skipped = suite_document(load_checkpoint(checkpoint))
    assert doc["tests"][0]["assertions"] == source["tests"][0]["assertions"] and not skipped


def test_convert_keeps_regex_traits_and_lists_what_it_cannot(tmp_path: Path) -> None:
    rubric = Rubric(traits=[RegexTrait(name="digits", pattern=r"\d+", case_sensitive=False, invert_result=True),
                            CallableTrait(name="code", callable_code="ZGVmIGYoeCk6IHJldHVybiBUcnVl"),
                            LLMTrait(name="tone", kind="literal", classes={"a": "A", "b": "B"})])
    bench = Benchmark(name="b", questions=[Question(id="q", text="Q?", raw_answer="", rubric=rubric)])
    doc, skipped = suite_document(bench)
    assert doc["tests"][0]["assertions"] == [{"type": "not-regex", "value": r"(?i)\d+", "id": "digits", "required": False}]
    assert len(skipped) == 2 and "'code' (callable boolean)" in skipped[0] and "'tone' (llm literal)" in skipped[1]
    (back,) = parse_assertions(doc["tests"][0]["assertions"])
    assert eval_regex(back, "ABC").score is True and eval_regex(back, "a1").score is False
