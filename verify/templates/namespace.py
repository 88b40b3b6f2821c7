"""The names a template finds without importing them, and what ``karenina.*`` imports resolve to.

karenina stores a template as its class's source alone, without imports, and runs it in a namespace
pre-seeded with ``BaseAnswer``, ``Field``, the typing names and the whole VerifiedField vocabulary
(primitives, composition, ``SynonymMap``, conditional ground truths): :data:`PRESEEDED` is that
namespace, with verify's own implementations. A template that imports instead
(``from karenina.schemas.entities import VerifiedField, ExactMatch``,
``from karenina.schemas.primitives.trace import TraceRegex``...) gets the same objects through
:data:`COMPAT`, whatever the ``karenina.*`` path, plus the base classes for primitives of its own.
"""

from __future__ import annotations

import typing
from typing import Any, ClassVar, Literal, Optional, Union

from pydantic import Field

from verify.templates import composition, graded, normalizers, primitives, trace, verified
from verify.templates.answer_base import BaseAnswer

_VERIFIED_NAMES = (
    "VerifiedField", "ConditionalGroundTruth", "GroundTruthCase", "AllOf", "AnyOf", "AtLeastN", "FieldCheck",
    "SynonymMap", *verified.PRIMITIVES,
)
_SOURCES = (verified, composition, normalizers, primitives, graded, trace)


def _lookup(name: str) -> Any:
    for module in _SOURCES:
        if name in vars(module):
            return vars(module)[name]
    raise KeyError(name)


PRESEEDED: dict[str, Any] = {
    "BaseAnswer": BaseAnswer, "Field": Field, "List": typing.List, "Dict": typing.Dict,  # noqa: UP006 - karenina's names
    "Optional": Optional, "Union": Union, "Any": Any, "Literal": Literal, "ClassVar": ClassVar,
    **{name: _lookup(name) for name in _VERIFIED_NAMES},
}
"""karenina's exec namespace for templates (``_build_exec_namespace``), plus ``ClassVar``."""

IMPORTABLE: dict[str, Any] = {
    **PRESEEDED,
    **{name: _lookup(name) for name in (
        "VerificationMeta", "VerificationPrimitive", "TracePrimitive", "Normalizer", "apply_normalizer",
        "apply_normalizers", "evaluate_strategy", "evaluate_composition",
    )},
}
"""What ``from karenina... import <name>`` may name."""

# the segments of karenina module paths a template may spell out (``karenina.schemas.entities``...)
COMPAT_PARTS = frozenset({
    "schemas", "entities", "domain", "answer_class", "answer", "base", "verification", "primitives",
    "comparisons", "normalizers", "composition", "conditional", "verified_field", "trace",
})


def provides(name: str) -> bool:
    return name in IMPORTABLE or name in COMPAT_PARTS


class CompatModule:
    """karenina's modules: every ``karenina.*`` path offers every name of :data:`IMPORTABLE`."""

    def __getattr__(self, name: str) -> Any:
        if name in IMPORTABLE:
            return IMPORTABLE[name]
        if name in COMPAT_PARTS:
            return self
        raise AttributeError(f"verify's karenina compatibility layer has no {name!r} "
                             f"(available: {', '.join(sorted(IMPORTABLE))})")


COMPAT = CompatModule()
