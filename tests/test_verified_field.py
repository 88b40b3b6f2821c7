"""karenina's VerifiedField templates: every primitive's check() and score(), the normalizers, the
composition strategies and their granular scores, weights, null fields, conditional ground truth,
trace primitives on the answer text, the judge's schema, and templates compiled from source text as
karenina's writer stores it. Expected values come from karenina's semantics (checked against
karenina itself where noted)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from verify.benchmark.jsonld import load_benchmark
from verify.run.tasks import template_style
from verify.templates.answer_base import has_own_verify, parsed_fields
from verify.templates.compiler import CompiledTemplate, TemplateError, compile_template
from verify.templates.composition import (
    AllOf,
    AnyOf,
    AtLeastN,
    FieldCheck,
    evaluate_strategy,
    strategy_granular,
)
from verify.templates.graded import NumericGraded, NumericRangeGraded, NumericThresholdGraded
from verify.templates.namespace import PRESEEDED
from verify.templates.normalizers import SynonymMap, apply_normalizer, apply_normalizers
from verify.templates.primitives import (
    BooleanMatch,
    ContainsAll,
    ContainsAny,
    DateMatch,
    DateRange,
    DateTolerance,
    ExactMatch,
    LiteralMatch,
    NumericExact,
    NumericMaximum,
    NumericMinimum,
    NumericRange,
    NumericTolerance,
    OrderedMatch,
    RegexMatch,
    SemanticMatch,
    SetContainment,
    VerificationPrimitive,
    regex_time_limit,
)
from verify.templates.trace import TraceContains, TraceLength, TraceRegex
from verify.templates.verified import PRIMITIVES, FieldCheckError

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "verified" / "karenina_verified_fields.jsonld"
KARENINA_NAMES = {  # every primitive karenina ships (schemas/primitives/__init__.py)
    "BooleanMatch", "ExactMatch", "ContainsAny", "ContainsAll", "RegexMatch", "SemanticMatch", "NumericExact",
    "NumericTolerance", "NumericRange", "NumericMinimum", "NumericMaximum", "NumericGraded", "NumericRangeGraded",
    "NumericThresholdGraded", "SetContainment", "OrderedMatch", "LiteralMatch", "DateMatch", "DateTolerance",
    "DateRange", "TraceRegex", "TraceContains", "TraceLength",
}


def stored(qid: str) -> str:
    """A template's code exactly as karenina's writer stored it in the fixture checkpoint."""
    (question,) = [q for q in load_benchmark(FIXTURE).questions if q.id == qid]
    assert question.template_code is not None
    return question.template_code


def compiled(code: str, qid: str = "q") -> CompiledTemplate:
    return compile_template(code, qid)


def answer(template: CompiledTemplate, values: dict[str, Any], text: str | None = "") -> Any:
    built = template.build(values)
    built.set_raw_trace(text)
    return built


# --- primitives ------------------------------------------------------------------------------------------

CHECKS: list[tuple[VerificationPrimitive, Any, Any, bool]] = [
    (BooleanMatch(), True, True, True), (BooleanMatch(), False, True, False), (BooleanMatch(), 1, True, True),
    (BooleanMatch(), None, None, True), (BooleanMatch(), None, False, False),
    (ExactMatch(), " BCL2 ", "bcl2", True), (ExactMatch(normalize=[]), "BCL2 ", "BCL2", False),
    (ExactMatch(), 46, "46", True),
    (ContainsAny(substrings=["apoptosis", "autophagy"]), "induces apoptosis", "N/A", True),
    (ContainsAny(substrings=["Apoptosis"]), "induces apoptosis", "N/A", False),
    (ContainsAny(substrings=["Apoptosis"], normalize=["lowercase"]), "induces APOPTOSIS", "N/A", True),
    (ContainsAll(substrings=["red", "blue"]), "red and blue", None, True),
    (ContainsAll(substrings=["red", "green"]), "red and blue", None, False),
    (RegexMatch(pattern=r"^NCT\d{8}$"), "NCT02005471", None, True),
    (RegexMatch(pattern=r"^nct\d{8}$"), "NCT02005471", None, False),
    (RegexMatch(pattern=r"^nct\d{8}$", flags=["IGNORECASE"]), "NCT02005471", None, True),
    (RegexMatch(pattern=r"^nct\d+$", flags=["NO_SUCH_FLAG"]), "NCT1", None, False),  # ignored, as karenina
    (NumericExact(), "46", 46, True), (NumericExact(), 46.5, 46, False),
    (NumericTolerance(tolerance=0.05), 47, 46, True), (NumericTolerance(tolerance=0.05), 49, 46, False),
    (NumericTolerance(tolerance=0.05), 0.001, 0, False), (NumericTolerance(tolerance=0.05), 0, 0, True),
    (NumericTolerance(tolerance=2, mode="absolute"), 48, 46, True),
    (NumericTolerance(tolerance=2, mode="absolute"), 48.5, 46, False),
    (NumericRange(min=1, max=5), 5, None, True), (NumericRange(min=1, max=5, exclusive_max=True), 5, None, False),
    (NumericRange(min=1), 0.5, None, False), (NumericRange(min=1, exclusive_min=True), 1, None, False),
    (NumericRange(max=5), -100, None, True),
    (NumericMinimum(), 10, 10, True), (NumericMinimum(exclusive=True), 10, 10, False), (NumericMinimum(), 9, 10, False),
    (NumericMaximum(), 10, 10, True), (NumericMaximum(exclusive=True), 10, 10, False), (NumericMaximum(), 11, 10, False),
    (SetContainment(), ["b", "a"], ["a", "b"], True), (SetContainment(), ["a"], ["a", "b"], False),
    (SetContainment(mode="subset"), ["a"], ["a", "b"], True), (SetContainment(mode="subset"), ["c"], ["a"], False),
    (SetContainment(mode="superset"), ["a", "b", "c"], ["a", "b"], True),
    (SetContainment(mode="superset"), ["a"], ["a", "b"], False),
    (SetContainment(mode="overlap"), ["a", "z"], ["a", "b"], True),
    (SetContainment(mode="overlap", min_overlap=2), ["a", "z"], ["a", "b"], False),
    (OrderedMatch(), ["smith j", " JONES A"], ["Smith J", "Jones A"], True),
    (OrderedMatch(), ["Jones A", "Smith J"], ["Smith J", "Jones A"], False),
    (OrderedMatch(), ["Smith J"], ["Smith J", "Jones A"], False),
    (LiteralMatch(), "III", "III", True), (LiteralMatch(), "II", "III", False),
    (DateMatch(), "April 11, 2016", "2016-04-11", True), (DateMatch(), "2016-04-12", "2016-04-11", False),
    (DateMatch(), "2016-04-11T23:00", "2016-04-11", True), (DateMatch(), "not a date", "2016-04-11", False),
    (DateMatch(format="%d/%m/%Y"), "11/04/2016", "11/04/2016", True),
    (DateMatch(format="%d/%m/%Y"), "2016-04-11", "11/04/2016", False),
    (DateTolerance(tolerance=30), "2016-04-25", "2016-04-11", True),
    (DateTolerance(tolerance=30), "2016-06-15", "2016-04-11", False),
    (DateTolerance(tolerance=2, unit="hours"), "2016-04-11 03:00", "2016-04-11 01:30", True),
    (DateTolerance(tolerance=30, unit="minutes"), "2016-04-11 03:00", "2016-04-11 01:30", False),
    (DateRange(min="2015-01-01", max="2015-12-31"), "2015-06-15", None, True),
    (DateRange(min="2015-01-01", max="2015-12-31"), "2016-02-01", None, False),
    (DateRange(max="2015-12-31"), "gibberish", None, False),
    (NumericGraded(cutoff=0.2), 110, 100, True), (NumericGraded(cutoff=0.2), 125, 100, False),
    (NumericGraded(cutoff=0.2, full_credit=0.05), 110, 100, False),
    (NumericRangeGraded(min=10, max=20, margin=5), 20, None, True),
    (NumericRangeGraded(min=10, max=20, margin=5), 22, None, False),
    (NumericRangeGraded(min=10, max=20, margin=5, exclusive_max=True), 20, None, False),
    (NumericThresholdGraded(direction="max", margin=0.1), 90, 100, True),
    (NumericThresholdGraded(direction="max", margin=0.1), 105, 100, False),
    (NumericThresholdGraded(direction="min", margin=0.1), 100, 100, True),
    (NumericThresholdGraded(direction="min", margin=0.1, exclusive=True), 100, 100, False),
]


@pytest.mark.parametrize(("primitive", "extracted", "expected", "passes"), CHECKS,
                         ids=[f"{type(c[0]).__name__}-{i}" for i, c in enumerate(CHECKS)])
def test_every_parsed_primitive_checks_as_karenina_does(primitive: VerificationPrimitive, extracted: Any,
                                                      expected: Any, passes: bool) -> None:
    assert primitive.check(extracted, expected) is passes
    if not isinstance(primitive, NumericGraded | NumericRangeGraded | NumericThresholdGraded):
        assert primitive.score(extracted, expected) == (1.0 if passes else 0.0)  # binary primitives


def test_the_registry_has_every_karenina_primitive() -> None:
    assert set(PRIMITIVES) == KARENINA_NAMES


@pytest.mark.parametrize(("primitive", "extracted", "expected", "score"), [
    (NumericGraded(cutoff=0.2), 110, 100, 0.5),  # single band: linear from 1 at 100 to 0 at 120
    (NumericGraded(cutoff=0.2, decay="quadratic"), 110, 100, 0.75),
    (NumericGraded(cutoff=0.2), 125, 100, 0.0),
    (NumericGraded(cutoff=0.2, full_credit=0.05), 103, 100, 1.0),  # inside the plateau
    (NumericGraded(cutoff=0.2, full_credit=0.05), 110, 100, 2 / 3),  # karenina: 0.6666...
    (NumericGraded(cutoff=5, mode="absolute"), 48, 46, 0.6),
    (NumericGraded(cutoff=0.2), 1, 0, 0.0),  # relative to 0: only an exact match counts
    (NumericGraded(cutoff=0.2), 0, 0, 1.0),
    (NumericRangeGraded(min=10, max=20, margin=5), 22, None, 0.6),
    (NumericRangeGraded(min=10, max=20, margin=5, decay="quadratic"), 22, None, 0.84),
    (NumericRangeGraded(min=10, max=20, margin=0.5, mode="relative"), 7.5, None, 0.5),
    (NumericRangeGraded(min=10, max=20, margin=5), 30, None, 0.0),
    (NumericThresholdGraded(direction="max", margin=0.1), 105, 100, 0.5),
    (NumericThresholdGraded(direction="max", margin=0.1), 50, 100, 1.0),
    (NumericThresholdGraded(direction="min", margin=4, mode="absolute"), 97, 100, 0.25),
    (NumericThresholdGraded(direction="min", margin=0.1), -1, 0, 0.0),
])
def test_graded_primitives_give_partial_credit(primitive: VerificationPrimitive, extracted: Any, expected: Any,
                                               score: float) -> None:
    assert primitive.score(extracted, expected) == pytest.approx(score)


@pytest.mark.parametrize("build", [
    lambda: NumericGraded(cutoff=0), lambda: NumericGraded(cutoff=0.1, full_credit=0.1),
    lambda: NumericRangeGraded(min=5, max=5, margin=1), lambda: NumericRangeGraded(min=1, max=5, margin=0),
    lambda: NumericThresholdGraded(direction="max", margin=0), lambda: ContainsAny(),
])
def test_invalid_primitive_parameters_are_refused(build: Any) -> None:
    with pytest.raises(ValidationError):
        build()


def test_uncoercible_values_and_bad_modes_raise() -> None:
    with pytest.raises(ValueError):
        NumericExact().check("forty-six", 46)
    with pytest.raises(ValueError, match="unknown SetContainment mode 'some'"):
        SetContainment(mode="some").check(["a"], ["a"])
    with pytest.raises(NotImplementedError, match="SemanticMatch needs an embedding model"):
        SemanticMatch().check("a", "a")


def test_trace_primitives_read_the_raw_text() -> None:
    text = "MURANO (NCT02005471) and CLL14 (NCT02242942) showed benefit."
    assert TraceRegex(pattern=r"NCT\d{8}").check_trace(text)
    assert TraceRegex(pattern=r"NCT\d{8}", count_min=2).check_trace(text)
    assert not TraceRegex(pattern=r"NCT\d{8}", count_min=3).check_trace(text)
    assert not TraceRegex(pattern=r"NCT\d{9}").check_trace(text)
    assert TraceContains(substring="MURANO").check_trace(text) and not TraceContains(substring="murano").check_trace(text)
    assert TraceLength(min=6, max=8, unit="words").check_trace(text)
    assert not TraceLength(max=20).check_trace(text) and TraceLength(min=20).check_trace(text)
    with pytest.raises(NotImplementedError):
        TraceContains(substring="x").check("x", True)


def test_a_runaway_pattern_stops_at_the_time_limit() -> None:
    with regex_time_limit(0.2), pytest.raises(TimeoutError, match="did not finish matching within 0.2 s"):
        TraceRegex(pattern=r"^(a|aa)+$").check_trace("a" * 40 + "!")
    with regex_time_limit(0.2), pytest.raises(TimeoutError):
        RegexMatch(pattern=r"^(a|aa)+$").check("a" * 40 + "!", None)


# --- normalizers -----------------------------------------------------------------------------------------


def test_normalizers() -> None:
    assert apply_normalizer("lowercase", "BcL2") == "bcl2"
    assert apply_normalizer("strip", "  x \n") == "x"
    assert apply_normalizer("remove_punctuation", "B-cell, (lymphoma) 2!") == "Bcell lymphoma 2"
    assert apply_normalizer("collapse_whitespace", "  a \t b\n\nc ") == "a b c"
    synonyms = SynonymMap(mapping={"bcl-2": "bcl2"})
    assert apply_normalizer(synonyms, "bcl-2") == "bcl2" and apply_normalizer(synonyms, "Bcl-2") == "Bcl-2"
    assert apply_normalizers(["lowercase", synonyms], "Bcl-2") == "bcl2"  # order matters
    assert apply_normalizers([synonyms, "lowercase"], "Bcl-2") == "bcl-2"
    with pytest.raises(ValueError, match="unknown normalizer 'upper'"):
        apply_normalizer("upper", "x")
    primitive = ExactMatch(normalize=["lowercase", "strip", SynonymMap(mapping={"b-cell lymphoma 2": "bcl2"})])
    assert primitive.check("B-cell lymphoma 2 ", "BCL2") and not primitive.check("KRAS", "BCL2")


# --- composition -----------------------------------------------------------------------------------------


def test_composition_strategies() -> None:
    results: dict[str, bool | None] = {"a": True, "b": False, "c": None}
    a, b, c = FieldCheck(field="a"), FieldCheck(field="b"), FieldCheck(field="c")
    assert evaluate_strategy(AllOf(conditions=[a]), results) and not evaluate_strategy(AllOf(conditions=[a, b]), results)
    assert evaluate_strategy(AnyOf(conditions=[b, a]), results) and not evaluate_strategy(AnyOf(conditions=[b, c]), results)
    assert evaluate_strategy(AtLeastN(n=1, conditions=[a, b, c]), results)
    assert not evaluate_strategy(AtLeastN(n=2, conditions=[a, b, c]), results)  # None is not satisfied
    assert evaluate_strategy(AllOf(), results) and not evaluate_strategy(AnyOf(), results)
    nested = AllOf(conditions=[a, AnyOf(conditions=[b, AtLeastN(n=1, conditions=[a])])])
    assert evaluate_strategy(nested, results)
    assert AllOf.model_validate(json.loads(nested.model_dump_json())) == nested  # the discriminated union
    with pytest.raises(KeyError):
        evaluate_strategy(AllOf(conditions=[FieldCheck(field="zzz")]), results)


def test_granular_scores_follow_the_root_strategy() -> None:
    scores: dict[str, float | None] = {"a": 1.0, "b": 0.5, "c": None}
    weights = {"a": 1.0, "b": 2.0, "c": 1.0}
    assert strategy_granular(None, scores, weights) == pytest.approx(2.0 / 4)  # weighted sum / total
    assert strategy_granular(AllOf(), scores, weights) == pytest.approx(2.0 / 4)
    assert strategy_granular(AnyOf(), scores, weights) == pytest.approx(1.0 / 4)  # best single contribution
    assert strategy_granular(AtLeastN(n=1), scores, weights) == pytest.approx(1.0 / 4)
    assert strategy_granular(AtLeastN(n=2), scores, weights) == pytest.approx(2.0 / 4)
    assert strategy_granular(None, scores, {"a": 0.0, "b": 0.0, "c": 0.0}) == 0.0


# --- templates: karenina's stored text --------------------------------------------------------------------


def test_a_template_as_karenina_stores_it_compiles_and_verifies_itself() -> None:
    code = stored("vf-mixed")
    assert "import" not in code and "def verify" not in code  # the class alone, names pre-seeded
    template = compiled(code)
    assert not has_own_verify(template.answer_cls) and template.has_granular
    assert template.ground_truth == {"gene": "BCL2", "chromosomes": 46, "cites_trial": True}
    right = answer(template, {"gene": " bcl2", "chromosomes": 47}, "BCL2; 46. See NCT02005471.")
    assert right.verify() is True and right.verify_granular() == 1.0  # karenina: True, 1.0
    wrong = answer(template, {"gene": "MCL1", "chromosomes": 47}, "no trial cited")
    assert wrong.verify() is False and wrong.verify_granular() == 0.5  # karenina: False, 0.5 (weight 2 of 4)
    assert wrong._compute_field_results() == {"gene": False, "chromosomes": True, "cites_trial": False}


def test_the_judge_sees_neither_ground_truth_nor_trace_fields() -> None:
    template = compiled(stored("vf-mixed"))
    assert template.field_names == ["gene", "chromosomes"]
    for schema in (template.judge_schema(), template.relaxed_schema()):
        text = json.dumps(schema)
        assert "__verification__" not in text and "BCL2" not in text and "46" not in text
        assert "cites_trial" not in text and "NCT" not in text
        assert set(schema["properties"]) == {"gene", "chromosomes"}
    assert template.judge_schema()["required"] == ["gene", "chromosomes"]
    assert "__verification__" not in json.dumps(template.answer_cls.model_json_schema())
    assert "__verification__" in json.dumps(template.answer_cls.model_fields["gene"].json_schema_extra)
    fields = {f.name: f.description for f in template.fields()}
    assert fields == {"gene": "The gene the response names as the target (extraction hint: Use the official HGNC symbol)",
                      "chromosomes": "Number of chromosomes in a human somatic cell"}
    assert template.fields(hints=False)[0].description == "The gene the response names as the target"


def test_a_strategy_decides_and_grades_as_in_karenina() -> None:
    template = compiled(stored("vf-any-of"))
    near = answer(template, {"boiling_c": 110, "colors": ["red", "green"]})
    assert near.verify() is False and near.verify_granular() == pytest.approx(1 / 3)  # karenina: 0.3333
    close = answer(template, {"boiling_c": 103, "colors": ["red", "green"]})
    assert close.verify() is True and close.verify_granular() == pytest.approx(0.5)  # karenina: True, 0.5
    assert close._compute_field_scores() == {"boiling_c": 1.0, "colors": 0.0}


def test_trace_only_and_regex_only_templates_compile_without_verify() -> None:
    trace_only = compiled(stored("vf-trace-only"))
    assert trace_only.field_names == [] and trace_only.judge_schema()["properties"] == {}
    assert answer(trace_only, {}, "MURANO (NCT02005471)").verify() is True
    assert answer(trace_only, {}, "Venclexta in MURANO (NCT02005471)").verify() is False  # ground_truth False
    assert answer(trace_only, {}, "no identifier").verify() is False
    regex_only = compiled(stored("vf-regex-only"))
    assert regex_only.field_names == [] and not regex_only.rules and set(regex_only.regex or {}) == {
        "has_mechanism_keyword", "has_three_citations"}
    with pytest.raises(FieldCheckError, match="field 'cites_trial' \\(TraceRegex\\) reads the answer text"):
        answer(trace_only, {}, None).verify()


# --- templates: null fields, conditional ground truth, imports ---------------------------------------------

NULLABLE = '''class Answer(BaseAnswer):
    approved: bool = VerifiedField(description="Whether it is approved", ground_truth=False, verify_with=BooleanMatch())
    target: str = VerifiedField(description="The target", ground_truth="BCL2", verify_with=ExactMatch(), weight=3)
'''


def test_a_null_field_is_not_satisfied_and_never_matches_false() -> None:
    template = compiled(NULLABLE)
    null = answer(template, {"approved": None, "target": "bcl2"})
    assert null._compute_field_results() == {"approved": None, "target": True}
    assert null.verify() is False and null.verify_granular() == pytest.approx(3 / 4)
    assert parsed_fields(null) == {"approved": None, "target": "bcl2"}
    answered = answer(template, {"approved": False, "target": "bcl2"})
    assert answered.verify() is True and answered.verify_granular() == 1.0
    assert answer(template, {"approved": None, "target": None}).verify_granular() == 0.0


def test_conditional_ground_truth_uses_its_default_case() -> None:
    template = compiled('''class Answer(BaseAnswer):
    level: str = VerifiedField(
        description="The risk level",
        ground_truth=ConditionalGroundTruth(
            source="node_results.triage.parsed.severity",
            cases={"high": GroundTruthCase(value="urgent")},
            default=GroundTruthCase(value="Routine", verify_with=ExactMatch(normalize=[])),
        ),
        verify_with=ExactMatch(),
    )
    other: int = VerifiedField(description="n", ground_truth=3, verify_with=NumericExact())
''')
    assert template.ground_truth == {"other": 3}  # karenina leaves conditional ones out of correct
    assert answer(template, {"level": "Routine", "other": 3}).verify() is True
    # the default case's own primitive applies (no lowercase), not the field's
    assert answer(template, {"level": "routine", "other": 3}).verify() is False
    assert answer(template, {"level": "urgent", "other": 3})._get_resolved_ground_truths() == {
        "level": "Routine", "other": 3}


def test_karenina_import_paths_resolve_and_a_hand_written_verify_is_kept() -> None:
    template = compiled('''from karenina.schemas.entities import BaseAnswer, VerifiedField
from karenina.schemas.entities.verified_field import VerifiedField as VF
from karenina.schemas.primitives import NumericTolerance
from karenina.schemas.primitives.trace import TraceContains
from karenina.schemas.entities.composition import AllOf

class Answer(BaseAnswer):
    dose: float = VF(description="dose in mg", ground_truth=400, verify_with=NumericTolerance(tolerance=0.1))
    safe: bool = VerifiedField(description="no warning", ground_truth=False, verify_with=TraceContains(substring="WARNING"))

    def verify(self) -> bool:
        results = self._compute_field_results()
        return results["dose"] is True
''')
    assert has_own_verify(template.answer_cls)
    assert answer(template, {"dose": 420}, "WARNING").verify() is True  # its own rule: dose only
    assert answer(template, {"dose": 420}, "WARNING").verify_granular() == 0.5  # the automatic one


def test_a_primitive_written_in_the_template_is_checked_as_written() -> None:
    template = compiled('''from karenina.schemas.primitives import VerificationPrimitive

class StartsWith(VerificationPrimitive):
    prefix: str

    def check(self, extracted, expected):
        return str(extracted).startswith(self.prefix)

class Answer(BaseAnswer):
    code: str = VerifiedField(description="the code", ground_truth="", verify_with=StartsWith(prefix="NCT"))
''')
    assert answer(template, {"code": "NCT0001"}).verify() is True
    assert answer(template, {"code": "ISRCTN1"}).verify() is False


def test_a_field_that_cannot_be_checked_raises_a_located_error() -> None:
    template = compiled('''class Answer(BaseAnswer):
    summary: str = VerifiedField(description="summary", ground_truth="x", verify_with=SemanticMatch(threshold=0.9))
    n: float = VerifiedField(description="n", ground_truth=1, verify_with=NumericExact())
''')
    with pytest.raises(FieldCheckError, match=r"^field 'summary' \(SemanticMatch\): NotImplementedError: SemanticMatch"):
        answer(template, {"summary": "x", "n": 1}).verify()
    plain = compiled('''class Answer(BaseAnswer):
    n: str = VerifiedField(description="n", ground_truth=1, verify_with=NumericExact())
''')
    with pytest.raises(FieldCheckError, match=r"field 'n' \(NumericExact\): ValueError: could not convert"):
        answer(plain, {"n": "one"}).verify()


@pytest.mark.parametrize(("code", "message"), [
    ('class Answer(BaseAnswer):\n    a: int = VerifiedField(description="a", ground_truth=1, verify_with=NumericExact())\n'
     '    class VerificationStrategy:\n        verify_strategy = AnyOf(conditions=[FieldCheck(field="b")])\n',
     "question 'q': template class 'Answer': its VerificationStrategy names 'b', which is not one of its VerifiedFields (a)"),
    ('class Answer(BaseAnswer):\n    a: int = VerifiedField(description=" ", ground_truth=1, verify_with=NumericExact())\n',
     "question 'q': template line 2: ValueError: VerifiedField needs a description"),
    ('class Answer(BaseAnswer):\n    a: int = VerifiedField(description="a", ground_truth=1, verify_with="exact")\n',
     "question 'q': template line 2: TypeError: verify_with must be a verification primitive such as ExactMatch(), got str"),
    ("from karenina.schemas.primitives import Embedder\n",
     "question 'q': template line 1 imports 'Embedder' from 'karenina.schemas.primitives', which verify does not provide"),
    ("import os\nclass Answer(BaseAnswer):\n    a: int = VerifiedField(description='a', ground_truth=1, verify_with=NumericExact())\n",
     "question 'q': template line 1 imports 'os'"),
    ("class Answer(BaseAnswer):\n    a: int = Field(description='a')\n",
     "question 'q': template class 'Answer' defines no verify() method (and no regex checks or VerifiedFields)"),
])
def test_unusable_verified_templates_are_refused_with_a_located_message(code: str, message: str) -> None:
    with pytest.raises(TemplateError) as info:
        compiled(code)
    assert str(info.value).startswith(message)
    assert "not supported" not in str(info.value)


def test_karenina_exec_namespace_is_pre_seeded() -> None:
    # every name karenina's _build_exec_namespace() hands to template code
    karenina_exec = {"BaseAnswer", "Field", "List", "Dict", "Optional", "Union", "Any", "Literal", "VerifiedField",
                     "AllOf", "AnyOf", "AtLeastN", "FieldCheck", "SynonymMap", "ConditionalGroundTruth",
                     "GroundTruthCase", *KARENINA_NAMES}
    assert karenina_exec <= set(PRESEEDED)
    template = compiled("class Answer(BaseAnswer):\n" + "".join(
        f"    f{i}: Any = VerifiedField(description='x', ground_truth=None, verify_with={name}(**{params!r}))\n"
        for i, (name, params) in enumerate(sorted(EXAMPLE_PARAMS.items()))))
    assert {type(rule.primitive).__name__ for rule in template.rules.values()} == KARENINA_NAMES


EXAMPLE_PARAMS: dict[str, dict[str, Any]] = {name: {} for name in KARENINA_NAMES} | {
    "ContainsAny": {"substrings": ["a"]}, "ContainsAll": {"substrings": ["a"]}, "RegexMatch": {"pattern": "a"},
    "NumericTolerance": {"tolerance": 0.1}, "NumericGraded": {"cutoff": 0.1},
    "NumericRangeGraded": {"min": 0, "max": 1, "margin": 1}, "NumericThresholdGraded": {"direction": "max", "margin": 1},
    "DateTolerance": {"tolerance": 1}, "TraceRegex": {"pattern": "a"}, "TraceContains": {"substring": "a"},
}


@pytest.mark.parametrize(("code", "style"), [
    (NULLABLE, "Answer: VerifiedField (2 fields: BooleanMatch, ExactMatch)"),
    (NULLABLE + "\n    def verify(self):\n        return True\n",
     "Answer: verify() over VerifiedField (2 fields: BooleanMatch, ExactMatch)"),
    (NULLABLE + "\n    def verify_granular(self):\n        return 1.0\n"
     "\n    def ground_truth(self):\n        self.regex = {'n': {'pattern': 'a', 'expected': 'a'}}\n",
     "Answer: VerifiedField (2 fields: BooleanMatch, ExactMatch) + verify_granular() + regex checks"),
    ("class Answer(BaseAnswer):\n    x: str = Field(description='x')\n\n    def verify(self):\n        return True\n"
     "\n    def verify_granular(self):\n        return 1.0\n", "Answer: verify() + verify_granular()"),
    ("class Answer(BaseAnswer):\n    regex = {'n': {'pattern': 'a', 'expected': 'a'}}\n", "Answer: regex-only"),
    ("class Answer(BaseAnswer):\n    s: str = VerifiedField(description='s', ground_truth='a', verify_with=SemanticMatch())\n",
     "Answer: VerifiedField (1 field: SemanticMatch) (SemanticMatch on s: cannot be checked)"),
])
def test_the_plan_names_each_template_style(code: str, style: str) -> None:
    assert template_style(compiled(code)) == style
