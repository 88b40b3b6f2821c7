"""Regenerate the offline demo checkpoint (benchmarks/demo/demo.jsonld) and its recorded answers.

Run: python benchmarks/demo/make_demo.py
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from verify.benchmark import Benchmark, Question, save_benchmark
from verify.rubric import CallableTrait, LLMTrait, MetricTrait, RegexTrait, Rubric

HERE = Path(__file__).parent
CONCISE = "def evaluate(text):\n    return len(text.split()) <= 80\n"


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
                 keywords=["geography"]),
        Question(id="demo-boiling", text="At what temperature does pure water boil at sea level?",
                 raw_answer="100 degrees Celsius", finished=True, keywords=["physics"]),
        Question(
            id="demo-bcl2", text="What is the main function of the BCL2 protein?",
            raw_answer="BCL2 inhibits apoptosis (programmed cell death).", finished=True, keywords=["biology"],
            rubric=Rubric(traits=[MetricTrait(
                name="bcl2_facts", description="Key facts about BCL2",
                tp_instructions=["BCL2 inhibits apoptosis", "BCL2 is located in the mitochondrial membrane"],
            )]),
        ),
        Question(
            id="demo-cold", text="Should antibiotics be used to treat the common cold?",
            raw_answer="No. Colds are viral; antibiotics do not help.", finished=True, keywords=["medicine"],
            rubric=Rubric(traits=[LLMTrait(
                name="no_antibiotic_advice", kind="boolean", min_score=0, max_score=1,
                description="Does not recommend taking antibiotics for the cold",
            )]),
        ),
    ]
    return Benchmark(name="verify-demo", description="Offline demo: four questions, every trait kind",
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
