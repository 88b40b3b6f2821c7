"""verify: staged verification of LLM answers with rubrics and deep judgment.

Reads karenina checkpoints and presets; see README.md.
"""

from verify.benchmark.jsonld import Benchmark, load_benchmark, save_benchmark
from verify.benchmark.question import Question
from verify.config.deep_judgment import DeepJudgmentRubricCustomConfig, DeepJudgmentTraitConfig
from verify.config.middleware import ModelRetryConfig, ToolRetryConfig
from verify.config.models import ModelConfig
from verify.config.preset import load_preset, save_preset
from verify.config.verification import VerificationConfig
from verify.errors import BenchmarkError, ConfigError, PresetError, UserError, VerifyError
from verify.judging.excerpts import ExcerptMatch, match_excerpt
from verify.results.models import VerificationResult
from verify.run.runner import RunOutcome, run_verification

__all__ = [
    "Benchmark",
    "BenchmarkError",
    "ConfigError",
    "DeepJudgmentRubricCustomConfig",
    "DeepJudgmentTraitConfig",
    "ExcerptMatch",
    "ModelConfig",
    "ModelRetryConfig",
    "PresetError",
    "Question",
    "RunOutcome",
    "ToolRetryConfig",
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
