"""Benchmarks: questions (``question``, also their JSON-LD items), rubric trait models (``traits``; their
rubric-verdict fields in ``weighting``), and karenina's JSON-LD checkpoint format (``jsonld`` for
documents, ``ratings`` for traits, ``properties`` for PropertyValue lists)."""

from verify.benchmark.inputs import load_benchmark
from verify.benchmark.jsonld import Benchmark, save_benchmark
from verify.benchmark.question import Question
from verify.benchmark.traits import Rubric

__all__ = ["Benchmark", "Question", "Rubric", "load_benchmark", "save_benchmark"]
