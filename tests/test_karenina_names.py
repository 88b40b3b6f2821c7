"""karenina's public Python names for config, presets and benchmarks, with karenina's signatures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import verify
from verify import Benchmark, ModelRetryConfig, ToolRetryConfig, VerificationConfig
from verify.benchmark.traits import Rubric

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "karenina"
DEMO = REPO / "verify" / "examples" / "demo" / "demo.jsonld"


def test_a_karenina_preset_script_runs_after_changing_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # karenina: from karenina.schemas.verification import VerificationConfig
    config = VerificationConfig.from_overrides(answering_model="gpt-4.1-mini", parsing_model="gpt-4.1-mini")
    meta = config.save_preset("Nightly Run", description="for CI", presets_dir=tmp_path)
    assert set(meta) == {"id", "name", "description", "filepath", "created_at", "updated_at"}
    assert Path(meta["filepath"]) == (tmp_path / "nightly-run.json").resolve()
    loaded = VerificationConfig.from_preset(Path(meta["filepath"]))
    assert loaded.parsing_models[0].model_name == "gpt-4.1-mini"
    with pytest.raises(verify.PresetError, match="already exists"):  # never replaced silently
        config.save_preset("Nightly Run", presets_dir=tmp_path)
    monkeypatch.setenv("KARENINA_PRESETS_DIR", str(tmp_path / "env"))
    assert Path(config.save_preset("other")["filepath"]).parent == (tmp_path / "env").resolve()
    assert VerificationConfig.sanitize_preset_name("My Preset!") == "my-preset.json"
    with pytest.raises(ValueError, match="cannot be empty"):
        VerificationConfig.validate_preset_metadata("  ")
    structure = VerificationConfig.create_preset_structure("i", "n", None, {"a": 1}, "t0", "t1")
    assert structure == {"id": "i", "name": "n", "description": None, "config": {"a": 1},
                         "created_at": "t0", "updated_at": "t1"}
    clean = VerificationConfig.sanitize_model_config(
        {"id": "x", "model_name": "m", "model_provider": "openai", "interface": "langchain",
         "endpoint_api_key": "sk-secret-value-123"})
    assert "endpoint_api_key" not in clean


def test_few_shot_getters() -> None:
    config = VerificationConfig.from_overrides(answering_model="m", parsing_model="m")
    assert config.get_few_shot_config() is None and not config.is_few_shot_enabled()
    on = VerificationConfig.from_overrides(config, few_shot_config={"source": "both"})
    assert on.is_few_shot_enabled() and on.get_few_shot_config() is on.few_shot_config
    off = VerificationConfig.from_overrides(config, few_shot_config={"source": "disabled"})
    assert not off.is_few_shot_enabled()


def test_retry_configs_have_karenina_s_fields_and_defaults() -> None:
    assert ModelRetryConfig().model_dump() == {"max_retries": 2, "backoff_factor": 2.0, "initial_delay": 2.0,
                                               "max_delay": 10.0, "jitter": True, "on_failure": "continue"}
    assert ToolRetryConfig().model_dump() == {"max_retries": 3, "backoff_factor": 2.0, "initial_delay": 1.0,
                                              "on_failure": "return_message"}
    with pytest.raises(ValueError):
        ModelRetryConfig(max_retries=-1)


def test_benchmark_read_methods(tmp_path: Path) -> None:
    bench = Benchmark.load(FIXTURES / "with_rubrics.jsonld")
    ids = bench.get_question_ids()
    first = bench.get_question(ids[0])
    assert {"id", "question", "raw_answer", "answer_template", "finished", "keywords"} <= set(first)
    assert first["id"] == ids[0] and first["question"] == bench.questions[0].text
    assert bench.get_all_questions(ids_only=True) == ids
    assert [q["id"] for q in bench.get_all_questions()] == ids  # type: ignore[index]
    assert bench.question_count == len(bench) == len(ids) and ids[0] in bench and "nope" not in bench
    assert bench.finished_count == len(bench.get_finished_questions(ids_only=True))
    assert isinstance(bench.get_global_rubric(), Rubric | type(None))
    assert bench.get_question_as_object(ids[0]) is bench.questions[0]
    assert bench.has_template(ids[0]) and bench.get_template(ids[0]) == bench.questions[0].template_code
    with pytest.raises(ValueError, match="Question not found"):
        bench.get_question("nope")
    bench.save(tmp_path / "copy.jsonld")
    assert Benchmark.load(tmp_path / "copy.jsonld") == bench
    assert json.loads((tmp_path / "copy.jsonld").read_text())["@type"] == "DataFeed"
