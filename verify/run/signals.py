"""Stopping a run on SIGTERM or Ctrl-C so that what finished is saved and the run can be resumed.

asyncio's own Ctrl-C handling raises KeyboardInterrupt after the fact; SIGTERM (what ``kill``,
``timeout`` and schedulers send) would end the process with no message. Both instead cancel the
run's main task, the runner saves what finished and raises ``RunInterrupted`` naming the signal.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["Terminated", "raise_terminated", "stop_on_signals"]


class Terminated(KeyboardInterrupt):
    """SIGTERM outside the run loop (start-up, reading inputs): stops like Ctrl-C, but the command
    exits 143 (128 + SIGTERM) as a process killed by ``kill`` or a scheduler is expected to."""


def raise_terminated(signum: int, frame: object) -> None:
    """The SIGTERM handler from start-up until the run loop installs its own."""
    raise Terminated


@contextlib.contextmanager
def stop_on_signals() -> Iterator[dict[str, str]]:
    """SIGTERM and the first Ctrl-C cancel the run so what finished is saved; a second Ctrl-C is
    the usual hard KeyboardInterrupt. Only in the main thread (signals cannot be handled elsewhere)."""
    stopped: dict[str, str] = {}
    main = asyncio.current_task()
    if threading.current_thread() is not threading.main_thread() or main is None:
        yield stopped
        return
    loop = asyncio.get_running_loop()

    def stop(name: str) -> None:
        if stopped:
            raise KeyboardInterrupt
        stopped["signal"] = name
        main.cancel()

    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop, sig.name)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    try:
        yield stopped
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
