"""Files: the one way verify replaces a file (atomic writes) and reads a user's JSON file.

The text goes to a hidden temporary file in the target's folder, is flushed and fsynced, keeps the
old file's permissions, and only then replaces the target (``os.replace``), so a crash or a full
disk never leaves half a file where the old one was, and no temporary file is left behind.

:func:`read_json_file` reads answers, presets, manual traces and deep-judgment configs: UTF-8 with or
without a byte-order mark, no NaN/Infinity, at most :data:`MAX_JSON_DEPTH` levels deep, and every
problem one located :class:`~verify.errors.UserError`. Checkpoints use its parts (:func:`read_text`,
:func:`parse_json`) and name problems by question and trait instead.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from verify.errors import UserError

__all__ = [
    "MAX_JSON_DEPTH", "JsonProblem", "atomic_writer", "nesting_path", "parse_json", "read_json_file",
    "read_text", "render_path", "write_atomic",
]


@contextmanager
def atomic_writer(path: Path) -> Iterator[IO[str]]:
    """A text handle whose content replaces ``path`` when the block ends without an exception."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.partial")
    try:
        with open(tmp, "x", encoding="utf-8", newline="") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            shutil.copymode(path, tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically."""
    with atomic_writer(path) as handle:
        handle.write(text)


# --------------------------------------------------------------------------------------- JSON files

#: How deeply JSON values may nest. Deeper data would overflow Python's stack in the JSON parser or
#: later (copies, dumps), so it is refused up front with a located message.
MAX_JSON_DEPTH = 100
_NON_FINITE_HINT = "write a number (or null): JSON has no NaN or Infinity"
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')  # strings (skipped) and brackets


class JsonProblem(Exception):
    """Why a JSON file or text cannot be used: one located ``problem`` line and a ``hint``.

    For a value that parses but that verify refuses (NaN, Infinity, a number too large for a float),
    ``path`` is where it sits in ``document`` (the parsed data) and ``detail`` says what it is
    (``is NaN (line 3, column 7)``), so a caller can name the place in its own terms (a checkpoint
    names the question and trait).
    """

    def __init__(self, problem: str, hint: str, path: tuple[str | int, ...] | None = None,
                 document: Any = None, detail: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.hint = hint
        self.path = path
        self.document = document
        self.detail = detail


class _NonFinite:
    """What the parser returns for ``NaN``, ``Infinity``, ``-Infinity`` or ``1e999``: found and refused.

    The first one made during a parse is noted (per thread) so :func:`parse_json` knows to refuse it.
    """

    __slots__ = ("token",)

    def __init__(self, token: str) -> None:
        self.token = token
        if getattr(_parsing, "first", None) is None:
            _parsing.first = self


def _parse_float(token: str) -> float | _NonFinite:
    value = float(token)
    return value if math.isfinite(value) else _NonFinite(token)


_parsing = threading.local()
_DECODER = json.JSONDecoder(parse_constant=_NonFinite, parse_float=_parse_float)


def read_text(path: Path) -> str:
    """A user's text file, as UTF-8 with or without a byte-order mark; raises :class:`JsonProblem`."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise JsonProblem("file not found", "check the path") from None
    except IsADirectoryError:
        raise JsonProblem("is a directory", "pass the file, not its folder") from None
    except UnicodeDecodeError as exc:
        raise JsonProblem(f"is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})",
                          "save the file as UTF-8") from None
    except OSError as exc:
        raise JsonProblem(f"cannot read file: {exc.strerror or exc}", "check the path and its permissions") from None


def parse_json(text: str, *, max_depth: int | None = MAX_JSON_DEPTH) -> Any:
    """Parse JSON text, refusing NaN/Infinity and nesting deeper than ``max_depth``; raises :class:`JsonProblem`.

    ``max_depth=None`` leaves the depth to the caller (the checkpoint decoder checks only the values
    it keeps verbatim, which is much cheaper than walking the whole document); nesting deep enough
    to overflow the parser is refused in any case.
    """
    _parsing.first = None
    try:
        data = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        problem = f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        raise JsonProblem(problem, "fix the JSON syntax") from None
    except RecursionError:
        raise _too_deep(text, max_depth or MAX_JSON_DEPTH) from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise JsonProblem(f"invalid JSON: {str(exc).split(';')[0]}", "fix the JSON value") from None
    if max_depth is not None and nesting_path(data, max_depth) is not None:
        raise _too_deep(text, max_depth)
    first: _NonFinite | None = _parsing.first
    if first is not None:
        token = first.token
        path = _path_of(data, first)
        line, column = _position(text, _token_offset(text, token))
        constant = token.lstrip("-") in ("NaN", "Infinity")
        what = f"{token} is not a JSON number" if constant else f"{token} is too large for a number"
        where = f" (at {render_path(path)})" if path else ""
        detail = f"is {token} (line {line}, column {column})" + ("" if constant else ", too large for a number")
        raise JsonProblem(f"line {line}, column {column}: {what}{where}", _NON_FINITE_HINT, path, data, detail)
    return data


def read_json_file(path: Path, what: str) -> Any:
    """The one reader of users' JSON files (answers, presets, manual traces, deep-judgment configs).

    Accepts a UTF-8 byte-order mark; refuses NaN/Infinity and nesting deeper than
    :data:`MAX_JSON_DEPTH`. Every problem is one :class:`~verify.errors.UserError` naming the file
    (and the line and column when known), with a hint.
    """
    try:
        return parse_json(read_text(Path(path)))
    except JsonProblem as exc:
        raise UserError(f"{what} file {path}: {exc.problem}", exc.hint) from None


def nesting_path(data: Any, limit: int) -> tuple[str | int, ...] | None:
    """The path to a value nested deeper than ``limit`` levels of lists/objects, or None if none is."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        node, path = stack.pop()
        if len(path) >= limit:  # a list/object at level limit + 1
            return path
        if isinstance(node, dict):
            stack.extend((v, (*path, k)) for k, v in node.items() if isinstance(v, dict | list))
        elif isinstance(node, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(node) if isinstance(v, dict | list))
    return None


def render_path(path: Sequence[str | int]) -> str:
    """``("a", 0, "b")`` -> ``a[0].b``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _too_deep(text: str, limit: int) -> JsonProblem:
    depth = 0
    for match in _TOKENS.finditer(text):
        if match.group() in "[{":
            depth += 1
            if depth > limit:
                line, column = _position(text, match.start())
                return JsonProblem(f"line {line}, column {column}: nested deeper than {limit} levels",
                                   f"flatten the data: verify reads at most {limit} levels of nested lists/objects")
        elif match.group() in "]}":
            depth -= 1
    return JsonProblem(f"nested deeper than {limit} levels", f"flatten the data (at most {limit} levels)")


def _path_of(data: Any, target: object) -> tuple[str | int, ...]:
    """Where ``target`` sits in ``data`` (document order), or ``()``."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        if isinstance(node, dict):
            stack.extend(reversed([(v, (*path, k)) for k, v in node.items()]))
        elif isinstance(node, list):
            stack.extend(reversed([(v, (*path, i)) for i, v in enumerate(node)]))
    return ()


def _token_offset(text: str, token: str) -> int:
    """Offset of the first ``token`` outside a JSON string (0 if not found)."""
    pattern = re.compile(r'"(?:[^"\\]|\\.)*"|(?<![\w.+-])' + re.escape(token) + r"(?![\w.])")
    for match in pattern.finditer(text):
        if not match.group().startswith('"'):
            return match.start()
    return 0


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1
