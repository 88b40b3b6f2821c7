"""Working with small local servers: the structured-output ladder, max_tokens only when set,
per-server concurrency limits, timeouts that close the connection, a refused connection that fails
fast with the URL, and HTTP attempts counted per call. All against the simulated server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from verify.benchmark.jsonld import load_benchmark
from verify.config.models import CategoryRetryConfig, ModelConfig, RetryPolicy
from verify.config.preset import load_preset
from verify.config.verification import VerificationConfig
from verify.errors import ModelError
from verify.llm.adapters.langchain import LangChainModel
from verify.llm.adapters.negotiation import is_unsupported
from verify.llm.build import build_model
from verify.llm.cache import ResponseCache
from verify.llm.endpoints import EndpointUnreachable, is_loopback_url
from verify.llm.ports import ChatReply, ChatRequest, Message, Purpose, Usage
from verify.llm.recording import RecordingModel
from verify.llm.resilience import RetryingModel, attempts_of
from verify.llm.simulated.__main__ import main as serve_main
from verify.llm.simulated.brain import SimulatedRequest
from verify.llm.simulated.server import SimulatedServer, start_server
from verify.llm.structured import ask_structured
from verify.run.runner import run_verification
from verify.run.services import Services, endpoint_limiters

ROOT = Path(__file__).resolve().parents[1]
NEGOTIATION_LOG = "verify.llm.adapters.negotiation"


class Verdict(BaseModel):
    trait: str
    passed: bool
    score: int


VERDICT: dict[str, Any] = {"trait": "clarity", "passed": True, "score": 4}
SCHEMA = Verdict.model_json_schema()
PROMPT = (Message("system", "You are a judge."), Message("user", "Judge the clarity of: Paris is in France."))
STRUCTURED = ChatRequest(PROMPT, schema=SCHEMA, purpose=Purpose.RUBRIC_SINGLE)
PLAIN = ChatRequest(PROMPT, purpose=Purpose.ANSWER)


def verdict_reply(request: SimulatedRequest) -> str:
    return json.dumps(VERDICT)


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[SimulatedServer] = []

    def make(**options: Any) -> SimulatedServer:
        options.setdefault("reply", verdict_reply)
        server = start_server(**options)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


def endpoint(url: str, **fields: Any) -> ModelConfig:
    data: dict[str, Any] = {"id": "judge", "model_name": "local-model", "interface": "openai_endpoint",
                            "endpoint_base_url": url, "endpoint_api_key": "sk-local-secret-0123456789abcdefghij",
                            "temperature": 0.0, "request_timeout": 10.0}
    data.update(fields)
    return ModelConfig(**data)


def policy(**categories: tuple[int, float]) -> RetryPolicy:
    """Retries per category as (retries, backoff); the rest do not retry."""
    fields = {name: CategoryRetryConfig(max_attempts=0) for name in ("connection", "timeout", "rate_limit", "server_error")}
    for name, (retries, backoff) in categories.items():
        fields[name] = CategoryRetryConfig(max_attempts=retries, backoff_min=backoff, backoff_max=backoff)
    return RetryPolicy().model_copy(update=fields)


def formats(server: SimulatedServer) -> list[str]:
    """What each chat request asked for: the response_format type, "tools" or "plain"."""
    out = []
    for entry in server.chat_requests:
        body = entry["json"]
        fmt = body.get("response_format")
        out.append(fmt["type"] if fmt else "tools" if body.get("tools") else "plain")
    return out


def switches(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == NEGOTIATION_LOG]


# -- the structured-output ladder ---------------------------------------------------------------------


async def test_json_schema_rejected_switches_to_json_mode_once_for_concurrent_calls(
    serve: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = serve(reject_json_schema=True)
    model = LangChainModel(endpoint(server.url))
    assert model.structured_output == "json_schema"
    with caplog.at_level(logging.WARNING, logger=NEGOTIATION_LOG):
        replies = await asyncio.gather(*(model.complete(STRUCTURED) for _ in range(6)))
        later = [await model.complete(STRUCTURED) for _ in range(3)]
    assert all(r.parsed == VERDICT for r in [*replies, *later])
    assert model.structured_output == "json_mode"
    (line,) = switches(caplog)
    assert line.startswith(f"model judge: json_schema not supported by {server.url}; using json_mode from now on")
    assert "sk-local-secret" not in caplog.text
    # the first call finds the method while the others wait for it: one refused request in all
    assert sorted(r.attempts for r in replies) == [1] * 5 + [2] and [r.attempts for r in later] == [1] * 3
    statuses = [r["status"] for r in server.chat_requests]
    assert formats(server) == ["json_schema"] + ["json_object"] * 9 and statuses == [500] + [200] * 9
    assert server.chat_requests[0]["json"]["response_format"]["json_schema"]["schema"] == SCHEMA
    assert server.chat_requests[-1]["json"]["response_format"] == {"type": "json_object", "schema": SCHEMA}


@pytest.mark.parametrize(
    ("options", "method", "expected", "lines"),
    [
        ({"reject_json_schema": True, "reject_json_object": True}, "function_calling",
         ["json_schema", "json_object", "tools", "tools"], 2),
        ({"reject_json_schema": True, "reject_json_object": True, "no_tools": True}, "none",
         ["json_schema", "json_object", "tools", "plain", "plain"], 3),
    ],
)  # fmt: skip
async def test_the_ladder_goes_on_to_tools_and_plain_text(
    serve: Any, caplog: pytest.LogCaptureFixture, options: dict[str, bool], method: str, expected: list[str],
    lines: int,
) -> None:
    server = serve(**options)
    model = LangChainModel(endpoint(server.url))
    with caplog.at_level(logging.WARNING, logger=NEGOTIATION_LOG):
        first = await ask_structured(model, PROMPT, Verdict, purpose=Purpose.RUBRIC_SINGLE)
        second = await model.complete(STRUCTURED)
    assert first.value == Verdict(**VERDICT) and first.calls == 1
    assert json.loads(second.text) == VERDICT and second.attempts == 1
    assert model.structured_output == method
    assert formats(server) == expected
    assert len(switches(caplog)) == lines
    assert all("using" in line and "from now on" in line for line in switches(caplog))


async def test_a_pinned_method_starts_the_ladder_there(serve: Any) -> None:
    server = serve()
    model = LangChainModel(endpoint(server.url, extra_kwargs={"structured_output_method": "json_mode"}))
    assert model.structured_output == "json_mode"
    reply = await model.complete(STRUCTURED)
    assert reply.parsed == VERDICT
    assert server.chat_requests[0]["json"]["response_format"] == {"type": "json_object", "schema": SCHEMA}
    auto = LangChainModel(endpoint(server.url, extra_kwargs={"structured_output_method": "auto"}))
    default = LangChainModel(endpoint(server.url))
    assert auto.structured_output == default.structured_output == "json_schema"
    assert auto.model_id == default.model_id  # "auto" names the same requests as the default


async def test_a_transient_500_is_not_a_ladder_step(serve: Any) -> None:
    server = serve(fail_first=1, fail_status=500)
    model = RetryingModel(LangChainModel(endpoint(server.url)), policy(server_error=(1, 0.0)))
    reply = await model.complete(STRUCTURED)
    assert reply.parsed == VERDICT and reply.attempts == 2
    assert formats(server) == ["json_schema", "json_schema"]
    assert isinstance(model.inner, LangChainModel) and model.inner.structured_output == "json_schema"


def test_what_counts_as_unsupported() -> None:
    import httpx2
    import openai

    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")

    def status(code: int, message: str) -> Exception:
        response = httpx2.Response(code, request=request)
        cls = openai.InternalServerError if code >= 500 else openai.BadRequestError
        return cls(message, response=response, body=None)

    assert is_unsupported(status(500, 'response_format type must be one of "text" or "json_object"'))
    assert is_unsupported(status(400, "'auto' tool choice requires --enable-auto-tool-choice"))
    assert is_unsupported(status(500, "failed to parse grammar"))
    assert is_unsupported(NotImplementedError("with_structured_output is not implemented"))  # local
    assert not is_unsupported(status(400, "This model's maximum context length is 8192 tokens"))
    assert not is_unsupported(status(503, "response_format busy"))
    assert not is_unsupported(status(500, "CUDA out of memory"))
    assert not is_unsupported(openai.APIConnectionError(request=request))
    assert not is_unsupported(ModelError("json_schema", "permanent"))


def test_a_run_logs_the_switch_once_and_scores_every_trait(
    serve: Any, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    from verify.llm.simulated.brain import respond

    server = serve(reject_json_schema=True, reply=respond)
    judge = endpoint(server.url).model_dump(mode="json") | {"endpoint_api_key": "sk-x"}
    answerer = {"id": "model-a", "interface": "simulated", "model_provider": "simulated",
                "model_name": "simulated-answerer"}
    config = VerificationConfig.model_validate(dict(
        answering_models=[answerer], parsing_models=[judge], evaluation_mode="rubric_only",
        deep_judgment_rubric_mode="enable_all", async_max_workers=4,
    ))  # fmt: skip
    answers = json.loads((ROOT / "verify" / "examples" / "demo" / "answers.json").read_text())
    with caplog.at_level(logging.WARNING, logger=NEGOTIATION_LOG):
        outcome = run_verification(load_benchmark(ROOT / "verify" / "examples" / "demo" / "demo.jsonld"), config,
                                   answers=answers, question_ids=["demo-capital", "demo-cold"],
                                   output=tmp_path / "results.json", keep_results=True)
    assert len(switches(caplog)) == 1
    # once the first json_object request went out, every structured request used it and succeeded
    asked = formats(server)
    assert "json_schema" not in asked[asked.index("json_object"):]
    assert outcome.summary.coverage == 1.0
    header = json.loads((tmp_path / "results.json").read_text())["metadata"]
    assert header["structured_output"] == {"judge": "json_mode"}  # decided once, recorded in the header
    for result in outcome.results:
        assert result.metadata.errors == []
        assert result.rubric is not None
        llm = {n: o for n, o in result.rubric.trait_status.items() if n in ("clarity", "states_fact", "register")}
        assert llm and all(o.status == "scored" for o in llm.values())
    assert "json_object" in formats(server)


async def test_services_report_the_method_each_model_uses(serve: Any) -> None:
    server = serve(reject_json_schema=True)
    answerer = {"id": "model-a", "interface": "simulated", "model_provider": "simulated", "model_name": "sim"}
    config = VerificationConfig.model_validate(
        {"answering_models": [answerer], "parsing_models": [endpoint(server.url).model_dump(mode="json")]}
    )
    services = Services(config, None, None)
    try:
        judge = services.model(config.parsing_models[0])
        services.model(config.answering_models[0])
        assert judge is not None
        assert services.structured_output_methods() == {"judge": "json_schema"}  # the simulated model has none
        await judge.complete(STRUCTURED)
        assert services.structured_output_methods() == {"judge": "json_mode"}
    finally:
        await services.close()


# -- max_tokens -----------------------------------------------------------------------------------------


async def test_max_tokens_is_sent_only_when_configured(serve: Any) -> None:
    server = serve()
    assert ModelConfig(id="j", model_name="m", model_provider="openai").max_tokens is None
    await LangChainModel(endpoint(server.url)).complete(PLAIN)
    await LangChainModel(endpoint(server.url)).complete(STRUCTURED)
    await LangChainModel(endpoint(server.url, max_tokens=321)).complete(PLAIN)
    bodies = [r["json"] for r in server.chat_requests]
    assert all("max_tokens" not in b and "max_completion_tokens" not in b for b in bodies[:2])
    assert bodies[2].get("max_tokens", bodies[2].get("max_completion_tokens")) == 321


def test_karenina_presets_keep_their_max_tokens() -> None:
    config = load_preset(ROOT / "tests" / "fixtures" / "karenina" / "preset-full.json")
    assert [m.max_tokens for m in config.answering_models] == [16384]


# -- the local-endpoint preset and per-server limits ---------------------------------------------------------


def test_the_local_endpoint_preset_suits_one_local_server() -> None:
    config = load_preset("local-endpoint")
    models = [*config.answering_models, *config.parsing_models]
    assert all(m.max_concurrent_requests == 1 and m.request_timeout == 300 for m in models)
    assert all(m.max_tokens is None for m in models)
    limiters = endpoint_limiters(models)
    assert len(limiters) == 1  # answerer and judge share the server, so they share its one slot
    assert config.retry_policy.timeout.max_attempts == 1


async def test_models_on_one_server_share_its_limit() -> None:
    active = peak = 0

    class Slow:
        model_id = "slow"

        async def complete(self, request: ChatRequest) -> ChatReply:
            nonlocal active, peak
            active += 1
            peak = max(peak, active)
            await asyncio.sleep(0.02)
            active -= 1
            return ChatReply(text="ok", usage=Usage(1, 1))

    url = "http://127.0.0.1:9/v1"
    answerer = endpoint(url, id="answerer", max_concurrent_requests=3).model_dump(mode="json")
    judge = endpoint(url + "/", id="judge", max_concurrent_requests=2).model_dump(mode="json")
    config = VerificationConfig.model_validate({"answering_models": [answerer], "parsing_models": [judge],
                                                "max_concurrent_requests": 10})
    services = Services(config, None, lambda model: Slow())
    models = [services.model(config.answering_models[0]), services.model(config.parsing_models[0])]
    await asyncio.gather(*(m.complete(PLAIN) for m in models * 6 if m is not None))
    assert peak == 2  # the smaller cap of the two, for both models together


# -- timeouts and refused connections -----------------------------------------------------------------------


async def wait_for_close(server: SimulatedServer, seconds: float = 2.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.requests and server.requests[0].get("client_closed"):
            return True
        await asyncio.sleep(0.02)
    return False


async def test_a_timed_out_request_closes_its_connection(serve: Any) -> None:
    server = serve(latency_ms=5000)
    model = RetryingModel(LangChainModel(endpoint(server.url, request_timeout=0.3)), policy())
    started = time.perf_counter()
    with pytest.raises(ModelError) as caught:
        await model.complete(PLAIN)
    assert caught.value.category == "timeout" and time.perf_counter() - started < 4.5  # not the 5 s reply
    assert await wait_for_close(server)  # the server saw the client go, long before its 5 s reply
    assert server.requests[0]["status"] is None


async def test_a_cancelled_request_closes_its_connection(serve: Any) -> None:
    server = serve(latency_ms=5000)
    task = asyncio.create_task(LangChainModel(endpoint(server.url, request_timeout=30.0)).complete(PLAIN))
    while server.request_count == 0:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_for_close(server)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_connection_refused_fails_fast_naming_the_url() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    model = RecordingModel(build_model(endpoint(url), policy=None))  # the default policy: 3 connection retries
    started = time.perf_counter()
    with pytest.raises(EndpointUnreachable) as caught:
        await model.complete(PLAIN)
    elapsed = time.perf_counter() - started
    assert elapsed < 3.0
    assert str(caught.value) == f"cannot connect to {url} (connection refused): is the server running?"
    assert caught.value.category == "connection" and "\n" not in str(caught.value)
    assert attempts_of(caught.value) == 2  # one quick retry
    (record,) = model.records
    assert record.failed and record.attempts == 2


async def test_a_remote_refusal_keeps_the_retry_policy() -> None:
    class Refused:
        model_id = "refused"
        calls = 0

        async def complete(self, request: ChatRequest) -> ChatReply:
            self.calls += 1
            raise EndpointUnreachable("http://user:pw@10.1.2.3:8000/v1?key=abc")

    delays: list[float] = []

    async def sleep(delay: float) -> None:
        delays.append(delay)

    inner = Refused()
    with pytest.raises(EndpointUnreachable) as caught:
        await RetryingModel(inner, policy(connection=(3, 0.5)), sleep=sleep).complete(PLAIN)
    assert inner.calls == 4 and attempts_of(caught.value) == 4
    assert str(caught.value).startswith("cannot connect to http://10.1.2.3:8000/v1 (connection refused)")
    assert is_loopback_url("http://localhost:11434/v1") and is_loopback_url("http://[::1]:8080")
    assert not is_loopback_url("http://10.1.2.3:8000/v1")


# -- attempts ------------------------------------------------------------------------------------------------


async def test_attempts_count_retries_and_the_cache_counts_none(serve: Any, tmp_path: Path) -> None:
    server = serve(fail_first=1, fail_status=503)
    built = build_model(endpoint(server.url, retry_policy=policy(server_error=(2, 0.0))),
                        cache=ResponseCache(tmp_path / "c.db"))
    model = RecordingModel(built)
    first = await model.complete(STRUCTURED)
    again = await model.complete(STRUCTURED)
    assert [r["status"] for r in server.chat_requests] == [503, 200]
    assert (first.attempts, again.attempts, again.cached) == (2, 0, True)
    assert [(r.attempts, r.cached) for r in model.records] == [(2, False), (0, True)]


async def test_a_failed_call_records_the_attempts_it_made(serve: Any) -> None:
    server = serve(rate_500=1.0)
    model = RecordingModel(build_model(endpoint(server.url), policy=policy(server_error=(2, 0.0))))
    with pytest.raises(ModelError):
        await model.complete(PLAIN)
    assert len(server.chat_requests) == 3
    (record,) = model.records
    assert record.failed and record.attempts == 3


# -- the simulated server's switches ------------------------------------------------------------------------


def test_the_serve_command_has_the_endpoint_switches(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        serve_main(["serve", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--reject-json-schema" in out and "--reject-json-object" in out and "--no-tools" in out


async def test_json_object_with_a_schema_reaches_the_reply_function(serve: Any) -> None:
    seen: list[dict[str, Any] | None] = []

    def record(request: SimulatedRequest) -> str:
        seen.append(request.schema)
        return json.dumps(VERDICT)

    server = serve(reject_json_schema=True, reply=record)
    model = LangChainModel(endpoint(server.url, extra_kwargs={"structured_output_method": "json_mode"}))
    await model.complete(STRUCTURED)
    assert seen == [SCHEMA]
    body = server.chat_requests[0]["json"]
    assert body["response_format"]["type"] == "json_object"
    rejected = await LangChainModel(endpoint(server.url)).complete(STRUCTURED)
    assert rejected.parsed == VERDICT
    error = server.chat_requests[1]
    assert error["status"] == 500 and error["json"]["response_format"]["type"] == "json_schema"


# -- the first structured call probes alone; the calls queued behind it then go out together -----------


def _watched_adapter(adapter: str, **fields: Any) -> tuple[Any, list[int]]:
    """An adapter whose structured calls are replaced by a 20 ms fake that records how many are in flight."""
    from verify.llm.adapters.openai_compatible import OpenAICompatibleModel

    cls = LangChainModel if adapter == "langchain" else OpenAICompatibleModel
    model: Any = cls(endpoint("http://127.0.0.1:9/v1", **fields))
    in_flight, peak = 0, []

    async def structured(*_args: Any) -> ChatReply:
        nonlocal in_flight
        in_flight += 1
        peak.append(in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        return ChatReply(text="{}", parsed={})

    model._structured = structured
    return model, peak


@pytest.mark.parametrize("adapter", ["langchain", "openai_compatible"])
async def test_calls_queued_behind_the_probe_go_out_together_once_it_settles(adapter: str) -> None:
    model, peak = _watched_adapter(adapter)
    await asyncio.gather(*(model.complete(STRUCTURED) for _ in range(10)))
    assert model.ladder.settled
    assert peak[0] == 1  # the probe went alone
    assert max(peak) == 9  # the nine that waited for it were sent together, not one by one


@pytest.mark.parametrize("adapter", ["langchain", "openai_compatible"])
async def test_a_pinned_method_is_not_probed(adapter: str) -> None:
    model, peak = _watched_adapter(adapter, extra_kwargs={"structured_output_method": "json_schema"})
    assert model.ladder.settled
    await asyncio.gather(*(model.complete(STRUCTURED) for _ in range(5)))
    assert max(peak) == 5  # all at once: the config said which method works
