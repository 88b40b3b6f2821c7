"""The SQLite response cache and the CachedModel wrapper."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from verify.llm.cache import CachedModel, ResponseCache, cache_key
from verify.llm.ports import ChatReply, ChatRequest, Message, Purpose, Usage


@dataclass
class EchoModel:
    """Answers with a numbered echo of the last message; counts calls."""

    finish_reason: str | None = "stop"
    model_id: str = "fake:echo@1"
    calls: int = 0
    fail: Exception | None = None
    requests: list[ChatRequest] = field(default_factory=list)

    async def complete(self, request: ChatRequest) -> ChatReply:
        self.calls += 1
        self.requests.append(request)
        if self.fail is not None:
            raise self.fail
        parsed = {"n": self.calls} if request.schema else None
        return ChatReply(
            text=f"{self.calls}:{request.messages[-1].content}",
            parsed=parsed,
            usage=Usage(11, 7),
            latency_s=0.25,
            finish_reason=self.finish_reason,
            model=self.model_id,
        )


def req(content: str = "hi", purpose: Purpose = Purpose.ANSWER, **kwargs: object) -> ChatRequest:
    return ChatRequest((Message("user", content),), purpose=purpose, **kwargs)  # type: ignore[arg-type]


def test_key_covers_model_messages_schema_replicate_but_not_purpose() -> None:
    base = cache_key("m", req())
    assert base == cache_key("m", req())
    assert base == cache_key("m", req(purpose=Purpose.RUBRIC_SINGLE, trait="t"))
    assert base != cache_key("m2", req())
    assert base != cache_key("m", req("other"))
    assert base != cache_key("m", req(schema={"title": "X"}))
    assert base != cache_key("m", req(replicate=2))
    assert len(base) == 64


async def test_second_call_is_served_from_cache(tmp_path: Path) -> None:
    inner = EchoModel()
    model = CachedModel(inner, ResponseCache(tmp_path / "cache.sqlite"))
    first = await model.complete(req(schema={"title": "S"}))
    second = await model.complete(req(schema={"title": "S"}, purpose=Purpose.DJ_SCORE))
    assert inner.calls == 1
    assert (model.hits, model.misses) == (1, 1)
    assert not first.cached and second.cached
    assert (second.text, second.parsed, second.usage) == (first.text, first.parsed, Usage(11, 7))
    assert (second.latency_s, second.finish_reason, second.model) == (0.0, "stop", "fake:echo@1")
    assert model.model_id == inner.model_id


async def test_another_instance_on_the_same_file_hits(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "cache.sqlite"
    await CachedModel(EchoModel(), ResponseCache(path)).complete(req())
    inner = EchoModel()
    again = CachedModel(inner, ResponseCache(path))
    reply = await again.complete(req())
    assert reply.cached and reply.text == "1:hi"
    assert inner.calls == 0 and again.hits == 1


@pytest.mark.parametrize("finish", ["length", "max_tokens", "content_filter"])
async def test_truncated_replies_are_not_stored(tmp_path: Path, finish: str) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    inner = EchoModel(finish_reason=finish)
    model = CachedModel(inner, cache)
    await model.complete(req())
    await model.complete(req())
    assert inner.calls == 2 and len(cache) == 0


async def test_errors_are_not_stored(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    model = CachedModel(EchoModel(fail=RuntimeError("boom")), cache)
    with pytest.raises(RuntimeError):
        await model.complete(req())
    assert len(cache) == 0


async def test_garbage_file_is_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"\x00garbage, not sqlite\xff" * 300)
    with pytest.warns(RuntimeWarning, match="unreadable"):
        cache = ResponseCache(path)
    aside = list(tmp_path.glob("cache.sqlite.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"\x00garbage")
    model = CachedModel(EchoModel(), cache)
    await model.complete(req())
    assert (await model.complete(req())).cached


def test_writes_from_many_threads(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")

    def work(worker: int) -> None:
        for i in range(50):
            cache.put(f"{worker}-{i}", {"text": str(i)})
            assert cache.get(f"{worker}-{i}") == {"text": str(i)}

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 400


async def test_concurrent_tasks_share_one_cache(tmp_path: Path) -> None:
    inner = EchoModel()
    model = CachedModel(inner, ResponseCache(tmp_path / "c.sqlite"))
    await asyncio.gather(*(model.complete(req(str(i))) for i in range(20)))
    replies = await asyncio.gather(*(model.complete(req(str(i))) for i in range(20)))
    assert inner.calls == 20 and all(r.cached for r in replies)


def test_a_killed_writer_leaves_a_usable_cache(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    script = (
        "import os, sys\n"
        "from verify.llm.cache import ResponseCache\n"
        "cache = ResponseCache(sys.argv[1])\n"
        "for i in range(200):\n"
        "    cache.put(f'k{i}', {'text': 'x' * 1000})\n"
        "os._exit(9)  # no close, no checkpoint: like a kill\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, timeout=60)
    assert done.returncode == 9, done.stderr.decode()
    cache = ResponseCache(path)
    assert len(cache) == 200
    assert cache.get("k199") == {"text": "x" * 1000}
    cache.put("after", {"text": "ok"})
    assert cache.get("after") == {"text": "ok"}


async def test_cached_search_serves_repeats_from_memory_and_disk(tmp_path) -> None:
    from verify.llm.cache import CachedSearch, ResponseCache
    from verify.llm.simulated.search import SimulatedSearch

    inner = SimulatedSearch()
    cache = ResponseCache(tmp_path / "c.sqlite")
    first = CachedSearch(inner, cache, tool_id="simulated")
    hits = await first.search("capital of France")
    assert hits and await first.search("capital of France") == hits
    assert inner.calls == 1 and first.hits == 1
    second = CachedSearch(inner, cache, tool_id="simulated")
    assert await second.search("capital of France") == hits
    assert inner.calls == 1 and second.hits == 1


async def test_cached_search_does_not_cache_failures(tmp_path) -> None:
    import pytest

    from verify.errors import SearchError
    from verify.llm.cache import CachedSearch
    from verify.llm.simulated.search import SimulatedSearch

    failing = CachedSearch(SimulatedSearch(fail=True), None, tool_id="x")
    for _ in range(2):
        with pytest.raises(SearchError):
            await failing.search("q")
    assert failing.misses == 2


async def test_a_reply_that_never_parsed_is_not_replayed_from_the_cache(tmp_path) -> None:
    from pydantic import BaseModel

    from verify.llm.build import CountingModel
    from verify.llm.cache import CachedModel, ResponseCache
    from verify.llm.ports import ChatReply, Message
    from verify.llm.structured import ask_structured

    class Verdict(BaseModel):
        ok: bool

    class Prose:
        model_id = "prose"

        def __init__(self, text: str) -> None:
            self.text = text

        async def complete(self, request: ChatRequest) -> ChatReply:
            return ChatReply(text=self.text)

    cache = ResponseCache(tmp_path / "c.sqlite")
    messages = [Message("user", "judge")]
    bad = CountingModel(Prose("no JSON here"))
    first = await ask_structured(CachedModel(bad, cache), messages, Verdict, purpose=Purpose.RUBRIC_SINGLE, max_parse_retries=1)
    assert first.value is None and bad.calls == 2
    assert len(cache) == 0  # both failed attempts were dropped
    good = CountingModel(Prose('{"ok": true}'))
    second = await ask_structured(CachedModel(good, cache), messages, Verdict, purpose=Purpose.RUBRIC_SINGLE)
    assert second.value is not None and good.calls == 1
    third = await ask_structured(CachedModel(good, cache), messages, Verdict, purpose=Purpose.RUBRIC_SINGLE)
    assert third.value is not None and good.calls == 1  # successes stay cached


def test_delete_only_removes_the_value_the_caller_saw(tmp_path) -> None:
    from verify.llm.cache import ResponseCache

    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("k", {"text": "good"})
    cache.delete("k", {"text": "bad"})  # another call's unusable reply, already replaced
    assert cache.get("k") == {"text": "good"}
    cache.delete("k", {"text": "good"})
    assert cache.get("k") is None


async def test_a_full_disk_is_reported_once_then_counted(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    pages = cache._conn.execute("PRAGMA page_count").fetchone()[0]
    cache._conn.execute(f"PRAGMA max_page_count = {pages}")  # no room for one more page: SQLITE_FULL
    model = CachedModel(EchoModel(), cache)
    with caplog.at_level("WARNING", logger="verify.llm.cache"):
        replies = [await model.complete(req("x" * 5000 + str(n))) for n in range(286)]
        assert all(not r.cached for r in replies)  # every call still answered, just not stored
        assert len(caplog.records) == 1
        assert caplog.records[0].getMessage() == (
            "response cache write failed (reply not cached): database or disk is full"
        )
        assert cache.repeated_failures == {("write", "database or disk is full"): 285}
        cache.close()
    assert [r.getMessage() for r in caplog.records[1:]] == [
        "response cache: 285 more write failures like the above (database or disk is full)"
    ]


def test_different_failures_are_each_reported(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import sqlite3

    class Broken:
        def __init__(self, message: str) -> None:
            self.message = message

        def execute(self, *args: object) -> None:
            raise sqlite3.OperationalError(self.message)

        def close(self) -> None:
            pass

    cache = ResponseCache(tmp_path / "cache.sqlite")
    cache._conn.close()
    with caplog.at_level("WARNING", logger="verify.llm.cache"):
        cache._conn = Broken("disk I/O error")  # type: ignore[assignment]
        for _ in range(3):
            assert cache.get("k") is None
            cache.put("k", {"text": "t"})
        cache._conn = Broken("database is locked")  # type: ignore[assignment]
        cache.put("k", {"text": "t"})
        cache.delete("k", {"text": "t"})
        cache.close()
        cache.close()  # the counts are reported once
    assert [r.getMessage() for r in caplog.records] == [
        "response cache read failed (treated as a miss): disk I/O error",
        "response cache write failed (reply not cached): disk I/O error",
        "response cache write failed (reply not cached): database is locked",
        "response cache delete failed (entry kept): database is locked",
        "response cache: 2 more read failures like the above (disk I/O error)",
        "response cache: 2 more write failures like the above (disk I/O error)",
    ]


async def test_a_reply_echoing_a_credential_is_not_kept(tmp_path: Path) -> None:
    from verify.secrets import clear_secrets, register_secrets

    secret = "sk-live-0123456789abcdefghijklmnop"
    register_secrets([secret])
    try:
        inner = EchoModel()
        path = tmp_path / "cache.sqlite"
        model = CachedModel(inner, ResponseCache(path))
        first = await model.complete(req(f"the key is {secret}"))
        second = await model.complete(req(f"the key is {secret}"))
        assert secret in first.text and inner.calls == 2 and not second.cached  # asked again, never replayed masked
        await model.complete(req("plain"))
        assert (await model.complete(req("plain"))).cached  # other replies are kept as before
        assert secret.encode() not in path.read_bytes()
    finally:
        clear_secrets()
