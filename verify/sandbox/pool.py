"""The pool of worker processes that runs code from the checkpoint, each call under a time limit.

Why processes: a Python thread cannot be stopped, so a ``verify()`` that loops forever in a thread
keeps a core busy until the program ends; a process can be killed. The pool

* starts on its first call and serves every run of the program (a test session makes hundreds):
  one zygote process imports verify once and forks each worker in milliseconds (see
  :mod:`verify.sandbox.worker` for why not ``multiprocessing``); never ``fork`` from the run's own
  process, which has threads (forking a threaded process can deadlock the child);
* runs at most ``size`` calls at once, each waited for by one of ``size`` threads, so the event
  loop never blocks; a call's limit starts when a worker takes it, not while it queues;
* kills a worker whose call overruns (the call raises :class:`CodeTimeout`) and forks a fresh one
  for the next call; kills the worker of a call whose task is cancelled (Ctrl-C, a run stopped
  early); and kills every worker at exit.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from verify.templates.time_limit import overran

DEFAULT_SIZE = max(2, min(4, os.cpu_count() or 1))
WORKER_MODULE = "verify.sandbox.worker"  # run as the zygote; not imported here, so ``-m`` runs it cleanly


class CodeFailed(Exception):
    """The code raised in the worker. ``str()`` reads ``"<type>: <message>"``, like the original's."""

    def __init__(self, kind: str, message: str, lines: list[str] | None = None) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.lines = list(lines or [])


class WorkerLost(RuntimeError):
    """The worker ended during a call without answering (killed from outside, out of memory, ...)."""


@dataclass(eq=False)
class Worker:
    pid: int
    conn: Connection

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.conn.close()


class _Zygote:
    """The process that forks workers: started with ``python -m``, so it shares nothing with the run
    but its ``sys.path``; it exits when the pool closes its socket, or when the run's process dies."""

    def __init__(self) -> None:
        self.channel, theirs = socket.socketpair()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", WORKER_MODULE, str(theirs.fileno()), str(os.getpid())],
            # not the run's stdout/stderr: whoever reads them to their end must not wait for our workers
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, env=env,
        )
        theirs.close()

    def fork(self) -> Worker:
        ours, theirs = socket.socketpair()
        try:
            socket.send_fds(self.channel, [b"fork"], [theirs.fileno()])
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = self.channel.recv(32)
                if not chunk:
                    raise OSError(f"the zygote process ended (exit code {self.process.poll()})")
                reply += chunk
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        return Worker(int(reply), Connection(ours.detach()))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.channel.close()
        try:
            self.process.wait(timeout=2)
        except (subprocess.TimeoutExpired, KeyboardInterrupt):  # a Ctrl-C at exit must not print a traceback
            self.process.kill()


@dataclass(eq=False)
class _Ticket:
    """One call in flight: the worker serving it, so that cancelling the call can kill that worker."""

    worker: Worker | None = None
    cancelled: bool = False


@dataclass(frozen=True)
class PoolStats:
    started: int  # workers started so far
    killed: tuple[int, ...]  # pids of the workers killed (overrun, cancelled call, lost), oldest first
    live: tuple[int, ...]  # pids of the workers now running


class WorkerPool:
    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        self.size = size
        self._lock = threading.Lock()  # held briefly, also by the event loop's thread
        self._zygote_lock = threading.Lock()  # held while a worker (or the zygote) starts
        self._local = threading.local()  # each of the pool's threads owns one worker
        self._threads: ThreadPoolExecutor | None = None
        self._zygote: _Zygote | None = None
        self._live: set[Worker] = set()
        self._started = 0
        self._killed: list[int] = []

    async def call(self, op: str, payload: dict[str, Any], *, timeout: float, what: str) -> Any:
        """Run ``op`` (see ``worker.OPS``) in a worker; its value, or CodeFailed, CodeTimeout, WorkerLost."""
        ticket = _Ticket()
        future = self._executor().submit(self._serve_call, ticket, op, payload, timeout, what)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            with self._lock:
                ticket.cancelled = True
                busy = ticket.worker
            if busy is not None:
                busy.kill()  # its thread sees the connection close, and retires it
            raise

    def stats(self) -> PoolStats:
        with self._lock:
            return PoolStats(self._started, tuple(self._killed), tuple(w.pid for w in self._live))

    def shutdown(self) -> None:
        """Kill every worker and the zygote; a later call starts the pool again."""
        with self._lock:
            workers, self._live = list(self._live), set()
            threads, self._threads = self._threads, None
        with self._zygote_lock:
            zygote, self._zygote = self._zygote, None
        for worker in workers:
            worker.kill()
        if zygote is not None:
            zygote.close()
        if threads is not None:
            threads.shutdown(wait=False, cancel_futures=True)

    # -- in the pool's threads ----------------------------------------------------------------------

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._threads is None:
                self._threads = ThreadPoolExecutor(self.size, thread_name_prefix="verify-sandbox")
            return self._threads

    def _serve_call(self, ticket: _Ticket, op: str, payload: dict[str, Any], timeout: float, what: str) -> Any:
        try:
            worker = self._own_worker()
        except OSError as exc:
            raise WorkerLost(f"{what}: no worker process could be started ({exc})") from None
        with self._lock:
            if ticket.cancelled:
                raise WorkerLost(f"{what}: the call was cancelled")
            ticket.worker = worker
        try:
            worker.conn.send_bytes(json.dumps({"op": op, "payload": payload}).encode())
            reply = json.loads(worker.conn.recv_bytes()) if worker.conn.poll(timeout) else None
        except (EOFError, OSError):
            self._retire(worker)
            raise WorkerLost(f"{what}: the worker process ended without answering") from None
        finally:
            with self._lock:
                ticket.worker = None
        if reply is None:
            self._retire(worker)
            raise overran(what, timeout)
        if reply["ok"]:
            return reply["value"]
        raise CodeFailed(**reply["failure"])

    def _own_worker(self) -> Worker:
        worker: Worker | None = getattr(self._local, "worker", None)
        if worker is not None:
            try:
                idle = not worker.conn.poll(0)  # an idle worker has nothing to say; EOF means it is gone
            except OSError:
                idle = False
            if idle:
                return worker
            self._retire(worker)
        worker = self._fork()
        with self._lock:
            self._live.add(worker)
            self._started += 1
        self._local.worker = worker
        return worker

    def _fork(self) -> Worker:
        with self._zygote_lock:  # one request to the zygote at a time
            for attempt in (1, 2):
                if self._zygote is None:
                    self._zygote = _Zygote()
                try:
                    return self._zygote.fork()
                except OSError:
                    self._zygote.close()
                    self._zygote = None  # it died: start another, once
                    if attempt == 2:
                        raise
        raise AssertionError("unreachable")

    def _retire(self, worker: Worker) -> None:
        worker.kill()
        with self._lock:
            if worker in self._live:
                self._live.discard(worker)
                self._killed = [*self._killed[-99:], worker.pid]
        if getattr(self._local, "worker", None) is worker:
            self._local.worker = None


_shared: WorkerPool | None = None
_shared_lock = threading.Lock()


def shared_pool() -> WorkerPool:
    """The program's pool, created on first use and shut down at exit."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = WorkerPool()
            atexit.register(_shared.shutdown)
        return _shared


def shutdown() -> None:
    """Kill the shared pool's workers now (they start again on the next call)."""
    with _shared_lock:
        pool = _shared
    if pool is not None:
        pool.shutdown()
