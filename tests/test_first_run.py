"""The first run of a new user: `verify init`, the shipped examples, a lean start-up, help that can be
read at 80 columns, and the messages for common first mistakes. Offline, with the simulated models."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner, Result

from verify.cli import app
from verify.cli.inputs import default_output
from verify.config.preset import load_preset
from verify.errors import ModelSetupError
from verify.llm.adapters.tavily import make_search

EXAMPLES = resources.files("verify") / "examples"


def invoke(*args: object, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args], env=env)


def test_the_examples_ship_in_the_package() -> None:
    for name in ("demo/demo.jsonld", "demo/answers.json", "suite/suite.yaml", "suite/offline.json",
                 "suite/quality_rubric.txt", "init/README.md"):
        assert (EXAMPLES / name).is_file(), name
    for name in ("base.js", "charts.js", "table.js", "view.js", "agent.js", "page.css"):
        assert (resources.files("verify.report") / "assets" / name).is_file(), name


def test_init_writes_a_project_that_runs_offline_as_its_readme_says(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    made = invoke("init", tmp_path / "demo")
    assert made.exit_code == 0, made.output
    assert "verify suite.yaml --preset offline" in made.output
    project = tmp_path / "demo"
    readme = (project / "README.md").read_text(encoding="utf-8")
    assert "verify suite.yaml --preset offline" in readme and "word overlap" in readme  # the judge, honestly
    monkeypatch.chdir(project)
    first = invoke("suite.yaml", "--preset", "offline", "--no-cache")
    assert first.exit_code == 0, first.output
    assert (project / "verify-results" / "suite.json").is_file()
    # the same command again keeps the first run and writes beside it
    second = invoke("suite.yaml", "--preset", "offline", "--no-cache")
    assert second.exit_code == 0, second.output
    assert (project / "verify-results" / "suite-2.json").is_file()
    assert "verify report verify-results/suite-2.json" in second.output  # the closing hint
    assert "--preset local" in readme and json.loads((project / "presets" / "local.json").read_text())["config"]


def test_init_replaces_nothing_without_overwrite(tmp_path: Path) -> None:
    (tmp_path / "suite.yaml").write_text("mine", encoding="utf-8")
    refused = invoke("init", tmp_path)
    assert refused.exit_code == 1 and "would replace" in refused.output and "--overwrite" in refused.output
    assert (tmp_path / "suite.yaml").read_text(encoding="utf-8") == "mine"
    assert not (tmp_path / "README.md").exists()  # nothing written until every name was checked
    assert invoke("init", tmp_path, "--overwrite").exit_code == 0


def test_default_output_does_not_collide(tmp_path: Path) -> None:
    folder = tmp_path / "verify-results"
    assert default_output(Path("x/demo.jsonld"), folder) == folder / "demo.json"
    folder.mkdir()
    (folder / "demo.json").write_text("{}", encoding="utf-8")
    (folder / "demo-2.json.progress.jsonl").write_text("", encoding="utf-8")  # an unfinished run's name
    assert default_output(Path("demo.jsonld"), folder) == folder / "demo-3.json"


def test_run_help_at_80_columns_cuts_no_flag_name() -> None:
    shown = invoke("run", "--help", env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"})
    assert shown.exit_code == 0
    assert "…" not in shown.output and max(len(line) for line in shown.output.splitlines()) <= 80
    command = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    for param in command.params:
        if not getattr(param, "hidden", False):
            for name in [*param.opts, *param.secondary_opts]:
                if name.startswith("--"):
                    assert name in shown.output, name
    assert "Deep judgment (rubrics):" in shown.output  # the groups stay


def test_help_loads_no_models() -> None:
    probe = ("import sys; from typer.testing import CliRunner; from verify.cli import app; "
             "r = CliRunner().invoke(app, ['--help']); s = CliRunner().invoke(app, ['run', '--help']); "
             "assert r.exit_code == s.exit_code == 0; "
             "print(sorted(m for m in sys.modules if m.startswith(('verify.benchmark', 'verify.results', "
             "'verify.config', 'verify.run.runner', 'verify.secrets', 'rich'))))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_a_mistyped_command_is_named_with_the_list(tmp_path: Path) -> None:
    result = invoke("eval", "suite.yaml")
    assert result.exit_code == 2
    assert "unknown command 'eval'" in result.output
    for name in ("run", "report", "convert", "init"):
        assert name in result.output


def test_parsing_provider_simulated_is_explained() -> None:
    demo = EXAMPLES / "demo" / "demo.jsonld"
    result = invoke(demo, "--parsing-provider", "simulated", "--parsing-model", "judge", "--show-config")
    assert result.exit_code == 1
    assert "'simulated' is an interface, not a provider" in result.output
    assert "--interface simulated" in result.output


def test_the_demo_preset_searches_offline() -> None:
    config = load_preset("demo")
    assert config.deep_judgment_rubric_search_tool == "simulated"
    assert config.deep_judgment_search_tool == "simulated"


def test_a_suites_shared_outputs_run_once_with_two_answering_models(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = invoke(EXAMPLES / "suite" / "suite.yaml", "--preset", "demo", "--no-cache", "--output", out)
    assert result.exit_code == 0, result.output
    assert "only the first ('model-a') is run" in result.output
    assert len(json.loads(out.read_text(encoding="utf-8"))["results"]) == 3  # 3 tests, not 6


def test_the_by_trait_column_counts_bars_only_where_a_verdict_was_given(tmp_path: Path) -> None:
    demo = EXAMPLES / "demo"
    out = tmp_path / "out.json"
    scores_only = invoke(demo / "demo.jsonld", "--preset", "demo", "--answers", demo / "answers.json",
                         "--no-cache", "--output", out)
    assert scores_only.exit_code == 0, scores_only.output
    clarity = next(line for line in scores_only.output.splitlines() if "clarity" in line)
    assert "0/8" not in clarity and clarity.rstrip(" │").endswith("-")


def test_a_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    monkeypatch.setitem(sys.modules, "tavily", None)  # as if the [tavily] extra were not installed
    search = make_search("tavily", api_key="tvly-test-key-not-used")
    with pytest.raises(ModelSetupError) as caught:
        asyncio.run(search.search("q"))
    assert "verify-judge[tavily]" in caught.value.message and "pip install" in (caught.value.hint or "")


def test_a_missing_provider_sdk_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from verify.config.models import ModelConfig
    from verify.llm.adapters.langchain import LangChainModel

    monkeypatch.setitem(sys.modules, "langchain.chat_models", None)
    config = ModelConfig(id="judge", model_name="claude-x", model_provider="anthropic", interface="langchain")
    with pytest.raises(ModelSetupError) as caught:
        LangChainModel(config, api_key_env={"ANTHROPIC_API_KEY": "sk-ant-test"})._init("claude-x", "anthropic", {})
    assert "verify-judge[anthropic]" in caught.value.message
