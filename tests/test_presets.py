"""Presets: karenina preset files load unchanged; shipped presets load; saving never writes secrets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from verify.config.preset import default_presets_dirs, list_presets, load_preset, save_preset
from verify.config.verification import VerificationConfig
from verify.errors import PresetError

FIXTURES = Path(__file__).parent / "fixtures" / "karenina"
SHIPPED = Path(__file__).parent.parent / "verify" / "config" / "presets"


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def minimal_config(**kw: Any) -> dict[str, Any]:
    return {
        "answering_models": [{"id": "a", "model_provider": "openai", "model_name": "gpt-4.1-mini"}],
        "parsing_models": [{"id": "j", "model_provider": "openai", "model_name": "gpt-4.1-mini"}],
        **kw,
    }


# --------------------------------------------------------------------------- karenina fixtures


def test_karenina_full_preset_loads_unchanged() -> None:
    raw = json.loads((FIXTURES / "preset-full.json").read_text())["config"]
    config = load_preset(FIXTURES / "preset-full.json")
    assert config.evaluation_mode == raw["evaluation_mode"] == "template_only"
    assert config.deep_judgment_rubric_mode == raw["deep_judgment_rubric_mode"] == "disabled"
    for role in ("answering_models", "parsing_models"):
        for model, expected in zip(getattr(config, role), raw[role], strict=True):
            for key, value in expected.items():
                if key.endswith("_api_key"):
                    assert getattr(model, key) is None
                else:
                    assert getattr(model, key) == value, (role, key)
    for key, value in raw.items():
        if key not in {"answering_models", "parsing_models"}:
            assert getattr(config, key) == value, key


def test_karenina_minimal_preset_loads_unchanged() -> None:
    config = load_preset(str(FIXTURES / "preset-minimal.json"))
    assert config.evaluation_mode == "template_only"
    assert config.deep_judgment_rubric_mode == "disabled"
    [a], [p] = config.answering_models, config.parsing_models
    assert (a.id, a.model_provider, a.model_name, a.interface) == (
        "answerer",
        "anthropic",
        "claude-sonnet-4-6",
        "langchain",
    )
    assert (p.id, p.model_provider, p.model_name, p.system_prompt) == (
        "judge",
        "anthropic",
        "claude-haiku-4-5",
        None,
    )


def test_karenina_saved_preset_with_rubric_enabled_and_metadata_loads(tmp_path: Path) -> None:
    preset = {
        "id": "x",
        "name": "n",
        "description": None,
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
        "_comment_x": "ignored",
        "config": minimal_config(rubric_enabled=True, evaluation_mode="template_and_rubric"),
    }
    assert load_preset(write(tmp_path / "k.json", preset)).rubric_enabled


# --------------------------------------------------------------------------- shipped presets


@pytest.mark.parametrize("name", ["demo", "deep-judgment", "openai", "anthropic", "local-endpoint"])
def test_shipped_presets_load(name: str) -> None:
    config = load_preset(SHIPPED / f"{name}.json")
    assert config == load_preset(name, SHIPPED)
    raw = json.loads((SHIPPED / f"{name}.json").read_text())
    assert set(raw) - {"id", "name", "description", "config", "created_at", "updated_at"} <= {
        k for k in raw if k.startswith("_comment")
    }
    assert "api_key" not in json.dumps(raw["config"])


def test_shipped_preset_contents() -> None:
    demo = load_preset(SHIPPED / "demo.json")
    assert {m.interface for m in demo.answering_models + demo.parsing_models} == {"simulated"}
    assert (demo.evaluation_mode, demo.rubric_evaluation_strategy, demo.deep_judgment_rubric_mode) == (
        "rubric_only",
        "batch",
        "enable_all",
    )
    assert [m.id for m in demo.answering_models] == ["model-a", "model-b"]
    dj = load_preset(SHIPPED / "deep-judgment.json")
    assert (
        dj.deep_judgment_rubric_mode,
        dj.deep_judgment_rubric_search_enabled,
        dj.deep_judgment_rubric_search_tool,
    ) == (
        "enable_all",
        True,
        "simulated",
    )
    openai = load_preset(SHIPPED / "openai.json")
    assert [m.model_name for m in openai.answering_models + openai.parsing_models] == ["gpt-4.1-mini"] * 2
    assert openai.parsing_models[0].temperature == 0.0
    anthropic = load_preset(SHIPPED / "anthropic.json")
    assert [m.model_name for m in anthropic.answering_models + anthropic.parsing_models] == [
        "claude-sonnet-4-5",
        "claude-haiku-4-5",
    ]
    local = load_preset(SHIPPED / "local-endpoint.json")
    assert local.answering_models[0].endpoint_base_url == "http://localhost:11434/v1"
    assert local.answering_models[0].endpoint_api_key is None


def test_shipped_dir_is_a_default_and_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert SHIPPED.resolve() in [d.resolve() for d in default_presets_dirs()]
    assert {"demo", "deep-judgment", "openai", "anthropic", "local-endpoint"} <= {
        p.stem for p in list_presets()
    }
    assert load_preset("demo").evaluation_mode == "rubric_only"


def test_cwd_presets_win_over_shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "presets").mkdir()
    write(
        tmp_path / "presets" / "demo.json", {"config": minimal_config(evaluation_mode="template_and_rubric")}
    )
    monkeypatch.chdir(tmp_path)
    assert load_preset("demo").evaluation_mode == "template_and_rubric"
    assert (
        list_presets()[[p.stem for p in list_presets()].index("demo")].parent.resolve()
        == (tmp_path / "presets").resolve()
    )


# --------------------------------------------------------------------------- loading


def test_load_by_name_from_a_presets_dir(tmp_path: Path) -> None:
    write(tmp_path / "mine.json", {"config": minimal_config(replicate_count=3)})
    assert load_preset("mine", tmp_path).replicate_count == 3
    assert load_preset("mine.json", tmp_path).replicate_count == 3
    assert list_presets(tmp_path) == [tmp_path / "mine.json"]


def test_plain_config_dump_with_schema_key(tmp_path: Path) -> None:
    path = write(
        tmp_path / "plain.json", {"$schema": "./preset.schema.json", **minimal_config(async_max_workers=4)}
    )
    assert load_preset(path).async_max_workers == 4


def test_not_found_lists_available_presets(tmp_path: Path) -> None:
    write(tmp_path / "alpha.json", {"config": minimal_config()})
    with pytest.raises(PresetError) as info:
        load_preset("beta", tmp_path)
    assert "'beta' not found" in info.value.message and "available presets: alpha" in info.value.message
    with pytest.raises(PresetError, match="not found"):
        load_preset(tmp_path / "missing" / "x.json")


def test_bad_key_gives_a_located_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "presets").mkdir()
    write(
        tmp_path / "presets" / "x.json", {"config": minimal_config(deep_judgment_rubric_modee="enable_all")}
    )
    with pytest.raises(PresetError) as info:
        load_preset("x")
    assert info.value.message == (
        "preset presets/x.json: config.deep_judgment_rubric_modee: unknown field; did you mean deep_judgment_rubric_mode?"
    )
    assert info.value.hint and "_comment" in info.value.hint


def test_several_bad_values_are_each_located(tmp_path: Path) -> None:
    config = minimal_config(evaluation_mode="rubric", async_max_workers=0)
    config["parsing_models"][0]["temprature"] = 0
    with pytest.raises(PresetError) as info:
        load_preset(write(tmp_path / "bad.json", {"config": config}))
    lines = info.value.message.splitlines()
    assert len(lines) == 3 and all(
        line.startswith(f"preset {tmp_path / 'bad.json'}: config.") for line in lines
    )
    assert any(
        "config.parsing_models[0].temprature: unknown field; did you mean temperature?" in line
        for line in lines
    )
    assert any("config.evaluation_mode: Input should be" in line for line in lines)


def test_cross_field_problem_in_preset(tmp_path: Path) -> None:
    path = write(tmp_path / "c.json", {"config": minimal_config(deep_judgment_rubric_mode="custom")})
    with pytest.raises(
        PresetError, match="config.deep_judgment_rubric_config: deep_judgment_rubric_mode='custom' needs"
    ):
        load_preset(path)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"config": {', "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ({"config": {}}, '"config" must be a non-empty object'),
        ({"name": "x"}, 'no "config" object'),
    ],
)
def test_malformed_preset_files(tmp_path: Path, content: Any, expected: str) -> None:
    with pytest.raises(PresetError, match=expected):
        load_preset(write(tmp_path / "m.json", content))


# --------------------------------------------------------------------------- saving


def test_save_preset_never_writes_secrets(tmp_path: Path) -> None:
    config = VerificationConfig.model_validate(
        minimal_config(
            answering_models=[
                {
                    "id": "local",
                    "model_name": "llama",
                    "interface": "openai_endpoint",
                    "endpoint_base_url": "http://localhost:11434/v1",
                    "endpoint_api_key": "sk-secret",
                    "extra_kwargs": {"api_key": "sk-extra", "max_tokens": 5},
                }
            ],
            parsing_models=[
                {
                    "id": "j",
                    "model_provider": "anthropic",
                    "model_name": "claude-haiku-4-5",
                    "anthropic_api_key": "sk-ant",
                }
            ],
        )
    )
    path = save_preset(config, tmp_path / "out.json", "Local run", description="d")
    text = path.read_text()
    for secret in ("sk-secret", "sk-extra", "sk-ant", "**********", "endpoint_api_key", "anthropic_api_key"):
        assert secret not in text
    saved = json.loads(text)
    assert set(saved) == {"id", "name", "description", "config", "created_at", "updated_at"}
    assert saved["name"] == "Local run" and saved["config"]["answering_models"][0]["extra_kwargs"] == {
        "max_tokens": 5
    }
    reloaded = load_preset(path)
    assert reloaded.answering_models[0].endpoint_base_url == "http://localhost:11434/v1"
    assert reloaded.answering_models[0].endpoint_api_key is None


def test_save_preset_round_trips_and_refuses_to_overwrite(tmp_path: Path) -> None:
    config = load_preset(FIXTURES / "preset-full.json")
    path = save_preset(config, tmp_path, "My Preset!")
    assert path == tmp_path / "my-preset.json"
    assert load_preset(path) == config
    first = json.loads(path.read_text())
    with pytest.raises(PresetError, match="already exists") as info:
        save_preset(config, path, "My Preset!")
    assert info.value.hint and "overwrite=True" in info.value.hint
    assert json.loads(path.read_text()) == first
    save_preset(config, path, "My Preset!", overwrite=True)
    second = json.loads(path.read_text())
    assert (second["id"], second["created_at"]) == (first["id"], first["created_at"])


def test_save_preset_refuses_what_cannot_be_stored(tmp_path: Path) -> None:
    def search(query: str) -> str:
        return query

    config = VerificationConfig.model_validate(
        minimal_config(deep_judgment_rubric_search_enabled=True, deep_judgment_rubric_search_tool=search)
    )
    with pytest.raises(PresetError, match="callable"):
        save_preset(config, tmp_path / "c.json", "c")
    manual = VerificationConfig.model_validate(
        minimal_config(answering_models=[{"interface": "manual", "manual_traces": {"q": "secret answer"}}])
    )
    with pytest.raises(PresetError, match="manual traces"):
        save_preset(manual, tmp_path / "m.json", "m")
    assert not (tmp_path / "m.json").exists() and not (tmp_path / "c.json").exists()
    with pytest.raises(PresetError, match="1 to 100"):
        save_preset(VerificationConfig.model_validate(minimal_config()), tmp_path / "n.json", " ")


def test_nested_header_secrets_never_reach_presets_or_show_config(tmp_path) -> None:
    from verify.config.models import ModelConfig
    from verify.config.report import config_to_dict
    from verify.config.verification import VerificationConfig

    judge = ModelConfig(
        id="judge", model_provider="openai", model_name="gpt-4.1-mini",
        extra_kwargs={
            "default_headers": {"Authorization": "Bearer sk-SECRETSECRET123", "X-Team": "eval"},
            "header_pairs": [["X-Api-Key", "abcd1234efgh"], ["X-Trace", "on"]],
            "timeout_note": "uses key sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ012345",
            "model_kwargs": {"user": "pk-research-team-01", "secret_mode": True},
        },
    )
    config = VerificationConfig(answering_models=[judge], parsing_models=[judge])
    path = save_preset(config, tmp_path / "p.json", "p")
    for text in (path.read_text(), json.dumps(config_to_dict(config)), repr(config)):
        assert "SECRETSECRET123" not in text and "ABCDEFGHIJKLMNOP" not in text and "abcd1234efgh" not in text
    saved = path.read_text()
    assert "eval" in saved and "X-Trace" in saved  # harmless headers are kept
    assert "pk-research-team-01" in saved and '"secret_mode": true' in saved  # names and flags are not secrets


def _plain_config(**fields: Any) -> VerificationConfig:
    model = {"id": "a", "model_name": "gpt-4.1-mini", "model_provider": "openai", "interface": "langchain"}
    return VerificationConfig.model_validate({"answering_models": [model], "parsing_models": [model], **fields})


def test_a_saved_preset_leaves_verify_only_fields_out_while_they_hold_their_defaults(tmp_path: Path) -> None:
    from verify.config.preset_files import (
        VERIFY_ONLY_FIELDS,
        VERIFY_ONLY_MODEL_FIELDS,
        VERIFY_ONLY_RETRY_FIELDS,
    )

    saved = json.loads(save_preset(_plain_config(), tmp_path / "p.json", "p").read_text())["config"]
    assert not set(saved) & VERIFY_ONLY_FIELDS and "async_max_workers" not in saved
    assert not set(saved["answering_models"][0]) & VERIFY_ONLY_MODEL_FIELDS
    assert not set(saved["retry_policy"]) & VERIFY_ONLY_RETRY_FIELDS
    used = _plain_config(deep_judgment_rubric_strategy="batched", async_max_workers=4)
    again = json.loads(save_preset(used, tmp_path / "q.json", "q").read_text())["config"]
    assert again["deep_judgment_rubric_strategy"] == "batched" and again["async_max_workers"] == 4
    assert load_preset(tmp_path / "q.json").deep_judgment_rubric_strategy == "batched"


def test_karenina_loads_a_preset_verify_saved(tmp_path: Path) -> None:
    import subprocess

    from peers import karenina_python

    python = karenina_python()
    if python is None:
        pytest.skip("karenina is not importable (set KARENINA_PYTHON to an interpreter that has it)")
    path = save_preset(_plain_config(), tmp_path / "p.json", "p")
    code = ("import sys; from pathlib import Path; from karenina.schemas.verification import VerificationConfig; "
            "c = VerificationConfig.from_preset(Path(sys.argv[1])); print(len(c.answering_models), c.evaluation_mode)")
    proc = subprocess.run([python, "-c", code, str(path)], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["1", "template_only"]
