"""Template-kind LLM traits: the judge fills the trait's own schema, and each field is a result.

In karenina an LLM trait's ``kind`` may be a pydantic model. The checkpoint keeps the model's JSON
schema (``{"type": "template", "schema": {...}}``) and a result keeps one ``llm_trait_scores`` entry
per field, keyed ``"<trait name>.<field name>"``; a field left null is not stored. There is one
judge call per trait (each trait has its own schema), whatever the rubric strategy.

The model is rebuilt from the JSON schema by reading it as data; nothing in it runs. We read what
karenina's writer can produce (string, integer, number and boolean fields, lists of those, each
optionally nullable) plus enums and the usual bounds. Anything else (nested objects, ``$ref``,
unions of two types) is refused with the reason before any call: guessing a type would turn a
correct reply into a failure, or a wrong one into a pass.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from verify.benchmark.traits import LLMTrait
from verify.judging import prompts
from verify.llm.ports import Purpose
from verify.llm.structured import Check, ask_structured, json_schema_of
from verify.results.models import TraitOutcome

if TYPE_CHECKING:
    from verify.config.prompts import PromptTask
    from verify.judging.prompts import JudgeInstructions
    from verify.llm.ports import ChatModel

__all__ = ["TemplateSchemaError", "TemplateTraitResult", "judge_template_trait", "stored_fields", "template_model"]

# karenina's PromptTask for this call; PromptConfig.get_for_task falls back to ``rubric_evaluation``.
_TASK: PromptTask = "rubric_llm_trait_template"

_PRIMITIVES: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool}
_NUMBER_BOUNDS = {"minimum": "ge", "maximum": "le", "exclusiveMinimum": "gt", "exclusiveMaximum": "lt"}
_LENGTH_BOUNDS = {"string": ("minLength", "maxLength"), "array": ("minItems", "maxItems")}
_REFUSED = ("$ref", "allOf", "oneOf", "not", "properties", "additionalProperties", "patternProperties")


class TemplateSchemaError(ValueError):
    """The trait's JSON schema uses a construct verify does not rebuild."""


def _bounds(prop: dict[str, Any], kind: str, where: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    names = dict(_NUMBER_BOUNDS) if kind in ("integer", "number") else {}
    low, high = _LENGTH_BOUNDS.get(kind, ("", ""))
    if low:
        names.update({low: "min_length", high: "max_length"})
    for key, arg in names.items():
        if key in prop:
            value = prop[key]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TemplateSchemaError(f"{where}: {key} {value!r} is not a number")
            found[arg] = value
    return found


def _type_of(prop: Any, where: str, *, in_list: bool = False) -> Any:
    """The Python type a property schema describes (Annotated with its bounds)."""
    if not isinstance(prop, dict):
        raise TemplateSchemaError(f"{where}: a property schema must be an object, got {prop!r}")
    refused = [key for key in _REFUSED if key in prop]
    if refused or prop.get("type") == "object":
        raise TemplateSchemaError(f"{where}: nested objects and {'/'.join(refused) or 'type object'} are not supported")
    if "anyOf" in prop:
        options = prop["anyOf"]
        real = [o for o in options if o != {"type": "null"}] if isinstance(options, list) else []
        if in_list or len(real) != 1 or len(options) != 2:
            raise TemplateSchemaError(f"{where}: anyOf is supported only as one type or null")
        return _type_of(real[0], where) | None
    kind = prop.get("type")
    if isinstance(kind, list):  # ["string", "null"]: the same as anyOf with null
        real_kinds = [k for k in kind if k != "null"]
        if in_list or len(real_kinds) != 1 or len(kind) != 2:
            raise TemplateSchemaError(f"{where}: a list of types is supported only as one type and null")
        return _type_of({**prop, "type": real_kinds[0]}, where) | None
    if "enum" in prop:
        values = prop["enum"]
        if not isinstance(values, list) or not values or not all(isinstance(v, str | int | float) for v in values):
            raise TemplateSchemaError(f"{where}: enum must list strings or numbers")
        return Literal[tuple(values)]
    if kind == "array":
        if in_list or "items" not in prop:
            raise TemplateSchemaError(f"{where}: an array needs items of one simple type (no nested arrays)")
        inner = _type_of(prop["items"], f"{where}[]", in_list=True)
        bounds = _bounds(prop, "array", where)
        return Annotated[list[inner], Field(**bounds)] if bounds else list[inner]  # type: ignore[valid-type]
    if kind not in _PRIMITIVES:
        raise TemplateSchemaError(f"{where}: type {kind!r} is not string, integer, number, boolean or array")
    bounds = _bounds(prop, kind, where)
    return Annotated[_PRIMITIVES[kind], Field(**bounds)] if bounds else _PRIMITIVES[kind]


@functools.lru_cache(maxsize=128)
def _model_from_text(text: str) -> type[BaseModel]:
    schema = json.loads(text)
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise TemplateSchemaError("the schema must describe an object")
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        raise TemplateSchemaError("the schema has no properties to fill")
    required = set(schema.get("required") or [])
    fields: dict[str, Any] = {}
    for index, (name, prop) in enumerate(properties.items()):
        where = f"field {name!r}"
        kind = _type_of(prop, where)
        default = prop.get("default", ... if name in required else None)
        # Python names of our own, the schema's names as aliases: a field called "json" or
        # "model_config" must not collide with BaseModel's attributes.
        fields[f"field_{index}"] = (kind, Field(default=default, alias=name, description=prop.get("description")))
    title = schema.get("title")
    name = title if isinstance(title, str) and title.strip() else "TemplateTrait"
    try:
        return create_model(name, __config__=ConfigDict(extra="ignore"), **fields)
    except Exception as exc:  # a bound pydantic cannot apply, say
        raise TemplateSchemaError(f"the schema cannot be rebuilt: {exc}") from None


def template_model(schema: dict[str, Any]) -> type[BaseModel]:
    """The reply model for a template-kind trait's JSON schema (built once per schema)."""
    return _model_from_text(json.dumps(schema))  # key order kept: it is the order of the stored fields


def _field_names(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


def _names_a_field(names: list[str]) -> Check:
    # With every field optional, "{}" (or any stray object) validates; it is not a filled schema.
    def check(raw: dict[str, Any], _value: Any) -> str | None:
        if not any(name in raw for name in names):
            return f"the reply names no field of the schema; give a value for each of: {', '.join(names)}"
        return None

    return check


@dataclass(frozen=True)
class TemplateTraitResult:
    """One template-kind trait's outcome and, when scored, the values the judge gave its fields."""

    name: str
    outcome: TraitOutcome
    values: dict[str, Any] = field(default_factory=dict)


def stored_fields(name: str, values: dict[str, Any]) -> dict[str, Any]:
    """A scored trait's fields as karenina stores them: ``"<trait>.<field>"`` keys, nulls left out."""
    return {f"{name}.{key}": value for key, value in values.items() if value is not None}


async def judge_template_trait(judge: ChatModel, question: str, answer: str, trait: LLMTrait,
                               reference: str | None, instructions: JudgeInstructions) -> TemplateTraitResult:
    """Ask the judge to fill the trait's schema from the answer; an unusable reply leaves it unscored."""
    try:
        model = template_model(trait.template_schema or {})
    except TemplateSchemaError as exc:
        why = f"template-kind trait {trait.name!r}: {exc}"
        return TemplateTraitResult(trait.name, TraitOutcome(status="unscored", reason=why, unscored_category="code"))
    text = prompts.template_trait_prompt(question, answer, trait, json_schema_of(model), reference)
    reply = await ask_structured(judge, instructions.messages(_TASK, text), model, purpose=Purpose.RUBRIC_SINGLE,
                                 trait=trait.name, check=_names_a_field(_field_names(model)))
    if reply.value is None:
        why = f"judge reply unusable after {reply.attempts} attempt(s): {reply.error}"
        outcome = TraitOutcome(status="unscored", reason=why, raw_reply=reply.raw_text, unscored_category="unparseable")
        return TemplateTraitResult(trait.name, outcome)
    return TemplateTraitResult(trait.name, TraitOutcome(status="scored"), reply.value.model_dump(by_alias=True))
