"""Compile answer templates from a checkpoint, with an import allow-list and restricted builtins.

Trust model: a template is Python code from the checkpoint file. It runs with restricted builtins
(no ``open``, ``eval``, ``exec``, ``compile``, ``input``, ``globals``...), only the modules in
:data:`ALLOWED_MODULES` can be imported (through proxies that hide submodules and private names),
and an AST check refuses dunder escapes (``__subclasses__``, ``__globals__``, ``__builtins__``...)
before anything runs. Every refusal is located: ``question 'q1': template line 3 imports 'os';
allowed: ...``. This keeps honest templates honest and catches mistakes; it is not a security
sandbox against a determined attacker, so only run checkpoints you trust. The template's methods
run only in a worker process under a time limit (:mod:`verify.sandbox`, which calls
:func:`compile_template`); the run's own process builds the classes with :func:`outline_template`,
for their schemas, once a worker compiled the same source in time.

karenina's modules (``karenina.schemas.entities``, ``karenina.schemas.primitives``, ...) map to verify's
implementations, and karenina's pre-seeded names (``BaseAnswer``, ``Field``, the typing names,
``VerifiedField`` and its primitives) are available without an import (:mod:`verify.templates.namespace`).
A VerifiedField template needs no ``verify()``; the judge sees neither its ground truth nor its
trace fields (those read the answer text itself).
"""

from __future__ import annotations

import ast
import builtins
import importlib
import json
import re
import traceback
import types
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from verify.templates.answer_base import (
    EXCLUDED_FIELDS,
    RESERVED_FIELDS,
    BaseAnswer,
    ground_truth_of,
    has_granular,
    has_own_verify,
)
from verify.templates.composition import named_fields, strategy_of
from verify.templates.namespace import COMPAT, IMPORTABLE, PRESEEDED, provides
from verify.templates.schema import judge_schema_text, lenient_class, relaxed_class, schema_text
from verify.templates.verified import FieldRule, field_rules

ALLOWED_MODULES = (
    "__future__", "pydantic", "typing", "typing_extensions", "re", "math", "datetime", "decimal",
    "enum", "dataclasses", "fractions", "statistics",
)
KARENINA_PREFIX = "karenina"
_FORBIDDEN_NAMES = {
    "open", "eval", "exec", "compile", "input", "globals", "locals", "vars", "breakpoint", "help",
    "memoryview", "exit", "quit", "__import__", "__builtins__", "__loader__", "__spec__",
}
_ALLOWED_DUNDER_NAMES = {"__name__", "__doc__", "__init__"}
_DENIED_ATTRS = {
    "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "f_globals", "f_locals",
    "f_builtins", "f_back", "f_code", "tb_frame", "tb_next", "func_globals", "format_map",
}
# module attributes never handed to templates (they evaluate strings or reach other modules)
_DENIED_MODULE_ATTRS = {
    "get_type_hints", "ForwardRef", "evaluate_forward_ref", "sys", "os", "builtins",
    # pydantic names that import any module named by a string
    "ImportString", "import_string", "TypeAdapter", "PyObject", "parse_obj_as",
}
_FORMAT_DUNDER = re.compile(r"\{[^{}]*__")
_SAFE_BUILTIN_NAMES = (
    "abs all any ascii bin bool bytes callable chr classmethod complex dict divmod enumerate filter "
    "float format frozenset hash hex int isinstance issubclass iter len list map max min next object "
    "oct ord pow property range repr reversed round set slice sorted staticmethod str sum super tuple "
    "type zip Exception ArithmeticError AssertionError AttributeError IndexError KeyError "
    "LookupError NameError NotImplementedError OverflowError RuntimeError StopIteration TypeError "
    "ValueError ZeroDivisionError NotImplemented Ellipsis __build_class__"
).split()


class TemplateError(ValueError):
    """A template that cannot be used; the message names the question and, when known, the line."""


def _allowed(module: str) -> bool:
    if module.startswith("pydantic."):
        # Public pydantic submodules only: private ones and the v1 shim expose import_string.
        parts = module.split(".")[1:]
        return not any(p.startswith("_") or p == "v1" for p in parts)
    return module in ALLOWED_MODULES or _is_karenina(module)


def _is_karenina(module: str) -> bool:
    return module == KARENINA_PREFIX or module.startswith(KARENINA_PREFIX + ".")


class _ModuleProxy:
    """What a template sees of an allowed module: public, non-module attributes only."""

    def __init__(self, module: types.ModuleType) -> None:
        object.__setattr__(self, "_module", module)

    def __getattr__(self, name: str) -> Any:
        module = object.__getattribute__(self, "_module")
        if name.startswith("_") or name in _DENIED_MODULE_ATTRS:
            raise AttributeError(f"templates may not use {module.__name__}.{name}")
        value = getattr(module, name)
        if isinstance(value, types.ModuleType):
            if _allowed(value.__name__):
                return _ModuleProxy(value)
            raise AttributeError(f"templates may not use module {value.__name__!r}")
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("templates may not modify modules")


def _guarded_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
    if level:
        raise ImportError("templates may not use relative imports")
    if not _allowed(name):
        raise ImportError(f"templates may not import {name!r}; allowed: {', '.join(ALLOWED_MODULES)}, karenina.*")
    if _is_karenina(name):
        return COMPAT
    module = importlib.import_module(name if fromlist else name.split(".")[0])
    return _ModuleProxy(module)


def _guarded_getattr(obj: Any, name: str, *default: Any) -> Any:
    if not isinstance(name, str) or name.startswith("_") or name in _DENIED_ATTRS:
        raise AttributeError(f"templates may not read attribute {name!r}")
    return getattr(obj, name, *default)


def _guarded_hasattr(obj: Any, name: str) -> bool:
    if not isinstance(name, str) or name.startswith("_") or name in _DENIED_ATTRS:
        raise AttributeError(f"templates may not read attribute {name!r}")
    return hasattr(obj, name)


def _guarded_setattr(obj: Any, name: str, value: Any) -> None:
    if not isinstance(name, str) or name.startswith("_"):
        raise AttributeError(f"templates may not set attribute {name!r}")
    setattr(obj, name, value)


def _no_print(*args: Any, **kwargs: Any) -> None:
    return None


def safe_builtins() -> dict[str, Any]:
    table: dict[str, Any] = {name: getattr(builtins, name) for name in _SAFE_BUILTIN_NAMES}
    table.update(__import__=_guarded_import, getattr=_guarded_getattr, hasattr=_guarded_hasattr,
                 setattr=_guarded_setattr, print=_no_print)
    return table


# --- static check ---------------------------------------------------------------------------------


class _Checker(ast.NodeVisitor):
    def __init__(self) -> None:
        self.problems: list[str] = []

    def _bad(self, node: ast.AST, what: str) -> None:
        self.problems.append(f"template line {getattr(node, 'lineno', '?')} {what}")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if not _allowed(alias.name):
                self._bad(node, f"imports {alias.name!r}; allowed: {', '.join(ALLOWED_MODULES)}, karenina.*")
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            self._bad(node, "uses a relative import")
        elif not _allowed(module):
            self._bad(node, f"imports {module!r}; allowed: {', '.join(ALLOWED_MODULES)}, karenina.*")
        for alias in node.names:
            if alias.name == "*":
                self._bad(node, f"uses 'from {module} import *'; import names explicitly")
            elif _is_karenina(module) and not provides(alias.name):
                self._bad(node, f"imports {alias.name!r} from {module!r}, which verify does not provide "
                                f"(available: {', '.join(sorted(IMPORTABLE))})")
        self.generic_visit(node)

    def visit_alias(self, node: ast.alias) -> None:
        if node.name in _DENIED_MODULE_ATTRS:
            self._bad(node, f"imports {node.name!r}, which can import arbitrary modules")

    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if name in _DENIED_MODULE_ATTRS:
            self._bad(node, f"uses {name!r}, which can import arbitrary modules")
        elif name in _FORBIDDEN_NAMES:
            self._bad(node, f"uses {name!r}, which templates may not use (no file, eval, exec or import access)")
        elif name.startswith("__") and name.endswith("__") and name not in _ALLOWED_DUNDER_NAMES:
            self._bad(node, f"uses {name!r}; dunder names are refused")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        if attr in _DENIED_MODULE_ATTRS:
            self._bad(node, f"accesses {attr!r}, which can import arbitrary modules")
        elif (attr.startswith("__") and attr.endswith("__") and attr not in _ALLOWED_DUNDER_NAMES) or attr in _DENIED_ATTRS:
            self._bad(node, f"accesses {attr!r}; dunder and frame attributes are refused")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and _FORMAT_DUNDER.search(node.value):
            self._bad(node, "has a format string that reaches a dunder attribute")


def check_source(code: str, question_id: str) -> ast.Module:
    """Parse and statically check ``code``; raise :class:`TemplateError` with every problem found."""
    where = f"question {question_id!r}"
    try:
        tree = ast.parse(code, filename=f"<template {question_id}>")
    except SyntaxError as exc:
        raise TemplateError(f"{where}: template line {exc.lineno}: syntax error: {exc.msg}") from None
    checker = _Checker()
    checker.visit(tree)
    if checker.problems:
        shown = checker.problems[:5]
        more = f"; and {len(checker.problems) - 5} more" if len(checker.problems) > 5 else ""
        raise TemplateError(f"{where}: " + "; ".join(shown) + more)
    return tree


# --- compiled template --------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldSpec:
    name: str
    type: str
    description: str


@dataclass(frozen=True)
class CompiledTemplate:
    """A validated template: the answer class, its relaxed parse model and its ground truth."""

    question_id: str
    answer_cls: type[BaseAnswer]
    relaxed_cls: type[BaseModel]
    ground_truth: dict[str, Any] | None
    regex: dict[str, Any] | None

    @property
    def class_name(self) -> str:
        return self.answer_cls.__name__

    @property
    def has_granular(self) -> bool:
        return has_granular(self.answer_cls)

    @property
    def rules(self) -> dict[str, FieldRule]:
        """The template's VerifiedFields (empty for a classic template)."""
        return field_rules(self.answer_cls)

    @property
    def field_names(self) -> list[str]:
        """The fields the judge fills (not ``id``, ``correct``, ``regex``, nor trace fields)."""
        rules = self.rules
        return [n for n in self.answer_cls.model_fields
                if n not in EXCLUDED_FIELDS and not (n in rules and rules[n].is_trace)]

    def fields(self, hints: bool = True) -> list[FieldSpec]:
        """The fields the judge fills; a VerifiedField's ``extraction_hint`` joins its description
        (karenina gives the judge these hints unless ``include_extraction_hints`` is off)."""
        schema = self.judge_schema()
        props = schema.get("properties", {})
        rules = self.rules
        out = []
        for name in self.field_names:
            info = self.answer_cls.model_fields[name]
            prop = props.get(name, {})
            kind = prop.get("type") or " | ".join(str(p.get("type", "object")) for p in prop.get("anyOf", [])) or "object"
            text = info.description or info.title or name.replace("_", " ")
            hint = rules[name].meta.extraction_hint if name in rules else None
            out.append(FieldSpec(name, str(kind), f"{text} (extraction hint: {hint})" if hints and hint else text))
        return out

    def judge_schema(self) -> dict[str, Any]:
        """The strict JSON schema shown to the judge (no ``id``, ``correct``, ``regex``, ground truth
        or trace field)."""
        return dict(json.loads(judge_schema_text(self.answer_cls)))

    def relaxed_schema(self) -> dict[str, Any]:
        """The null-tolerant schema used for parsing (what ``ask_structured`` sends)."""
        return dict(json.loads(schema_text(self.relaxed_cls)))

    def build(self, values: dict[str, Any]) -> BaseAnswer:
        """The answer from parsed values, question id injected; raises ValidationError. A VerifiedField
        the judge left null stays None (a null result, as in karenina) and trace fields are not parsed."""
        data = {k: v for k, v in values.items() if k in self.answer_cls.model_fields and k not in EXCLUDED_FIELDS}
        rules = self.rules
        nulls = frozenset(n for n, r in rules.items() if not r.is_trace and data.get(n) is None)
        missing = nulls | {n for n, r in rules.items() if r.is_trace}
        if not missing:
            return self.answer_cls(**data, id=self.question_id)
        cls = lenient_class(self.answer_cls, frozenset(missing))
        answer = cls(**{k: v for k, v in data.items() if k not in missing}, id=self.question_id)
        answer.set_null_fields(nulls)
        return answer


def _leaf(namespace: dict[str, Any]) -> type[BaseAnswer] | None:
    classes = [v for v in namespace.values() if isinstance(v, type) and issubclass(v, BaseAnswer) and v is not BaseAnswer]
    leaves = [c for c in classes if not any(o is not c and issubclass(o, c) for o in classes)]
    if not leaves:
        return None
    named = [c for c in leaves if c.__name__ == "Answer"]
    return named[0] if named else leaves[-1]


def _exec_line(exc: BaseException, filename: str) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    return f"template line {frames[-1].lineno}: " if frames else "template: "


def _execute(code: str, question_id: str) -> dict[str, Any]:
    tree = check_source(code, question_id)
    filename = f"<template {question_id}>"
    safe_id = re.sub(r"\W", "_", question_id)[:40]
    namespace: dict[str, Any] = {"__builtins__": safe_builtins(), "__name__": f"verify_template_{safe_id}", **PRESEEDED}
    try:
        exec(compile(tree, filename, "exec"), namespace)  # noqa: S102 - the point of this module
    except Exception as exc:
        raise TemplateError(
            f"question {question_id!r}: {_exec_line(exc, filename)}{type(exc).__name__}: {exc}"[:600]
        ) from None
    for value in list(namespace.values()):
        # string annotations (from __future__ import annotations) resolve in the template's namespace
        if isinstance(value, type) and issubclass(value, BaseModel) and not value.__pydantic_complete__:
            try:
                value.model_rebuild(_types_namespace=namespace)
            except Exception as exc:
                raise TemplateError(f"question {question_id!r}: template class {value.__name__!r}: "
                                    f"{type(exc).__name__}: {exc}"[:600]) from None
    return namespace


def _validate(cls: type[BaseAnswer], question_id: str) -> CompiledTemplate:
    where = f"question {question_id!r}: template class {cls.__name__!r}"
    reserved = RESERVED_FIELDS & set(cls.model_fields)
    if reserved:
        raise TemplateError(f"{where} declares the reserved field(s) {sorted(reserved)}; rename them")
    regex_attr = cls.__dict__.get("regex") if isinstance(cls.__dict__.get("regex"), dict) else None
    try:
        probe = cls.model_construct()
    except Exception as exc:
        raise TemplateError(f"{where}: setting the ground truth raised {type(exc).__name__}: {exc}"[:600]) from None
    correct = getattr(probe, "correct", None)
    if correct is not None and not isinstance(correct, dict):
        raise TemplateError(f"{where}: self.correct must be a dict, got {type(correct).__name__}")
    regex = regex_attr or (getattr(probe, "regex", None) if isinstance(getattr(probe, "regex", None), dict) else None)
    rules = field_rules(cls)
    if not has_own_verify(cls) and not regex and not rules:
        raise TemplateError(f"{where} defines no verify() method (and no regex checks or VerifiedFields)")
    unknown = [n for n in named_fields(strategy_of(cls)) if n not in rules]
    if rules and unknown:
        raise TemplateError(f"{where}: its VerificationStrategy names {unknown[0]!r}, which is not one of its "
                            f"VerifiedFields ({', '.join(rules)})")
    return CompiledTemplate(question_id, cls, relaxed_class(cls), ground_truth_of(probe), regex)


@lru_cache(maxsize=512)
def _answer_class(code: str, question_id: str) -> type[BaseAnswer]:
    cls = _leaf(_execute(code, question_id))
    if cls is None:
        raise TemplateError(f"question {question_id!r}: the template defines no BaseAnswer subclass "
                            "(expected 'class Answer(BaseAnswer): ...')")
    return cls


@lru_cache(maxsize=512)
def _compile_cached(code: str, question_id: str) -> CompiledTemplate:
    return _validate(_answer_class(code, question_id), question_id)


def compile_template(code: str | None, question_id: str) -> CompiledTemplate:
    """Compile and validate a question's template; raise :class:`TemplateError` (located) if unusable."""
    if not (code or "").strip():
        raise TemplateError(f"question {question_id!r} has no answer template; add one or use evaluation_mode='rubric_only'")
    return _compile_cached(code or "", question_id)


def outline_template(code: str, question_id: str, ground_truth: dict[str, Any] | None,
                     regex: dict[str, Any] | None) -> CompiledTemplate:
    """The template's classes, built without running any of its methods: the ground truth and the
    regex checks come from the worker that compiled the same source (:func:`compile_template`)."""
    cls = _answer_class(code, question_id)
    return CompiledTemplate(question_id, cls, relaxed_class(cls), ground_truth, regex)
