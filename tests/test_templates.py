"""Answer templates: compilation under the allow-list, BaseAnswer, and every karenina fixture in every mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakes import SIM_ANSWERER, SIM_JUDGE

from verify.benchmark.jsonld import Benchmark, load_benchmark
from verify.benchmark.question import Question
from verify.benchmark.traits import CallableTrait
from verify.config.verification import VerificationConfig
from verify.errors import ConfigError
from verify.results.models import VerificationResult
from verify.run.runner import run_verification
from verify.templates.answer_base import BaseAnswer, check_regex, parsed_fields
from verify.templates.compiler import TemplateError, check_source, compile_template

KARENINA = Path(__file__).resolve().parent / "fixtures" / "karenina"
FIXTURES = sorted(KARENINA.glob("*.jsonld"))
MODES = ["template_only", "template_and_rubric", "rubric_only"]

CAPITAL = '''from karenina.schemas.entities import BaseAnswer
from pydantic import Field

class Answer(BaseAnswer):
    capital: str = Field(description="The capital city named in the response")

    def ground_truth(self):
        self.correct = {"capital": "Paris"}

    def verify(self) -> bool:
        return self.capital.strip().lower() == self.correct["capital"].lower()
'''

# A correct and a wrong recorded answer for every question of every fixture checkpoint.
RIGHT = {
    "urn:karenina:test:q001": "2+2 equals 4.",
    "urn:karenina:test:mq001": "Water boils at 100 degrees Celsius at sea level.",
    "urn:karenina:test:mq002": "The three primary colors are red, green, and blue.",
    "urn:karenina:test:mq003": "Romeo and Juliet was written by William Shakespeare.",
    "urn:karenina:test:mq004": "The chemical symbol for gold is Au.",
    "urn:karenina:test:mq005": "15 * 7 = 105.",
    "urn:karenina:test:rq001": "BCL2 is a proto-oncogene that encodes an anti-apoptotic protein; it blocks apoptosis "
                               "in cancer cells.",
    "urn:karenina:test:rq002": "Water boils at 100 degrees Celsius (212 degrees Fahrenheit) at sea level.",
    "urn:karenina:test:rq003": "The capital of France is Paris.",
}
WRONG = {
    "urn:karenina:test:q001": "2+2 equals 5.",
    "urn:karenina:test:mq001": "Water boils at 90 degrees Celsius at sea level.",
    "urn:karenina:test:mq002": "The three primary colors are red, yellow, and blue.",
    "urn:karenina:test:mq003": "Romeo and Juliet was written by Christopher Marlowe.",
    "urn:karenina:test:mq004": "The chemical symbol for gold is Ag.",
    "urn:karenina:test:mq005": "15 * 7 = 115.",
    "urn:karenina:test:rq001": "BCL2 is a pro-apoptotic protein that promotes cell death in cancer.",
    "urn:karenina:test:rq002": "Water boils at 90 degrees Celsius (194 degrees Fahrenheit) at sea level.",
    "urn:karenina:test:rq003": "The capital of France is Lyon.",
}


def sim_config(mode: str = "template_only", **kw: Any) -> VerificationConfig:
    return VerificationConfig(answering_models=[SIM_ANSWERER], parsing_models=[SIM_JUDGE], evaluation_mode=mode, **kw)


def run(benchmark: Benchmark, answers: dict[str, str], config: VerificationConfig,
        **options: Any) -> dict[str, VerificationResult]:
    outcome = run_verification(benchmark, config, answers={"*": answers}, include_unfinished=True, **options)
    return {r.metadata.question_id: r for r in outcome.results}


def bench(*questions: Question, name: str = "t") -> Benchmark:
    return Benchmark(name=name, questions=list(questions))


# -- every fixture checkpoint, every mode -------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_fixture_right_answers_pass_in_every_mode(path: Path, mode: str) -> None:
    benchmark = load_benchmark(path)
    if mode == "rubric_only" and not all(benchmark.rubric_for(q)[0].traits for q in benchmark.questions):
        # a question with nothing to judge is refused before any call, naming the file
        with pytest.raises(ConfigError, match=rf"{path.name}: nothing to evaluate for question"):
            run(benchmark, RIGHT, sim_config(mode))
        return
    results = run(benchmark, RIGHT, sim_config(mode))
    assert set(results) == {q.id for q in benchmark.questions}
    for qid, r in results.items():
        assert not r.metadata.errors
        codeless = codeless_callables(benchmark, qid)
        if codeless and mode != "template_only":
            # a callable trait that cannot run is not judged: the task is incomplete, never passed
            assert r.verdict == "incomplete" and not r.passed
            assert r.metadata.coverage is not None
            assert r.metadata.coverage.unscored == dict.fromkeys(codeless, "code")
        else:
            # rubric_only has no pass rule: complete is "judged" there
            assert r.verdict == ("judged" if mode == "rubric_only" else "passed"), (qid, r.metadata.failure)
        if mode == "rubric_only":
            assert r.template is not None and not r.template.template_verification_performed
            assert "validate_template" not in r.metadata.stages and "parse_template" not in r.metadata.stages
            continue
        t = r.template
        assert t is not None and t.template_verification_performed and t.verify_result is True
        assert t.parsed_gt_response and set(t.parsed_llm_response or {}) == set(t.parsed_gt_response)
        assert r.metadata.stages[:2] == ["validate_template", "generate_answer"]
        if mode == "template_and_rubric" and benchmark.rubric_for(qid)[0].traits:
            assert r.rubric is not None and r.rubric.trait_status
        if mode == "template_only":
            assert r.rubric is None


@pytest.mark.parametrize("mode", ["template_only", "template_and_rubric"])
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_fixture_wrong_answers_fail_with_category_content(path: Path, mode: str) -> None:
    benchmark = load_benchmark(path)
    results = run(benchmark, WRONG, sim_config(mode))
    assert set(results) == {q.id for q in benchmark.questions}
    for qid, r in results.items():
        assert not r.passed
        assert r.template is not None and r.template.verify_result is False
        failure = r.metadata.failure
        assert failure is not None and (failure.category, failure.stage, failure.group) == (
            "content", "verify_template", "content"), qid
        assert "verify() returned False" in failure.reason


def test_wrong_answers_are_not_failed_by_the_template_in_rubric_only_mode() -> None:
    benchmark = load_benchmark(KARENINA / "multi_question.jsonld")
    results = run(benchmark, WRONG, sim_config("rubric_only"))
    assert set(results) == {q.id for q in benchmark.questions}
    assert all(r.metadata.failure is None and r.template and r.template.verify_result is None for r in results.values())
    # its callable traits carry no code, so no task is complete
    assert {r.verdict for r in results.values()} == {"incomplete"}


def codeless_callables(benchmark: Benchmark, qid: str) -> list[str]:
    return [t.name for t in benchmark.rubric_for(qid)[0].traits if isinstance(t, CallableTrait) and not t.callable_code]


def test_result_fields_follow_karenina() -> None:
    r = run(load_benchmark(KARENINA / "with_rubrics.jsonld"), RIGHT, sim_config("template_and_rubric"))[
        "urn:karenina:test:rq002"]
    t = r.template
    assert t is not None
    assert t.parsed_gt_response == {"celsius": 100, "fahrenheit": 212}
    assert t.parsed_llm_response == {"celsius": 100, "fahrenheit": 212}
    assert t.regex_validations_performed is False and t.regex_overall_success is True
    assert t.abstention_check_performed is False and t.sufficiency_check_performed is False
    assert "parsing" in t.usage_metadata and "rubric_evaluation" in t.usage_metadata
    dumped = r.model_dump(mode="json")
    assert VerificationResult.model_validate(dumped) == r  # round trip


# -- compilation: allow-list, builtins, dunders ----------------------------------------------------------


@pytest.mark.parametrize(("code", "needle"), [
    ("import os\n", "template line 1 imports 'os'; allowed: __future__, pydantic, typing"),
    ("from subprocess import run\n", "template line 1 imports 'subprocess'"),
    ("x = 1\nimport sys as s\n", "template line 2 imports 'sys'"),
    ("class Answer(BaseAnswer):\n    x: int\n    def verify(self):\n        return open('/etc/passwd')\n",
     "template line 4 uses 'open'"),
    ("y = eval('1+1')\n", "template line 1 uses 'eval'"),
    ("y = __import__('os')\n", "template line 1 uses '__import__'"),
    ("y = ().__class__.__bases__[0].__subclasses__()\n", "accesses '__subclasses__'"),
    ("def f():\n    pass\ng = f.__globals__\n", "template line 3 accesses '__globals__'"),
    ("b = __builtins__\n", "uses '__builtins__'"),
    ("s = '{0.__class__}'.format(1)\n", "format string that reaches a dunder"),
    ("from karenina.schemas.entities import Secret\n", "imports 'Secret' from 'karenina.schemas.entities'"),
    ("from . import x\n", "relative import"),
    ("from pydantic.v1.utils import import_string\n", "imports 'pydantic.v1.utils'"),
    ("from pydantic._internal._validators import import_string\n", "imports 'pydantic._internal._validators'"),
    ("from pydantic import TypeAdapter, ImportString\n", "imports 'TypeAdapter', which can import arbitrary modules"),
    ("import pydantic\nf = pydantic.ImportString\n", "template line 2 accesses 'ImportString'"),
    ("def (:\n", "template line 1: syntax error"),
])
def test_refused_templates_have_located_errors(code: str, needle: str) -> None:
    with pytest.raises(TemplateError) as info:
        compile_template(code, "q-bad")
    assert str(info.value).startswith("question 'q-bad': ")
    assert needle in str(info.value)


def test_runtime_guards_hold_even_without_the_static_check() -> None:
    tree = check_source("import re\nx = re.compile('a')\n", "q")
    assert tree is not None
    with pytest.raises(TemplateError, match="AttributeError: templates may not use typing.get_type_hints"):
        compile_template("import typing\nh = getattr(typing, 'get_type_' + 'hints')\n", "q-hints")
    with pytest.raises(TemplateError, match="may not read attribute '_private'"):
        compile_template("x = getattr(1, '_private', None)\n", "q-getattr")
    with pytest.raises(TemplateError, match="typing.sys"):
        compile_template("import typing\nx = getattr(typing, 's' + 'ys')\n", "q-sys")
    with pytest.raises(TemplateError, match="may not use module 'collections'"):
        compile_template("import typing\nx = typing.collections\n", "q-collections")
    with pytest.raises(TemplateError, match="may not use pydantic.ImportString"):
        compile_template("import pydantic\nx = getattr(pydantic, 'Import' + 'String')\n", "q-import-string")


def test_missing_template_class_and_verify_are_refused() -> None:
    with pytest.raises(TemplateError, match="has no answer template"):
        compile_template("", "q-empty")
    with pytest.raises(TemplateError, match="defines no BaseAnswer subclass"):
        compile_template("x = 1\n", "q-none")
    with pytest.raises(TemplateError, match="defines no verify"):
        compile_template("class Answer(BaseAnswer):\n    x: int\n", "q-noverify")
    with pytest.raises(TemplateError, match="reserved field"):
        compile_template("class Answer(BaseAnswer):\n    correct: int\n    def verify(self):\n        return True\n", "q-r")
    with pytest.raises(TemplateError, match=r"'q-vf': template line 2: TypeError: VerifiedField\(\) missing 3 required"):
        compile_template("class Answer(BaseAnswer):\n    x: int = VerifiedField()\n", "q-vf")


def test_karenina_template_compiles_without_karenina() -> None:
    compiled = compile_template(CAPITAL, "q-capital")
    assert compiled.class_name == "Answer" and compiled.field_names == ["capital"]
    assert compiled.ground_truth == {"capital": "Paris"}
    judge = compiled.judge_schema()
    assert set(judge["properties"]) == {"capital"} and "additionalProperties" not in judge
    relaxed = compiled.relaxed_schema()
    assert relaxed["title"] == "Answer" and relaxed.get("required", []) == []
    assert {"type": "null"} in relaxed["properties"]["capital"]["anyOf"]
    answer = compiled.build({"capital": " paris "})
    assert isinstance(answer, BaseAnswer) and answer.id == "q-capital" and answer.verify() is True
    assert parsed_fields(answer) == {"capital": " paris "}
    assert compiled.build({"capital": "Lyon"}).verify() is False


def test_leaf_class_is_found_and_allowed_imports_work() -> None:
    code = '''from __future__ import annotations
import math
import re
from datetime import date
from enum import Enum
from typing import Optional
from pydantic import Field
from karenina.schemas.domain import BaseAnswer as Base

class Unit(str, Enum):
    celsius = "celsius"
    kelvin = "kelvin"

class Common(Base):
    unit: Optional[Unit] = None

class Measure(Common):
    value: float = Field(description="the value")

    def model_post_init(self, __context):
        self.correct = {"value": 373.15, "unit": "kelvin"}

    def verify(self):
        return math.isclose(self.value, self.correct["value"]) and re.match("k", self.unit.value) is not None

    def verify_granular(self):
        return 0.5 + 0.5 * (self.unit == Unit.kelvin)
'''
    compiled = compile_template(code, "q-leaf")
    assert compiled.class_name == "Measure" and compiled.field_names == ["unit", "value"]
    assert compiled.has_granular
    answer = compiled.build({"value": 373.15, "unit": "kelvin"})
    assert answer.verify() is True and answer.verify_granular() == 1.0  # type: ignore[attr-defined]


def test_regex_checks_follow_karenina_match_types() -> None:
    specs = {
        "one": {"pattern": r"\d+", "expected": "42", "match_type": "exact"},
        "has": {"pattern": r"[A-Z][a-z]+", "expected": "Paris", "match_type": "contains"},
        "n": {"pattern": r"\bthe\b", "expected": 2, "match_type": "count"},
        "all": {"pattern": r"[A-Z][a-z]+", "expected": ["Paris", "France"], "match_type": "all"},
        "bad": {"pattern": "(", "expected": "x", "match_type": "exact"},
    }
    out = check_regex(specs, "the capital of France is Paris; the answer is 42")
    assert out.performed and out.results == {"one": True, "has": True, "n": True, "all": True, "bad": False}
    assert out.success is False and "invalid pattern" in out.details["bad"]["failure_reason"]
    assert check_regex(None, "x").performed is False


def test_regex_template_attribute_is_kept_and_checked() -> None:
    code = CAPITAL.replace(
        "    capital: str", '    regex = {"cites": {"pattern": "Paris", "expected": "Paris", "match_type": "exact"}}\n    capital: str'
    )
    compiled = compile_template(code, "q-regex")
    assert compiled.regex and "cites" in compiled.regex
    benchmark = bench(Question(id="q-regex", text="What is the capital of France?", raw_answer="Paris",
                               template_code=code, finished=True))
    ok = run(benchmark, {"q-regex": "It is Paris."}, sim_config())["q-regex"]
    assert ok.passed and ok.template and ok.template.regex_validation_results == {"cites": True}
    twice = run(benchmark, {"q-regex": "Paris. Paris!"}, sim_config())["q-regex"]
    assert not twice.passed and twice.template and twice.template.regex_overall_success is False
    assert twice.metadata.failure and "regex check(s) failed: cites" in twice.metadata.failure.reason


def test_refused_template_affects_only_its_task() -> None:
    evil = CAPITAL.replace("from pydantic import Field", "from pydantic import Field\nimport os")
    opener = CAPITAL.replace('return self.capital', 'open("/tmp/x")\n        return self.capital')
    benchmark = bench(
        Question(id="good", text="What is the capital of France?", raw_answer="Paris", template_code=CAPITAL, finished=True),
        Question(id="evil", text="What is the capital of France?", raw_answer="Paris", template_code=evil, finished=True),
        Question(id="opener", text="What is the capital of France?", raw_answer="Paris", template_code=opener, finished=True),
    )
    answers = {"good": "Paris.", "evil": "Paris.", "opener": "Paris."}
    for mode in ("template_only", "template_and_rubric"):
        results = run(benchmark, answers, sim_config(mode))
        assert results["good"].passed and not results["good"].metadata.errors
        evil_r = results["evil"]
        failure = evil_r.metadata.failure
        assert failure is not None and (failure.category, failure.stage, failure.group) == (
            "template_validation", "validate_template", "system")
        assert failure.reason.startswith("question 'evil': template line 3 imports 'os'; allowed:")
        assert evil_r.metadata.errors[0].category == "template_validation"
        assert "parse_template" not in evil_r.metadata.stages
        # template_only has nothing to do without a template, so no answer is generated for it
        assert ("generate_answer" in evil_r.metadata.stages) == (mode == "template_and_rubric")
        opener_failure = results["opener"].metadata.failure
        assert opener_failure is not None and "template line 11 uses 'open'" in opener_failure.reason
