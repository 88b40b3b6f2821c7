"""Checkpoint semantics as karenina reads them: a callable without ``kind``, a score trait without
``min_score``/``max_score``, and a question trait reusing a global trait's name.

karenina's reading of the karenina-written ``semantics.jsonld`` is recorded in ``expected.json`` by
tests/fixtures/karenina_written/make_fixtures.py (it runs karenina's own reader and task builder).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from fakes import SIM_ANSWERER, SIM_JUDGE

from verify.benchmark.jsonld import Benchmark, load_benchmark, save_benchmark
from verify.benchmark.traits import CallableTrait, LLMTrait
from verify.config.verification import VerificationConfig
from verify.errors import ConfigError
from verify.results.models import VerificationResult
from verify.results.report import render_plan
from verify.run.runner import run_verification

HERE = Path(__file__).parent / "fixtures"
WRITTEN = HERE / "karenina_written"
MULTI = HERE / "karenina" / "multi_question.jsonld"
KARENINA = json.loads((WRITTEN / "expected.json").read_text(encoding="utf-8"))["semantics"]
QID = "urn:karenina:written:capital"


def raw(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def ratings(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every Rating in a checkpoint: the top level's, then each question's."""
    found = list(doc.get("rating") or [])
    for entry in doc["dataFeedElement"]:
        found += entry["item"].get("rating") or []
    return found


def config(mode: str) -> VerificationConfig:
    return VerificationConfig(answering_models=[SIM_ANSWERER], parsing_models=[SIM_JUDGE], evaluation_mode=mode)


# -- a callable without a kind: boolean -----------------------------------------------------------------------


def test_kindless_callables_read_as_boolean_whatever_their_bounds() -> None:
    bench = load_benchmark(MULTI)
    assert bench.global_rubric is not None
    (completeness,) = bench.global_rubric.traits  # bestRating 5 / worstRating 1, no properties at all
    case = bench.question("urn:karenina:test:mq004").rubric.traits[0]  # type: ignore[union-attr]
    for trait in (completeness, case):
        assert isinstance(trait, CallableTrait)
        assert (trait.kind, trait.min_score, trait.max_score, trait.invert_result) == ("boolean", None, None, False)
    assert bench.warnings == []


def test_kindless_callables_save_back_unchanged(tmp_path: Path) -> None:
    bench = load_benchmark(MULTI)
    save_benchmark(bench, tmp_path / "out.jsonld")
    before = [r for r in ratings(raw(MULTI)) if r["additionalType"].endswith("CallableTrait")]
    after = [r for r in ratings(raw(tmp_path / "out.jsonld")) if r["additionalType"].endswith("CallableTrait")]
    assert len(before) == 2 and after == before  # no kind added, bounds kept, no properties invented
    assert load_benchmark(tmp_path / "out.jsonld") == bench


def test_an_edited_kindless_callable_writes_what_changed(tmp_path: Path) -> None:
    bench = load_benchmark(MULTI)
    assert bench.global_rubric is not None
    completeness = bench.global_rubric.traits[0]
    assert isinstance(completeness, CallableTrait)
    completeness.kind, completeness.min_score, completeness.max_score = "score", 0, 3
    case = bench.question("urn:karenina:test:mq004").rubric.traits[0]  # type: ignore[union-attr]
    assert isinstance(case, CallableTrait)
    case.invert_result = True
    save_benchmark(bench, tmp_path / "out.jsonld")
    written = {r["name"]: r for r in ratings(raw(tmp_path / "out.jsonld"))}
    score = written["Completeness"]
    props = {p["name"]: p.get("value") for p in score["additionalProperty"]}
    assert (score["bestRating"], score["worstRating"]) == (3.0, 0.0)
    assert props == {"kind": "score", "invert_result": False, "higher_is_better": True, "min_score": 0, "max_score": 3}
    inverted = written["Case Sensitivity"]
    assert (inverted["bestRating"], inverted["worstRating"]) == (1, 0)
    assert inverted["additionalProperty"] == [{"@type": "PropertyValue", "name": "invert_result", "value": True}]
    again = load_benchmark(tmp_path / "out.jsonld")
    assert again.question("urn:karenina:test:mq004").rubric.traits[0].invert_result is True  # type: ignore[union-attr]


# -- a score trait without min/max_score: karenina's defaults, not the bounds -----------------------------------


def test_score_range_comes_from_min_max_or_karenina_defaults_not_the_bounds() -> None:
    bench = load_benchmark(WRITTEN / "semantics.jsonld")
    assert bench.global_rubric is not None
    for name, karenina in KARENINA["global_traits"].items():  # 'depth' says 0-10 in its bounds only
        trait = bench.global_rubric.get(name)
        assert isinstance(trait, LLMTrait)
        assert {"kind": trait.kind, "min_score": trait.min_score, "max_score": trait.max_score} == karenina
    assert KARENINA["global_traits"]["depth"] == {"kind": "score", "min_score": 1, "max_score": 5}
    (warning,) = [w for w in bench.warnings if "depth" in w]
    assert warning.endswith(
        "global trait 'depth': worstRating/bestRating say 0-10, but without min_score/max_score the score is "
        "ranged 1-5 (as karenina reads it); add both properties to keep the bounds' range"
    )


def test_a_callable_score_without_min_max_is_unchecked() -> None:
    bench = load_benchmark(WRITTEN / "callables.jsonld")
    assert bench.global_rubric is not None
    characters = bench.global_rubric.get("characters")
    assert isinstance(characters, CallableTrait) and (characters.min_score, characters.max_score) == (None, None)
    assert bench.warnings == []  # karenina wrote 5/1 bounds for it, its own default


@pytest.mark.parametrize(("props", "best", "worst", "expected", "warned"), [
    ({"max_score": 10}, 10, 0, (1, 10), "ranged 1-10"),
    ({"min_score": None, "max_score": None}, 5, 1, (1, 5), None),  # null reads as absent, as in karenina
    ({"min_score": 0, "max_score": 10}, 3, 2, (0, 10), None),  # both set: the bounds do not matter
])
def test_score_range_cases(props: dict[str, Any], best: float, worst: float, expected: tuple[int, int],
                           warned: str | None) -> None:
    data = raw(MULTI)
    data["rating"] = [{"@type": "Rating", "name": "s", "bestRating": best, "worstRating": worst,
                       "additionalType": "karenina:GlobalRubricTrait",
                       "additionalProperty": [{"@type": "PropertyValue", "name": k, "value": v} for k, v in props.items()]}]
    bench = Benchmark.from_jsonld(data)
    trait = bench.global_rubric.get("s")  # type: ignore[union-attr]
    assert isinstance(trait, LLMTrait) and (trait.kind, trait.min_score, trait.max_score) == ("score", *expected)
    assert [w for w in bench.warnings if warned and warned in w] == [w for w in bench.warnings if "trait 's'" in w]
    assert bool(bench.warnings) == bool(warned)


# -- a question trait reusing a global trait's name --------------------------------------------------------------


def test_name_reuse_loads_keeps_both_and_round_trips(tmp_path: Path) -> None:
    bench = load_benchmark(WRITTEN / "semantics.jsonld")
    assert bench.global_rubric is not None
    question = bench.question(QID)
    assert question.rubric is not None
    glob, own = bench.global_rubric.get("clarity"), question.rubric.get("clarity")
    assert isinstance(glob, LLMTrait) and isinstance(own, LLMTrait)
    assert [{"name": own.name, "kind": own.kind}] == KARENINA["question_traits"]
    assert (glob.kind, own.kind) == ("score", "boolean") == (KARENINA["global_traits"]["clarity"]["kind"], "boolean")
    assert [w for w in bench.warnings if "also defined" in w] == [
        f"{WRITTEN / 'semantics.jsonld'}: question {QID!r} / trait 'clarity': also defined in the global rubric, "
        "so runs that evaluate rubrics refuse this question (as karenina does); rename one"]
    save_benchmark(bench, tmp_path / "out.jsonld")
    assert [r["name"] for r in ratings(raw(tmp_path / "out.jsonld"))] == ["clarity", "depth", "clarity"]
    assert load_benchmark(tmp_path / "out.jsonld") == bench


@pytest.mark.parametrize("mode", ["template_and_rubric", "rubric_only"])
def test_name_reuse_stops_a_rubric_run_before_any_task(mode: str) -> None:
    assert KARENINA["task_queue"]["template_and_rubric"] == (
        "ValueError: Same-type trait name conflicts between global and question rubrics: ['llm:clarity']")
    bench = load_benchmark(WRITTEN / "semantics.jsonld")
    (question,) = bench.questions
    first = question.model_copy(update={"id": "a-question-without-the-clash", "rubric": None})
    bench.questions = [first, question]  # the clash is in the second question: nothing may run first
    seen: list[VerificationResult] = []
    one_at_a_time = config(mode).model_copy(update={"async_enabled": False})  # else the first task could still be pending
    with pytest.raises(ConfigError) as info:
        run_verification(bench, one_at_a_time, answers={"*": {first.id: "Paris", QID: "Paris"}}, on_result=seen.append)
    assert str(info.value) == (f"question {QID!r}: trait 'clarity' is defined both globally and for the question "
                               "(karenina refuses this too); rename one, or run with evaluation_mode template_only")
    assert seen == []
    with pytest.raises(ConfigError, match=f"question {QID!r}: trait 'clarity' is defined both globally"):
        render_plan(bench, config(mode), bench.questions)


def test_name_reuse_runs_in_template_only_mode(capsys: pytest.CaptureFixture[str]) -> None:
    assert KARENINA["task_queue"]["template_only"] == "1 task(s)"
    bench = load_benchmark(WRITTEN / "semantics.jsonld")
    outcome = run_verification(copy.deepcopy(bench), config("template_only"), answers={"*": {QID: "Paris"}})
    (result,) = outcome.results
    assert result.metadata.verdict == "passed" and result.rubric is None
    render_plan(bench, config("template_only"), bench.questions)
    assert "rubric traits are not evaluated in template_only mode" in capsys.readouterr().out
