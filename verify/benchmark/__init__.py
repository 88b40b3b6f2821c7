"""Benchmarks: questions (``question``, also their JSON-LD items), rubric trait models (``traits``), and
karenina's JSON-LD checkpoint format (``jsonld`` for documents, ``ratings`` for traits)."""

from verify.benchmark.jsonld import Benchmark, load_benchmark, save_benchmark
from verify.benchmark.question import Question
from verify.benchmark.traits import Rubric

__all__ = ["Benchmark", "Question", "Rubric", "load_benchmark", "save_benchmark"]
