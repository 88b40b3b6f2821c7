"""Run code from a checkpoint (answer templates) off the event loop, with a time limit.

Template code is user code: a ``verify()`` that loops forever must not stall the other tasks of the
run. Each call runs in its own daemon thread; the task waits at most ``timeout`` seconds. A thread
that overruns cannot be killed in Python: it is abandoned (daemon, so it does not block exit) and
the task records a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
DEFAULT_CODE_TIME_LIMIT = 10.0


class CodeTimeout(TimeoutError):
    """Template code did not finish within its time limit."""


async def run_code(fn: Callable[..., T], *args: Any, timeout: float = DEFAULT_CODE_TIME_LIMIT, what: str = "template code") -> T:
    """``fn(*args)`` in a daemon thread; its exception is re-raised as is; overrunning raises CodeTimeout."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():
            return  # the waiter gave up (timeout); nothing to deliver
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def deliver(result: T | None, error: BaseException | None) -> None:
        # RuntimeError: the run (and its event loop) ended while this code was still going
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, result, error)

    def target() -> None:
        try:
            value = fn(*args)
        except Exception as exc:
            # StopIteration cannot be set on a future; TimeoutError would read as our own timeout
            if isinstance(exc, StopIteration | TimeoutError):
                exc = RuntimeError(f"{type(exc).__name__}: {exc}")
            deliver(None, exc)
        except BaseException as exc:  # noqa: BLE001 - template code must not stop the run
            deliver(None, RuntimeError(f"template code raised {type(exc).__name__}: {exc}"))
        else:
            deliver(value, None)

    threading.Thread(target=target, name="verify-template-code", daemon=True).start()
    try:
        return await asyncio.wait_for(future, timeout)
    except TimeoutError:
        raise CodeTimeout(f"{what} did not finish within {timeout:g} s (an endless loop?)") from None
