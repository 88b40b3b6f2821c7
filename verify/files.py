"""Files: the one way verify replaces a file (atomic writes) and reads a user's JSON file.

The text goes to a hidden temporary file in the target's folder, is flushed and fsynced, keeps the
old file's permissions, and only then replaces the target (``os.replace``), so a crash or a full
disk never leaves half a file where the old one was, and no temporary file is left behind.

:func:`read_json_file` reads answers, presets, manual traces and deep-judgment configs: UTF-8 with or
without a byte-order mark, no NaN/Infinity, at most :data:`MAX_JSON_DEPTH` levels deep, and every
problem one located :class:`~verify.errors.UserError`. Checkpoints use its parts (:func:`read_text`,
:func:`parse_json`) and name problems by question and trait instead; suites use :func:`parse_yaml`.

Every file verify reads goes through :func:`check_input_file` first: a regular file (checked with
``os.stat``, so a named pipe never blocks and ``/dev/zero`` is never read), no larger than the input
limit (:func:`input_limit`, ``--max-input-mb``) because it is loaded whole.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import stat
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Any

from verify.errors import UserError

__all__ = [
    "DEFAULT_MAX_INPUT_MB", "MAX_JSON_DEPTH", "JsonProblem", "atomic_writer", "check_input_file", "input_limit", "refuse_clobber",
    "refuse_same_outputs",
    "nesting_path", "parse_json", "parse_yaml", "read_json_file", "read_text", "render_path", "write_atomic",
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


def refuse_clobber(path: Path, option: str, *, overwrite: bool, ours: Callable[[Path], bool] | None = None) -> None:
    """Before a command writes ``path`` (given by ``option``): an existing file is replaced only with
    ``--overwrite``, or when ``ours`` says verify wrote it (a page the report command made earlier);
    a folder, pipe or device never. The rule runs follow for their results (:mod:`verify.run.output`)."""
    if not os.path.lexists(path):
        return
    if not path.is_file():
        raise UserError(f"{option} {path} exists and is not a regular file", "choose another file name")
    if not overwrite and not (ours is not None and ours(path)):
        raise UserError(f"{option} {path} exists and verify did not write it",
                        "choose another file name, or pass --overwrite to replace it")


def refuse_same_outputs(outputs: Sequence[tuple[str, Path | None]]) -> None:
    """Two outputs of one command may not be one file: the second would replace the first."""
    seen: dict[Path, str] = {}
    for option, path in outputs:
        if path is None:
            continue
        key = Path(path).resolve()
        if key in seen:
            raise UserError(f"{option} {path} is the same file as {seen[key]}", "give each output its own file name")
        seen[key] = f"{option} {path}"


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


# --------------------------------------------------------------------------------------- inputs

#: Files loaded whole (checkpoints, suites, results, answers, presets) larger than this are refused
#: before they are read; ``--max-input-mb`` raises it for one command.
DEFAULT_MAX_INPUT_MB = 512
_MB = 1024 * 1024
_max_input_bytes: ContextVar[int] = ContextVar("max_input_bytes", default=DEFAULT_MAX_INPUT_MB * _MB)
_LIMIT_HINT = "pass --max-input-mb with a larger limit if the file is meant to be this big"
_KINDS = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


@contextmanager
def input_limit(megabytes: float | None) -> Iterator[None]:
    """Within the block, files loaded whole may be up to ``megabytes`` (``None``: the default)."""
    token = _max_input_bytes.set(int(megabytes * _MB) if megabytes is not None else DEFAULT_MAX_INPUT_MB * _MB)
    try:
        yield
    finally:
        _max_input_bytes.reset(token)


def check_input_file(path: Path, *, limit: int | None = None, limit_hint: str = _LIMIT_HINT) -> int:
    """The size of ``path`` if it is a regular file of at most ``limit`` bytes (default: the input
    limit); raises :class:`JsonProblem`. Uses ``os.stat``, which never blocks on a pipe or reads a device."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise JsonProblem("file not found", "check the path") from None
    except OSError as exc:
        raise JsonProblem(f"cannot read file: {exc.strerror or exc}", "check the path and its permissions") from None
    if stat.S_ISDIR(info.st_mode):
        raise JsonProblem("is a directory", "pass the file, not its folder")
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
        raise JsonProblem(f"is {kind}, not a regular file",
                          "give a regular file: verify does not read pipes, devices or sockets")
    limit = _max_input_bytes.get() if limit is None else limit
    if info.st_size > limit:
        raise JsonProblem(f"is {_megabytes(info.st_size)}, more than the {_megabytes(limit)} verify reads", limit_hint)
    return info.st_size


def _megabytes(size: int) -> str:
    return f"{size / _MB:.1f} MB" if size >= _MB // 10 else f"{size} bytes"


def read_text(path: Path, *, limit: int | None = None, limit_hint: str = _LIMIT_HINT) -> str:
    """A user's text file, as UTF-8 with or without a byte-order mark, newlines as ``\\n``; a regular
    file of at most ``limit`` bytes (default: the input limit). Raises :class:`JsonProblem`."""
    path = Path(path)
    size = check_input_file(path, limit=limit, limit_hint=limit_hint)
    limit = _max_input_bytes.get() if limit is None else limit
    try:
        with open(path, "rb") as handle:
            data = handle.read(size + 1)
            while len(data) <= limit and (more := handle.read(_MB)):  # the file grew since the check
                data += more
    except OSError as exc:
        raise JsonProblem(f"cannot read file: {exc.strerror or exc}", "check the path and its permissions") from None
    if len(data) > limit:
        raise JsonProblem(f"is more than the {_megabytes(limit)} verify reads", limit_hint)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise JsonProblem(f"is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})",
                          "save the file as UTF-8") from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text  # as text mode reads it


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


#: How many values a YAML file may expand to through its aliases (``*name``): a few nested aliases
#: can stand for billions of values ("billion laughs"), which every later walk of the data would visit.
MAX_YAML_VALUES = 10_000_000


def parse_yaml(text: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse YAML with the safe loader (libyaml's when installed), refusing nesting deeper than
    ``max_depth`` and aliases that expand past :data:`MAX_YAML_VALUES`; raises :class:`JsonProblem`.

    The depth is checked on the event stream before any node is built: libyaml's composer recurses
    in C and crashes the process on deep nesting, and the pure-Python one overflows the stack.
    """
    import yaml

    from verify.yaml_build import Limit, Unsupported, build

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # safe only: a file never builds Python objects
    try:
        try:
            return build(yaml, loader, text, max_depth=max_depth, max_values=MAX_YAML_VALUES)
        except Unsupported:  # a rare tag or key: PyYAML's own loader, after the same checks
            _check_yaml_shape(yaml, loader, text, max_depth)
            return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader, C or Python
    except Limit as exc:
        where = f"line {exc.line}, column {exc.column}" if exc.kind == "depth" else f"line {exc.line}"
        if exc.kind == "depth":
            raise JsonProblem(f"{where}: nested deeper than {max_depth} levels",
                              f"flatten the data: verify reads at most {max_depth} levels of nested lists/mappings") from None
        raise JsonProblem(f"{where}: aliases expand to more than {MAX_YAML_VALUES:,} values",
                          "write the values out instead of nesting aliases (*name) inside each other") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "top level"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if "nesting depth" in problem:  # libyaml's own limit, met while it reads ahead of the depth check
            raise JsonProblem(f"{where}: nested deeper than {max_depth} levels",
                              f"flatten the data: verify reads at most {max_depth} levels of nested lists/mappings") from None
        raise JsonProblem(f"{where}: not valid YAML: {problem}", "fix the YAML syntax") from None
    except RecursionError:
        raise JsonProblem(f"nested deeper than {max_depth} levels", f"flatten the data (at most {max_depth} levels)") from None


def _check_yaml_shape(yaml: Any, loader: Any, text: str, max_depth: int) -> None:
    starts, ends = (yaml.SequenceStartEvent, yaml.MappingStartEvent), (yaml.SequenceEndEvent, yaml.MappingEndEvent)
    sizes: dict[str, int] = {}  # values each anchor stands for
    stack: list[list[Any]] = [[0, None]]  # per open collection: values inside it so far, its anchor
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, starts):
            if len(stack) > max_depth:
                line, column = event.start_mark.line + 1, event.start_mark.column + 1
                raise JsonProblem(f"line {line}, column {column}: nested deeper than {max_depth} levels",
                                  f"flatten the data: verify reads at most {max_depth} levels of nested lists/mappings")
            stack.append([0, event.anchor])
            continue
        if isinstance(event, ends):
            count, anchor = stack.pop()
            size = count + 1
        elif isinstance(event, yaml.AliasEvent):
            size, anchor = sizes.get(event.anchor, 1), None
        elif isinstance(event, yaml.ScalarEvent):
            size, anchor = 1, event.anchor
        else:
            continue
        if anchor:
            sizes[anchor] = size
        stack[-1][0] += size
        if stack[-1][0] > MAX_YAML_VALUES:
            raise JsonProblem(f"line {event.start_mark.line + 1}: aliases expand to more than {MAX_YAML_VALUES:,} values",
                              "write the values out instead of nesting aliases (*name) inside each other")


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
