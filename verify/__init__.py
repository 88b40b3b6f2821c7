"""verify: staged verification of LLM answers with rubrics and deep judgment.

Reads karenina checkpoints and presets; see README.md.
"""

from verify.benchmark import Benchmark, Question, load_benchmark, save_benchmark
from verify.config import (
    DeepJudgmentRubricCustomConfig,
    DeepJudgmentTraitConfig,
    ModelConfig,
    VerificationConfig,
)
from verify.errors import BenchmarkError, ConfigError, PresetError, UserError, VerifyError
from verify.fuzzy import ExcerptMatch, match_excerpt
from verify.presets import load_preset, save_preset
from verify.results import VerificationResult
from verify.runner import RunOutcome, run_verification

__all__ = [
    "Benchmark",
    "BenchmarkError",
    "ConfigError",
    "DeepJudgmentRubricCustomConfig",
    "DeepJudgmentTraitConfig",
    "ExcerptMatch",
    "ModelConfig",
    "PresetError",
    "Question",
    "RunOutcome",
    "UserError",
    "VerificationConfig",
    "VerificationResult",
    "VerifyError",
    "load_benchmark",
    "load_preset",
    "match_excerpt",
    "run_verification",
    "save_benchmark",
    "save_preset",
]
