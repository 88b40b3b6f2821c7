"""The models and JSON schemas derived from a template class: what the judge sees, what parses its
reply, and the answer class that accepts a VerifiedField left null.

The judge never sees ``id``, ``correct``, ``regex``, a VerifiedField's ``__verification__`` metadata
(its ground truth) or a trace field (checked on the answer text, never extracted), as in karenina's
``build_parsing_schema``.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, create_model

from verify.templates.answer_base import EXCLUDED_FIELDS, BaseAnswer
from verify.templates.verified import strip_meta, trace_fields


def hidden_fields(cls: type[BaseModel]) -> set[str]:
    """The fields the judge does not fill: ``id``, ``correct``, ``regex`` and trace fields."""
    return set(EXCLUDED_FIELDS) | set(trace_fields(cls))


@lru_cache(maxsize=512)
def schema_text(cls: type[BaseModel]) -> str:
    return json.dumps(strip_meta(cls.model_json_schema()))


@lru_cache(maxsize=512)
def judge_schema_text(cls: type[BaseModel]) -> str:
    schema = strip_meta(cls.model_json_schema())
    hidden = hidden_fields(cls)
    for key in hidden:
        schema.get("properties", {}).pop(key, None)
    schema["required"] = [r for r in schema.get("required", []) if r not in hidden]
    if not schema["required"]:
        schema.pop("required")
    schema.pop("additionalProperties", None)
    return json.dumps(schema)


@lru_cache(maxsize=512)
def relaxed_class(cls: type[BaseAnswer]) -> type[BaseModel]:
    """Every field the judge fills, optional (null allowed); what parses the judge's reply."""
    fields: dict[str, Any] = {}
    hidden = hidden_fields(cls)
    for name, info in cls.model_fields.items():
        if name in hidden:
            continue
        fields[name] = (Optional[info.annotation], Field(default=None, description=info.description))  # noqa: UP045
    model: type[BaseModel] = create_model(
        cls.__name__, __config__=ConfigDict(extra="ignore"), **fields
    )
    return model


@lru_cache(maxsize=512)
def lenient_class(cls: type[BaseAnswer], missing: frozenset[str]) -> type[BaseAnswer]:
    """``cls`` with the VerifiedFields in ``missing`` (null or trace) made optional, so the answer
    still validates every other value, runs the template's validators and ``model_post_init``, and
    keeps each field's metadata (karenina builds such answers unvalidated, with ``model_construct``)."""
    fields: dict[str, Any] = {}
    for name in sorted(missing):
        info = copy.copy(cls.model_fields[name])
        info.default = None
        info.default_factory = None
        fields[name] = (Optional[info.annotation], info)  # noqa: UP045
    model: type[BaseAnswer] = create_model(cls.__name__, __base__=cls, __module__=cls.__module__, **fields)
    return model
