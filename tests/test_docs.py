"""The docs site: generated reference pages match the code, every field and option is described, and
the Python example in the docs runs as written."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_reference"] = module
    spec.loader.exec_module(module)
    return module


def test_reference_pages_match_the_code() -> None:
    for path, text in _generator().pages().items():
        assert path.read_text() == text, f"{path.relative_to(ROOT)} is stale: run python docs/gen_reference.py"


def test_every_config_field_and_cli_option_is_described() -> None:
    assert _generator().undocumented() == []


def test_an_undescribed_field_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    from verify.config.verification import VerificationConfig

    field = VerificationConfig.model_fields["replicate_count"]
    monkeypatch.setattr(field, "description", None)
    assert _generator().undocumented() == ["VerificationConfig.replicate_count"]


def test_reference_marks_verify_only_and_inert_fields() -> None:
    page = _generator().config_reference()
    assert re.search(r"\| `trust_checkpoint_code` \|.*\| \(verify only\) \| yes \|", page)
    assert re.search(r"\| `task_ordering` \|.*\| `task_ordering` \| no: verify runs tasks in checkpoint order \|", page)


def test_getting_started_python_example_runs(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    (block,) = re.findall(r"```python\n(.*?)```", (DOCS / "getting-started.md").read_text(), re.S)
    monkeypatch.chdir(ROOT)
    exec(compile(block, "getting-started.md", "exec"), {})
    assert "demo-capital" in capsys.readouterr().out


def test_every_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert pages and all(page in nav for page in pages), pages
