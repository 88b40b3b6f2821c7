"""Template-kind LLM traits: the judge fills the trait's schema; each field is stored as karenina stores it.

The checkpoint is written by karenina's own writer (tests/fixtures/karenina_template_kind). karenina
keeps one ``llm_trait_scores`` entry per field, keyed ``"<trait>.<field>"``, and leaves null fields
out; a reply that cannot be used leaves the trait unscored and the task incomplete.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fakes import ScriptedModel, honest, make_config, prompt_of, run_pipeline, run_rubric
from peers import karenina_python

from verify.benchmark.jsonld import load_benchmark
from verify.benchmark.traits import LLMTrait
from verify.errors import ModelError
from verify.judging.template_trait import TemplateSchemaError, template_model
from verify.llm.ports import ChatRequest, Purpose
from verify.results.summary import Summary
from verify.stages.rubric import evaluates

FIXTURE = Path(__file__).parent / "fixtures" / "karenina_template_kind" / "checkpoint.jsonld"
ANSWER = "BCL2 inhibits apoptosis at the mitochondrial membrane; it may also act in the endoplasmic reticulum."
FILLED = {
    "mentions_apoptosis": True,
    "organelles": ["mitochondria", "endoplasmic reticulum"],
    "specificity": 4,
    "confidence": 0.5,
    "caveat": None,
    "years": [],
}


def traits() -> list[Any]:
    bench = load_benchmark(FIXTURE)
    rubric, _ = bench.rubric_for(bench.questions[0])
    return list(rubric.traits)


def facts_trait() -> LLMTrait:
    trait = traits()[0]
    assert isinstance(trait, LLMTrait)
    return trait


def scripted(template_reply: Any) -> ScriptedModel:
    """The judge: ``template_reply`` (a function of the request, or fixed text) for the template-kind
    trait, the simulated judge's verdict for the others."""
    def script(request: ChatRequest) -> str:
        if request.trait == "answer_facts":
            return template_reply(request) if callable(template_reply) else template_reply
        return honest(request)

    return ScriptedModel(script)


def template_requests(judge: ScriptedModel) -> list[ChatRequest]:
    return [r for r in judge.requests if r.trait == "answer_facts"]


# -- reading the checkpoint karenina wrote ------------------------------------------------------------


def test_karenina_checkpoint_gives_a_template_trait_the_stage_evaluates() -> None:
    trait = facts_trait()
    assert trait.kind == "template" and trait.template_schema is not None
    assert evaluates(trait)
    model = template_model(trait.template_schema)
    schema = model.model_json_schema()
    assert list(schema["properties"]) == list(trait.template_schema["properties"])
    assert set(schema["required"]) == {"mentions_apoptosis", "organelles", "specificity", "confidence"}


def test_schema_is_read_as_data_and_odd_names_survive() -> None:
    model = template_model({"type": "object", "title": "Odd", "required": ["json", "model_config"], "properties": {
        "json": {"type": "integer", "minimum": 1, "maximum": 3},
        "model_config": {"type": "array", "items": {"enum": ["a", "b"]}},
        "note": {"type": ["string", "null"], "default": None},
    }})
    value = model.model_validate({"json": 2, "model_config": ["a"]})
    assert value.model_dump(by_alias=True) == {"json": 2, "model_config": ["a"], "note": None}
    with pytest.raises(ValueError):
        model.model_validate({"json": 7, "model_config": ["a"]})
    with pytest.raises(ValueError):
        model.model_validate({"json": 2, "model_config": ["c"]})
    for bad in ({"properties": {"x": {"type": "object", "properties": {}}}},
                {"properties": {"x": {"$ref": "#/$defs/X"}}},
                {"properties": {"x": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}},
                {"properties": {}}):
        with pytest.raises(TemplateSchemaError):
            template_model(bad)


# -- a filled schema is stored as karenina stores it -------------------------------------------------


@pytest.mark.parametrize("strategy", ["batch", "sequential"])
async def test_filled_fields_are_stored_under_dotted_keys(strategy: str) -> None:
    judge = scripted(json.dumps(FILLED))
    result = await run_pipeline(traits(), ANSWER, judge, config=make_config(rubric_evaluation_strategy=strategy),
                                question="What is the main function of the BCL2 protein?")
    rubric = result.rubric
    assert rubric is not None
    scores = rubric.llm_trait_scores or {}
    template_keys = {k: v for k, v in scores.items() if k.startswith("answer_facts.")}
    # karenina's shape: one entry per field, null fields left out (an empty list is kept)
    assert template_keys == {
        "answer_facts.mentions_apoptosis": True,
        "answer_facts.organelles": ["mitochondria", "endoplasmic reticulum"],
        "answer_facts.specificity": 4,
        "answer_facts.confidence": 0.5,
        "answer_facts.years": [],
    }
    assert "answer_facts" not in scores
    assert type(scores["answer_facts.specificity"]) is int and type(scores["answer_facts.confidence"]) is float
    assert rubric.trait_status["answer_facts"].status == "scored"
    coverage = result.metadata.coverage
    assert coverage is not None and coverage.judged == coverage.total == 3 and not coverage.unscored
    assert result.verdict == "judged"
    # one call, for this trait alone, whatever the strategy; the schema is in the prompt and the request
    (request,) = template_requests(judge)
    assert request.purpose is Purpose.RUBRIC_SINGLE
    assert request.schema is not None and list(request.schema["properties"]) == list(FILLED)
    text = prompt_of(request)
    assert '<trait name="answer_facts" kind="template">' in text and "<schema>" in text and ANSWER in text
    # the stored result reads back
    again = type(result).model_validate_json(result.model_dump_json())
    assert again.rubric is not None and again.rubric.llm_trait_scores == rubric.llm_trait_scores
    # the summary counts it as scored, with no mean (its values are fields, not a score)
    summary = Summary()
    summary.add(result)
    assert (summary.by_trait["answer_facts"].scored, summary.by_trait["answer_facts"].mean) == (1, None)


async def test_reference_answer_only_for_traits_that_ask_for_it() -> None:
    plain = facts_trait()
    with_ref = plain.model_copy(update={"include_ground_truth": True})
    for trait, shown in ((plain, False), (with_ref, True)):
        judge = scripted(json.dumps(FILLED))
        await run_rubric([trait], ANSWER, judge, raw_answer="BCL2 blocks apoptosis")
        (request,) = template_requests(judge)
        assert ("<reference>BCL2 blocks apoptosis</reference>" in prompt_of(request)) is shown


async def test_a_wrong_reply_is_retried_with_feedback() -> None:
    replies = iter([json.dumps({**FILLED, "specificity": "very"}), json.dumps(FILLED)])
    judge = scripted(lambda _r: next(replies))
    state, _ = await run_rubric([facts_trait()], ANSWER, judge)
    assert state.rubric is not None and state.rubric.trait_status["answer_facts"].status == "scored"
    first, second = template_requests(judge)
    assert "could not be used" in prompt_of(second) and "specificity" in prompt_of(second)
    assert (state.rubric.llm_trait_scores or {})["answer_facts.specificity"] == 4


# -- an unusable reply is unscored, never stored, and the task is incomplete -------------------------


def echo_schema(request: ChatRequest) -> str:
    return json.dumps(request.schema)


WRONG_TYPED = json.dumps({"mentions_apoptosis": "perhaps", "organelles": "mitochondria", "specificity": "high",
                          "confidence": "low"})


@pytest.mark.parametrize(("reply", "why"), [
    (echo_schema, "does not match the schema"),  # required fields missing
    ("", "empty"),
    (WRONG_TYPED, "does not match the schema"),
    ("{}", "does not match the schema"),
    ('{"verdict": true}', "does not match the schema"),
], ids=["echoed-schema", "empty", "wrong-types", "empty-object", "no-field"])
async def test_unusable_reply_leaves_the_trait_unscored(reply: Any, why: str) -> None:
    judge = scripted(reply)
    result = await run_pipeline(traits(), ANSWER, judge, config=make_config(rubric_evaluation_strategy="batch"))
    rubric = result.rubric
    assert rubric is not None
    outcome = rubric.trait_status["answer_facts"]
    assert outcome.status == "unscored" and outcome.score is None
    assert outcome.reason is not None and "after 3 attempt(s)" in outcome.reason and why in outcome.reason
    assert outcome.unscored_category == "unparseable"
    assert len(template_requests(judge)) == 3  # retried like every other structured reply
    assert not any(k.startswith("answer_facts") for k in rubric.llm_trait_scores or {})
    assert rubric.trait_status["clear"].status == "scored"  # the other traits keep their scores
    assert result.verdict == "incomplete" and not result.passed
    coverage = result.metadata.coverage
    assert coverage is not None and coverage.unscored == {"answer_facts": "unparseable"}
    assert (coverage.judged, coverage.total) == (2, 3)
    summary = Summary()
    summary.add(result)
    assert (summary.passed, summary.incomplete) == (0, 1)


@pytest.mark.parametrize(("reply", "why"), [
    ("{}", "names no field"), ('{"other": 1}', "names no field"), (echo_schema, "JSON schema itself"),
])
async def test_all_optional_schema_does_not_accept_an_empty_or_echoed_object(reply: Any, why: str) -> None:
    """With every field optional, any object validates: it must still name a field, and not be the schema."""
    trait = LLMTrait(name="notes", kind="template", higher_is_better=None, template_schema={
        "type": "object", "properties": {"caveat": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}},
    })
    judge = ScriptedModel(lambda r: reply(r) if callable(reply) else reply)
    state, _ = await run_rubric([trait], ANSWER, judge)
    assert state.rubric is not None
    outcome = state.rubric.trait_status["notes"]
    assert outcome.status == "unscored" and why in (outcome.reason or "")
    assert state.rubric.llm_trait_scores is None


async def test_an_outage_leaves_only_the_template_trait_unscored() -> None:
    judge = scripted(lambda _r: ModelError("judge down", category="timeout"))
    result = await run_pipeline(traits(), ANSWER, judge)
    assert result.rubric is not None
    outcome = result.rubric.trait_status["answer_facts"]
    assert outcome.status == "unscored" and outcome.error_category == "timeout"
    assert result.rubric.trait_status["clear"].status == "scored"
    assert result.verdict == "incomplete"


async def test_a_schema_verify_cannot_read_is_unscored_without_a_call() -> None:
    nested = LLMTrait(name="nested", kind="template", higher_is_better=None, template_schema={
        "type": "object", "properties": {"source": {"$ref": "#/$defs/Source"}},
    })
    judge = ScriptedModel(honest)
    result = await run_pipeline([nested], ANSWER, judge)
    assert result.rubric is not None
    outcome = result.rubric.trait_status["nested"]
    assert outcome.status == "unscored" and "$ref" in (outcome.reason or "") and outcome.unscored_category == "code"
    assert judge.requests == [] or all(r.purpose is Purpose.ANSWER for r in judge.requests)
    assert result.verdict == "incomplete"


# -- karenina's own reader sees the stored fields (when karenina is at hand) -------------------------

KARENINA_PYTHON = karenina_python()


@pytest.mark.skipif(KARENINA_PYTHON is None, reason="karenina is not importable (set KARENINA_PYTHON)")
async def test_karenina_reads_the_stored_fields() -> None:
    result = await run_pipeline(traits(), ANSWER, scripted(json.dumps(FILLED)))
    assert result.rubric is not None
    section = result.rubric.model_dump(include={"rubric_evaluation_performed", "rubric_evaluation_strategy",
                                                "llm_trait_scores", "llm_trait_labels", "trait_provenance"})
    code = (
        "import json, sys\n"
        "from karenina.schemas.verification.result_components import VerificationResultRubric as R\n"
        "r = R.model_validate(json.loads(sys.stdin.read()))\n"
        "print(json.dumps(r.get_trait_by_name('answer_facts.organelles')))\n"
    )
    assert KARENINA_PYTHON is not None
    out = subprocess.run([KARENINA_PYTHON, "-c", code], input=json.dumps(section), capture_output=True,
                         text=True, check=True, timeout=120)
    assert json.loads(out.stdout) == [["mitochondria", "endoplasmic reticulum"], "llm"]
