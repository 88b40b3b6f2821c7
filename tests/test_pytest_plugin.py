"""The pytest plugin, run by pytest's own ``pytester``: the documented example of docs/ci.md passes and
fails as documented, suite files are collected as tests on request only, and a suite that does not load
is a collection error. Offline: the simulated judge, recorded answers.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent
QUIET = ("-p", "no:cacheprovider", "-p", "no:asyncio")  # the inner runs need neither

SUITE = """
name: plugin
tests:
  - id: paris
    input: What is the capital of France?
    output: The capital of France is Paris.
    assertions:
      - {type: contains, value: Paris}
  - id: lima
    input: What is the capital of Peru?
    output: I do not know.
    assertions:
      - {type: contains, value: Lima}
"""


def documented_example() -> str:
    text = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    found = re.search(r"```python\n(# test_answers\.py\n.*?)```", text, re.S)
    assert found, "docs/ci.md lost its test_answers.py example"
    return found.group(1)


def test_documented_example_passes_and_fails_as_documented(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_answers=documented_example())
    result = pytester.runpytest_inprocess(*QUIET)
    result.assert_outcomes(passed=1, failed=1)
    documented = (REPO / "docs" / "ci.md").read_text(encoding="utf-8").split("fails with\n\n```\n")[1].split("```")[0]
    for line in documented.strip().splitlines():
        result.stdout.fnmatch_lines([f"E*{line.strip()}"])


def test_suite_files_are_collected_only_when_asked(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=SUITE)
    assert pytester.runpytest_inprocess(*QUIET).ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result = pytester.runpytest_inprocess(*QUIET, "--verify-suite", "suite.yaml", "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*suite.yaml::paris PASSED*", "*suite.yaml::lima FAILED*",
                                 "*contains-lima: failed (false, required) - not found in the answer*"])


def test_verify_collect_picks_up_verify_yaml_files(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", verify_capitals=SUITE)
    pytester.makeini("[pytest]\nverify_collect = true\n")
    pytester.runpytest_inprocess(*QUIET).assert_outcomes(passed=1, failed=1)


def test_a_suite_that_does_not_load_is_a_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", broken="tests:\n  - id: x\n    input: Q?\n    assertions: [{type: contians, value: a}]\n")
    result = pytester.runpytest_inprocess(*QUIET, "--verify-suite", "broken.yaml")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*type 'contians' is not supported; did you mean contains?*"])


def test_check_test_judges_an_answer_against_a_suite_test(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", suite=SUITE)
    pytester.makepyfile(test_it="""
def test_it(verify_judge):
    assert verify_judge.check_test("suite.yaml", "lima", "Lima is the capital of Peru.").passed
    assert verify_judge.check_test("suite.yaml", "lima").outcome == "failed"  # its recorded output
""")
    pytester.runpytest_inprocess(*QUIET).assert_outcomes(passed=1)
