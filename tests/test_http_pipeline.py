"""The whole pipeline through the real langchain-openai adapter against the simulated HTTP server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verify.benchmark.jsonld import load_benchmark
from verify.config.verification import VerificationConfig
from verify.llm.simulated.server import start_server
from verify.run.runner import run_verification

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "verify" / "examples" / "demo" / "demo.jsonld"
ANSWERS = json.loads((ROOT / "verify" / "examples" / "demo" / "answers.json").read_text())


def http_config(url: str, **kw: object) -> VerificationConfig:
    judge = {"id": "judge", "interface": "openai_endpoint", "model_name": "simulated-judge",
             "endpoint_base_url": url, "endpoint_api_key": "sk-test-secret", "temperature": 0.0}
    answerer = {"id": "model-a", "interface": "simulated", "model_provider": "simulated",
                "model_name": "simulated-answerer"}
    fast = {"max_attempts": 1, "backoff_min": 0.01, "backoff_max": 0.02}
    data: dict[str, object] = dict(
        answering_models=[answerer], parsing_models=[judge], evaluation_mode="rubric_only",
        deep_judgment_rubric_mode="enable_all", async_max_workers=4,
        retry_policy={"connection": fast, "timeout": fast, "rate_limit": fast, "server_error": fast},
    )
    data.update(kw)
    return VerificationConfig.model_validate(data)


def test_deep_judgment_over_http_scores_every_trait(tmp_path: Path) -> None:
    with start_server() as server:
        outcome = run_verification(load_benchmark(DEMO), http_config(server.url), answers=ANSWERS,
                                   question_ids=["demo-capital", "demo-cold"], output=tmp_path / "r.jsonl")
        assert server.request_count > 0
    assert outcome.summary.total == 2 and outcome.summary.judged_tasks == 2
    assert sorted(r.metadata.question_id for r in outcome.results) == ["demo-capital", "demo-cold"]
    for result in outcome.results:
        assert result.rubric is not None and result.deep_judgment_rubric is not None
        assert {"clarity", "states_fact", "register"} <= set(result.rubric.trait_status)
        assert all(o.status == "scored" for o in result.rubric.trait_status.values())
        assert result.deep_judgment_rubric.traits_without_valid_excerpts == []
    text = (tmp_path / "r.jsonl").read_text()
    assert "sk-test-secret" not in text


def test_unparseable_replies_over_http_are_unscored_not_failed() -> None:
    with start_server(malformed_rate=1.0) as server:
        outcome = run_verification(load_benchmark(DEMO), http_config(server.url, deep_judgment_rubric_mode="disabled"),
                                   answers=ANSWERS, question_ids=["demo-capital"])
    (result,) = outcome.results
    assert result.rubric is not None
    llm = {n: o for n, o in result.rubric.trait_status.items() if n in ("clarity", "states_fact", "register")}
    assert llm and all(o.status == "unscored" and o.raw_reply for o in llm.values())
    assert result.rubric.trait_status["has_number"].status == "scored"  # deterministic traits unaffected
    assert result.metadata.failure is None


@pytest.mark.parametrize("status", [429, 500])
def test_transient_errors_are_retried_with_backoff(status: int) -> None:
    with start_server(fail_first=2, fail_status=status) as server:
        fast = {"max_attempts": 3, "backoff_min": 0.01, "backoff_max": 0.02}
        config = http_config(server.url, deep_judgment_rubric_mode="disabled",
                             retry_policy={"rate_limit": fast, "server_error": fast})
        outcome = run_verification(load_benchmark(DEMO), config, answers=ANSWERS, question_ids=["demo-capital"])
        statuses = [r["status"] for r in server.requests if r["path"].endswith("/chat/completions")]
    assert statuses[:2] == [status, status] and 200 in statuses
    assert outcome.summary.judged_tasks == 1 and outcome.results[0].metadata.errors == []


def test_the_runner_closes_the_http_clients_it_opened(monkeypatch: pytest.MonkeyPatch) -> None:
    from verify.llm.adapters.openai_compatible import OpenAICompatibleModel

    closed: list[int] = []
    original = OpenAICompatibleModel.aclose

    async def recording_aclose(self: OpenAICompatibleModel) -> None:
        closed.append(len(self._open))
        await original(self)

    monkeypatch.setattr(OpenAICompatibleModel, "aclose", recording_aclose)
    with start_server() as server:
        run_verification(load_benchmark(DEMO), http_config(server.url, deep_judgment_rubric_mode="disabled"),
                         answers=ANSWERS, question_ids=["demo-capital"])
    assert closed and closed[0] >= 1
