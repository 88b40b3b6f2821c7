"""The docs site: generated reference pages match the code, every field and option is described, every
page is in the nav, every relative link resolves, and the examples in the docs are true of the code."""

from __future__ import annotations

import importlib.util
import re
import sys
import unicodedata
from pathlib import Path
from types import ModuleType

import pytest
import typer
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


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


def _nav_pages(entries: object) -> list[str]:
    """Every page a mkdocs ``nav`` names, at any depth."""
    if isinstance(entries, str):
        return [entries]
    if isinstance(entries, list):
        return [page for entry in entries for page in _nav_pages(entry)]
    if isinstance(entries, dict):
        return [page for value in entries.values() for page in _nav_pages(value)]
    return []


def test_the_nav_names_every_page_once_and_only_pages_that_exist() -> None:
    nav = _nav_pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])
    on_disk = sorted(str(p.relative_to(DOCS)) for p in PAGES)
    assert sorted(nav) == on_disk


def _slug(heading: str) -> str:
    """The id Python-Markdown's toc extension (mkdocs' default) gives a heading."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


def _anchors(path: Path) -> set[str]:
    """The heading ids mkdocs gives a page (toc's slugify of the heading text, code marks dropped)."""
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    headings = re.findall(r"^#{1,6} +(.+?) *$", text, re.M)
    return {_slug(re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h).replace("`", "")) for h in headings}


def _broken_links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        if not linked.is_file():
            broken.append(f"{target} (no file {file_part})")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target} (no heading #{anchor} in {linked.name})")
    return broken


@pytest.mark.parametrize("page", [ROOT / "README.md", *PAGES], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert _broken_links(page) == []


def test_a_broken_link_or_anchor_is_caught(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Title\n\n## Exit codes\n")
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md#exit-codes) [gone](c.md) [no anchor](a.md#exit) [here](#nowhere) [web](https://x.org)\n")
    assert _broken_links(page) == ["c.md (no file c.md)", "a.md#exit (no heading #exit in a.md)",
                                   "#nowhere (no heading #nowhere in b.md)"]


def test_every_flag_the_docs_name_is_an_option() -> None:
    from verify.cli import app

    group = typer.main.get_command(app)
    commands = list(getattr(group, "commands", {}).values()) or [group]
    options = {opt for command in commands for param in command.params for opt in [*param.opts, *param.secondary_opts]}
    prose = [p for p in [ROOT / "README.md", *PAGES] if "reference" not in p.parts]
    named = {flag for p in prose for flag in re.findall(r"(?<![\w-])--[a-z][a-z-]*[a-z]", p.read_text())}
    named -= {"--no"}  # "--no-..." = negation
    # Other programs' options the docs name: click's, mkdocs build, the simulated server, the benchmarks.
    named -= {"--help", "--strict", "--port", "--latency-ms", "--only", "--quick", "--calls",
                 "--capacity", "--latency-cv", "--over-capacity",
                 "--verify-preset", "--verify-suite"}  # the last two: the pytest plugin's (pytest's command line)
    assert len(named) > 60 and sorted(named - options) == []


def test_every_repository_file_the_docs_name_exists() -> None:
    prose = [ROOT / "README.md", *(p for p in PAGES if "reference" not in p.parts)]
    named = {m for p in prose for m in re.findall(r"\b(?:benchmarks|verify|tests)/[\w./-]*\.(?:py|json|jsonld|yaml|md)\b",
                                                p.read_text())}
    assert named and sorted(n for n in named if not (ROOT / n).exists()) == []


def test_stage_table_lists_the_pipeline_in_order() -> None:
    from verify.run.pipeline import FINALIZE, STAGES

    text = (DOCS / "concepts.md").read_text()
    table = re.search(r"\| stage \| what it does \|\n\|---\|---\|\n(.*?)\n\n", text, re.S)
    assert table is not None
    listed = [n.strip() for row in table.group(1).splitlines() for n in row.split("|")[1].split(",")]
    built = [s.name for s in STAGES] + [FINALIZE]
    assert [n for n in listed if n in built] == built


def test_the_custom_mode_example_is_a_valid_file() -> None:
    import json

    from verify.config.deep_judgment import DeepJudgmentRubricCustomConfig, DeepJudgmentTraitConfig

    page = (DOCS / "deep-judgment.md").read_text()
    (block,) = re.findall(r"```json\n(.*?)```", page, re.S)
    custom = DeepJudgmentRubricCustomConfig.model_validate(json.loads(block))
    assert custom.resolve("demo-capital", "tone") == DeepJudgmentTraitConfig(enabled=False)
    settings = re.findall(r"^\| `(\w+)` \|", page.split("## The custom-mode file", 1)[1].split("\n## ", 1)[0], re.M)
    assert settings == list(DeepJudgmentTraitConfig.model_fields)


def _first_column(page: str, section: str) -> list[str]:
    """The code-marked names in the first column of the tables of a section of a docs page."""
    body = (DOCS / page).read_text().split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([^`]+)`", body, re.M)


def test_the_tables_name_what_the_code_has() -> None:
    from typing import get_args

    from verify.config.gates import METRICS
    from verify.results.models import Verdict
    from verify.results.revisions import Status

    assert sorted(_first_column("verdicts.md", "Verdicts and coverage")) == sorted(get_args(Verdict))
    assert _first_column("verdicts.md", "Gates") == list(METRICS)
    assert _first_column("agents.md", "Revise until satisfied (deepagents)") == list(get_args(Status))
    shipped = sorted(p.stem for p in (ROOT / "verify" / "config" / "presets").glob("*.json"))
    assert sorted(_first_column("presets.md", "Shipped presets")) == shipped


def test_top_level_help_is_printed_without_importing_typer() -> None:
    import subprocess
    import sys

    code = ("import atexit, sys; sys.argv = ['verify', '--help']; atexit.register(lambda: print('typer' in "
            "sys.modules, 'pydantic' in sys.modules, file=sys.stderr)); from verify.__main__ import main; main()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**__import__("os").environ, "COLUMNS": "100"})
    assert done.stdout == (ROOT / "verify" / "help.txt").read_text(encoding="utf-8")
    assert done.stderr.split() == ["False", "False"]
    # anything else goes to the CLI (and a narrow terminal gets the app's own rendering)
    narrow = subprocess.run([sys.executable, "-c", code.replace("['verify', '--help']", "['verify', 'run', '--help']")],
                            capture_output=True, text=True, check=True)
    assert "--deep-judgment-rubric-mode" in narrow.stdout and narrow.stderr.split() == ["True", "True"]
