"""verify's pytest plugin (registered by the ``pytest11`` entry point when verify is installed).

- The ``verify_judge`` fixture: a :class:`verify.testing.Judge` for the session, whose ``assert_passes``
  fails the test with the failing traits, their reasons and quotes. Its config is the preset named by
  ``--verify-preset`` (or the ``verify_preset`` ini option), else the offline simulated judge.
- Suite files as tests, opt-in: ``pytest --verify-suite suite.yaml`` (repeatable; a CSV or JSONL dataset
  too) collects one test per suite test, which passes when verify's verdict is ``passed``; with the
  ``verify_collect = true`` ini option, files named ``verify_*.yaml`` are collected wherever pytest looks.

Nothing of verify is imported until a fixture or a suite is used, so the plugin costs other test
suites nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from verify.testing.judge import Judge

__all__ = ["pytest_addoption", "pytest_collect_file", "pytest_configure", "verify_judge"]

_SUITES = pytest.StashKey[set[Path]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("verify", "verify: judge LLM answers")
    group.addoption("--verify-suite", action="append", default=[], metavar="FILE",
                    help="collect each test of this verify suite (.yaml, .json, .csv, .jsonl) as a pytest test")
    group.addoption("--verify-preset", default=None, metavar="PRESET",
                    help="the preset (file, or name in ./presets) of the verify_judge fixture and suite tests; "
                         "default: the offline simulated judge")
    parser.addini("verify_preset", "default of --verify-preset", default="")
    parser.addini("verify_collect", "collect files named verify_*.yaml as verify suites", type="bool", default=False)


def pytest_configure(config: pytest.Config) -> None:
    suites = [Path(p) for p in config.getoption("verify_suite")]
    config.stash[_SUITES] = {p.resolve() for p in suites}
    for path in suites:  # collected even when not among the paths pytest was given
        if not path.is_file():
            raise pytest.UsageError(f"--verify-suite {path}: no such file; give the path of a suite file")
        if str(path) not in config.args:
            config.args.append(str(path))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    config = parent.config
    named = file_path.resolve() in config.stash.get(_SUITES, set())
    found = bool(config.getini("verify_collect")) and file_path.suffix in (".yaml", ".yml") \
        and file_path.name.startswith("verify_")
    if named or found:
        return SuiteFile.from_parent(parent, path=file_path)
    return None


def _judge(config: pytest.Config) -> Judge:
    from verify.testing.judge import Judge

    preset = config.getoption("verify_preset") or config.getini("verify_preset")
    if not preset:
        return Judge()
    from verify.config.preset import load_preset

    return Judge(load_preset(str(preset)))


@pytest.fixture(scope="session")
def verify_judge(pytestconfig: pytest.Config) -> Judge:
    """A judge for answers: ``verify_judge.assert_passes(answer, question=..., criteria=[...], assertions=[...])``."""
    return _judge(pytestconfig)


class SuiteFile(pytest.File):
    """A suite file: one :class:`SuiteTest` per test (per question of a dataset)."""

    def collect(self) -> Iterator[pytest.Item]:
        from verify.benchmark.suite import load_suite
        from verify.errors import UserError

        try:
            self.suite = load_suite(self.path)
        except UserError as exc:  # the suite's located problems are the collection error
            raise self.CollectError(f"{exc.message}\nhint: {exc.hint}") from None
        for question in self.suite.benchmark.questions:
            yield SuiteTest.from_parent(self, name=question.id)


class SuiteTest(pytest.Item):
    """One test of a suite, judged with its recorded output (or the preset's answering model)."""

    def runtest(self) -> None:
        assert isinstance(self.parent, SuiteFile)
        judgment = _judge(self.config).check_suite_test(self.parent.suite, self.name)
        if not judgment.passed:
            raise SuiteTestFailed(judgment.explain())

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, SuiteTestFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"verify suite test {self.name}"


class SuiteTestFailed(AssertionError):
    """A suite test whose verdict is not ``passed``: the message is the reasons."""

