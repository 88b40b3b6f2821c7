"""Loading, saving and validating karenina checkpoints (verify.benchmark.jsonld / verify.benchmark.ratings)."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from verify.benchmark.jsonld import Benchmark, load_benchmark, save_benchmark
from verify.benchmark.question import Question, generate_question_id, generate_template_id
from verify.benchmark.traits import AgenticTrait, CallableTrait, LLMTrait, MetricTrait, RegexTrait, Rubric
from verify.errors import BenchmarkError

FIXTURES = Path(__file__).parent / "fixtures"
KARENINA = FIXTURES / "karenina"
SPEC_EXAMPLE = FIXTURES / "spec_example.jsonld"
ALL_CHECKPOINTS = [*sorted(KARENINA.glob("*.jsonld")), SPEC_EXAMPLE]


def raw(name: str = "minimal") -> dict[str, Any]:
    path = SPEC_EXAMPLE if name == "spec_example" else KARENINA / f"{name}.jsonld"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def problems_of(data: Any) -> list[str]:
    with pytest.raises(BenchmarkError) as info:
        Benchmark.from_jsonld(data, "bad.jsonld")
    assert info.value.path == "bad.jsonld"
    return info.value.problems


def one_problem(data: Any) -> str:
    problems = problems_of(data)
    assert len(problems) == 1, problems
    return problems[0]


def roundtrip(benchmark: Benchmark, tmp_path: Path) -> Benchmark:
    path = save_benchmark(benchmark, tmp_path / "out.jsonld")
    return load_benchmark(path)


def rating(
    name: str, additional_type: str, props: dict[str, Any] | None = None, best: float = 1, worst: float = 0
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "@type": "Rating",
        "name": name,
        "bestRating": best,
        "worstRating": worst,
        "additionalType": additional_type,
    }
    if props is not None:
        out["additionalProperty"] = [
            {"@type": "PropertyValue", "name": k, "value": v} for k, v in props.items()
        ]
    return out


# ------------------------------------------------------------------------------------- fixtures


def test_minimal_fixture() -> None:
    bench = load_benchmark(KARENINA / "minimal.jsonld")
    assert bench.name == "minimal-test"
    assert bench.creator == "Karenina Test Suite"
    assert [q.id for q in bench.questions] == ["urn:karenina:test:q001"]
    q = bench.question("urn:karenina:test:q001")
    assert q.text == "What is 2+2?"
    assert q.raw_answer == "4"
    assert q.finished is False
    assert q.keywords == ["arithmetic", "math"]
    assert q.template_name == "Simple Addition Answer Template"
    assert "class Answer(BaseAnswer)" in q.template_code
    assert q.item_node_id == "urn:karenina:test:q001-question"
    assert q.rubric is None and bench.global_rubric is None
    assert bench.finished_questions() == []


def test_multi_question_fixture() -> None:
    bench = load_benchmark(KARENINA / "multi_question.jsonld")
    assert [q.id for q in bench.questions] == [f"urn:karenina:test:mq00{i}" for i in range(1, 6)]
    assert [q.id for q in bench.finished_questions()] == [f"urn:karenina:test:mq00{i}" for i in range(1, 5)]
    assert bench.global_rubric is not None
    (completeness,) = bench.global_rubric.traits
    assert isinstance(completeness, CallableTrait)
    # no kind property: boolean whatever the 5/1 bounds say, as karenina reads it
    assert (completeness.name, completeness.callable_code) == ("Completeness", None)
    assert (completeness.kind, completeness.min_score, completeness.max_score) == ("boolean", None, None)
    mq004 = bench.question("urn:karenina:test:mq004")
    assert mq004.rubric is not None
    (case,) = mq004.rubric.traits
    assert isinstance(case, CallableTrait) and (case.name, case.kind) == ("Case Sensitivity", "boolean")
    assert all(q.rubric is None for q in bench.questions if q.id != mq004.id)
    merged, provenance = bench.rubric_for("urn:karenina:test:mq004")
    assert [t.name for t in merged.traits] == ["Completeness", "Case Sensitivity"]
    assert provenance == {"Completeness": "global", "Case Sensitivity": "question_specific"}


def test_with_rubrics_fixture() -> None:
    bench = load_benchmark(KARENINA / "with_rubrics.jsonld")
    assert len(bench.questions) == 3 and len(bench.finished_questions()) == 3
    assert bench.global_rubric is not None
    traits = {t.name: t for t in bench.global_rubric.traits}
    assert list(traits) == [
        "Clarity",
        "Accuracy",
        "Completeness",
        "HasCitations",
        "HasNumbers",
        "ContainsCitations",
        "ResponseLength",
    ]
    clarity, accuracy, completeness = traits["Clarity"], traits["Accuracy"], traits["Completeness"]
    assert isinstance(clarity, LLMTrait) and (clarity.kind, clarity.min_score, clarity.max_score) == (
        "score",
        1,
        5,
    )
    assert isinstance(accuracy, LLMTrait) and accuracy.kind == "boolean"
    assert isinstance(completeness, LLMTrait) and completeness.kind == "score"
    assert clarity.deep_judgment_enabled is False and clarity.deep_judgment_excerpt_enabled is False
    assert len(bench.global_rubric.of_type(RegexTrait)) == 2
    assert traits["HasCitations"].pattern == r"\[\d+\]"  # type: ignore[union-attr]
    callables = bench.global_rubric.of_type(CallableTrait)
    assert [(c.kind, c.min_score, c.max_score) for c in callables] == [
        ("boolean", None, None),
        ("score", 1, 5),
    ]
    assert callables[0].callable_code.startswith("aW1wb3J0IHJl")
    assert bench.question("urn:karenina:test:rq001").keywords == ["biology", "genetics", "cancer"]


@pytest.mark.parametrize("path", ALL_CHECKPOINTS, ids=lambda p: p.stem)
def test_every_checkpoint_round_trips(path: Path, tmp_path: Path) -> None:
    bench = load_benchmark(path)
    again = roundtrip(bench, tmp_path)
    assert again == bench
    written = json.loads((tmp_path / "out.jsonld").read_text(encoding="utf-8"))
    assert {"name": "benchmark_format_version", "value": "3.0.0-jsonld", "@type": "PropertyValue"} in written[
        "additionalProperty"
    ]
    assert written["@context"]["rating"] == {"@id": "contentRating", "@container": "@set"}
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonld"]  # no temp file left behind


def test_dates_untouched_unless_asked(tmp_path: Path) -> None:
    bench = load_benchmark(KARENINA / "minimal.jsonld")
    assert roundtrip(bench, tmp_path).date_modified == "2025-01-11T00:00:00Z"
    save_benchmark(bench, tmp_path / "out.jsonld", update_modified=True)
    assert bench.date_modified != "2025-01-11T00:00:00Z"
    assert load_benchmark(tmp_path / "out.jsonld").date_created == "2025-01-11T00:00:00Z"


# ------------------------------------------------------------------------------- spec 1.7 example


def test_spec_example_traits() -> None:
    bench = load_benchmark(SPEC_EXAMPLE)
    assert bench.global_rubric is not None
    g = {t.name: t for t in bench.global_rubric.traits}
    clarity, tone = g["clarity"], g["tone"]
    assert isinstance(clarity, LLMTrait) and clarity.kind == "boolean"
    assert (clarity.deep_judgment_enabled, clarity.deep_judgment_max_excerpts) == (True, 2)
    assert isinstance(tone, LLMTrait) and tone.kind == "literal"
    assert tone.class_names == ["formal", "casual"] and (tone.min_score, tone.max_score) == (0, 1)
    assert isinstance(g["mentions_paris"], RegexTrait) and g["mentions_paris"].case_sensitive is False
    q = bench.questions[0]
    assert q.id == generate_question_id(q.text) == "urn:uuid:question-what-is-the-capital-of-france-cb0b4aaf"
    assert q.finished and q.custom_metadata == {"difficulty": "easy"}
    assert q.few_shot_examples == [{"question": "Capital of Italy?", "answer": "Rome"}]
    assert q.rubric is not None
    facts, inspect = q.rubric.traits
    assert isinstance(facts, MetricTrait)
    assert facts.metrics == ["precision", "recall", "f1"] and facts.higher_is_better is None
    assert facts.tp_instructions == ["Paris is the capital"]
    assert isinstance(inspect, AgenticTrait)
    assert (
        inspect.properties["context_mode"] == "trace_and_workspace" and inspect.properties["max_turns"] == 15
    )


def test_spec_example_is_written_back_unchanged(tmp_path: Path) -> None:
    bench = load_benchmark(SPEC_EXAMPLE)
    assert bench.to_jsonld() == raw("spec_example")
    save_benchmark(bench, tmp_path / "out.jsonld")
    text = (tmp_path / "out.jsonld").read_text(encoding="utf-8")
    assert '"name": "deep_judgment_max_excerpts"' in text
    clarity = load_benchmark(tmp_path / "out.jsonld").global_rubric.get("clarity")  # type: ignore[union-attr]
    assert (
        isinstance(clarity, LLMTrait)
        and clarity.deep_judgment_enabled
        and clarity.deep_judgment_max_excerpts == 2
    )


# --------------------------------------------------------------------------------- format details


def test_question_helpers() -> None:
    q = Question(id="q", text="What is 2+2?", raw_answer="4", template_code="class A:\n    x = 1   \n")
    assert q.question_hash == hashlib.md5(b"What is 2+2?").hexdigest()
    assert q.template_id == generate_template_id("  class A:\r\n      x = 1\r\n")
    assert len(q.template_id) == 32
    assert Question(id="r", text="t", raw_answer="a").template_id == "no_template"
    assert generate_template_id("   \n") == "no_template"


def test_question_lookup_suggests_close_ids() -> None:
    bench = load_benchmark(KARENINA / "multi_question.jsonld")
    with pytest.raises(KeyError, match="did you mean urn:karenina:test:mq001"):
        bench.question("urn:karenina:test:mq01")


def test_rubric_for_rejects_name_clash() -> None:
    bench = load_benchmark(KARENINA / "multi_question.jsonld")
    q = bench.question("urn:karenina:test:mq001")
    q.rubric = Rubric(traits=[RegexTrait(name="Completeness", pattern="x")])
    with pytest.raises(ValueError, match="defined both globally and for the question"):
        bench.rubric_for(q)


def test_generated_id_and_legacy_keywords(tmp_path: Path) -> None:
    data = raw()
    entry = data["dataFeedElement"][0]
    del entry["@id"]
    entry["keywords"] = entry["item"].pop("keywords")
    bench = Benchmark.from_jsonld(data)
    q = bench.questions[0]
    assert q.id == generate_question_id("What is 2+2?") and q.id.startswith("urn:uuid:question-what-is-2+2-")
    assert q.keywords == ["arithmetic", "math"]
    item = bench.to_jsonld()["dataFeedElement"][0]
    assert item["item"]["keywords"] == ["arithmetic", "math"] and "keywords" not in item
    assert roundtrip(bench, tmp_path) == bench


def test_unprefixed_types_template_kind_and_dynamic_traits(tmp_path: Path) -> None:
    data = raw()
    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    data["rating"] = [
        rating("plain", "GlobalRegexTrait", {"pattern": "a+"}),
        {
            **rating("shape", "karenina:GlobalLLMRubricTrait", best=0),
            "additionalProperty": [
                {"@type": "PropertyValue", "name": "higher_is_better"},
                {"@type": "PropertyValue", "name": "kind", "value": {"type": "template", "schema": schema}},
            ],
        },
        rating("dyn", "karenina:GlobalDynamicRubricTrait", {"pattern": "b", "dynamic_trait_type": "regex"}),
    ]
    data["dataFeedElement"][0]["item"]["rating"] = [
        rating("qdyn", "karenina:QuestionSpecificDynamicRubricTrait", {"summary": "s"}, best=5, worst=1),
        rating("ignored-global", "karenina:GlobalRegexTrait", {"pattern": "c"}),
    ]
    bench = Benchmark.from_jsonld(data)
    assert bench.global_rubric is not None and bench.global_dynamic_rubric is not None
    plain, shape = bench.global_rubric.traits
    assert isinstance(plain, RegexTrait) and plain.pattern == "a+"
    assert isinstance(shape, LLMTrait) and shape.kind == "template" and shape.template_schema == schema
    (dyn,) = bench.global_dynamic_rubric.traits
    assert isinstance(dyn, RegexTrait) and dyn.pattern == "b"
    q = bench.questions[0]
    assert q.rubric is None and q.dynamic_rubric is not None
    (qdyn,) = q.dynamic_rubric.traits
    assert isinstance(qdyn, LLMTrait) and (qdyn.kind, qdyn.max_score, qdyn.summary) == ("score", 5, "s")
    assert [r["name"] for r in q.ignored_ratings] == ["ignored-global"]
    out = bench.to_jsonld()
    assert [r["additionalType"] for r in out["rating"]] == [
        "karenina:GlobalRegexTrait",
        "karenina:GlobalLLMRubricTrait",
        "karenina:GlobalDynamicRubricTrait",
    ]
    assert {"@type": "PropertyValue", "name": "dynamic_trait_type", "value": "regex"} in out["rating"][2][
        "additionalProperty"
    ]
    assert roundtrip(bench, tmp_path) == bench


def test_legacy_global_trait_lists_are_migrated(tmp_path: Path) -> None:
    data = raw()
    data["additionalProperty"] = [
        {
            "@type": "PropertyValue",
            "name": "global_regex_rubric_traits",
            "value": json.dumps([{"name": "no_sorry", "pattern": "sorry", "invert": True}]),
        },
        {
            "@type": "PropertyValue",
            "name": "global_metric_rubric_traits",
            "value": json.dumps([{"name": "m", "tp_instructions": ["a"]}]),
        },
    ]
    bench = Benchmark.from_jsonld(data)
    assert bench.global_rubric is not None
    legacy, metric = bench.global_rubric.traits
    assert isinstance(legacy, RegexTrait) and legacy.invert_result is True
    assert isinstance(metric, MetricTrait)
    out = bench.to_jsonld()
    assert [p["name"] for p in out["additionalProperty"]] == ["benchmark_format_version"]
    assert [r["name"] for r in out["rating"]] == ["no_sorry", "m"]
    assert roundtrip(bench, tmp_path) == bench


def test_unknown_entries_are_kept(tmp_path: Path) -> None:
    data = raw()
    data["last_verification_run"] = {"when": "now"}
    data["additionalProperty"] = [{"@type": "PropertyValue", "name": "team", "value": "bio"}]
    data["rating"] = [rating("r", "karenina:GlobalRegexTrait", {"pattern": "x", "colour": "blue"})]
    item = data["dataFeedElement"][0]["item"]
    item["additionalProperty"] = [
        {"@type": "PropertyValue", "name": "finished", "value": True},
        {"@type": "PropertyValue", "name": "author", "value": json.dumps({"name": "Ann"})},
        {"@type": "PropertyValue", "name": "sources", "value": json.dumps([{"name": "paper"}])},
        {"@type": "PropertyValue", "name": "custom_verification_results", "value": {"ok": 1}},
        {"@type": "PropertyValue", "name": "answer_notes", "value": "note"},
        {"@type": "PropertyValue", "name": "mystery", "value": [1, 2]},
    ]
    bench = Benchmark.from_jsonld(data)
    q = bench.questions[0]
    assert q.finished and q.author == {"name": "Ann"} and q.sources == [{"name": "paper"}]
    assert q.custom_metadata == {"verification_results": {"ok": 1}} and q.answer_notes == "note"
    assert q.extra_properties == [{"@type": "PropertyValue", "name": "mystery", "value": [1, 2]}]
    assert bench.extra_keys == {"last_verification_run": {"when": "now"}}
    assert bench.global_rubric.traits[0].extra_properties[0]["name"] == "colour"  # type: ignore[union-attr]
    out = bench.to_jsonld()
    assert out["last_verification_run"] == {"when": "now"}
    assert {"@type": "PropertyValue", "name": "team", "value": "bio"} in out["additionalProperty"]
    assert roundtrip(bench, tmp_path) == bench


def test_save_keeps_unicode_and_file_mode(tmp_path: Path) -> None:
    bench = load_benchmark(KARENINA / "minimal.jsonld")
    bench.questions[0].text = "Wie viel ist 2+2? — ünïcode"
    target = tmp_path / "b.jsonld"
    target.write_text("{}")
    os.chmod(target, 0o640)
    save_benchmark(bench, target)
    assert "ünïcode" in target.read_text(encoding="utf-8")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    with pytest.raises(BenchmarkError, match="cannot write file"):
        save_benchmark(bench, tmp_path / "missing-dir" / "b.jsonld")


# ------------------------------------------------------------------------------------ bad input


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkError) as info:
        load_benchmark(tmp_path / "nope.jsonld")
    assert info.value.problems == ["file not found"] and info.value.hint
    with pytest.raises(BenchmarkError, match="is a directory"):
        load_benchmark(tmp_path)


def test_invalid_json_reports_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonld"
    path.write_text('{\n  "name": "x",\n  "oops"\n}')
    with pytest.raises(BenchmarkError) as info:
        load_benchmark(path)
    (problem,) = info.value.problems
    assert problem == "invalid JSON at line 4, column 1: Expecting ':' delimiter"


def test_top_level_shape_problems() -> None:
    assert "must be a JSON object" in one_problem([1, 2])
    data = raw()
    data["@context"] = "https://schema.org"
    assert "'@context' must be a JSON object (got str)" in one_problem(data)
    data = raw()
    data["name"] = "  "
    assert "'name' is missing or empty" in one_problem(data)
    data = raw()
    del data["dataFeedElement"]
    assert "missing 'dataFeedElement'" in one_problem(data)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("acceptedAnswer", "question 'urn:karenina:test:q001'.item: missing 'acceptedAnswer'"),
        ("hasPart", "question 'urn:karenina:test:q001'.item: missing 'hasPart' (the answer template); add"),
        ("text", "question 'urn:karenina:test:q001'.item: missing 'text'"),
    ],
)
def test_question_missing_parts(key: str, expected: str) -> None:
    data = raw()
    del data["dataFeedElement"][0]["item"][key]
    assert expected in one_problem(data)


def test_question_without_id_or_text_is_located_by_index() -> None:
    data = raw("multi_question")
    entry = data["dataFeedElement"][3]
    del entry["@id"], entry["item"]["text"]
    assert one_problem(data) == "dataFeedElement[3].item: missing 'text' (the question)"


def test_trait_problems_are_located() -> None:
    data = raw("with_rubrics")
    data["rating"][3]["additionalProperty"][0]["value"] = "["
    data["rating"][2]["additionalType"] = "karenina:FooTrait"
    data["dataFeedElement"][0]["item"]["rating"] = [
        rating(
            "Tone", "karenina:QuestionSpecificLLMRubricTrait", {"kind": "literal", "classes": {"only": "one"}}
        ),
        rating("Bad", "karenina:QuestionSpecificRegexTrait", {"pattern": "("}),
    ]
    problems = problems_of(data)
    assert len(problems) == 4, problems
    assert problems[0].startswith("rating[2] (top level): unknown additionalType 'karenina:FooTrait'")
    assert "expected one of karenina:GlobalRubricTrait" in problems[0]
    assert problems[1].startswith("global trait 'HasCitations': pattern: pattern '[' does not compile")
    assert (
        "question 'urn:karenina:test:rq001' / trait 'Tone': literal trait 'Tone' needs 2-20 classes"
        in problems[2]
    )
    assert problems[3].startswith(
        "question 'urn:karenina:test:rq001' / trait 'Bad': pattern: pattern '(' does not compile"
    )
    for problem in problems:
        assert "\n" not in problem and "pydantic" not in problem and "validation error" not in problem


def test_question_specific_type_at_top_level() -> None:
    data = raw()
    data["rating"] = [rating("Q", "karenina:QuestionSpecificRegexTrait", {"pattern": "x"})]
    problem = one_problem(data)
    assert problem.startswith("rating[0] (top level): question-specific type")
    assert "move it into a question's item.rating" in problem


def test_duplicate_trait_names() -> None:
    data = raw("with_rubrics")
    data["rating"][1]["name"] = "Clarity"
    data["dataFeedElement"][1]["item"]["rating"] = [
        rating("Twice", "karenina:QuestionSpecificRegexTrait", {"pattern": "x"}),
        rating("Twice", "karenina:QuestionSpecificRubricTrait"),
        rating("HasNumbers", "karenina:QuestionSpecificRubricTrait"),
    ]
    problems = problems_of(data)
    assert problems == [  # a name shared with the global rubric loads (as in karenina): a warning, not here
        "global trait 'Clarity': duplicate trait name; trait names must be unique",
        "question 'urn:karenina:test:rq002' / trait 'Twice': duplicate trait name; trait names must be unique",
    ]


@pytest.mark.parametrize(
    ("bad_rating", "expected"),
    [
        (
            rating("m", "karenina:GlobalMetricRubricTrait", {"metrics": ["recall"]}),
            "global trait 'm': metric trait 'm' needs non-empty tp_instructions",
        ),
        (
            rating("m", "karenina:GlobalMetricRubricTrait", {"metrics": "[oops", "tp_instructions": ["a"]}),
            "global trait 'm': metrics is a string but not valid JSON",
        ),
        (
            rating("a", "karenina:GlobalAgenticRubricTrait", {"kind": "maybe"}),
            "global trait 'a': kind 'maybe' is not boolean, score, literal or a template object",
        ),
        (
            rating("c", "karenina:GlobalCallableTrait", {"callable_code": "not base64!"}),
            "global trait 'c': callable_code is not valid base64",
        ),
        (
            rating("l", "karenina:GlobalRubricTrait", {"deep_judgment_max_excerpts": 0}),
            "global trait 'l': deep_judgment_max_excerpts: Input should be greater than or equal to 1 (got 0)",
        ),
        (
            rating("d", "karenina:GlobalDynamicRubricTrait", {"dynamic_trait_type": "magic"}),
            "global trait 'd': dynamic_trait_type 'magic' is not one of llm, regex, callable, metric, agentic",
        ),
        (
            {**rating("n", "karenina:GlobalRegexTrait"), "bestRating": None},
            "global trait 'n': bestRating is null, expected a number",
        ),
        (rating("a.b", "karenina:GlobalRegexTrait"), "global trait 'a.b': name: trait name 'a.b' contains '.'"),
    ],
)
def test_bad_trait_settings(bad_rating: dict[str, Any], expected: str) -> None:
    data = raw()
    data["rating"] = [bad_rating]
    assert one_problem(data).startswith(expected)


def test_bad_question_properties() -> None:
    data = raw()
    data["dataFeedElement"][0]["item"]["additionalProperty"] = [
        {"@type": "PropertyValue", "name": "finished", "value": "yes"},
        {"@type": "PropertyValue", "name": "few_shot_examples", "value": "[1, 2]"},
        {"@type": "PropertyValue"},
    ]
    data["dataFeedElement"][0]["item"]["keywords"] = "math"
    problems = problems_of(data)
    where = "question 'urn:karenina:test:q001'.item: "
    assert problems == [
        where + "'keywords' must be a list of strings",
        where + "additionalProperty[2] is not a PropertyValue with a string 'name'",
        where + "property 'finished' must be true or false, got 'yes'",
        where + 'property \'few_shot_examples\' must be a list of {"question", "answer"} objects',
    ]


def test_union_field_errors_are_one_line() -> None:
    data = raw()
    data["creator"] = 3
    assert one_problem(data) == "top level: creator: expected string or dictionary (got 3)"


def test_all_problems_reported_together_and_capped() -> None:
    data = raw("multi_question")
    data["name"] = ""
    data["@context"] = []
    for entry in data["dataFeedElement"]:
        del entry["item"]["hasPart"]
    problems = problems_of(data)
    assert len(problems) == 7
    assert sum("missing 'hasPart'" in p for p in problems) == 5
    many = copy.deepcopy(data)
    many["dataFeedElement"] = [copy.deepcopy(data["dataFeedElement"][0]) for _ in range(15)]
    for i, entry in enumerate(many["dataFeedElement"]):
        entry["@id"] = f"q{i}"
    with pytest.raises(BenchmarkError) as info:
        Benchmark.from_jsonld(many, "many.jsonld")
    assert len(info.value.problems) == 10
    assert info.value.hint is not None and info.value.hint.startswith("7 more problem(s) not shown")
    assert str(info.value).startswith("many.jsonld: 10 problem(s): top level: ")


def test_duplicate_question_ids() -> None:
    data = raw("multi_question")
    data["dataFeedElement"][2]["@id"] = "urn:karenina:test:mq001"
    assert one_problem(data) == (
        "question 'urn:karenina:test:mq001': duplicate question id (also dataFeedElement[0]); ids must be unique"
    )
