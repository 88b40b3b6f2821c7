"""Make the golden files of the compatibility suite with karenina itself.

Run with an interpreter that has karenina (see README.md in this folder)::

    /tmp/karvenv/bin/python tests/compat/make_golden.py

For each suite below it writes, into ``golden/``:

* ``<suite>.jsonld``: the checkpoint, built with karenina's ``Benchmark`` API and saved by karenina;
* ``<suite>.cases.json``: what both tools are given: per question its text, the recorded answer
  (karenina's manual traces; verify's recorded answers) and the deterministic judge's values;
* ``<suite>.results.json`` / ``<suite>.results.csv``: karenina's results of verifying it, written by
  karenina's own exporters. Answers come from karenina's manual interface; the parsing judge is
  ``openai_endpoint`` at the deterministic judge of ``judge.py`` on 127.0.0.1. Nothing leaves the machine.

The files are committed; ``test_golden.py`` reads them without karenina.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import judge  # noqa: E402 - the judge shared with test_golden.py
from karenina import Benchmark  # noqa: E402
from karenina.adapters.manual import ManualTraces  # noqa: E402
from karenina.benchmark.verification.stages.helpers.results_exporter import (  # noqa: E402
    export_verification_results_csv,
    export_verification_results_json_stream,
)
from karenina.cli.utils import create_export_job  # noqa: E402
from karenina.schemas.config import ModelConfig  # noqa: E402
from karenina.schemas.entities import (  # noqa: E402
    CallableRubricTrait,
    LLMRubricTrait,
    MetricRubricTrait,
    RegexRubricTrait,
)
from karenina.schemas.verification import VerificationConfig  # noqa: E402

GOLDEN = HERE / "golden"

CAPITAL = '''class Answer(BaseAnswer):
    capital: str = Field(description="The city the response names as the capital of France")

    def model_post_init(self, __context):
        self.correct = {"capital": "Paris"}

    def verify(self) -> bool:
        return self.capital.strip().lower() == self.correct["capital"].lower()
'''
BOILING = '''class Answer(BaseAnswer):
    celsius: int = Field(description="The boiling point of water at sea level, in degrees Celsius, given by the response")

    def model_post_init(self, __context):
        self.correct = {"celsius": 100}

    def verify(self) -> bool:
        return self.celsius == self.correct["celsius"]
'''
APOLLO = '''class Answer(BaseAnswer):
    module: str = VerifiedField(description="The name of the Apollo 11 command module", ground_truth="Columbia",
                                verify_with=ExactMatch())
    crew: int = VerifiedField(description="How many astronauts flew on Apollo 11", ground_truth=3,
                              verify_with=NumericTolerance(tolerance=0, mode="absolute"))
    landed: bool = VerifiedField(description="Whether the response says the mission landed on the Moon",
                                 ground_truth=True, verify_with=BooleanMatch())
    year: bool = VerifiedField(description="The response gives the year 1969", ground_truth=True,
                               verify_with=TraceRegex(pattern=r"\\b1969\\b"))
'''
EVEREST = '''class Answer(BaseAnswer):
    height_m: float = VerifiedField(description="The height of Mount Everest in metres given by the response",
                                    ground_truth=8849, verify_with=NumericTolerance(tolerance=0.001))
    country: str = VerifiedField(description="The country the response names first for Everest", ground_truth="Nepal",
                                 verify_with=ExactMatch())
    tallest: bool = VerifiedField(description="Whether the response says it is the tallest mountain above sea level",
                                  ground_truth=True, verify_with=BooleanMatch())
    units: bool = VerifiedField(description="The response states metres", ground_truth=True,
                                verify_with=TraceRegex(pattern=r"\\bmetres\\b"))
'''
REGEX_ONLY = '''class Answer(BaseAnswer):
    def model_post_init(self, __context):
        self.regex = {{
            "year": {{"pattern": r"\\b{year}\\b", "expected": "{year}", "match_type": "exact"}},
            "names_country": {{"pattern": r"(Germany|Berlin)", "expected": "Berlin", "match_type": "contains"}},
        }}

    def verify(self) -> bool:
        return True
'''


def short_enough(text: str) -> bool:
    """Callable trait: an answer of at most twelve words."""
    return len(text.split()) <= 12


def digit_count(text: str) -> int:
    """Callable trait (score): how many digits the answer holds, capped at 5."""
    return min(5, sum(ch.isdigit() for ch in text))


# Each suite: evaluation mode, global traits, and per question the case the judge reads, its
# template (or None), its question-specific traits.
def suites() -> dict[str, dict[str, Any]]:
    clarity = LLMRubricTrait(name="clarity", description="How clear and direct the answer is", kind="score",
                             min_score=1, max_score=5)
    polite = LLMRubricTrait(name="polite", description="Whether the answer is polite", kind="boolean")
    tone = LLMRubricTrait(name="tone", description="The register of the answer", kind="literal",
                          classes={"formal": "Formal, neutral wording", "casual": "Casual, chatty wording"})
    celsius = RegexRubricTrait(name="mentions_celsius", description="The answer names the Celsius scale",
                               pattern=r"Celsius", case_sensitive=True)
    facts = MetricRubricTrait(name="capital_facts", description="Facts the answer should state",
                              metrics=["precision", "recall", "f1"],
                              tp_instructions=["names Paris", "names France"])
    return {
        "classic": {
            "mode": "template_and_rubric",
            "global": [clarity, polite, tone, celsius],
            "questions": [
                {"id": "q-capital", "template": CAPITAL, "specific": [facts],
                 "question": "What is the capital of France?", "raw_answer": "Paris",
                 "answer": "The capital of France is Paris.",
                 "fields": {"capital": "Paris", "tp": ["Paris", "France"], "fn": [], "fp": [], "tn": []},
                 "traits": {"clarity": 5, "polite": True, "tone": "formal"}},
                {"id": "q-boiling", "template": BOILING, "specific": [],
                 "question": "At what temperature does water boil at sea level?", "raw_answer": "100 degrees Celsius",
                 "answer": "yeah it boils at like 90 Celsius",
                 "fields": {"celsius": 90}, "traits": {"clarity": 2, "polite": False, "tone": "casual"}},
            ],
        },
        "verified_field": {
            "mode": "template_only", "global": [],
            "questions": [
                {"id": "q-apollo", "template": APOLLO, "specific": [],
                 "question": "Tell me about the Apollo 11 mission.", "raw_answer": "Columbia, crew of 3, landed 1969",
                 "answer": "Apollo 11 launched in 1969 with a crew of 3; the command module Columbia orbited "
                           "while Eagle landed on the Moon.",
                 # karenina's judge schema also asks for the TraceRegex field (verify's leaves it out); a
                 # null there would make karenina skip the check, so the judge gives a value it ignores
                 "fields": {"module": "Columbia", "crew": 3, "landed": True, "year": True}, "traits": {}},
                {"id": "q-everest", "template": EVEREST, "specific": [],
                 "question": "How high is Mount Everest?", "raw_answer": "8849 metres, Nepal/China",
                 "answer": "Everest is about 8,700 m high, on the border of China and Nepal, and the tallest "
                           "mountain above sea level.",
                 "fields": {"height_m": 8700, "country": "China", "tallest": True, "units": True}, "traits": {}},
            ],
        },
        "regex_only": {
            "mode": "template_only", "global": [],
            "questions": [
                {"id": "q-wall", "template": REGEX_ONLY.format(year=1989), "specific": [],
                 "question": "When did the Berlin Wall fall?", "raw_answer": "1989",
                 "answer": "The Berlin Wall fell in 1989.", "fields": {}, "traits": {}},
                {"id": "q-reunify", "template": REGEX_ONLY.format(year=1990), "specific": [],
                 "question": "When was Germany reunified?", "raw_answer": "1990",
                 "answer": "Germany was reunified in October 1991.", "fields": {}, "traits": {}},
            ],
        },
        "callable": {
            "mode": "rubric_only",
            "global": [
                CallableRubricTrait.from_callable("short_enough", short_enough, kind="boolean",
                                                  description="At most twelve words"),
                CallableRubricTrait.from_callable("digit_count", digit_count, kind="score", min_score=0, max_score=5,
                                                  description="Digits in the answer"),
                celsius, polite,
            ],
            "questions": [
                {"id": "q-short", "template": None, "specific": [],
                 "question": "Name the largest planet.", "raw_answer": "Jupiter",
                 "answer": "Jupiter, thank you for asking.", "fields": {}, "traits": {"polite": True}},
                {"id": "q-long", "template": None, "specific": [],
                 "question": "How many moons does Mars have?", "raw_answer": "2",
                 "answer": "Mars has 2 small moons, Phobos and Deimos, discovered in 1877 by Asaph Hall "
                           "at the US Naval Observatory.",
                 "fields": {}, "traits": {"polite": False}},
            ],
        },
    }


def build(suite: dict[str, Any], name: str) -> Benchmark:
    bench = Benchmark.create(f"golden-{name}", description=f"verify's golden compatibility suite: {name}")
    for trait in suite["global"]:
        bench.add_global_rubric_trait(trait)
    for q in suite["questions"]:
        # karenina's own question ids: its manual traces find questions by the ids it generates
        qid = bench.add_question(q["question"], q["raw_answer"], answer_template=q["template"], finished=True)
        for trait in q["specific"]:
            bench.add_question_rubric_trait(qid, trait)
    return bench


def make(name: str, suite: dict[str, Any]) -> None:
    bench = build(suite, name)
    bench.save(GOLDEN / f"{name}.jsonld")
    bench = Benchmark.load(GOLDEN / f"{name}.jsonld")  # run what was saved, as verify will read it
    cases = {q["id"]: {k: q[k] for k in ("question", "answer", "fields", "traits")} for q in suite["questions"]}
    (GOLDEN / f"{name}.cases.json").write_text(json.dumps(
        {"evaluation_mode": suite["mode"], "cases": cases}, indent=2) + "\n", encoding="utf-8")
    judge.register(cases)
    traces = ManualTraces(bench)
    for q in suite["questions"]:
        traces.register_trace(q["question"], q["answer"], map_to_id=True)
    with judge.serve() as (url, _requests):
        answering = ModelConfig(interface="manual", manual_traces=traces)
        parsing = ModelConfig(id="judge", model_name="judge", interface="openai_endpoint", endpoint_base_url=url,
                              endpoint_api_key="sk-golden-local", temperature=0.0)
        config = VerificationConfig(answering_models=[answering], parsing_models=[parsing],
                                    evaluation_mode=suite["mode"], rubric_enabled=suite["mode"] != "template_only")
        started = time.time()
        results = bench.run_verification(config, run_name=f"golden-{name}")
        ended = time.time()
    job = create_export_job(results, config, f"golden-{name}", started, ended)
    rubric = bench.get_global_rubric()
    export_verification_results_json_stream(job, iter(results.results), rubric, is_complete=True,
                                            out_path=GOLDEN / f"{name}.results.json")
    (GOLDEN / f"{name}.results.csv").write_text(export_verification_results_csv(job, results, rubric),
                                               encoding="utf-8")
    print(f"{name}: {len(results)} result(s), failures: "
          f"{[r.metadata.failure.category.value if r.metadata.failure else None for r in results]}")


def main() -> None:
    GOLDEN.mkdir(exist_ok=True)
    chosen = sys.argv[1:] or list(suites())
    for name, suite in suites().items():
        if name in chosen:
            make(name, suite)


if __name__ == "__main__":
    main()
