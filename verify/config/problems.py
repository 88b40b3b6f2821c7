"""Config problems and how they are shown: one line per problem, each with its field path.

Validators raise :class:`ConfigProblems` to report several located problems at once;
:func:`format_validation_error` turns a pydantic ``ValidationError`` (``ConfigProblems``
included) back into one line per problem. This module is the bottom layer of the config
modules: it imports none of them at import time.
"""

from __future__ import annotations

import difflib
import functools
import types
from collections.abc import Iterable
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

__all__ = ["ConfigProblems", "format_validation_error"]


class ConfigProblems(ValueError):
    """Several located problems found by one validator: ``[(field path, how to fix), ...]``.

    Pydantic wraps it as one ``value_error``; :func:`format_validation_error` unpacks it again
    into one line per problem.
    """

    def __init__(self, problems: Iterable[tuple[str, str]]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(f"{path}: {msg}" if path else msg for path, msg in self.problems))


def _raise_if(problems: list[tuple[str, str]]) -> None:
    if problems:
        raise ConfigProblems(problems)


def _did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``"; did you mean X?"`` naming the closest choices (all within a hair of the best), or ``""``."""
    scored = sorted(((difflib.SequenceMatcher(None, name, c).ratio(), c) for c in set(choices)), reverse=True)
    if not scored or scored[0][0] < 0.6:
        return ""
    close = [c for ratio, c in scored[:3] if ratio >= max(0.6, scored[0][0] - 0.05)]
    return f"; did you mean {' or '.join(close)}?"


@functools.cache
def _root_models() -> dict[str, type[BaseModel]]:
    """The models :func:`format_validation_error` can walk from, by class name (``ValidationError.title``)."""
    # Deferred: the modules defining these models import this one.
    from verify.config.verification import (
        CategoryRetryConfig,
        DeepJudgmentRubricCustomConfig,
        DeepJudgmentTraitConfig,
        FewShotConfig,
        ModelConfig,
        PromptConfig,
        RetryPolicy,
        VerificationConfig,
    )

    return {
        cls.__name__: cls
        for cls in (
            VerificationConfig,
            ModelConfig,
            RetryPolicy,
            CategoryRetryConfig,
            FewShotConfig,
            PromptConfig,
            DeepJudgmentTraitConfig,
            DeepJudgmentRubricCustomConfig,
        )
    }


def format_validation_error(exc: ValidationError, source: str = "", *, prefix: str = "") -> str:
    """One line per problem, ``[source: ]field.path: message``.

    Unknown keys get ``unknown field; did you mean ...?``; the several member errors of one
    union collapse into one line. ``prefix`` goes before every field path, e.g. ``"config."``
    for the ``config`` object of a karenina preset file.
    """
    root = _root_models().get(exc.title)
    lines: dict[str, list[str]] = {}
    got: dict[str, str] = {}
    for err in exc.errors(include_url=False):
        for path, message, value in _explain(err, root):
            where = f"{prefix}{path}" if path else (prefix.rstrip(".") or "(top level)")
            messages = lines.setdefault(where, [])
            if message not in messages:
                messages.append(message)
            if value:
                got[where] = value
    head = f"{source}: " if source else ""
    return "\n".join(
        f"{head}{where}: {' or '.join(msgs)}" + (f" (got {got[where]})" if where in got else "")
        for where, msgs in lines.items()
    )


def _explain(err: Any, root: type[BaseModel] | None) -> list[tuple[str, str, str]]:
    """``(path, message, repr of the bad input or "")`` for one pydantic error."""
    loc = tuple(err["loc"])
    path, _ = _walk(root, loc)
    kind = err["type"]
    error = (err.get("ctx") or {}).get("error")
    if kind == "value_error" and isinstance(error, ConfigProblems):
        return [(_join(path, sub), msg, "") for sub, msg in error.problems]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        _, owner = _walk(root, loc[:-1])
        names = _field_names(owner) if owner else []
        return [(path, "unknown field" + _did_you_mean(key, names), "")]
    if kind == "missing":
        return [(path, "required field is missing", "")]
    message = str(err["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    value = err.get("input")
    shown = repr(value) if kind != "value_error" and isinstance(value, str | int | float | bool) else ""
    return [(path, message, shown if len(shown) <= 60 else "")]


def _join(path: str, sub: str) -> str:
    if not sub:
        return path
    return f"{path}{sub}" if sub.startswith("[") or not path else f"{path}.{sub}"


def _field_names(model: type[BaseModel]) -> list[str]:
    names = []
    for name, info in model.model_fields.items():
        names.append(info.alias or name)
    return names


def _walk(root: type[BaseModel] | None, loc: tuple[Any, ...]) -> tuple[str, type[BaseModel] | None]:
    """Render ``loc`` as ``a.b[0].c`` (dropping pydantic's union tags) and find the model it ends in."""
    path = ""
    tp: Any = root
    for seg in loc:
        tp, skip = _unwrap(tp, seg)
        if skip:
            continue
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            info = next((f for n, f in tp.model_fields.items() if seg in (n, f.alias)), None)
            path = _join(path, str(seg))
            tp = info.annotation if info else None
        elif get_origin(tp) is list and isinstance(seg, int):
            path += f"[{seg}]"
            tp = get_args(tp)[0]
        elif get_origin(tp) is dict:
            path = _join(path, str(seg))
            tp = get_args(tp)[1]
        else:
            path = _join(path, f"[{seg}]" if isinstance(seg, int) else str(seg))
            tp = None
    owner, _ = _unwrap(tp, None)
    return path, owner if isinstance(owner, type) and issubclass(owner, BaseModel) else None


def _unwrap(tp: Any, seg: Any) -> tuple[Any, bool]:
    """Strip Annotated/Optional; at a union, follow pydantic's member tag ``seg`` (-> skip it)."""
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) in (Union, types.UnionType):
        members = [a for a in get_args(tp) if a is not type(None)]
        for member in members:
            name = getattr(member, "__name__", None)
            if isinstance(seg, str) and (seg == name or seg.startswith(f"{name}[")):
                return member, True
        if isinstance(seg, str) and ("[" in seg or seg in {"str", "int", "float", "bool", "callable"}):
            return None, True  # a tag of a non-model member
        tp = members[0] if len(members) == 1 else None
        while get_origin(tp) is Annotated:
            tp = get_args(tp)[0]
    return tp, False
