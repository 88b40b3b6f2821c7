"""Stages: small units with a name, an inclusion rule per config, a runtime skip rule and a step.

The fixed order lives in ``verify.run.pipeline.STAGES``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from verify.config.verification import VerificationConfig
    from verify.run.state import Deps, TaskState


class Stage(Protocol):
    name: str
    summary: str

    def enabled(self, config: VerificationConfig) -> bool:
        """Whether the stage is part of the plan for this config (decided once per run)."""
        ...

    def should_run(self, state: TaskState) -> bool:
        """Whether the stage runs for this task, given what earlier stages found."""
        ...

    async def run(self, state: TaskState, deps: Deps) -> None: ...
