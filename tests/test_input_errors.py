"""Bad input becomes one clean, located line (issue 12, part 8): checkpoints, user JSON files, custom
deep-judgment configs and answer templates. Each test fails without its fix (a traceback, a silent
acceptance, or a misleading message).
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from verify.benchmark.jsonld import Benchmark, load_benchmark
from verify.benchmark.question import Question
from verify.cli import app
from verify.config.deep_judgment import DeepJudgmentRubricCustomConfig
from verify.config.verification import VerificationConfig
from verify.errors import BenchmarkError, ConfigError, UserError
from verify.files import MAX_JSON_DEPTH, read_json_file
from verify.run.tasks import check_templates, preflight, preflight_async

REPO = Path(__file__).resolve().parent.parent
KARENINA = REPO / "tests" / "fixtures" / "karenina"
DEMO = REPO / "verify" / "examples" / "demo" / "demo.jsonld"
runner = CliRunner()


def raw(name: str = "with_rubrics") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((KARENINA / f"{name}.jsonld").read_text(encoding="utf-8"))
    return data


def write(tmp_path: Path, text: str | bytes, name: str = "bench.jsonld") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def problems(tmp_path: Path, data: Any) -> list[str]:
    with pytest.raises(BenchmarkError) as info:
        load_benchmark(write(tmp_path, json.dumps(data, indent=2)))
    found = info.value.problems
    assert all("\n" not in p and "Traceback" not in p for p in found)
    return found


def one_problem(tmp_path: Path, data: Any) -> str:
    (problem,) = problems(tmp_path, data)
    return problem


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


# --------------------------------------------------------------------------- 1. NaN and Infinity


def test_nan_in_a_global_trait_is_named_by_trait_field_line_and_column(tmp_path: Path) -> None:
    data = raw()
    data["rating"][0]["bestRating"] = float("nan")  # json.dumps writes NaN, as a careless tool would
    problem = one_problem(tmp_path, data)
    assert problem.startswith("global trait 'Clarity': bestRating is NaN (line ")
    with pytest.raises(BenchmarkError) as info:
        load_benchmark(tmp_path / "bench.jsonld")
    assert "JSON has no NaN or Infinity" in (info.value.hint or "")


@pytest.mark.parametrize("token", ["Infinity", "-Infinity", "1e400"])
def test_infinity_in_a_question_property_is_named_by_question_and_property(tmp_path: Path, token: str) -> None:
    data = raw()
    props = data["dataFeedElement"][1]["item"]["additionalProperty"]
    props.append({"@type": "PropertyValue", "name": "custom_weight", "value": "@@"})
    text = json.dumps(data, indent=2).replace('"@@"', token)
    with pytest.raises(BenchmarkError) as info:
        load_benchmark(write(tmp_path, text))
    (problem,) = info.value.problems
    assert problem.startswith(f"question 'urn:karenina:test:rq002'.item: property 'custom_weight' is {token} (line ")


def test_nan_inside_a_question_trait(tmp_path: Path) -> None:
    data = raw()
    rating = copy.deepcopy(data["rating"][0])
    rating.update(name="Depth", additionalType="karenina:QuestionSpecificRubricTrait", worstRating=float("-inf"))
    data["dataFeedElement"][0]["item"]["rating"] = [rating]
    assert one_problem(tmp_path, data).startswith(
        "question 'urn:karenina:test:rq001' / trait 'Depth': worstRating is -Infinity (line "
    )


# --------------------------------------------------------------------------- 2. nesting depth


def test_a_200000_deep_array_is_one_clean_error(tmp_path: Path) -> None:
    deep = "[" * 200_000 + "]" * 200_000
    text = json.dumps(raw())[:-1] + f', "extra": {deep}}}'
    with pytest.raises(BenchmarkError) as info:
        load_benchmark(write(tmp_path, text))
    (problem,) = info.value.problems
    assert problem.endswith(f"nested deeper than {MAX_JSON_DEPTH} levels") and problem.startswith("line 1, column ")


def test_a_value_kept_verbatim_may_not_nest_too_deeply(tmp_path: Path) -> None:
    data = raw()
    data["dataFeedElement"][0]["item"]["notes"] = nested(MAX_JSON_DEPTH + 5)
    assert one_problem(tmp_path, data).startswith(
        f"question 'urn:karenina:test:rq001'.item: key 'notes' is nested deeper than {MAX_JSON_DEPTH} levels"
    )


def _positions(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*path, key)
            yield from _positions(value, (*path, key))
        yield (*path, "unknown_key")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield (*path, i)
            yield from _positions(value, (*path, i))


def _put(data: Any, path: tuple[Any, ...], value: Any) -> None:
    for step in path[:-1]:
        data = data[step]
    data[path[-1]] = value


@pytest.mark.parametrize("name", ["minimal", "with_rubrics"])
def test_any_value_anywhere_loads_cleanly_or_is_a_located_problem(tmp_path: Path, name: str) -> None:
    """Each place of a checkpoint gets each kind of wrong value (and one 600 levels deep, which Python's
    parser accepts but copying it would not): loading either fails with located problems or gives a
    benchmark that saves as strict JSON and loads again."""
    base = raw(name)
    wrong: list[Any] = [None, 7, True, "", [1], {"a": 1}, nested(600)]
    for path in _positions(base):
        for value in wrong:
            data = copy.deepcopy(base)
            _put(data, path, value)
            try:
                benchmark = Benchmark.from_jsonld(data, "fuzz")
            except BenchmarkError as exc:
                assert exc.problems and all("\n" not in p for p in exc.problems), (path, value)
                continue
            text = json.dumps(benchmark.to_jsonld(), allow_nan=False)  # what save_benchmark writes
            Benchmark.from_jsonld(json.loads(text), "again")  # what was accepted once is accepted again


# --------------------------------------------------------------------------- 3. byte-order mark


def test_a_utf8_bom_is_accepted(tmp_path: Path) -> None:
    plain = (KARENINA / "with_rubrics.jsonld").read_bytes()
    assert load_benchmark(write(tmp_path, b"\xef\xbb\xbf" + plain)) == load_benchmark(KARENINA / "with_rubrics.jsonld")


# --------------------------------------------------------------------------- 4. wrong types


@pytest.mark.parametrize(
    ("value", "kind"),
    [(3, "a number"), ([1], "a list"), ({"a": 1}, "an object"), (None, "null"), (True, "a boolean (true)")],
)
def test_wrong_type_is_named_not_called_missing(tmp_path: Path, value: Any, kind: str) -> None:
    data = raw()
    data["dataFeedElement"][2]["item"]["text"] = value
    assert one_problem(tmp_path, data) == (
        f"question 'urn:karenina:test:rq003'.item: text is {kind}, expected text (the question)"
    )


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["dataFeedElement"][0]["item"].update(acceptedAnswer="Paris"),
         "question 'urn:karenina:test:rq001'.item: acceptedAnswer is text, expected an object"),
        (lambda d: d["dataFeedElement"][0]["item"]["acceptedAnswer"].update(text=4),
         "question 'urn:karenina:test:rq001'.item.acceptedAnswer: text is a number, expected text"),
        (lambda d: d["dataFeedElement"][0]["item"]["hasPart"].update(name=None),
         "question 'urn:karenina:test:rq001'.item.hasPart: name is null, expected text"),
        (lambda d: d["dataFeedElement"][0].update(dateCreated=2025),
         "question 'urn:karenina:test:rq001': dateCreated is a number, expected text"),
        (lambda d: d["dataFeedElement"][0].update(item=[]),
         "question 'urn:karenina:test:rq001': item is a list, expected an object"),
        (lambda d: d.update(dataFeedElement={}),
         "top level: dataFeedElement is an object, expected a list"),
        (lambda d: d.update(name=5), "top level: name is a number, expected text"),
        (lambda d: d.update(description=["x"]), "top level: description is a list, expected text"),
        (lambda d: d["dataFeedElement"][0]["item"]["hasPart"].update(programmingLanguage=3),
         "question 'urn:karenina:test:rq001'.item: hasPart.programmingLanguage is a number, expected text"),
        (lambda d: d["rating"][0].update(name=1), "rating[0] (top level): name is a number, expected text"),
        (lambda d: d["rating"][0].update(worstRating="0"), "global trait 'Clarity': worstRating is text, expected a number"),
        (lambda d: d["rating"][0]["additionalProperty"].append(3),
         "global trait 'Clarity': additionalProperty[4] is a number, expected a PropertyValue object"),
        (lambda d: d["dataFeedElement"][0].update({"@id": 7}),
         "dataFeedElement[0]: '@id' is a number, expected text"),
    ],
)
def test_wrong_types_elsewhere(tmp_path: Path, change: Any, expected: str) -> None:
    data = raw()
    change(data)
    assert one_problem(tmp_path, data).startswith(expected)


def test_an_absent_field_is_still_missing(tmp_path: Path) -> None:
    data = raw()
    del data["dataFeedElement"][2]["item"]["text"]
    assert one_problem(tmp_path, data) == "question 'urn:karenina:test:rq003'.item: missing 'text' (the question)"


# --------------------------------------------------------------------------- 5. near-duplicate trait names


def test_trait_names_differing_only_in_case_or_spaces_are_a_warning(tmp_path: Path) -> None:
    data = raw()
    twin = copy.deepcopy(data["rating"][0])
    twin["name"] = "clarity "
    data["rating"].append(twin)
    local = copy.deepcopy(data["rating"][1])
    local["name"] = local["name"].upper()
    local["additionalType"] = local["additionalType"].replace("Global", "QuestionSpecific")
    data["dataFeedElement"][0]["item"]["rating"] = [local]
    path = write(tmp_path, json.dumps(data))
    benchmark = load_benchmark(path)
    first, second = benchmark.warnings
    assert first.startswith(f"{path}: global rubric: trait 'clarity ' and trait 'Clarity' differ only in case")
    glob = data["rating"][1]["name"]
    assert second.startswith(f"{path}: question 'urn:karenina:test:rq001': trait {glob.upper()!r} and global trait {glob!r}")
    assert "warnings" not in benchmark.model_dump() and "warnings" not in json.dumps(benchmark.to_jsonld())
    assert load_benchmark(KARENINA / "with_rubrics.jsonld").warnings == []


# --------------------------------------------------------------------------- 6. empty question ids


@pytest.mark.parametrize("qid", ["", "   "])
def test_an_empty_question_id_is_an_error(tmp_path: Path, qid: str) -> None:
    data = raw()
    data["dataFeedElement"][1]["@id"] = qid
    assert one_problem(tmp_path, data).startswith("dataFeedElement[1]: '@id' is empty; give the question a unique id")
    with pytest.raises(ValidationError, match="question id is empty"):
        Question(id=qid, text="q", raw_answer="a")


# --------------------------------------------------------------------------- 7. custom deep-judgment names


def _custom(config: dict[str, Any]) -> VerificationConfig:
    return VerificationConfig.from_overrides(
        None, evaluation_mode="rubric_only", deep_judgment_rubric_mode="custom",
        deep_judgment_rubric_config=DeepJudgmentRubricCustomConfig.model_validate(config),
    )


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"global": {"clarty": {}}},
         "deep_judgment_rubric_config.global['clarty']: {demo} has no trait 'clarty'; did you mean clarity?"),
        ({"question_specific": {"demo-capitol": {"clarity": {}}}},
         "deep_judgment_rubric_config.question_specific['demo-capitol']: {demo} has no question 'demo-capitol'; "
         "did you mean demo-capital?"),
        ({"question_specific": {"demo-capital": {"Register": {}}}},
         "deep_judgment_rubric_config.question_specific['demo-capital']['Register']: question 'demo-capital' of "
         "{demo} has no trait 'Register'; did you mean register?"),
    ],
)
def test_custom_config_naming_an_unknown_trait_or_question_fails_before_any_call(
    config: dict[str, Any], expected: str
) -> None:
    benchmark = load_benchmark(DEMO)
    with pytest.raises(ConfigError) as info:
        preflight(benchmark, _custom(config), benchmark.questions)
    assert info.value.message == expected.format(demo=DEMO)
    assert info.value.hint and "--show-plan" in info.value.hint


def test_custom_config_entry_for_a_trait_without_deep_judgment_is_a_warning() -> None:
    benchmark = load_benchmark(DEMO)
    warnings = preflight(benchmark, _custom({"global": {"clarity": {}, "has_number": {}}}), benchmark.questions)
    assert warnings == [
        "deep_judgment_rubric_config.global['has_number']: 'has_number' is a regex trait; deep judgment applies "
        "to LLM traits only, so this entry has no effect"
    ]


def test_show_plan_reports_an_unknown_custom_trait(tmp_path: Path) -> None:
    config = write(tmp_path, json.dumps({"global": {"clarty": {}}}), "dj.json")
    result = runner.invoke(app, [str(DEMO), "--preset", "demo", "--deep-judgment-rubric-mode", "custom",
                                 "--deep-judgment-rubric-config", str(config), "--show-plan"])
    assert result.exit_code == 1, result.output
    assert "has no trait 'clarty'; did you mean clarity?" in result.stderr
    assert "Traceback" not in result.output


# --------------------------------------------------------------------------- 8. templates before any call


BROKEN = {
    "demo-capital": "class Answer(BaseAnswer):\n    x: int\n    def verify(self)\n        return True\n",
    "demo-boiling": "import os\n",
}


def _broken_demo(tmp_path: Path) -> Path:
    data = json.loads(DEMO.read_text(encoding="utf-8"))
    for entry in data["dataFeedElement"]:
        if entry["@id"] in BROKEN:
            entry["item"]["hasPart"]["text"] = BROKEN[entry["@id"]]
    return write(tmp_path, json.dumps(data))


def test_preflight_compiles_every_template_and_warns_per_broken_one(tmp_path: Path) -> None:
    path = _broken_demo(tmp_path)
    benchmark = load_benchmark(path)
    config = VerificationConfig.from_overrides(None, evaluation_mode="template_and_rubric")
    warnings = preflight(benchmark, config, benchmark.questions)
    assert warnings == [
        f"{path}: question 'demo-capital': template line 3: syntax error: expected ':' (its tasks will fail with "
        "template_validation; the other questions run)",
        f"{path}: question 'demo-boiling': template line 1 imports 'os'; allowed: __future__, pydantic, typing, "
        "typing_extensions, re, math, datetime, decimal, enum, dataclasses, fractions, statistics, karenina.*; "
        "template line 1 imports 'os', which can import arbitrary modules (its tasks will fail with "
        "template_validation; the other questions run)",
    ]
    rubric_only = VerificationConfig.from_overrides(None, evaluation_mode="rubric_only")
    assert preflight(benchmark, rubric_only, benchmark.questions) == []  # templates are not used


def test_preflight_works_inside_a_running_event_loop(tmp_path: Path) -> None:
    benchmark = load_benchmark(_broken_demo(tmp_path))
    config = VerificationConfig.from_overrides(None, evaluation_mode="template_only")

    async def main() -> tuple[list[str], list[str]]:
        return preflight(benchmark, config, benchmark.questions), await preflight_async(
            benchmark, config, benchmark.questions
        )

    blocking, awaited = asyncio.run(main())
    assert blocking == awaited and len(blocking) == 2


def test_template_check_has_the_time_limit() -> None:
    loops = Question(id="q-loop", text="q", raw_answer="a", template_code="while True:\n    pass\n")
    (check,) = check_templates([loops], time_limit=0.5)
    assert check.error == "question 'q-loop': compiling the template did not finish within 0.5 s (an endless loop?)"


def test_show_plan_lists_template_status_and_style(tmp_path: Path) -> None:
    result = runner.invoke(app, [str(_broken_demo(tmp_path)), "--preset", "demo", "--evaluation-mode",
                                 "template_and_rubric", "--show-plan"])
    assert result.exit_code == 0, result.output
    assert "answer templates: 2 compile, 2 broken" in result.stdout
    templates = result.stdout.split("per-trait evaluation")[0]
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:4]]
            for line in templates.splitlines() if line.startswith("│")}
    assert rows["demo-capital"] == ["broken", "template line 3: syntax error: expected ':'"]
    assert rows["demo-boiling"][0] == "broken" and rows["demo-boiling"][1].startswith("template line 1 imports 'os'")
    assert rows["demo-bcl2"][:2] == ["ok", "Answer: verify()"]


# --------------------------------------------------------------------------- 9. read_json_file


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{\n  "a": 1,\n  "b": NaN\n}', "line 3, column 8: NaN is not a JSON number (at b)"),
        (b'{"a": [1, -Infinity]}', "line 1, column 11: -Infinity is not a JSON number (at a[1])"),
        (b'{"a": 1e999}', "line 1, column 7: 1e999 is too large for a number (at a)"),
        (b'{"a": 1,}', "invalid JSON at line 1, column 9: Expecting property name enclosed in double quotes"),
        (b'{"a": "\xff"}', "is not UTF-8 text (byte 0xff at offset 7)"),
        (b"[" * 100_000 + b"]" * 100_000, f"line 1, column {MAX_JSON_DEPTH + 1}: nested deeper than {MAX_JSON_DEPTH} levels"),
        (b"[" * 101 + b"]" * 101, f"line 1, column {MAX_JSON_DEPTH + 1}: nested deeper than {MAX_JSON_DEPTH} levels"),
    ],
)
def test_read_json_file_problems_are_one_located_user_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = write(tmp_path, content, "answers.json")
    with pytest.raises(UserError) as info:
        read_json_file(path, "answers")
    assert info.value.message == f"answers file {path}: {message}"
    assert info.value.hint


def test_read_json_file_accepts_a_bom_and_plain_depth(tmp_path: Path) -> None:
    assert read_json_file(write(tmp_path, b'\xef\xbb\xbf{"a": [1.5]}', "a.json"), "answers") == {"a": [1.5]}
    deepest = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert read_json_file(write(tmp_path, deepest, "b.json"), "answers") == nested(MAX_JSON_DEPTH)


def test_read_json_file_missing_file_or_folder(tmp_path: Path) -> None:
    with pytest.raises(UserError) as info:
        read_json_file(tmp_path / "nope.json", "preset")
    assert info.value.message == f"preset file {tmp_path / 'nope.json'}: file not found"
    with pytest.raises(UserError) as info:
        read_json_file(tmp_path, "manual traces")
    assert info.value.message == f"manual traces file {tmp_path}: is a directory"


def test_fixtures_and_demo_still_load_without_warnings() -> None:
    for path in [DEMO, *sorted(KARENINA.glob("*.jsonld"))]:
        assert load_benchmark(path).warnings == [], path
