"""The rubric stage's rule for a call that fails: only that call's traits are left unscored."""

from __future__ import annotations

from typing import Any

from verify.errors import ModelError
from verify.llm.resilience import redact
from verify.results.models import TraitOutcome

__all__ = ["guard"]


async def guard(name_list: list[str], coro: Any) -> Any:
    """A judge outage (or any failure) on one call leaves only that call's traits unscored."""
    try:
        return await coro
    except ModelError as exc:
        why = f"judge call failed ({exc.category}): {redact(str(exc))}"
        return {n: TraitOutcome(status="unscored", reason=why, error_category=exc.category) for n in name_list}
    except Exception as exc:
        why = f"evaluation failed: {type(exc).__name__}: {redact(str(exc))}"
        return {n: TraitOutcome(status="unscored", reason=why, error_category="unexpected_error") for n in name_list}
