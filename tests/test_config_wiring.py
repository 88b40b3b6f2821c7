"""No silent config: every field is read or marked inert; inert settings warn; wired fields work.

Also the results header (version, config, plan, warnings) and the adapter-factory seam.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from verify.benchmark.jsonld import load_benchmark
from verify.cli import app
from verify.config import (
    INERT_FIELDS,
    FewShotConfig,
    ModelConfig,
    PromptConfig,
    RetryPolicy,
    VerificationConfig,
)
from verify.config.report import config_warnings
from verify.errors import ConfigError, ModelError, RunStopped
from verify.llm.ports import ChatReply, ChatRequest, Usage
from verify.llm.simulated.model import SimulatedModel
from verify.run.runner import run_verification

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "verify" / "examples" / "demo" / "demo.jsonld"
ANSWERS = REPO / "verify" / "examples" / "demo" / "answers.json"
# modules that define or copy config fields; a field "read" only there is not read by the run
DEFINING = {"verification.py", "models.py", "report.py", "overrides.py", "preset.py", "cli.py"}


def sim(model_id: str, **extra: object) -> dict[str, object]:
    return {"id": model_id, "model_provider": "simulated", "model_name": f"simulated-{model_id}",
            "interface": "simulated", "extra_kwargs": extra or None}


def config(**kw: Any) -> VerificationConfig:
    data: dict[str, Any] = {"answering_models": [sim("model-a")], "parsing_models": [sim("judge")],
                            "evaluation_mode": "rubric_only"}
    data.update(kw)
    return VerificationConfig.model_validate(data)


def answers() -> dict[str, dict[str, str]]:
    data: dict[str, dict[str, str]] = json.loads(ANSWERS.read_text())
    return data


# --------------------------------------------------------------------------- every field read or inert


def run_source() -> str:
    files = [p for p in (REPO / "verify").rglob("*.py") if not ("config" in p.parts and p.name in DEFINING)]
    files = [p for p in files if "cli" not in p.relative_to(REPO / "verify").parts]
    return "\n".join(p.read_text(encoding="utf-8") for p in files)


@pytest.mark.parametrize(
    ("model", "prefix"),
    [(VerificationConfig, ""), (ModelConfig, "models."), (PromptConfig, "prompt_config."),
     (FewShotConfig, "few_shot_config."), (RetryPolicy, "retry_policy.")],
)
def test_every_config_field_is_read_or_marked_inert(model: type, prefix: str) -> None:
    source = run_source()
    unread = [
        name for name in model.model_fields
        if f"{prefix}{name}" not in INERT_FIELDS and not re.search(rf"\.{name}\b|[\"']{name}[\"']", source)
    ]
    assert unread == [], f"{model.__name__}: neither read by the run nor in INERT_FIELDS: {unread}"


def test_inert_fields_exist() -> None:
    owners = {"": VerificationConfig, "models": ModelConfig, "prompt_config": PromptConfig,
              "few_shot_config": FewShotConfig, "retry_policy": RetryPolicy}
    for path in INERT_FIELDS:
        head, _, tail = path.rpartition(".")
        assert tail in owners[head].model_fields, path


def test_a_non_default_inert_field_warns_once_and_defaults_do_not() -> None:
    assert config_warnings(config()) == []
    notes = config_warnings(config(task_ordering="random", agentic_rubric_parallel=True))
    assert len(notes) == 2
    assert notes[0].startswith('task_ordering="random" is not used by verify')
    assert notes[1].startswith("agentic_rubric_parallel=true is not used by verify")


def test_inert_model_fields_name_the_model() -> None:
    judge = {**sim("judge"), "max_retries": 5}
    (note,) = config_warnings(config(parsing_models=[judge]))
    assert note.startswith("model 'judge' max_retries=5 is not used by verify")


def test_use_full_trace_is_honoured_so_it_no_longer_warns() -> None:
    # agent transcripts are judged with the full trace or the final answer (tests/test_transcripts.py)
    base = config()
    for value in (True, False):
        assert config_warnings(VerificationConfig.from_overrides(base, use_full_trace_for_rubric=value,
                                                                 use_full_trace_for_template=value)) == []


def test_cli_prints_no_warning_for_use_full_trace(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [str(DEMO), "--preset", "demo", "--set", "use_full_trace_for_rubric=true",
                                      "--show-config"])
    assert result.exit_code == 0, result.output
    assert not [line for line in result.stderr.splitlines() if line.startswith("warning: ")]


# --------------------------------------------------------------------------- results describe themselves


def test_results_header_holds_version_config_plan_and_warnings(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    cfg = config(task_ordering="random", parsing_models=[
        {**sim("judge"), "extra_kwargs": {"api_key": "sk-live-abcdefghijklmnop"}}])
    outcome = run_verification(load_benchmark(DEMO), cfg, answers=answers(), output=out)
    data = json.loads(out.read_text())
    meta = data["metadata"]
    assert meta["verify_version"] and meta["schema_version"]
    assert meta["plan"] == ["generate_answer", "rubric_evaluation", "deep_judgment_rubric_auto_fail", "finalize_result"]
    assert meta["config"]["evaluation_mode"] == "rubric_only"
    assert meta["config_warnings"] and "task_ordering" in meta["config_warnings"][0]
    assert outcome.config_warnings == meta["config_warnings"]
    assert "sk-live-abcdefghijklmnop" not in out.read_text()
    assert len(data["results"]) == meta["tasks"] == outcome.summary.total > 0


# --------------------------------------------------------------------------- wired fields


def test_no_answering_model_is_refused_before_any_call() -> None:
    cfg = VerificationConfig.model_validate({"parsing_models": [sim("judge")], "parsing_only": True})
    with pytest.raises(ConfigError, match="answering_models is empty"):
        run_verification(load_benchmark(DEMO), cfg)


class Gate:
    """An adapter factory whose answering model counts calls in flight."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.peak = 0

    def __call__(self, model: ModelConfig) -> Any:
        inner = SimulatedModel(model)
        gate = self

        class Slow:
            model_id = inner.model_id

            async def complete(self, request: ChatRequest) -> ChatReply:
                if model.id != "model-a":
                    return await inner.complete(request)
                gate.in_flight += 1
                gate.peak = max(gate.peak, gate.in_flight)
                await asyncio.sleep(0.02)
                gate.in_flight -= 1
                return ChatReply(text="Paris is the capital.", usage=Usage(1, 1), finish_reason="stop")

        return Slow()


@pytest.mark.parametrize(("limits", "peak"), [(None, 4), (1, 1), ({"model-a": 2}, 2)])
def test_answerer_concurrency_limits_cap_tasks_per_answerer(limits: Any, peak: int) -> None:
    gate = Gate()
    cfg = config(async_max_workers=4, answerer_concurrency_limits=limits)
    outcome = run_verification(load_benchmark(DEMO), cfg, adapter_factory=gate)
    assert outcome.summary.total == len(load_benchmark(DEMO).questions) >= 4
    assert gate.peak == peak


def test_custom_error_patterns_decide_the_retry_category() -> None:
    calls: list[str] = []

    def factory(model: ModelConfig) -> Any:
        inner = SimulatedModel(model)

        class Flaky:
            model_id = inner.model_id

            async def complete(self, request: ChatRequest) -> ChatReply:
                if model.id == "judge" and not calls:
                    calls.append("failed")
                    raise RuntimeError("upstream said: GPU busy, try later")
                calls.append("ok")
                return await inner.complete(request)

        return Flaky()

    fast = {"rate_limit": {"max_attempts": 1, "backoff_min": 0, "backoff_max": 0}}
    cfg = config(custom_error_patterns=[{"pattern": "GPU busy", "category": "rate_limit"}], retry_policy=fast,
                 async_max_workers=1)
    outcome = run_verification(load_benchmark(DEMO), cfg, answers=answers(), question_ids=["demo-capital"],
                               adapter_factory=factory)
    (result,) = outcome.results
    assert calls[0] == "failed" and not result.metadata.errors  # retried as a rate limit, then fine
    without = config(retry_policy=fast, async_max_workers=1)
    calls.clear()
    (result,) = run_verification(load_benchmark(DEMO), without, answers=answers(), question_ids=["demo-capital"],
                                 adapter_factory=factory).results
    assert result.metadata.errors or (result.rubric and any(
        o.status == "unscored" for o in result.rubric.trait_status.values()))  # permanent: not retried


def test_batch_timeout_stops_the_run_and_keeps_what_finished(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    slow = config(parsing_models=[sim("judge", latency_ms=300)], async_max_workers=1, batch_timeout_seconds=0.5)
    finished_all = len(load_benchmark(DEMO).questions)
    with pytest.raises(RunStopped, match="batch_timeout_seconds=0.5") as info:
        run_verification(load_benchmark(DEMO), slow, answers=answers(), output=out)
    assert "--resume" in (info.value.hint or "")
    progress = out.with_name(out.name + ".progress.jsonl")
    assert progress.exists() and not out.exists()
    done = [json.loads(line) for line in progress.read_text().splitlines() if line.strip()][1:]  # after the header
    assert 0 < len(done) < finished_all and len(info.value.results) == len(done)
    finished = run_verification(load_benchmark(DEMO), config(), answers=answers(), output=out, resume=True)
    assert finished.resumed == len(done) and finished.summary.total == finished.tasks


def test_batch_timeout_without_an_output_hands_back_what_finished() -> None:
    slow = config(parsing_models=[sim("judge", latency_ms=300)], async_max_workers=1, batch_timeout_seconds=0.5)
    with pytest.raises(RunStopped) as info:
        run_verification(load_benchmark(DEMO), slow, answers=answers())
    assert 0 < len(info.value.results) < len(load_benchmark(DEMO).questions)


# --------------------------------------------------------------------------- the adapter-factory seam


def test_an_injected_adapter_gets_the_retry_chain() -> None:
    attempts: list[int] = []

    def factory(model: ModelConfig) -> Any:
        inner = SimulatedModel(model)

        class Once:
            model_id = inner.model_id

            async def complete(self, request: ChatRequest) -> ChatReply:
                attempts.append(1)
                if len(attempts) == 1:
                    raise ModelError("connection reset", category="connection")
                return await inner.complete(request)

        return Once()

    fast = {"connection": {"max_attempts": 2, "backoff_min": 0, "backoff_max": 0}}
    (result,) = run_verification(load_benchmark(DEMO), config(retry_policy=fast), answers=answers(),
                                 question_ids=["demo-capital"], adapter_factory=factory).results
    assert len(attempts) >= 2 and not result.metadata.errors
