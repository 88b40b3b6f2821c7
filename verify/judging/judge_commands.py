"""The command runner a tool judge may call: one of the trait's given commands, in a child process.

The judge names a command by its exact text; anything not on the trait's list is refused without
running. The command line is split into arguments (``shlex``) and started without a shell, in its
own process group, with stdin closed; past its time limit the whole group is killed. The result is
text for the judge: the exit code and the (truncated) output, or why nothing ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal

__all__ = ["OUTPUT_LIMIT", "run_command"]

OUTPUT_LIMIT = 4000


def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - no process groups
            proc.kill()


async def run_command(command: str, allowed: list[str], timeout: float) -> str:
    """Run ``command`` when it is one of ``allowed``; the judge's view of what happened."""
    if command not in allowed:
        return f"refused: {command!r} is not one of the allowed commands {allowed}"
    try:
        proc = await asyncio.create_subprocess_exec(
            *shlex.split(command), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT, start_new_session=True,
        )
    except (OSError, ValueError) as exc:
        return f"could not start {command!r}: {type(exc).__name__}: {exc}"
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        _kill(proc)
        with contextlib.suppress(Exception):
            await proc.wait()
        return f"timed out after {timeout:g}s: {command!r} was stopped"
    except asyncio.CancelledError:
        _kill(proc)
        raise
    text = out.decode("utf-8", "replace")
    if len(text) > OUTPUT_LIMIT:
        text = text[:OUTPUT_LIMIT] + f"\n... ({len(text) - OUTPUT_LIMIT} more characters cut)"
    return f"exit code {proc.returncode}\n{text}"
