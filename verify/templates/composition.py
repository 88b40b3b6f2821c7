"""How a VerifiedField template combines its fields' results (karenina's composition strategy).

A template may declare ``class VerificationStrategy: verify_strategy = AnyOf(conditions=[
FieldCheck(field="a"), FieldCheck(field="b")])``; without one every field must pass (``AllOf``).
Only a result of exactly True satisfies a :class:`FieldCheck`: a field the judge left null
(None) counts as not satisfied. ``AllOf([])`` passes, ``AnyOf([])`` fails, ``AtLeastN`` counts.

The graded score follows karenina too: each field contributes ``weight * score`` (a null field 0),
divided by the total weight; ``AnyOf`` keeps the best single contribution, ``AtLeastN`` the ``n``
best, anything else the sum. Only the root node's type matters for the score.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field


class FieldCheck(BaseModel):
    """A leaf: the named field's result."""

    type: Literal["field_check"] = "field_check"
    field: str


class AllOf(BaseModel):
    """Every condition passes."""

    type: Literal["all_of"] = "all_of"
    conditions: list[StrategyNode] = []


class AnyOf(BaseModel):
    """At least one condition passes."""

    type: Literal["any_of"] = "any_of"
    conditions: list[StrategyNode] = []


class AtLeastN(BaseModel):
    """At least ``n`` conditions pass."""

    type: Literal["at_least_n"] = "at_least_n"
    n: int = Field(ge=0)
    conditions: list[StrategyNode] = []


StrategyNode = Annotated[FieldCheck | AllOf | AnyOf | AtLeastN, Field(discriminator="type")]
for _node in (AllOf, AnyOf, AtLeastN):
    _node.model_rebuild()


def evaluate_composition(node: Any, leaf: Callable[[Any], bool]) -> bool:
    """Walk a composition tree; ``leaf`` decides each node that is not AllOf, AnyOf or AtLeastN."""
    if isinstance(node, AllOf):
        return all(evaluate_composition(c, leaf) for c in node.conditions)
    if isinstance(node, AnyOf):
        return any(evaluate_composition(c, leaf) for c in node.conditions)
    if isinstance(node, AtLeastN):
        return sum(1 for c in node.conditions if evaluate_composition(c, leaf)) >= node.n
    return leaf(node)


def evaluate_strategy(node: Any, field_results: Mapping[str, bool | None]) -> bool:
    """The strategy's verdict over the fields' results (KeyError for a field it does not know)."""
    return evaluate_composition(node, lambda check: field_results[check.field] is True)


def strategy_of(cls: type) -> Any:
    """The template's ``VerificationStrategy.verify_strategy``, or None."""
    holder = getattr(cls, "VerificationStrategy", None)
    return getattr(holder, "verify_strategy", None) if holder is not None else None


def named_fields(node: Any) -> list[str]:
    """Every field a strategy tree names, in order."""
    if isinstance(node, FieldCheck):
        return [node.field]
    return [name for child in getattr(node, "conditions", []) for name in named_fields(child)]


def strategy_granular(strategy: Any, scores: Mapping[str, float | None], weights: Mapping[str, float]) -> float:
    """``verify_granular()`` of a VerifiedField template (``strategy`` None: all fields, weighted)."""
    total = sum(weights.values())
    if total == 0.0:
        return 0.0
    contributions = sorted((weights[name] * (score or 0.0) for name, score in scores.items()), reverse=True)
    if isinstance(strategy, AnyOf):
        return (contributions[0] if contributions else 0.0) / total
    if isinstance(strategy, AtLeastN):
        return sum(contributions[: strategy.n]) / total
    return sum(contributions) / total
