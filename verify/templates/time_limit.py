"""The time limit on code from the checkpoint: answer templates, callable traits, regex patterns.

Such code is user code: a ``verify()`` that loops forever, or a pattern that backtracks for hours on
one answer, must not stall the other tasks of the run. Python code runs in a worker process that is
killed when it overruns (:mod:`verify.sandbox`); regex patterns run off the event loop under the
``regex`` package's own timeout. Either way the call raises :class:`CodeTimeout` and only its own
trait or task fails. The limit is per call (``RunOptions.code_time_limit``, ``Deps.code_time_limit``).
"""

from __future__ import annotations

DEFAULT_CODE_TIME_LIMIT = 10.0


class CodeTimeout(TimeoutError):
    """Code from the checkpoint did not finish within its time limit (it was stopped)."""


def overran(what: str, timeout: float) -> CodeTimeout:
    """The timeout of ``what`` (``"the template's verify()"``), in the words every caller reports."""
    return CodeTimeout(f"{what} did not finish within {timeout:g} s (an endless loop?)")
