"""An exclusive, OS-level lock on a run's output for the whole life of the run.

Two runs writing one results file would interleave their progress and the last export would win:
the second run fails at once instead, naming the process that holds the lock. The lock is an
``flock`` on ``<output>.lock``, so it is released by the OS when the holder dies (even on SIGKILL)
and a stale lock file never blocks a later run. The file is removed by its holder while still
locked; a waiter that got the lock on a file that was removed meanwhile tries again.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from datetime import UTC, datetime
from pathlib import Path

from verify.errors import ConfigError

__all__ = ["OutputLock", "lock_path"]


def lock_path(output: Path) -> Path:
    return output.with_name(output.name + ".lock")


class OutputLock:
    """``with OutputLock(output):`` or ``lock = OutputLock(output).acquire()`` ... ``lock.release()``."""

    def __init__(self, output: Path) -> None:
        self.output = output
        self.path = lock_path(output)
        self._fd: int | None = None

    def acquire(self) -> OutputLock:
        for _ in range(20):  # only repeats when the holder removed the file between our open and lock
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                raise ConfigError(
                    f"output {self.output} is in use by another verify run ({holder})",
                    "wait for that run to finish, or choose another --output",
                ) from None
            except OSError as exc:
                os.close(fd)
                raise ConfigError(f"cannot lock {self.path}: {exc.strerror}", "pick a writable --output") from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            stamp = f"pid {os.getpid()} on {socket.gethostname()}, started {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC\n"
            with contextlib.suppress(OSError):  # the lock holds even if the note cannot be written
                os.ftruncate(fd, 0)
                os.pwrite(fd, stamp.encode(), 0)
            self._fd = fd
            return self
        raise ConfigError(f"cannot lock {self.path}: it keeps being replaced", "check for other verify runs on this output")

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()  # while still locked, so no other run holds a lock on a removed file
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    return text or "another process"
