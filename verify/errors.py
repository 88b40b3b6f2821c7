"""Exceptions raised by verify.

The tree::

    VerifyError
    ├── UserError            a problem in the user's files, flags or config; one clean message + hint
    │   ├── BenchmarkError   a checkpoint that cannot be loaded (lists every problem found)
    │   ├── ConfigError      an invalid VerificationConfig / override / flag combination
    │   └── PresetError      a preset that cannot be found or read
    ├── ModelError           a model call that failed for good (after retries)
    │   └── ModelSetupError  a provider package or credential is missing (also a UserError)
    └── SearchError          a search call that failed for good

Failures of one task (a judge that keeps timing out, an unparseable reply) are recorded on that
task's result as data; exceptions only escape for problems that stop the whole run.
"""

from __future__ import annotations


class VerifyError(Exception):
    """Base class of every error raised on purpose by verify."""


class UserError(VerifyError):
    """A mistake the user can fix. Rendered by the CLI as ``error: ...`` plus ``hint: ...``."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} (hint: {self.hint})"


class BenchmarkError(UserError):
    """A checkpoint file is malformed. ``problems`` lists each located problem."""

    def __init__(self, path: str, problems: list[str], hint: str | None = None) -> None:
        self.path = path
        self.problems = problems
        shown = problems[:10]
        more = f"; and {len(problems) - 10} more" if len(problems) > 10 else ""
        message = f"{path}: {len(problems)} problem(s): " + "; ".join(shown) + more
        super().__init__(message, hint or "fix the listed entries in the checkpoint and run again")


class ConfigError(UserError):
    """The verification config (or an override, flag or preset value) is invalid."""


class PresetError(UserError):
    """A preset cannot be found or read."""


class ModelError(VerifyError):
    """A model call failed for good (retries exhausted or a permanent error)."""

    def __init__(self, message: str, category: str = "permanent") -> None:
        super().__init__(message)
        self.category = category


class ModelSetupError(ModelError, UserError):
    """A provider package or credential is missing; names what to install or set."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        UserError.__init__(self, message, hint)
        self.category = "permanent"


class SearchError(VerifyError):
    """A search call failed for good."""
