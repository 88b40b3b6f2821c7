"""Regenerate the offline demo checkpoint (verify/examples/demo/demo.jsonld) and its recorded answers.

Run: python benchmarks/demo/make_demo.py
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from verify.benchmark.jsonld import Benchmark, save_benchmark
from verify.benchmark.question import Question
from verify.benchmark.traits import CallableTrait, LLMTrait, MetricTrait, RegexTrait, Rubric

HERE = Path(__file__).resolve().parents[2] / "verify" / "examples" / "demo"  # shipped in the wheel
CONCISE = "def evaluate(text):\n    return len(text.split()) <= 80\n"

# Answer templates (karenina style): the judge fills the fields, verify() decides correctness.
CAPITAL_TEMPLATE = '''from karenina.schemas.entities import BaseAnswer
from pydantic import Field


class Answer(BaseAnswer):
    capital: str = Field(description="The capital city named in the response")

    def ground_truth(self):
        self.correct = {"capital": "Paris"}

    def verify(self) -> bool:
        return self.capital.strip().lower() == self.correct["capital"].lower()
'''
BOILING_TEMPLATE = '''from typing import Optional

from karenina.schemas.entities import BaseAnswer
from pydantic import Field


class Answer(BaseAnswer):
    celsius: Optional[int] = Field(default=None, description="The boiling temperature in degrees Celsius")

    def ground_truth(self):
        self.correct = {"celsius": 100}

    def verify(self) -> bool:
        return self.celsius == self.correct["celsius"]
'''
BCL2_TEMPLATE = '''from karenina.schemas.entities import BaseAnswer
from pydantic import Field


class Answer(BaseAnswer):
    inhibits_apoptosis: bool = Field(
        description="Whether the response says BCL2 inhibits or blocks apoptosis (programmed cell death)"
    )

    def ground_truth(self):
        self.correct = {"inhibits_apoptosis": True}

    def verify(self) -> bool:
        return self.inhibits_apoptosis is self.correct["inhibits_apoptosis"]
'''
COLD_TEMPLATE = '''from karenina.schemas.entities import BaseAnswer
from pydantic import Field


class Answer(BaseAnswer):
    recommends_antibiotics: bool = Field(
        description="Whether the response recommends taking antibiotics for the common cold"
    )

    def ground_truth(self):
        self.correct = {"recommends_antibiotics": False}

    def verify(self) -> bool:
        return self.recommends_antibiotics is self.correct["recommends_antibiotics"]
'''


def build() -> Benchmark:
    global_rubric = Rubric(traits=[
        LLMTrait(name="clarity", kind="score", min_score=1, max_score=5,
                 description="The response is clear, well organized and easy to understand"),
        LLMTrait(name="states_fact", kind="boolean", min_score=0, max_score=1,
                 description="The response states a concrete fact that answers the question"),
        LLMTrait(name="register", kind="literal",
                 classes={"formal": "Formal, precise scientific or encyclopedic register",
                          "casual": "Casual, chatty register with informal words like hey or pretty much"},
                 description="The register of the response"),
        RegexTrait(name="has_number", pattern=r"\d+", description="Contains a number"),
        CallableTrait(name="concise", kind="boolean", description="At most 80 words",
                      callable_code=base64.b64encode(CONCISE.encode()).decode()),
    ])
    questions = [
        Question(id="demo-capital", text="What is the capital of France?", raw_answer="Paris", finished=True,
                 keywords=["geography"], template_code=CAPITAL_TEMPLATE),
        Question(id="demo-boiling", text="At what temperature does pure water boil at sea level?",
                 raw_answer="100 degrees Celsius", finished=True, keywords=["physics"],
                 template_code=BOILING_TEMPLATE),
        Question(
            id="demo-bcl2", text="What is the main function of the BCL2 protein?",
            raw_answer="BCL2 inhibits apoptosis (programmed cell death).", finished=True, keywords=["biology"],
            template_code=BCL2_TEMPLATE,
            rubric=Rubric(traits=[MetricTrait(
                name="bcl2_facts", description="Key facts about BCL2",
                tp_instructions=["BCL2 inhibits apoptosis", "BCL2 is located in the mitochondrial membrane"],
            )]),
        ),
        Question(
            id="demo-cold", text="Should antibiotics be used to treat the common cold?",
            raw_answer="No. Colds are viral; antibiotics do not help.", finished=True, keywords=["medicine"],
            template_code=COLD_TEMPLATE,
            rubric=Rubric(traits=[LLMTrait(
                name="no_antibiotic_advice", kind="boolean", min_score=0, max_score=1,
                description="Does not recommend taking antibiotics for the cold",
            )]),
        ),
    ]
    for question in questions:  # fixed dates, so regenerating gives the same file
        question.date_created = question.date_modified = "2026-11-23T00:00:00"
    return Benchmark(name="verify-demo", description="Offline demo: four questions with answer templates, every trait kind",
                     version="1.0.0", creator="verify", id="urn:verify:demo",
                     date_created="2026-11-23T00:00:00", date_modified="2026-11-23T00:00:00",
                     global_rubric=global_rubric, questions=questions)


ANSWERS = {
    "model-a": {
        "demo-capital": "The capital of France is Paris. Paris has been the political centre of France for centuries.",
        "demo-boiling": "Pure water boils at 100 degrees Celsius (212 degrees Fahrenheit) at sea level, where the "
                        "atmospheric pressure is 1 atm.",
        "demo-bcl2": "BCL2 is an anti-apoptotic protein: BCL2 inhibits apoptosis by blocking the release of "
                     "cytochrome c. BCL2 is located in the mitochondrial membrane.",
        "demo-cold": "No. The common cold is caused by viruses, and antibiotics only act on bacteria. Rest, fluids "
                     "and time are the usual treatment.",
    },
    "model-b": {
        "demo-capital": "hey, pretty much everyone knows it's Paris lol",
        "demo-boiling": "Water boils when it gets really hot, pretty much at boiling point.",
        "demo-bcl2": "BCL2 is a gene. It does stuff in cells, pretty much something with growth.",
        "demo-cold": "Sure, antibiotics can help you recover faster from a cold, so take antibiotics early.",
    },
}

if __name__ == "__main__":
    save_benchmark(build(), HERE / "demo.jsonld")
    (HERE / "answers.json").write_text(json.dumps(ANSWERS, indent=2) + "\n")
    print("wrote", HERE / "demo.jsonld", HERE / "answers.json")
