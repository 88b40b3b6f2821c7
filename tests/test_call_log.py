"""The audit trail (``--log-calls``): one whole, masked JSON line per model call, never a clobbered file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fakes import SIM_JUDGE, ScriptedModel, honest
from typer.testing import CliRunner

import verify
from verify.benchmark.jsonld import Benchmark
from verify.benchmark.question import Question
from verify.benchmark.traits import LLMTrait, Rubric
from verify.config.models import ModelConfig
from verify.config.verification import VerificationConfig
from verify.errors import ModelError, UserError
from verify.llm.call_log import CallLog, LoggedModel, calls_for_stage, calls_for_task, model_parameters
from verify.llm.ports import ChatReply, ChatRequest, Message, Purpose, Usage
from verify.secrets import clear_secrets, register_secrets

SECRET = "planted-Secret-0123456789"
ANSWERER = {"id": "a", "model_provider": "simulated", "model_name": "answerer", "interface": "simulated"}


class Crowd:
    """A model that answers only once ``size`` calls are in flight at once, and counts its calls."""

    def __init__(self, size: int) -> None:
        self.size, self.calls, self.in_flight = size, 0, 0
        self.full = asyncio.Event()
        self.model_id = "crowd:test"

    async def complete(self, request: ChatRequest) -> ChatReply:
        self.calls += 1
        self.in_flight += 1
        if self.in_flight == self.size:
            self.full.set()
        await asyncio.wait_for(self.full.wait(), 10)
        text = "x" * 5000 + request.messages[-1].content  # long lines: a torn write would show
        return ChatReply(text=text, usage=Usage(3, 4), model=self.model_id)


def test_fifty_calls_in_flight_give_fifty_whole_lines(tmp_path: Path) -> None:
    log = CallLog(tmp_path / "calls.jsonl")
    crowd = Crowd(50)
    model = LoggedModel(crowd, log, {"model_name": "crowd"})

    async def one(i: int) -> None:
        with calls_for_task(f"task-{i}"), calls_for_stage("rubric_evaluation"):
            await model.complete(ChatRequest((Message("user", f"question {i}"),), purpose=Purpose.RUBRIC_BATCH))

    async def main() -> None:
        await asyncio.gather(*(one(i) for i in range(50)))

    asyncio.run(main())
    log.close()
    lines = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert len(lines) == crowd.calls == log.written == 50
    assert {line["task_key"] for line in lines} == {f"task-{i}" for i in range(50)}
    for line in lines:  # each line's task is the one its request came from
        assert line["reply"]["text"].endswith(line["task_key"].replace("task-", "question "))
        assert line["stage"] == "rubric_evaluation" and line["purpose"] == "rubric_batch"
        assert line["reply"]["usage"] == {"input_tokens": 3, "output_tokens": 4}


@pytest.fixture
def planted() -> Any:
    register_secrets([SECRET])
    yield SECRET
    clear_secrets()


def test_a_planted_secret_never_reaches_the_log(tmp_path: Path, planted: str) -> None:
    config = ModelConfig(id="j", model_name="judge", interface="openai_endpoint", endpoint_base_url="http://x/v1",
                         extra_kwargs={"headers": {"X-Team": planted}})
    echo = ScriptedModel(lambda r: f"you said {r.messages[-1].content}; token {planted}")
    model = LoggedModel(echo, CallLog(tmp_path / "calls.jsonl"), model_parameters(config))
    request = ChatRequest((Message("system", f"key={planted}"), Message("user", f"my {planted}")),
                          purpose=Purpose.ANSWER)
    asyncio.run(model.complete(request))
    model.log.close()
    text = (tmp_path / "calls.jsonl").read_text()
    assert planted not in text
    line = json.loads(text)
    assert line["request"]["parameters"]["extra_kwargs"]["headers"]["X-Team"] == "**********"  # the value, not the key
    assert line["request"]["messages"][1]["content"] == "my **********"
    assert line["request"]["parameters"]["model_name"] == "judge"


def test_a_failed_call_is_logged_with_its_error(tmp_path: Path) -> None:
    down = ScriptedModel(lambda r: ModelError("server said no", "server_error"))
    model = LoggedModel(down, CallLog(tmp_path / "calls.jsonl"), {})
    with pytest.raises(ModelError):
        asyncio.run(model.complete(ChatRequest((Message("user", "hi"),), purpose=Purpose.ANSWER)))
    line = json.loads((tmp_path / "calls.jsonl").read_text())
    assert line["reply"] is None and line["error"] == {"type": "ModelError", "message": "server said no"}


def test_an_existing_log_is_never_clobbered(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    path.write_text("earlier\n")
    with pytest.raises(UserError, match="--log-calls") as caught:
        CallLog(path)
    assert "--overwrite" in (caught.value.hint or "")
    assert path.read_text() == "earlier\n"
    CallLog(path, append=True).close()  # a resumed run goes on logging into it
    assert path.read_text() == "earlier\n"
    CallLog(path, overwrite=True).close()
    assert path.read_text() == ""


def bench() -> Benchmark:
    trait = LLMTrait(name="correct", kind="boolean", description="The response is correct")
    return Benchmark(name="log", global_rubric=Rubric(traits=[trait]), questions=[
        Question(id=f"q{i}", text=f"Capital number {i}?", raw_answer="Paris", finished=True) for i in range(6)])


def test_a_run_logs_every_call_made_at_the_port(tmp_path: Path) -> None:
    judge = ScriptedModel(honest)
    answerer = ScriptedModel(lambda r: "Paris.")
    cfg = VerificationConfig(answering_models=[ANSWERER], parsing_models=[SIM_JUDGE], evaluation_mode="rubric_only")
    outcome = verify.run_verification(
        bench(), cfg, adapter_factory=lambda m: answerer if m.id == "a" else judge, log_calls=tmp_path / "calls.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert len(lines) == len(judge.requests) + len(answerer.requests) == 12
    keys = {r.metadata.task_key for r in outcome.results}
    assert {line["task_key"] for line in lines} == keys
    assert {(line["stage"], line["purpose"]) for line in lines} == {
        ("generate_answer", "answer"), ("rubric_evaluation", "rubric_batch")}
    for line in lines:
        assert line["attempts"] == 1 and line["cached"] is False and line["duration_s"] >= 0
        assert line["started_at"].endswith("+00:00")
        assert line["request"]["parameters"]["interface"] == "simulated"


def test_the_cli_writes_the_log_and_refuses_to_replace_it(tmp_path: Path) -> None:
    from verify.cli import app

    checkpoint = tmp_path / "bench.jsonld"
    verify.save_benchmark(bench(), checkpoint)
    log = tmp_path / "calls.jsonl"
    args = ["run", str(checkpoint), "--interface", "simulated", "--evaluation-mode", "rubric_only",
            "--no-cache", "--log-calls", str(log), "--output", str(tmp_path / "out.json")]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert len(log.read_text().splitlines()) == 12
    again = CliRunner().invoke(app, [*args[:-1], str(tmp_path / "other.json")])
    assert again.exit_code == 1 and "--log-calls" in again.output
    same = CliRunner().invoke(app, [*args[:-3], str(checkpoint), "--output", str(tmp_path / "x.json")])
    assert same.exit_code == 1 and "names an input" in same.output


def test_threads_writing_at_once_never_tear_a_line(tmp_path: Path) -> None:
    import threading

    log = CallLog(tmp_path / "calls.jsonl")
    big = "y" * 40_000  # several buffer lengths: unlocked writers would interleave their pieces

    def write(n: int) -> None:
        for i in range(40):
            log.write({"writer": n, "i": i, "text": big})

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    log.close()
    lines = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert len(lines) == 240 and all(line["text"] == big for line in lines)


def test_each_line_is_on_disk_as_soon_as_its_call_ends(tmp_path: Path) -> None:
    log = CallLog(tmp_path / "calls.jsonl")
    log.write({"call": 1})
    assert json.loads((tmp_path / "calls.jsonl").read_text()) == {"call": 1}  # before close: a crash keeps it
    log.close()
