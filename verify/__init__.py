"""verify: staged verification of LLM answers with rubrics and deep judgment.

Reads karenina checkpoints and presets; see README.md.

The public names are imported on first use (PEP 562), so ``verify --help`` and a command that only
needs the CLI do not pay for importing the runner, the stages and pydantic's schema building, and a
Ctrl-C in the first moments of a command reaches the CLI's handlers rather than an import.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from verify.benchmark.inputs import load_benchmark
    from verify.benchmark.jsonld import Benchmark, save_benchmark
    from verify.benchmark.question import Question
    from verify.config.deep_judgment import DeepJudgmentRubricCustomConfig, DeepJudgmentTraitConfig
    from verify.config.middleware import ModelRetryConfig, ToolRetryConfig
    from verify.config.models import ModelConfig
    from verify.config.preset import load_preset, save_preset
    from verify.config.verification import VerificationConfig
    from verify.errors import BenchmarkError, ConfigError, PresetError, UserError, VerifyError
    from verify.judging.excerpts import ExcerptMatch, match_excerpt
    from verify.results.gates import GateResult
    from verify.results.models import VerificationResult
    from verify.results.outcome import RunOutcome, read_results
    from verify.results.summary import Summary
    from verify.run.runner import run_verification

_HOME = {
    "Benchmark": "verify.benchmark.jsonld",
    "load_benchmark": "verify.benchmark.inputs",
    "save_benchmark": "verify.benchmark.jsonld",
    "Question": "verify.benchmark.question",
    "DeepJudgmentRubricCustomConfig": "verify.config.deep_judgment",
    "DeepJudgmentTraitConfig": "verify.config.deep_judgment",
    "ModelRetryConfig": "verify.config.middleware",
    "ToolRetryConfig": "verify.config.middleware",
    "ModelConfig": "verify.config.models",
    "load_preset": "verify.config.preset",
    "save_preset": "verify.config.preset",
    "VerificationConfig": "verify.config.verification",
    "BenchmarkError": "verify.errors",
    "ConfigError": "verify.errors",
    "PresetError": "verify.errors",
    "UserError": "verify.errors",
    "VerifyError": "verify.errors",
    "ExcerptMatch": "verify.judging.excerpts",
    "match_excerpt": "verify.judging.excerpts",
    "GateResult": "verify.results.gates",
    "VerificationResult": "verify.results.models",
    "RunOutcome": "verify.results.outcome",
    "read_results": "verify.results.outcome",
    "Summary": "verify.results.summary",
    "run_verification": "verify.run.runner",
}

__all__ = [
    "Benchmark",
    "BenchmarkError",
    "ConfigError",
    "DeepJudgmentRubricCustomConfig",
    "DeepJudgmentTraitConfig",
    "ExcerptMatch",
    "GateResult",
    "ModelConfig",
    "ModelRetryConfig",
    "PresetError",
    "Question",
    "RunOutcome",
    "Summary",
    "ToolRetryConfig",
    "UserError",
    "VerificationConfig",
    "VerificationResult",
    "VerifyError",
    "load_benchmark",
    "load_preset",
    "match_excerpt",
    "read_results",
    "run_verification",
    "save_benchmark",
    "save_preset",
]


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:  # a subpackage (``verify.config``), as the eager imports used to make available
        try:
            return _importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module 'verify' has no attribute {name!r}") from None
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})
