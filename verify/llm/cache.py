"""A content-addressed SQLite cache of model replies, and the :class:`CachedModel` wrapper.

One table ``replies(key TEXT PRIMARY KEY, value TEXT, created REAL)`` in WAL mode; each put is
its own transaction (``INSERT OR REPLACE``), so a killed process loses at most the reply being
written and never leaves the file unusable. A file that SQLite cannot read is moved aside to
``<name>.corrupt-<timestamp>`` (with a warning) and a fresh cache is created in its place. A failed
read, write or delete is logged the first time it happens; the same failure again (a full disk
fails every write) is only counted, and :meth:`ResponseCache.close` reports the count in one line.

The key is the sha256 of ``{model_id, messages, schema, replicate, cache_version}``: ``purpose`` and
``trait`` are deliberately not part of it (the same prompt to the same model is the same call).
Only complete replies are stored: truncated, content-filtered or empty replies are not.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
import warnings
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from verify.llm.ports import ChatModel, ChatReply, ChatRequest, Search, SearchHit, Usage
from verify.llm.structured import TRUNCATED_FINISH_REASONS
from verify.secrets import mask_data

__all__ = ["CACHE_VERSION", "CachedModel", "ResponseCache", "cache_key"]

log = logging.getLogger(__name__)

CACHE_VERSION = 1
# a truncated reply, or one the provider flagged, must be asked again next time
_UNCACHEABLE_FINISH = TRUNCATED_FINISH_REASONS | {"content_filter", "error", "refusal"}


def cache_key(model_id: str, request: ChatRequest) -> str:
    """The content address of a call: model identity, messages, wanted schema and replicate."""
    payload = {
        "cache_version": CACHE_VERSION,
        "model_id": model_id,
        "messages": [[m.role, m.content] for m in request.messages],
        "schema": request.schema,
        "replicate": request.replicate,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """SQLite key/value store shared by every model of a run; safe to use from several threads."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = self._open()
        self._repeats: Counter[tuple[str, str]] = Counter()  # (operation, error) -> failures after the first
        self._repeats_lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL NOT NULL)"
            )
            conn.execute("SELECT count(*) FROM replies WHERE key = ''").fetchone()
        except BaseException:
            conn.close()
            raise
        return conn

    def _open(self) -> sqlite3.Connection:
        try:
            return self._connect()
        except sqlite3.DatabaseError as exc:
            aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
            message = f"response cache {self.path} is unreadable ({exc}); moved it to {aside.name} and started afresh"
            warnings.warn(message, RuntimeWarning, stacklevel=3)
            log.warning(message)
            self.path.replace(aside)
            for suffix in ("-wal", "-shm"):
                side = self.path.with_name(self.path.name + suffix)
                if side.exists():
                    side.replace(aside.with_name(aside.name + suffix))
            return self._connect()

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            with self._lock:
                row = self._conn.execute("SELECT value FROM replies WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            self._failed("read", exc, "treated as a miss")
            return None
        if row is None:
            return None
        try:
            value = json.loads(row[0])
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        blob = _blob(value)
        if blob is None:
            return
        try:
            with self._lock:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    self._conn.execute(
                        "INSERT OR REPLACE INTO replies (key, value, created) VALUES (?, ?, ?)",
                        (key, blob, time.time()),
                    )
                except BaseException:
                    if self._conn.in_transaction:  # SQLite already rolled back on a full disk
                        self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._failed("write", exc, "reply not cached")

    def delete(self, key: str, value: dict[str, Any]) -> None:
        """Delete ``key`` only while it still holds ``value`` (another call may have replaced it)."""
        blob = _blob(value)
        if blob is None:
            return
        try:
            with self._lock:
                self._conn.execute("DELETE FROM replies WHERE key = ? AND value = ?", (key, blob))
        except sqlite3.Error as exc:
            self._failed("delete", exc, "entry kept")

    def _failed(self, operation: str, exc: sqlite3.Error, outcome: str) -> None:
        key = (operation, str(exc))
        with self._repeats_lock:
            first = key not in self._repeats
            self._repeats[key] += 0 if first else 1
        if first:
            log.warning("response cache %s failed (%s): %s", operation, outcome, exc)

    @property
    def repeated_failures(self) -> dict[tuple[str, str], int]:
        """``{(operation, error): failures after the first}``: those not logged one by one."""
        with self._repeats_lock:
            return {key: n for key, n in self._repeats.items() if n}

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        """Close the file, after one line per failure that repeated (how many more times it did)."""
        for (operation, error), n in self.repeated_failures.items():
            plural = "s" if n > 1 else ""
            log.warning("response cache: %d more %s failure%s like the above (%s)", n, operation, plural, error)
        with self._repeats_lock:
            self._repeats.clear()
        with self._lock:
            self._conn.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _cacheable(reply: ChatReply) -> bool:
    if reply.cached:
        return False
    if (reply.finish_reason or "").lower() in _UNCACHEABLE_FINISH:
        return False
    return bool(reply.text.strip()) or reply.parsed is not None


class CachedModel:
    """Serves repeated calls from a :class:`ResponseCache`; ``hits`` / ``misses`` count them."""

    def __init__(self, inner: ChatModel, cache: ResponseCache) -> None:
        self.inner = inner
        self.cache = cache
        self.hits = 0
        self.misses = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    async def complete(self, request: ChatRequest) -> ChatReply:
        if request.tools:  # a tool-using judge's turns depend on live tool results: never cached
            return await self.inner.complete(request)
        key = cache_key(self.model_id, request)
        stored = self.cache.get(key)
        if stored is not None:
            reply = _reply_from_record(stored, self.model_id)
            if reply is not None:
                self.hits += 1
                return replace(reply, forget=lambda: self.cache.delete(key, stored))
        self.misses += 1
        reply = await self.inner.complete(request)
        if _cacheable(reply):
            record = _record(reply)
            self.cache.put(key, record)
            return replace(reply, forget=lambda: self.cache.delete(key, record))
        return reply


def _blob(value: dict[str, Any]) -> str | None:
    """What the cache stores for ``value``, or None when it holds a credential: a reply that echoes one is
    not kept (stored masked, a rerun from the cache would quote text the answer does not hold; in clear,
    the cache would leak it), so it is asked again next time."""
    if mask_data(value) != value:
        return None
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _record(reply: ChatReply) -> dict[str, Any]:
    return {
        "text": reply.text,
        "parsed": reply.parsed,
        "usage": {"input_tokens": reply.usage.input_tokens, "output_tokens": reply.usage.output_tokens},
        "finish_reason": reply.finish_reason,
        "model": reply.model,
        "latency_s": reply.latency_s,
    }


def _reply_from_record(record: dict[str, Any], model_id: str) -> ChatReply | None:
    text = record.get("text")
    if not isinstance(text, str):
        return None
    usage = record.get("usage") or {}
    parsed = record.get("parsed")
    return ChatReply(
        text=text,
        parsed=parsed if isinstance(parsed, dict) else None,
        usage=Usage(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))),
        latency_s=0.0,
        finish_reason=record.get("finish_reason"),
        model=record.get("model") or model_id,
        cached=True,
        attempts=0,
    )


class CachedSearch:
    """Serves repeated search queries from memory and, when given, the response cache.

    Search results are cached like model replies: the same excerpt searched again in this run or a
    later one costs nothing. Failures are never cached.
    """

    def __init__(self, inner: Search, cache: ResponseCache | None, *, tool_id: str) -> None:
        self.inner = inner
        self.cache = cache
        self.tool_id = tool_id
        self._memory: dict[str, list[SearchHit]] = {}
        self.hits = 0
        self.misses = 0

    async def search(self, query: str) -> list[SearchHit]:
        key = "search:" + hashlib.sha256(json.dumps([self.tool_id, query]).encode()).hexdigest()
        if key in self._memory:
            self.hits += 1
            return self._memory[key]
        stored = self.cache.get(key) if self.cache else None
        if stored is not None and isinstance(stored.get("hits"), list):
            self.hits += 1
            hits = [SearchHit(**h) for h in stored["hits"] if isinstance(h, dict)]
            self._memory[key] = hits
            return hits
        self.misses += 1
        hits = await self.inner.search(query)
        self._memory[key] = hits
        if self.cache is not None:
            self.cache.put(key, {"hits": [{"content": h.content, "title": h.title, "url": h.url} for h in hits]})
        return hits
