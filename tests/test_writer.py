"""The progress writer: a line counts only once it is fsynced, lines queued meanwhile share one fsync,
and after a failed write nothing more is said to be saved."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import threading
from pathlib import Path

import pytest

from verify.results.karenina_form import from_export
from verify.results.models import VerificationResult
from verify.results.writer import HEADER_KEY, ResultWriter


def sample(key: str) -> VerificationResult:
    return VerificationResult.model_validate({"metadata": {
        "question_id": key, "template_id": "t", "task_key": key, "question_text": "Q?", "result_id": key,
        "evaluation_mode": "rubric_only",
        "answering": {"interface": "simulated", "model_name": "a", "config_id": "a"},
        "parsing": {"interface": "simulated", "model_name": "j", "config_id": "j"},
        "verdict": "judged", "coverage": {"judged": 1, "total": 1},
    }})


class Disk:
    """``os.fsync`` held until the test lets it go; counts the fsyncs that finished."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.synced = 0
        self.real = os.fsync

    def fsync(self, fd: int) -> None:
        self.entered.set()
        assert self.release.wait(30)
        self.real(fd)
        self.synced += 1


def lines_of(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_save_returns_only_once_the_line_is_fsynced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = ResultWriter(tmp_path / "p.jsonl", append=False, header={"identity": {}})
    disk = Disk()
    monkeypatch.setattr(os, "fsync", disk.fsync)

    async def main() -> None:
        saving = asyncio.create_task(writer.save(sample("k1")))
        assert await asyncio.to_thread(disk.entered.wait, 30)  # the writer thread is in fsync
        await asyncio.sleep(0)
        assert not saving.done() and disk.synced == 0 and writer.written == 0
        disk.release.set()
        await saving
        assert disk.synced == 1 and writer.written == 1

    asyncio.run(main())
    writer.close()
    header, line = lines_of(tmp_path / "p.jsonl")
    assert HEADER_KEY in header and from_export(line) == sample("k1")  # karenina's form, read back whole


def test_lines_queued_during_an_fsync_share_the_next_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = ResultWriter(tmp_path / "p.jsonl", append=False)
    disk = Disk()
    monkeypatch.setattr(os, "fsync", disk.fsync)

    async def main() -> None:
        first = asyncio.create_task(writer.save(sample("k0")))
        assert await asyncio.to_thread(disk.entered.wait, 30)
        others = [asyncio.create_task(writer.save(sample(f"k{i}"))) for i in range(1, 6)]
        await asyncio.sleep(0)  # all five are queued behind the fsync in progress
        disk.release.set()
        await asyncio.gather(first, *others)

    asyncio.run(main())
    writer.close()
    assert disk.synced == 2  # one for k0, one for the five queued meanwhile
    assert [line["verify"]["task_key"] for line in lines_of(tmp_path / "p.jsonl")] == [f"k{i}" for i in range(6)]


def test_after_a_failed_write_no_later_line_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = ResultWriter(tmp_path / "p.jsonl", append=False)
    real = ResultWriter.append

    def append(self: ResultWriter, lines: list[str]) -> None:
        if self.written >= 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, lines)

    monkeypatch.setattr(ResultWriter, "append", append)

    async def main() -> list[BaseException | None]:
        await writer.save(sample("k0"))
        outcomes: list[BaseException | None] = []
        for key in ("k1", "k2"):
            try:
                await writer.save(sample(key))
                outcomes.append(None)
            except OSError as exc:
                outcomes.append(exc)
        return outcomes

    outcomes = asyncio.run(main())
    writer.close()
    assert all(isinstance(o, OSError) for o in outcomes) and writer.written == 1
    assert len(lines_of(tmp_path / "p.jsonl")) == 1


def test_a_resumed_file_loses_only_its_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    whole = json.dumps({"a": 1}) + "\n"
    path.write_text(whole * 3 + '{"cut', encoding="utf-8")
    ResultWriter(path, append=True).close()
    assert path.read_text(encoding="utf-8") == whole * 3


def test_a_run_counts_a_task_only_once_its_line_is_fsynced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from verify.benchmark.jsonld import load_benchmark
    from verify.config.preset import load_preset
    from verify.run.runner import run_verification

    demo = Path(__file__).resolve().parent.parent / "benchmarks" / "demo"
    out = tmp_path / "r.json"
    progress = tmp_path / "r.json.progress.jsonl"
    durable: set[str] = set()
    real = os.fsync

    def fsync(fd: int) -> None:
        real(fd)
        if progress.exists():
            durable.update(line.get("verify", {}).get("task_key") for line in lines_of(progress))  # type: ignore[misc]

    counted: list[bool] = []
    monkeypatch.setattr(os, "fsync", fsync)
    answers = json.loads((demo / "answers.json").read_text(encoding="utf-8"))
    run_verification(load_benchmark(demo / "demo.jsonld"), load_preset("demo"), answers=answers, output=out,
                     on_result=lambda r: counted.append(r.metadata.task_key in durable))
    assert counted == [True] * 8
