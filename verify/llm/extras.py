"""Optional dependencies: which extra of ``verify-judge`` brings a provider SDK or web search.

The core install runs the offline judge and any OpenAI-compatible server with its own HTTP client;
langchain's provider packages and tavily are extras, imported only when a preset uses them, so a
missing one is named once, with the command that installs it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from verify.errors import ModelSetupError

__all__ = ["EXTRA_OF_PROVIDER", "extra_for", "import_extra", "missing_extra"]

#: langchain provider -> the extra that installs its integration. Providers not listed (cohere,
#: mistralai, ...) need their own ``langchain-<provider>`` package next to any of these extras.
EXTRA_OF_PROVIDER = {
    "openai": "openai",
    "azure_openai": "openai",
    "openrouter": "openai",
    "anthropic": "anthropic",
    "ollama": "ollama",
}


def extra_for(provider: str) -> str:
    """The extra that brings ``provider``'s langchain integration (``openai`` for the rest of them,
    which installs langchain itself)."""
    return EXTRA_OF_PROVIDER.get(provider, "openai")


def missing_extra(what: str, extra: str) -> ModelSetupError:
    """The one message for an optional dependency that is not installed."""
    return ModelSetupError(
        f"{what} needs the optional dependencies of verify-judge[{extra}], which are not installed",
        f"pip install 'verify-judge[{extra}]' (or 'verify-judge[all]' for every provider and web search)",
    )


def import_extra(module: str, what: str, extra: str) -> ModuleType:
    """Import ``module``, or raise :func:`missing_extra`'s error."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise missing_extra(what, extra) from exc
