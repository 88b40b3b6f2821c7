"""Judging answers from tests: :class:`Judge` and :func:`assert_passes` (``verify.testing.judge``), and
the pytest plugin built on them (``verify.testing.pytest_plugin``, registered by the ``pytest11`` entry
point: the ``verify_judge`` fixture and suite files collected as tests).

The names are imported on first use (PEP 562): pytest imports the plugin in every test run of every
project where verify is installed, and must not pay for verify's models there.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from verify.testing.judge import Judge, Judgment, assert_passes, offline_config

__all__ = ["Judge", "Judgment", "assert_passes", "offline_config"]


def __getattr__(name: str) -> _typing.Any:
    if name in __all__:
        return getattr(_importlib.import_module("verify.testing.judge"), name)
    raise AttributeError(f"module 'verify.testing' has no attribute {name!r}")
