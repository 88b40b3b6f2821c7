"""Durable progress lines, written off the event loop by a writer thread that fsyncs them in groups.

A finished task's line (its result in karenina's form, masked: the line the export will hold) is
queued for the writer thread; ``await writer.save(result)`` returns only once the line is written
and fsynced. The run counts a task (summary, progress bar, ``on_result``) after that, so a kill at
any moment loses nothing that was counted. Lines queued while an fsync runs go to disk together,
with one fsync (group commit): the loop never waits on the disk, and a slow disk costs one fsync
per batch instead of one per task.

After a failed write (disk full, I/O error) every later save fails with the same error: the file
may end with part of a line, which ``--resume`` drops (see :mod:`verify.results.store`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
from pathlib import Path
from typing import IO, Any

from verify.results.karenina_form import to_karenina
from verify.results.models import VerificationResult
from verify.secrets import mask_json

__all__ = ["HEADER_KEY", "ResultWriter", "progress_line"]

HEADER_KEY = "verify_progress"


def progress_line(result: VerificationResult) -> str:
    """The progress line of ``result`` (no newline): karenina's form, every secret masked, so the
    export copies it as it is, and a key echoed into a reason never reaches the file."""
    return mask_json(json.dumps(to_karenina(result)))


_Waiter = tuple[str, "asyncio.Future[None]", asyncio.AbstractEventLoop]


class ResultWriter:
    """Appends lines to the progress file; a line counts as written once it is flushed and fsynced."""

    def __init__(self, path: Path, *, append: bool, header: dict[str, Any] | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if append and path.exists():
            _drop_torn_tail(path)
        self.path = path
        self.written = 0
        """Lines of results made durable by this writer (the header not counted)."""
        fresh = not (append and path.exists() and path.stat().st_size)
        self._handle: IO[bytes] = path.open("ab" if append else "wb", buffering=0)  # nothing left in a buffer
        self._queue: list[_Waiter] = []
        self._wake = threading.Condition()
        self._closing = False
        self._error: OSError | None = None
        self._thread: threading.Thread | None = None
        if fresh and header is not None:
            self.append([mask_json(json.dumps({HEADER_KEY: 1, **header}))])
            self.written = 0

    def append(self, lines: list[str]) -> None:
        """Write ``lines`` (each without its newline) in one write and fsync them; raises ``OSError``."""
        view = memoryview("".join(line + "\n" for line in lines).encode("utf-8"))
        while view:  # an unbuffered write may take part of the data
            view = view[self._handle.write(view) or 0:]
        os.fsync(self._handle.fileno())
        self.written += len(lines)

    def write(self, result: VerificationResult) -> None:
        """Save ``result`` now, on the calling thread (seeding a resumed run from its export)."""
        self.append([progress_line(result)])

    async def save(self, result: VerificationResult) -> None:
        """Save ``result`` through the writer thread; returns once its line is durable, raises the
        ``OSError`` that kept it from being so."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        line = progress_line(result)  # on the loop: a result that cannot be serialised fails its own task
        with self._wake:
            if self._thread is None:
                self._thread = threading.Thread(target=self._drain, name="verify-progress-writer", daemon=True)
                self._thread.start()
            self._queue.append((line, done, loop))
            self._wake.notify()
        await done

    def _drain(self) -> None:
        while True:
            with self._wake:
                while not self._queue and not self._closing:
                    self._wake.wait()
                if not self._queue:
                    return
                batch, self._queue = self._queue, []
            error = self._error
            if error is None:
                try:
                    self.append([line for line, _, _ in batch])
                except OSError as exc:
                    error = self._error = exc
            for _, done, loop in batch:
                with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits for this line
                    loop.call_soon_threadsafe(_settle, done, error)

    def close(self) -> None:
        """Write what is queued, stop the writer thread and close the file."""
        with self._wake:
            self._closing = True
            self._wake.notify()
        if self._thread is not None:
            self._thread.join()
        with contextlib.suppress(OSError):  # must not hide the error that says what is safe
            self._handle.close()


def _settle(done: asyncio.Future[None], error: OSError | None) -> None:
    if done.done():  # its task was cancelled while the line was written
        return
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)


def _drop_torn_tail(path: Path, chunk: int = 1 << 16) -> None:
    """Cut a last line without its newline (what a killed write leaves), reading only the file's end."""
    with path.open("r+b") as handle:
        end = handle.seek(0, os.SEEK_END)
        position = end
        while position > 0:
            start = max(0, position - chunk)
            handle.seek(start)
            block = handle.read(position - start)
            if position == end and block.endswith(b"\n"):
                return
            newline = block.rfind(b"\n")
            if newline >= 0:
                handle.truncate(start + newline + 1)
                return
            position = start
        handle.truncate(0)
