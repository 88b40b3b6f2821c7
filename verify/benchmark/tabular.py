"""Plain datasets: a CSV or JSONL file of questions (and recorded answers) as a suite.

One row (CSV) or one JSON object per line (JSONL) is one question. The columns, by default:

- ``id``: the question's id (unique; left out, the row number is the id),
- ``question``: its text (required),
- ``expected_answer``: the reference answer (optional),
- ``answer`` and ``answering_model``: a recorded answer, and the model that gave it (optional; without
  ``answering_model`` the answer is every answering model's),
- ``assert``: assertions in one line, ``contains:Paris; regex:^\\d+$; llm-rubric:Names the capital``
  (:func:`verify.benchmark.assertions.parse_assert_cell`); in JSONL also a list of suite entries.

``columns`` renames them (``{"question": "prompt"}``: the question is in column ``prompt``). Other
columns are kept as the question's metadata. A row with no assertions but an expected answer is judged
by one criterion, "the answer agrees with the expected answer" (the judge sees the reference); a row
with neither is an error. Every problem is reported at once, located by file, row (and line) and column.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from verify.benchmark.assertions import JUDGED, assertion_trait, is_assertion, parse_assert_cell
from verify.benchmark.question import Question
from verify.benchmark.suite_fields import SuiteProblems, criterion_trait
from verify.benchmark.traits import ASSERTIONS, LLMTrait, Rubric
from verify.errors import BenchmarkError, UserError, did_you_mean
from verify.files import JsonProblem, read_text

__all__ = ["COLUMNS", "TABLE_SUFFIXES", "Table", "load_table", "parse_columns"]

COLUMNS = ("id", "question", "expected_answer", "answer", "answering_model", "assert")
TABLE_SUFFIXES = (".csv", ".jsonl")
AGREES = "agrees-with-expected-answer"
_EXTRA = "\0extra"  # DictReader's key for the cells of a row longer than the header
HINT = "fix the listed rows (see docs/datasets.md); rename columns with --columns question=YOUR_NAME,..."


@dataclass(frozen=True)
class Row:
    where: str  # "row 3 (line 4)" or "line 4"
    values: dict[str, Any]


@dataclass
class Table:
    questions: list[Question]
    answers: dict[str, dict[str, str]]  # {model id or "*": {question id: answer}}


def parse_columns(spec: str | None) -> dict[str, str]:
    """``id=qid,question=q`` -> ``{"id": "qid", "question": "q"}``; unknown names are refused."""
    mapping: dict[str, str] = {}
    for part in (spec or "").split(","):
        if not part.strip():
            continue
        name, sep, column = part.partition("=")
        name = name.strip()
        if not sep or not column.strip():
            raise UserError(f"--columns {part!r} is not NAME=COLUMN", "use e.g. --columns id=qid,question=prompt")
        if name not in COLUMNS:
            raise UserError(f"--columns: {name!r} is not a column verify reads{did_you_mean(name, COLUMNS)}",
                            f"name one of: {', '.join(COLUMNS)}")
        mapping[name] = column.strip()
    return mapping


def load_table(path: Path, columns: dict[str, str] | None = None) -> Table:
    """Read a CSV or JSONL dataset; every problem, located, in one :class:`BenchmarkError`."""
    names = {c: c for c in COLUMNS} | (columns or {})
    problems = SuiteProblems(str(path))
    try:
        text = read_text(path)
    except JsonProblem as exc:
        raise BenchmarkError(str(path), [exc.problem], exc.hint) from None
    rows = list(_csv_rows(text, names, problems) if path.suffix.lower() == ".csv" else _jsonl_rows(text, problems))
    if not rows and not problems.items:
        problems.add("file", "no rows: a dataset needs a header and one row per question")
    table = Table(questions=[], answers={})
    seen: dict[str, tuple[str, Question]] = {}
    for number, row in enumerate(rows, start=1):
        question = _question(number, row, names, table, problems)
        if question is None:
            continue
        if question.id in seen:  # the same question again: another model's answer, else a mistake
            first, earlier = seen[question.id]
            if (earlier.text, earlier.raw_answer, earlier.rubric) != (question.text, question.raw_answer, question.rubric):
                problems.add(row.where, f"column {names['id']!r}: id {question.id!r} is also in {first} with another "
                             "question, expected answer or assertions; ids must be unique (a row repeats an id only "
                             "to give another answering model's answer)")
            continue
        seen[question.id] = (row.where, question)
        table.questions.append(question)
    if problems.items:
        raise BenchmarkError(str(path), problems.items, HINT)
    return table


def _csv_rows(text: str, names: dict[str, str], problems: SuiteProblems) -> Iterator[Row]:
    reader = csv.DictReader(io.StringIO(text, newline=""), restkey=_EXTRA)
    header = reader.fieldnames or []
    if names["question"] not in header:
        problems.add("header", f"no column {names['question']!r} for the question text{did_you_mean(names['question'], header)} "
                     f"(columns: {', '.join(header) or 'none'}); name it with --columns question=COLUMN")
        return
    start = 1
    try:
        for number, values in enumerate(reader, start=1):
            where = f"row {number} (line {start + 1})" if reader.line_num == start + 1 else \
                f"row {number} (lines {start + 1}-{reader.line_num})"
            start = reader.line_num
            if _EXTRA in values:
                problems.add(where, f"{len(header) + len(values[_EXTRA])} cells but {len(header)} columns; "
                             "quote cells that hold commas")
                continue
            yield Row(where, {k: v for k, v in values.items() if v is not None})
    except csv.Error as exc:
        problems.add(f"line {reader.line_num}", f"not CSV: {exc}; quote cells that hold commas, quotes or newlines")


def _jsonl_rows(text: str, problems: SuiteProblems) -> Iterator[Row]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            values = json.loads(line)
        except ValueError as exc:
            problems.add(f"line {number}", f"not JSON ({exc}); write one JSON object per line")
            continue
        if not isinstance(values, dict):
            problems.add(f"line {number}", f"a line holds one JSON object (a row), not {type(values).__name__}")
            continue
        yield Row(f"line {number}", values)


def _question(number: int, row: Row, names: dict[str, str], table: Table, problems: SuiteProblems) -> Question | None:
    values, where = row.values, row.where
    text = values.get(names["question"])
    if not isinstance(text, str) or not text.strip():
        problems.add(where, f"column {names['question']!r}: the question text is missing; fill it in")
        return None
    raw_id = values.get(names["id"])
    qid = str(number) if raw_id is None or raw_id == "" else str(raw_id).strip()
    expected = values.get(names["expected_answer"])
    expected = "" if expected is None else str(expected)
    before = len(problems.items)
    traits = _traits(where, values.get(names["assert"]), names["assert"], problems)
    if len(problems.items) > before:  # its assertions are wrong: "nothing to judge" would only add noise
        return None
    if not traits:
        if not expected.strip():
            problems.add(where, f"nothing to judge: give column {names['expected_answer']!r} or "
                         f"{names['assert']!r} (e.g. contains:Paris; llm-rubric:Names the capital)")
            return None
        traits = [LLMTrait(name=AGREES, kind="boolean", required=True, include_ground_truth=True,
                           description="The answer agrees with the expected answer (the reference).")]
    _record_answer(where, qid, values, names, table, problems)
    reserved = {names[c] for c in COLUMNS}
    metadata = {k: v for k, v in values.items() if k not in reserved}
    try:
        return Question(id=qid, text=text, raw_answer=expected, finished=True, rubric=Rubric(traits=traits),
                        custom_metadata=metadata)
    except ValidationError as exc:
        for error in exc.errors():
            problems.add(where, error["msg"].removeprefix("Value error, "))
        return None


def _traits(where: str, cell: Any, column: str, problems: SuiteProblems) -> list[Any]:
    if cell is None or cell == "":
        return []
    entries: list[Any] = parse_assert_cell(cell) if isinstance(cell, str) else cell
    if not isinstance(entries, list):
        problems.add(where, f"column {column!r}: assertions are text (contains:Paris; regex:^\\d+$) or a list")
        return []
    here = f"{where} column {column!r}"
    traits: list[Any] = []
    for i, entry in enumerate(entries):
        if isinstance(entry, str):
            traits.append(criterion_trait(here, entry, i, problems, required=True))
        elif is_assertion(entry):
            traits.append(assertion_trait(here, entry, i, problems))
        else:
            kind = entry.get("type") if isinstance(entry, dict) else entry
            hint = did_you_mean(str(kind), (*ASSERTIONS, JUDGED)) if isinstance(kind, str) else ""
            problems.add(here, f"{kind!r} is not an assertion type{hint}; use e.g. contains:TEXT, icontains:TEXT, "
                         "not-contains:TEXT, equals:TEXT, starts-with:TEXT, regex:PATTERN, is-json, "
                         "json-schema:{...}, max-length:N or llm-rubric:CRITERION")
    return [t for t in traits if t is not None]


def _record_answer(where: str, qid: str, values: dict[str, Any], names: dict[str, str], table: Table,
                   problems: SuiteProblems) -> None:
    answer = values.get(names["answer"])
    if answer is None or answer == "":
        return
    if not isinstance(answer, str):
        problems.add(where, f"column {names['answer']!r}: the recorded answer must be text")
        return
    model = values.get(names["answering_model"]) or "*"
    answers = table.answers.setdefault(str(model), {})
    if qid in answers:
        problems.add(where, f"question {qid!r} has a second answer from {model if model != '*' else 'the same model'}; "
                     f"give each row its own {names['answering_model']!r}")
        return
    answers[qid] = answer
