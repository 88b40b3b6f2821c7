"""Deterministic trait evaluation: regex traits, callable traits, confusion-matrix metrics.

Callable traits run Python code from the checkpoint, stored as base64 of either *source text* (a
function ``f(text)``, compiled with an allow-list) or a cloudpickle of the function (the only form
karenina writes). Unpickling runs arbitrary code on load, so a pickled callable runs only when the
run trusts the checkpoint (``trust_checkpoint_code``), and then only in a worker process
(``verify.sandbox.worker``); untrusted, it is skipped and counted as not judged. A failing callable
is ``unscored`` with the reason. :func:`eval_callable` runs source text where it is called: the run
calls it in a worker, under a time limit (``verify.sandbox.calls.run_callable``). Values are scored
as karenina's ``CallableRubricTrait.evaluate`` scores them (:func:`score_callable`).

Assertion traits (``contains``, ``regex``, ``is-json``, ...) are regex traits where a pattern states them;
``is-json`` and ``json-schema`` parse the answer here (:func:`eval_assertion`), the schema checked by the
``jsonschema`` library (the ``jsonschema`` extra).

Regex traits keep ``re``'s semantics but match with the ``regex`` package (its default V0 syntax is
``re``'s), for its ``timeout``: a pattern that backtracks for hours raises :class:`CodeTimeout`.
"""

from __future__ import annotations

import ast
import base64
import binascii
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import regex

from verify.benchmark.traits import JSON_ASSERTIONS, AssertionTrait, CallableTrait, MetricTrait, RegexTrait
from verify.results.models import Score
from verify.templates.time_limit import CodeTimeout


@dataclass(frozen=True)
class Verdict:
    """A deterministic trait's outcome: a score, or the reason there is none."""

    score: Score | None
    label: str | None = None
    reason: str | None = None


def eval_regex(trait: RegexTrait, text: str, timeout: float | None = None) -> Verdict:
    """An assertion trait that no pattern states is evaluated by :func:`eval_assertion` instead.
    ``re.search`` semantics, stopped after ``timeout`` seconds (CodeTimeout). Blocking: call it
    off the event loop (the ``regex`` package releases the GIL while matching)."""
    if isinstance(trait, AssertionTrait) and trait.base in JSON_ASSERTIONS:
        return eval_assertion(trait, text)
    re.compile(trait.pattern)  # an invalid pattern fails as it always did, with re's error
    flags = 0 if trait.case_sensitive else regex.IGNORECASE
    try:
        match = regex.search(trait.pattern, text, flags, timeout=timeout)
    except TimeoutError:
        raise CodeTimeout(f"regex timed out after {timeout:g} s") from None
    reason = _evidence(trait, text, match) if isinstance(trait, AssertionTrait) else None
    return Verdict(score=(match is not None) != trait.invert_result, reason=reason)


def _evidence(trait: AssertionTrait, text: str, match: regex.Match[str] | None) -> str:
    """What an assertion saw, for the reason a failing one shows (JUnit, the summary, the pytest helper)."""
    if trait.base == "max-length":
        return f"{len(text)} characters (at most {trait.value})"
    if match is None:
        return f"not found in the answer ({len(text)} characters)"
    return f"found {match.group(0)[:120]!r} at character {match.start()}"


def eval_assertion(trait: AssertionTrait, text: str) -> Verdict:
    """``is-json``: the answer parses as JSON; ``json-schema``: and validates against the schema. The
    reason names the first problem, so a failing assertion says why (``not-`` inverts the score only)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        return Verdict(score=trait.invert_result, reason=f"the answer is not JSON: {exc}")
    if trait.base == "is-json":
        return Verdict(score=not trait.invert_result)
    import jsonschema  # the trait checked at load that it is installed

    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(trait.value).iter_errors(data))
    if error is None:
        return Verdict(score=not trait.invert_result)
    where = "/".join(str(p) for p in error.absolute_path) or "the top level"
    return Verdict(score=trait.invert_result, reason=f"at {where}: {error.message}")


_SAFE_BUILTINS = {
    name: __builtins__[name] if isinstance(__builtins__, dict) else getattr(__builtins__, name)  # noqa: B009
    for name in (
        "abs", "all", "any", "bool", "dict", "enumerate", "filter", "float", "int", "isinstance", "len",
        "list", "map", "max", "min", "range", "reversed", "round", "set", "sorted", "str", "sum",
        "tuple", "zip", "ValueError", "TypeError", "Exception",
    )
}
_ALLOWED_IMPORTS = {"re", "math", "string", "collections", "statistics", "json", "itertools"}


UNTRUSTED = (
    "not run: callable_code is a cloudpickle (karenina's format), and unpickling runs arbitrary code "
    "from the checkpoint; rerun with --trust-checkpoint-code if you trust this checkpoint"
)
"""Why a pickled callable is skipped when the run does not trust the checkpoint, and the fix."""


def decode_code(trait: CallableTrait) -> bytes:
    """The trait's ``callable_code`` as bytes; raises ValueError with a clear reason."""
    if not trait.callable_code:
        raise ValueError("the trait has no callable_code")
    try:
        return base64.b64decode(trait.callable_code, validate=False)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"callable_code is not base64: {exc}") from None


def is_pickled(trait: CallableTrait) -> bool:
    """Whether ``callable_code`` holds a pickle (protocol 2 or later, as cloudpickle writes)."""
    try:
        return decode_code(trait)[:1] == b"\x80"
    except ValueError:
        return False


def load_callable(trait: CallableTrait) -> Callable[[str], Any]:
    """Decode and compile the trait's source-text function; raises ValueError with a clear reason.
    A pickle is refused here: only a worker unpickles, and only for a trusted checkpoint."""
    raw = decode_code(trait)
    if raw[:1] == b"\x80":
        raise ValueError(UNTRUSTED.removeprefix("not run: "))
    try:
        source = raw.decode("utf-8")
        tree = ast.parse(source)
    except (UnicodeDecodeError, SyntaxError) as exc:
        raise ValueError(f"callable_code is not Python source: {exc}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            bad = [n for n in names if n.split(".")[0] not in _ALLOWED_IMPORTS]
            if bad:
                raise ValueError(f"callable_code imports {bad}; allowed: {sorted(_ALLOWED_IMPORTS)}")
        if isinstance(node, ast.Attribute) and node.attr.startswith("__"):
            raise ValueError(f"callable_code uses dunder attribute {node.attr!r}")
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    if not functions:
        raise ValueError("callable_code defines no function")

    def guarded_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] not in _ALLOWED_IMPORTS:
            raise ImportError(f"import of {name!r} is not allowed in callable traits")
        return __import__(name, *args, **kwargs)

    namespace: dict[str, Any] = {"__builtins__": {**_SAFE_BUILTINS, "__import__": guarded_import}}
    exec(compile(tree, f"<callable trait {trait.name}>", "exec"), namespace)  # noqa: S102
    fn = namespace[functions[-1]]
    if not callable(fn):
        raise ValueError("callable_code's function is not callable")
    return fn  # type: ignore[no-any-return]


def eval_callable(trait: CallableTrait, text: str) -> Verdict:
    """Run the trait's function on ``text`` here, with no time limit: the run calls this in a worker."""
    try:
        value = load_callable(trait)(text)
    except Exception as exc:
        return Verdict(score=None, reason=f"callable failed: {type(exc).__name__}: {exc}")
    return score_callable(trait, value)


def score_callable(trait: CallableTrait, value: Any) -> Verdict:
    """The function's return value as the trait's verdict, by karenina's rules: boolean needs a bool
    (inverted by ``invert_result``); score a number within ``min_score``..``max_score`` where set (a
    bound left unset is not checked); literal one of the class names, scored by its index."""
    if trait.kind == "boolean":
        if not isinstance(value, bool):
            return Verdict(None, reason=f"boolean callable returned {type(value).__name__}, not bool")
        return Verdict(score=value != trait.invert_result)
    if trait.kind == "score":
        if not isinstance(value, int | float):
            return Verdict(None, reason=f"score callable returned {value!r}, not a number")
        if not math.isfinite(value):  # karenina lets NaN through; results files need real numbers
            return Verdict(None, reason=f"score callable returned {value!r}, not a finite number")
        lo, hi = trait.min_score, trait.max_score
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            return Verdict(None, reason=f"score {value} outside [{lo}, {hi}]")
        return Verdict(score=value)
    names = list((trait.classes or {}).keys())
    if not isinstance(value, str):
        return Verdict(None, reason=f"literal callable returned {type(value).__name__}, not str")
    if value not in names:
        return Verdict(None, reason=f"literal callable returned {value!r}, not one of {names}")
    return Verdict(score=names.index(value), label=value)


def _dedupe(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        key = item.strip().lower()
        if key and key not in seen:
            seen.add(key)
            out.append(item)
    return out


def confusion_metrics(trait: MetricTrait, lists: dict[str, list[str]]) -> tuple[dict[str, list[str]], dict[str, float]]:
    """Dedupe the judge's lists (if asked) and compute the trait's metrics; 0.0 on a zero denominator."""
    if trait.repeated_extraction:
        lists = {k: _dedupe(v) for k, v in lists.items()}
    tp, fn, fp, tn = (len(lists.get(k, [])) for k in ("tp", "fn", "fp", "tn"))

    def ratio(a: float, b: float) -> float:
        return a / b if b else 0.0

    precision, recall = ratio(tp, tp + fp), ratio(tp, tp + fn)
    values = {
        "precision": precision,
        "recall": recall,
        "specificity": ratio(tn, tn + fp),
        "accuracy": ratio(tp + tn, tp + tn + fp + fn),
        "f1": ratio(2 * precision * recall, precision + recall) if precision + recall else 0.0,
    }
    return lists, {m: values[m] for m in trait.metrics}
