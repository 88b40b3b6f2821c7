"""What a worker process does: run code from the checkpoint on request, answer with JSON.

A worker serves one request at a time from its socket: ``{"op", "payload"}`` in, ``{"ok": true,
"value"}`` or ``{"ok": false, "failure": {"kind", "message", "lines"}}`` out, all JSON, so nothing
the code made can run in the run's process when it is read. Templates are compiled here from their
source by the same allow-listed compiler the run uses (cached, so a worker compiles a template
once); a template's methods (validators, ``model_post_init``, ``verify()``, ``verify_granular()``)
and callable traits run only here, and only here are pickled callables unpickled (when the run
trusts the checkpoint). Each request builds the answer afresh from the judge's values,
so no call sees state another call left behind, whichever worker serves it.

Workers are forked by a *zygote*: this module run as ``python -m verify.sandbox.worker``, a fresh
single-threaded process that imported everything once, so a worker starts in milliseconds and
never inherits the run's threads. (``multiprocessing``'s ``forkserver`` and ``spawn`` would do the
same but re-run the user's main script in every worker: an unguarded script, like the README's
example, would run its whole verification again in each worker.) The pool kills a worker whose
request overruns. A worker also ends by itself once the run's process is gone (a watchdog
thread), so stalled code never outlives the run, and it ignores Ctrl-C: the run decides, and kills
what is still busy.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from pydantic import ValidationError

from verify.benchmark.traits import CallableTrait
from verify.errors import validation_lines
from verify.judging.deterministic import Verdict, decode_code, eval_callable, is_pickled, score_callable
from verify.templates.answer_base import BaseAnswer, ground_truth_of, json_safe, parsed_fields
from verify.templates.compiler import compile_template
from verify.templates.primitives import DEFAULT_REGEX_LIMIT as DEFAULT_PATTERN_LIMIT
from verify.templates.primitives import regex_time_limit
from verify.templates.verified import resolved_ground_truths, strategy_label

WATCH_INTERVAL = 0.5
"""Seconds between the watchdog's checks that the run's process is still there."""


def failure_of(exc: BaseException) -> dict[str, Any]:
    """An exception as data: its type's name, its message, and pydantic's error lines if any.

    ``StopIteration`` and ``TimeoutError`` are renamed so they are never mistaken for the iteration
    protocol or for our own timeout; an exception outside ``Exception`` (a ``SystemExit`` raised by
    the code) is reported, never obeyed.
    """
    kind, message = type(exc).__name__, str(exc)
    if isinstance(exc, StopIteration | TimeoutError):
        kind, message = "RuntimeError", f"{type(exc).__name__}: {exc}"
    elif not isinstance(exc, Exception):
        kind, message = "RuntimeError", f"template code raised {type(exc).__name__}: {exc}"
    lines = validation_lines(exc, limit=6) if isinstance(exc, ValidationError) else []
    return {"kind": kind, "message": message, "lines": lines}


def _answer(payload: dict[str, Any]) -> BaseAnswer:
    compiled = compile_template(payload["code"], payload["question_id"])
    answer = compiled.build(payload["values"])
    answer.set_raw_trace(payload.get("trace"))  # karenina's _raw_trace, for trace primitives
    return answer


def _pattern_limit(payload: dict[str, Any]) -> float:
    """Half the call's limit per pattern of a primitive: its own located timeout comes first."""
    limit = payload.get("time_limit")
    return float(limit) / 2 if isinstance(limit, int | float) and limit > 0 else DEFAULT_PATTERN_LIMIT


def _regex_specs(instance: BaseAnswer) -> dict[str, Any] | None:
    specs = getattr(instance, "regex", None)
    return dict(json_safe(specs)) if isinstance(specs, dict) and specs else None


def compile_op(payload: dict[str, Any]) -> dict[str, Any]:
    compiled = compile_template(payload["code"], payload["question_id"])
    regex = dict(json_safe(compiled.regex)) if compiled.regex else None
    return {"ground_truth": compiled.ground_truth, "regex": regex}


def build_op(payload: dict[str, Any]) -> dict[str, Any]:
    instance = _answer(payload)
    expected = ground_truth_of(instance)
    resolved = json_safe(resolved_ground_truths(type(instance)))  # as karenina: conditional ones too
    if resolved:
        expected = {**(expected or {}), **resolved}
    return {"parsed": parsed_fields(instance), "ground_truth": expected, "regex": _regex_specs(instance)}


def verify_op(payload: dict[str, Any]) -> dict[str, Any]:
    with regex_time_limit(_pattern_limit(payload)):
        answer = _answer(payload)
        verdict = answer.verify()
        fields: dict[str, bool | None] = {}
        scores: dict[str, float | None] = {}
        if answer._get_verified_fields():
            try:  # karenina's per-field outcomes: a hand-written verify() may not need them all
                fields, scores = answer._compute_field_results(), answer._compute_field_scores()
            except Exception:  # noqa: BLE001
                fields, scores = {}, {}
    return {"verdict": bool(verdict), "type": type(verdict).__name__, "fields": fields, "scores": scores,
            "strategy": strategy_label(type(answer))}


def granular_op(payload: dict[str, Any]) -> float:
    with regex_time_limit(_pattern_limit(payload)):
        return float(_answer(payload).verify_granular())  # type: ignore[attr-defined]


def callable_op(payload: dict[str, Any]) -> dict[str, Any]:
    trait = CallableTrait.model_validate(payload["trait"])
    if payload.get("trusted") and is_pickled(trait):
        verdict = run_pickled(trait, payload["text"])
    else:
        verdict = eval_callable(trait, payload["text"])
    return {"score": verdict.score, "label": verdict.label, "reason": verdict.reason}


def run_pickled(trait: CallableTrait, text: str) -> Verdict:
    """Unpickle the trait's function and call it: only here, in a worker, for a trusted checkpoint
    (the pool's time limit covers the unpickling too, which can run code of its own)."""
    import cloudpickle  # imported by the workers that unpickle, never by the run

    try:
        function = cloudpickle.loads(decode_code(trait))
    except Exception as exc:
        return Verdict(None, reason=f"callable_code could not be unpickled ({type(exc).__name__}: {exc}); "
                                    "was it written by another Python version, or does it need a module "
                                    "that is not installed?")
    if not callable(function):
        return Verdict(None, reason=f"callable_code unpickles to {type(function).__name__}, not a function")
    try:
        value = function(text)
    except Exception as exc:
        return Verdict(None, reason=f"callable failed: {type(exc).__name__}: {exc}")
    return score_callable(trait, value)


def echo_op(payload: dict[str, Any]) -> dict[str, Any]:
    """A call that runs no checkpoint code: measures the pool's own cost per call."""
    return payload


OPS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "compile": compile_op, "build": build_op, "verify": verify_op, "granular": granular_op,
    "callable": callable_op, "echo": echo_op,
}


def _watch(parent_pid: int) -> None:
    server = os.getppid()  # the process that forked us; a new parent means it is gone
    while True:
        time.sleep(WATCH_INTERVAL)
        try:
            os.kill(parent_pid, 0)
        except OSError:  # no such process, or its pid now belongs to someone else's process
            os._exit(0)
        if os.getppid() != server:
            os._exit(0)


def serve(conn: Connection, parent_pid: int) -> None:
    """A worker's main loop; returns when the pool closes the connection."""
    threading.Thread(target=_watch, args=(parent_pid,), name="verify-sandbox-watchdog", daemon=True).start()
    while True:
        try:
            request = json.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        try:
            reply = json.dumps({"ok": True, "value": OPS[request["op"]](request["payload"])})
        except BaseException as exc:  # noqa: BLE001 - the code's failure is the reply (and a value JSON cannot hold)
            reply = json.dumps({"ok": False, "failure": failure_of(exc)})
        conn.send_bytes(reply.encode())


def zygote(channel: socket.socket, parent_pid: int) -> None:
    """Fork a worker for each socket the pool sends over ``channel``, and answer with its pid.

    Returns when the pool closes ``channel`` (at exit, or when the run's process dies).
    """
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the workers
    while True:
        try:
            _, fds, _, _ = socket.recv_fds(channel, 16, 1)
        except OSError:
            return
        if not fds:
            return
        pid = os.fork()
        if pid == 0:  # the worker
            channel.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                serve(Connection(fds[0]), parent_pid)
            finally:
                os._exit(0)
        os.close(fds[0])
        channel.sendall(b"%d\n" % pid)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    zygote(socket.socket(fileno=int(sys.argv[1])), int(sys.argv[2]))
