"""The README is a landing page: short, its Python example runs as written, and it links every docs page."""

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


def test_readme_is_a_landing_page_that_links_every_docs_page() -> None:
    assert len(README.splitlines()) <= 200
    linked = set(re.findall(r"\]\(docs/([\w./-]+\.md)\)", README))
    guides = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert guides <= linked, sorted(guides - linked)
