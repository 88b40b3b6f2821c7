"""Test-suite files (``suite.yaml`` / ``suite.json``) as AgentV and letta-evals users write them.

:func:`load_suite` turns one into a :class:`Suite`: a verify :class:`Benchmark` (each test a
question, each criterion a rubric trait, suite-wide assertions and graders the global rubric) plus
what the run needs besides: recorded answers, gates and the graders' judge model. Every stage, deep
judgment and resume then apply as for a karenina checkpoint. :func:`suite_document` goes the other
way (what a suite can hold of a benchmark) for ``verify convert``.

Bad suites fail at load with one located line per problem (file, test id, field, what to do).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from verify.benchmark.assertions import JUDGED, assertion_entry, assertion_trait, is_assertion, regex_entry
from verify.benchmark.jsonld import Benchmark
from verify.benchmark.question import Question
from verify.benchmark.suite_fields import (
    GATE_KEYS,
    RUBRICS_KEYS,
    TEST_KEYS,
    TOP_KEYS,
    SuiteProblems,
    criterion_entry,
    criterion_trait,
)
from verify.benchmark.suite_graders import grader_entry, grader_traits, judge_entry, judge_traits
from verify.benchmark.tabular import TABLE_SUFFIXES, load_table
from verify.benchmark.traits import ASSERTIONS, AssertionTrait, LLMTrait, RegexTrait, Rubric, SchemaJudgeTrait
from verify.config.gates import parse_gate
from verify.errors import BenchmarkError, UserError, did_you_mean
from verify.files import JsonProblem, parse_json, parse_yaml, read_text

__all__ = ["Suite", "is_suite_file", "load_suite", "parse_assertions", "suite_document", "write_suite"]

HINT = "fix the listed entries of the suite (see 'Test-suite files' in docs/suites.md)"


@dataclass
class Suite:
    benchmark: Benchmark
    answers: dict[str, dict[str, str]] = field(default_factory=dict)  # {model id or "*": {test id: output}}
    gates: list[str] = field(default_factory=list)  # canonical gate texts
    judge_model: str | None = None  # the graders' model: the judge when no preset names one
    judge_temperature: float | None = None


def is_suite_file(path: Path) -> bool:
    """A .yaml/.yml file, or a .json file whose top level holds a ``tests`` list (a checkpoint never does)."""
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml", *TABLE_SUFFIXES):  # a CSV or JSONL dataset is read as a suite
        return True
    if suffix != ".json" or not path.is_file():
        return False
    try:
        data = parse_json(read_text(path))
    except (JsonProblem, UserError, OSError):
        return False
    return isinstance(data, dict) and isinstance(data.get("tests"), list)


def _read(path: Path) -> Any:
    try:
        text = read_text(path)
        return parse_json(text) if path.suffix.lower() == ".json" else parse_yaml(text)
    except JsonProblem as exc:
        raise BenchmarkError(str(path), [exc.problem], exc.hint) from None


def load_suite(path: str | Path, *, allow_outside_paths: bool = False, columns: dict[str, str] | None = None) -> Suite:
    """Read and check a suite, or a CSV / JSONL dataset (:mod:`verify.benchmark.tabular`, its columns
    renamed by ``columns``); every problem, located, in one :class:`BenchmarkError`.

    A grader's ``prompt_path`` must stay inside the suite's folder unless ``allow_outside_paths``.
    """
    path = Path(path)
    if path.suffix.lower() in TABLE_SUFFIXES:
        table = load_table(path, columns)
        return Suite(benchmark=Benchmark(name=path.stem, questions=table.questions, source=str(path)),
                     answers=table.answers)
    data = _read(path)
    problems = SuiteProblems(str(path))
    if not isinstance(data, dict):
        raise BenchmarkError(str(path), ["top level: a suite is a mapping with a 'tests' list"], HINT)
    problems.keys("top level", data, TOP_KEYS)
    graders = grader_traits(data.get("graders"), path.parent, problems, outside_ok=allow_outside_paths)
    global_traits: list[Any] = [*_assertion_traits("suite assertions", data.get("assertions"), problems),
                     *graders.traits, *judge_traits(data.get("judges"), problems)]
    suite = Suite(benchmark=Benchmark(name="suite"), judge_model=graders.model, judge_temperature=graders.temperature)
    tests = data.get("tests")
    if not isinstance(tests, list) or not tests:
        problems.add("top level", "tests: needs a list of tests, each with id, input and assertions")
        tests = []
    questions = [q for i, t in enumerate(tests) if (q := _question(i, t, bool(global_traits), suite, problems))]
    suite.gates = _gates(data, [t.name for t in global_traits], problems)
    name = data.get("name") or path.stem
    if problems.items:
        raise BenchmarkError(str(path), problems.items, HINT)
    try:
        suite.benchmark = Benchmark(name=str(name), description=data.get("description"), questions=questions,
                                    global_rubric=Rubric(traits=global_traits) if global_traits else None,
                                    source=str(path))
    except ValidationError as exc:  # e.g. a test id twice, a criterion id twice in the suite's assertions
        raise BenchmarkError(str(path), [e["msg"].removeprefix("Value error, ") for e in exc.errors()], HINT) from None
    return suite


def _question(index: int, test: Any, has_global: bool, suite: Suite, problems: SuiteProblems) -> Question | None:
    if not isinstance(test, dict):
        problems.add(f"tests[{index}]", f"a test is a mapping with id, input and assertions, not {type(test).__name__}")
        return None
    test_id = test.get("id")
    if not isinstance(test_id, str | int) or isinstance(test_id, bool) or not str(test_id).strip():
        problems.add(f"tests[{index}]", "id: every test needs an id (text), e.g. id: capital-of-france")
        return None
    where = f"test {str(test_id)!r}"
    problems.keys(where, test, TEST_KEYS)
    traits = _assertion_traits(where, test.get("assertions"), problems)
    if not traits and not has_global:
        problems.add(where, "assertions: the test has no criteria; add assertions (plain strings or type: rubrics), "
                     "or suite-wide assertions or graders")
    text = _input_text(where, test.get("input"), problems)
    if "expected_output" in test and "ground_truth" in test:
        problems.add(where, "expected_output and ground_truth both given; keep one (they mean the same)")
    reference = test.get("expected_output", test.get("ground_truth"))
    _record_outputs(where, str(test_id), test, suite.answers, problems)
    if text is None:
        return None
    metadata: dict[str, Any] = test["metadata"] if isinstance(test.get("metadata"), dict) else {}
    if isinstance(test.get("criteria"), str):
        metadata = {**metadata, "criteria": test["criteria"]}
    try:
        return Question(id=str(test_id), text=text, raw_answer="" if reference is None else str(reference),
                        finished=True, rubric=Rubric(traits=list[Any](traits)) if traits else None, custom_metadata=metadata)
    except ValidationError as exc:
        for error in exc.errors():
            problems.add(where, error["msg"].removeprefix("Value error, "))
        return None


def _input_text(where: str, value: Any, problems: SuiteProblems) -> str | None:
    """``input`` is text, or AgentV's message list (the contents joined, each after its role)."""
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, list) and value and all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in value):
        return "\n\n".join(m["content"] if len(value) == 1 else f"{m.get('role', 'user')}: {m['content']}" for m in value)
    problems.add(where, "input: needs the question text (or a list of {role, content} messages)")
    return None


def _record_outputs(where: str, test_id: str, test: dict[str, Any], answers: dict[str, dict[str, str]],
                    problems: SuiteProblems) -> None:
    """``output`` answers for every answering model; ``outputs: {model id: text}`` per model."""
    if test.get("output") is not None:
        if not isinstance(test["output"], str):
            problems.add(where, "output: the recorded answer must be text")
        else:
            answers.setdefault("*", {})[test_id] = test["output"]
    outputs = test.get("outputs")
    if outputs is None:
        return
    if not isinstance(outputs, dict) or not all(isinstance(v, str) for v in outputs.values()):
        problems.add(where, "outputs: must map answering model ids to answer text, e.g. outputs: {model-a: Paris.}")
        return
    for model, text in outputs.items():
        answers.setdefault(str(model), {})[test_id] = text


def _assertion_traits(where: str, assertions: Any, problems: SuiteProblems) -> list[LLMTrait | AssertionTrait]:
    """Plain strings are required criteria; ``type: rubrics`` entries hold criteria objects; typed
    assertions (``type: contains``, ...) are deterministic traits (:mod:`verify.benchmark.assertions`)."""
    if assertions is None:
        return []
    if not isinstance(assertions, list):
        problems.add(where, "assertions: must be a list (plain strings, or type: rubrics entries)")
        return []
    traits: list[LLMTrait | AssertionTrait | None] = []
    for i, entry in enumerate(assertions):
        if isinstance(entry, str):
            traits.append(criterion_trait(where, entry, i, problems, required=True))
            continue
        if is_assertion(entry):
            traits.append(assertion_trait(where, entry, i, problems))
            continue
        if not isinstance(entry, dict) or entry.get("type") != "rubrics":
            kind = entry.get("type") if isinstance(entry, dict) else type(entry).__name__
            known = ", ".join(("rubrics", *ASSERTIONS, JUDGED))
            problems.add(f"{where} assertions[{i}]", f"type {kind!r} is not supported{did_you_mean(str(kind), (*ASSERTIONS, JUDGED, 'rubrics'))}; "
                         f"use a plain string (a criterion) or one of: {known} ('not-' negates an assertion)")
            continue
        problems.keys(f"{where} assertions[{i}]", entry, RUBRICS_KEYS)
        criteria = entry.get("criteria")
        if not isinstance(criteria, list) or not criteria:
            problems.add(f"{where} assertions[{i}]", "criteria: type: rubrics needs a non-empty criteria list")
            continue
        traits += [criterion_trait(where, c, j, problems, required=False) for j, c in enumerate(criteria)]
    return [t for t in traits if t is not None]


def parse_assertions(assertions: list[Any], source: str = "assertions") -> list[LLMTrait | AssertionTrait]:
    """A test's ``assertions`` list as traits, as a suite reads it (the pytest helper's way in);
    every problem in one :class:`BenchmarkError` naming ``source``."""
    problems = SuiteProblems(source)
    traits = _assertion_traits("test", assertions, problems)
    if problems.items:
        raise BenchmarkError(source, problems.items, HINT)
    return traits


def _gates(data: dict[str, Any], grader_names: list[str], problems: SuiteProblems) -> list[str]:
    """letta's ``gate: {metric_key, op, value}`` (a grader's name stands for its mean score) or a text gate."""
    specs = ([data["gate"]] if data.get("gate") is not None else []) + list(data.get("gates") or [])
    texts: list[str] = []
    for spec in specs:
        if isinstance(spec, dict):
            problems.keys("gate", spec, GATE_KEYS)
            key = spec.get("metric_key")
            metric = f"mean({key})" if key in grader_names else key
            spec = f"{metric} {spec.get('op')} {spec.get('value')}"
        try:
            texts.append(parse_gate(spec).text)
        except ValueError as exc:
            problems.add("gate", f"{exc}; a grader's name ({', '.join(grader_names) or 'none here'}) "
                         "gives its mean score")
    return texts


# ------------------------------------------------------------------------------------ writing back


def suite_document(benchmark: Benchmark) -> tuple[dict[str, Any], list[str]]:
    """The suite holding what a suite can of ``benchmark``, and a line per trait it cannot hold."""
    skipped: list[str] = []

    def assertions(rubric: Rubric | None, where: str) -> list[Any]:
        criteria: list[Any] = []
        typed: list[Any] = []
        for trait in rubric.traits if rubric else []:
            if isinstance(trait, LLMTrait) and (trait.kind == "boolean" or trait.score_ranges) and trait.prompt is None:
                criteria.append(criterion_entry(trait))
            elif isinstance(trait, AssertionTrait):
                typed.append(assertion_entry(trait))
            elif isinstance(trait, RegexTrait):
                typed.append(regex_entry(trait))
            else:
                kind = f"{trait.trait_type} {getattr(trait, 'kind', '')}".strip()
                skipped.append(f"{where}: trait {trait.name!r} ({kind}) has no suite form (a suite holds boolean "
                               "criteria, 0-10 criteria with score_ranges, regex traits and assertions, "
                               "suite-wide graders and judges); left out")
        return ([{"type": "rubrics", "criteria": criteria}] if criteria else []) + typed

    doc: dict[str, Any] = {"name": benchmark.name}
    if benchmark.description:
        doc["description"] = benchmark.description
    suite_wide = benchmark.global_rubric.traits if benchmark.global_rubric else []
    graders = {t.name: grader_entry(t) for t in suite_wide if isinstance(t, LLMTrait) and t.prompt is not None}
    judges = {t.name: judge_entry(t) for t in suite_wide if isinstance(t, SchemaJudgeTrait)}
    rest = [t for t in suite_wide if t.name not in graders and t.name not in judges]
    if top := assertions(Rubric(traits=rest), "global rubric"):
        doc["assertions"] = top
    doc.update({k: v for k, v in (("graders", graders), ("judges", judges)) if v})
    doc["tests"] = []
    for question in benchmark.questions:
        test: dict[str, Any] = {"id": question.id, "input": question.text}
        if question.raw_answer:
            test["expected_output"] = question.raw_answer
        test["assertions"] = assertions(question.rubric, f"question {question.id!r}")
        doc["tests"].append(test)
    return doc, skipped


def write_suite(benchmark: Benchmark, path: Path) -> list[str]:
    """Write the suite (YAML, or JSON for .json) atomically; returns the lines about what was left out."""
    from verify.files import write_atomic

    doc, skipped = suite_document(benchmark)
    if path.suffix.lower() == ".json":
        text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    else:
        text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)
    write_atomic(path, text)
    return skipped
