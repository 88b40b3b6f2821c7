"""karenina's agent-middleware retry settings, ``ModelRetryConfig`` and ``ToolRetryConfig``.

They configure retries inside agent runs (MCP tools), which verify does not run yet: the models
exist so karenina scripts and presets that build them keep working, and they are stored, not used.
verify's own retries of model calls are :class:`~verify.config.models.RetryPolicy`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ModelRetryConfig", "ToolRetryConfig"]


class ModelRetryConfig(BaseModel):
    """Retries of an agent's model calls (karenina's field names and defaults)."""

    model_config = ConfigDict(extra="forbid")

    max_retries: int = Field(default=2, ge=0, description="Retries after the first call.")
    backoff_factor: float = 2.0
    initial_delay: float = 2.0
    max_delay: float = 10.0
    jitter: bool = True
    on_failure: Literal["continue", "raise"] = "continue"


class ToolRetryConfig(BaseModel):
    """Retries of an agent's tool calls (karenina's field names and defaults)."""

    model_config = ConfigDict(extra="forbid")

    max_retries: int = Field(default=3, ge=0, description="Retries after the first call.")
    backoff_factor: float = 2.0
    initial_delay: float = 1.0
    on_failure: Literal["return_message", "raise"] = "return_message"
