"""Configuration: ``VerificationConfig`` and its parts, deep-judgment mode resolution, overrides,
presets (the shipped ones are package data in ``presets/``), and the config report and warnings.

Modules: ``verification`` (VerificationConfig), ``models`` (ModelConfig, retries), ``prompts``
(few-shot and prompt instructions), ``deep_judgment`` (rubric deep-judgment settings and their
resolution per trait), ``overrides`` (karenina's ``from_overrides`` keywords), ``preset`` (preset
files), ``compat`` (karenina's config methods), ``environment`` (karenina's environment
variables), ``middleware`` (karenina's agent retry settings), ``report`` (secret-safe dumps, inert fields and warnings), ``problems`` (located errors).
Modules inside verify import from those modules; this package re-exports them for users.
"""

from verify.config.deep_judgment import (
    SEARCH_TOOLS,
    DeepJudgmentRubricCustomConfig,
    DeepJudgmentTraitConfig,
    SearchTool,
    TraitDJSettings,
    resolve_rubric,
    resolve_trait,
)
from verify.config.middleware import ModelRetryConfig, ToolRetryConfig
from verify.config.models import (
    DEFAULT_ANSWERING_SYSTEM_PROMPT,
    DEFAULT_PARSING_SYSTEM_PROMPT,
    INTERFACES,
    CategoryRetryConfig,
    ErrorPatternConfig,
    Interface,
    ModelConfig,
    RetryPolicy,
)
from verify.config.overrides import OVERRIDE_ALIASES
from verify.config.preset import list_presets, load_preset, save_preset
from verify.config.prompts import FewShotConfig, FewShotExample, PromptConfig, QuestionFewShotConfig
from verify.config.report import INERT_FIELDS, config_to_dict, config_warnings
from verify.config.verification import VerificationConfig
from verify.errors import ConfigProblems, format_validation_error

__all__ = [
    "ModelRetryConfig",
    "ToolRetryConfig",
    "DEFAULT_ANSWERING_SYSTEM_PROMPT",
    "DEFAULT_PARSING_SYSTEM_PROMPT",
    "INERT_FIELDS",
    "INTERFACES",
    "OVERRIDE_ALIASES",
    "SEARCH_TOOLS",
    "CategoryRetryConfig",
    "ConfigProblems",
    "DeepJudgmentRubricCustomConfig",
    "DeepJudgmentTraitConfig",
    "ErrorPatternConfig",
    "FewShotConfig",
    "FewShotExample",
    "Interface",
    "ModelConfig",
    "PromptConfig",
    "QuestionFewShotConfig",
    "RetryPolicy",
    "SearchTool",
    "TraitDJSettings",
    "VerificationConfig",
    "config_to_dict",
    "config_warnings",
    "format_validation_error",
    "list_presets",
    "load_preset",
    "resolve_rubric",
    "resolve_trait",
    "save_preset",
]
