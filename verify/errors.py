"""Exceptions raised by verify.

The tree::

    VerifyError
    ├── UserError            a problem in the user's files, flags or config; one clean message + hint
    │   ├── BenchmarkError   a checkpoint that cannot be loaded (lists every problem found)
    │   ├── ConfigError      an invalid VerificationConfig / override / flag combination
    │   ├── PresetError      a preset that cannot be found or read
    │   ├── RunStopped       the run hit its time limit or could not write; what finished is saved
    │   └── RunInterrupted   SIGINT/SIGTERM stopped the run; what finished is saved, --resume goes on
    ├── ModelError           a model call that failed for good (after retries)
    │   └── ModelSetupError  a provider package or credential is missing (also a UserError)
    └── SearchError          a search call that failed for good

Failures of one task (a judge that keeps timing out, an unparseable reply) are recorded on that
task's result as data; exceptions only escape for problems that stop the whole run.

Also how problems are shown: validators raise :class:`ConfigProblems` to report several located
problems at once, and :func:`validation_lines` is the one renderer of pydantic errors (configs,
presets, checkpoints, judge replies, template values), one ``field.path: message`` line each.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin

if TYPE_CHECKING:  # pydantic loads with the models, not with the CLI's --help
    from pydantic import BaseModel, ValidationError

#: Failure categories of a model or search call that a later attempt may not see again: retried
#: with backoff (``retry_policy``), recorded as retryable task errors, and re-run by ``--resume``.
TransientCategory = Literal["connection", "timeout", "rate_limit", "server_error"]
TRANSIENT_CATEGORIES: tuple[str, ...] = get_args(TransientCategory)

#: Permanent failures the user fixes outside the run (a key, an account's access, a model name, a
#: package): ``--resume`` runs these tasks again. Matched on the recorded message, which carries the
#: provider's exception name and status ("AuthenticationError: Error code: 401 ..."). Each name is
#: also the task's failure category, so the summary and the resume hint say the same word.
_FIXABLE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("authentication", ("authenticationerror", "error code: 401", "status 401", "unauthorized", "invalid api key",
                        "incorrect api key", "invalid x-api-key")),
    ("permission", ("permissiondeniederror", "error code: 403", "status 403", "forbidden")),
    ("model_not_found", ("notfounderror", "error code: 404", "status 404", "model_not_found", "does not exist")),
    ("missing_package", ("no module named", "modulenotfounderror", "pip install")),
)
FIXABLE_CATEGORIES: tuple[str, ...] = tuple(name for name, _ in _FIXABLE)
#: Categories of a call that failed for good with no more precise name (older results say these too).
_GENERIC = ("permanent", "model_error", "unexpected_error")


def failure_category(category: str | None, message: str | None) -> str:
    """The one category a failed call is recorded and summarised under: a transient one as it is, a
    permanent one by what the user fixes (``authentication`` for a 401), else ``unexpected_error``."""
    if category in TRANSIENT_CATEGORIES or category in FIXABLE_CATEGORIES:
        return str(category)
    if category in _GENERIC and message:
        text = message.lower()
        found = next((name for name, needles in _FIXABLE if any(n in text for n in needles)), None)
        if found:
            return found
    return "unexpected_error" if category in _GENERIC or not category else category


def fixable_reason(category: str | None, message: str | None) -> str | None:
    """Why a failed task is worth running again (its :func:`failure_category`, when transient or
    fixed outside the run), or ``None``."""
    found = failure_category(category, message)
    return found if found in TRANSIENT_CATEGORIES or found in FIXABLE_CATEGORIES else None


class VerifyError(Exception):
    """Base class of every error raised on purpose by verify."""


class UserError(VerifyError):
    """A mistake the user can fix. Rendered by the CLI as ``error: ...`` plus ``hint: ...``."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} (hint: {self.hint})"


class BenchmarkError(UserError):
    """A checkpoint file is malformed. ``problems`` lists each located problem."""

    def __init__(self, path: str, problems: list[str], hint: str | None = None) -> None:
        self.path = path
        self.problems = problems
        shown = problems[:10]
        more = f"; and {len(problems) - 10} more" if len(problems) > 10 else ""
        message = f"{path}: {len(problems)} problem(s): " + "; ".join(shown) + more
        super().__init__(message, hint or "fix the listed entries in the checkpoint and run again")


class ConfigError(UserError):
    """The verification config (or an override, flag or preset value) is invalid."""


class PresetError(UserError):
    """A preset cannot be found or read."""


class RunStopped(UserError):
    """The run stopped early (``batch_timeout_seconds``); finished tasks are saved for ``--resume``.

    ``results`` holds the results finished before the stop (as karenina's batch error does).
    """

    def __init__(self, message: str, hint: str | None = None, results: list[Any] | None = None) -> None:
        super().__init__(message, hint)
        self.results = results or []


class RunInterrupted(UserError):
    """SIGINT or SIGTERM stopped the run; finished tasks are saved for ``--resume``."""

    def __init__(self, message: str, hint: str | None = None, signal_name: str = "SIGINT") -> None:
        super().__init__(message, hint)
        self.signal_name = signal_name


class ModelError(VerifyError):
    """A model call failed for good (retries exhausted or a permanent error)."""

    def __init__(self, message: str, category: str = "permanent") -> None:
        super().__init__(message)
        self.category = category


class ModelSetupError(ModelError, UserError):
    """A provider package or credential is missing; names what to install or set."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        UserError.__init__(self, message, hint)
        self.category = "permanent"


class SearchError(VerifyError):
    """A search call failed for good."""


# --------------------------------------------------------------------------- located problems


class ConfigProblems(ValueError):
    """Several located problems found by one validator: ``[(field path, how to fix), ...]``.

    Pydantic wraps it as one ``value_error``; :func:`format_validation_error` unpacks it again
    into one line per problem.
    """

    def __init__(self, problems: Iterable[tuple[str, str]]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(f"{path}: {msg}" if path else msg for path, msg in self.problems))


def raise_if(problems: list[tuple[str, str]]) -> None:
    if problems:
        raise ConfigProblems(problems)


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``"; did you mean X?"`` naming the closest choices (all within a hair of the best), or ``""``."""
    scored = sorted(((difflib.SequenceMatcher(None, name, c).ratio(), c) for c in set(choices)), reverse=True)
    if not scored or scored[0][0] < 0.6:
        return ""
    close = [c for ratio, c in scored[:3] if ratio >= max(0.6, scored[0][0] - 0.05)]
    return f"; did you mean {' or '.join(close)}?"


def format_validation_error(
    exc: ValidationError, source: str = "", *, prefix: str = "", root: type[BaseModel] | None = None
) -> str:
    """One line per problem, ``[source: ]field.path: message``: see :func:`validation_lines`."""
    head = f"{source}: " if source else ""
    return "\n".join(head + line for line in validation_lines(exc, prefix=prefix, root=root))


def validation_lines(
    exc: ValidationError, *, prefix: str = "", root: type[BaseModel] | None = None, limit: int | None = None
) -> list[str]:
    """The one renderer of pydantic errors: ``field.path: message (got value)`` per problem.

    ``root`` is the model that was validated (needed to name unknown fields' closest matches and
    to render aliases); unknown keys get ``unknown field; did you mean ...?``; the several member
    errors of one union collapse into one line. ``prefix`` goes before every field path, e.g.
    ``"config."`` for the ``config`` object of a karenina preset file. With ``limit``, at most that
    many lines and a last ``and N more``.
    """
    lines: dict[str, list[str]] = {}
    got: dict[str, str] = {}
    for err in exc.errors(include_url=False):
        for path, message, value in _explain(err, root):
            where = f"{prefix}{path}" if path else prefix.rstrip(".")
            messages = lines.setdefault(where, [])
            if message not in messages:
                messages.append(message)
            if value:
                got[where] = value
    out = [
        (f"{where}: " if where else "") + _either(msgs) + (f" (got {got[where]})" if where in got else "")
        for where, msgs in lines.items()
    ]
    if limit is not None and len(out) > limit:
        out = [*out[:limit], f"and {len(out) - limit} more"]
    return out


def _either(messages: list[str]) -> str:
    """``a or b``; the member errors of a union (``Input should be a valid X``) as ``expected X or Y``."""
    lead = "Input should be a valid "
    if len(messages) > 1 and all(m.startswith(lead) for m in messages):
        return "expected " + " or ".join(m.removeprefix(lead) for m in messages)
    return " or ".join(messages)


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
        return [(path, "unknown field" + did_you_mean(key, names), "")]
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
    from pydantic import BaseModel

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


_TYPE_TAGS = frozenset({"str", "int", "float", "bool", "callable", "list", "dict", "none"})


def _unwrap(tp: Any, seg: Any) -> tuple[Any, bool]:
    """Strip Annotated/Optional; at a union, follow pydantic's member tag ``seg`` (-> skip it)."""
    if tp is None and isinstance(seg, str) and ("[" in seg or seg in _TYPE_TAGS):
        return None, True  # a union member's tag, below a point where the model is unknown
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) in (Union, types.UnionType):
        members = [a for a in get_args(tp) if a is not type(None)]
        for member in members:
            name = getattr(member, "__name__", None)
            if isinstance(seg, str) and (seg == name or seg.startswith(f"{name}[")):
                return member, True
        if isinstance(seg, str) and ("[" in seg or seg in _TYPE_TAGS):
            return None, True  # a tag of a non-model member
        tp = members[0] if len(members) == 1 else None
        while get_origin(tp) is Annotated:
            tp = get_args(tp)[0]
    return tp, False
