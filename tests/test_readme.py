"""README examples are code: the Python example runs as written, the stage table matches the pipeline."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_python_example_runs(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (block,) = re.findall(r"```python\n(.*?)```", README, re.S)
    monkeypatch.chdir(ROOT)
    exec(compile(block, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "demo-capital" in out and "clarity" in out


def test_stage_table_lists_the_pipeline_in_order() -> None:
    from verify.run.pipeline import FINALIZE, STAGES

    table = re.search(r"\| stage \| what it does \|\n\|---\|---\|\n(.*?)\n\n", README, re.S)
    assert table is not None
    listed = [n.strip() for row in table.group(1).splitlines() for n in row.split("|")[1].split(",")]
    built = [s.name for s in STAGES] + [FINALIZE]
    assert [n for n in listed if n in built] == built
