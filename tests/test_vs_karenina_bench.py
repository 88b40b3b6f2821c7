"""``benchmarks/vs_karenina.py`` (verify only, tiny) and its judge, ``benchmarks/latency_judge.py``."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def judge_module() -> ModuleType:
    return _load("latency_judge")


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    sys.path.insert(0, str(BENCH))  # vs_karenina imports benchgen as a script would
    try:
        return _load("vs_karenina")
    finally:
        sys.path.remove(str(BENCH))


@pytest.mark.slow
def test_verify_only_quick_run_prints_every_figure_with_15_requests_per_question() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "vs_karenina.py"), "--no-karenina", "--quick", "--questions", "2",
         "--latency-ms", "0"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    values = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line and "|" not in line)
    for name in ("wall_default_s", "wall_workers20_s", "judge_requests", "prompt_chars", "peak_rss_mb",
                 "first_request_s", "wall_0ms_default_s", "wall_0ms_workers20_s", "wall_dj_off_0ms_s"):  # fmt: skip
        assert float(values[f"verify_{name}"]) > 0, name
    # deep judgment with excerpts, 5 traits, no retry: excerpts + reasoning + verdict per trait
    assert values["verify_judge_requests"] == "30"
    assert float(values["verify_requests_per_question"]) == 15
    assert not any(name.startswith(("karenina_", "ratio_")) for name in values)
    assert "| figure | verify |" in done.stdout


def test_write_replaces_only_the_marked_section(bench: ModuleType) -> None:
    before = "# Results\r\n\nkeep me  \n\t| a | b |\n"
    after = "\n## Later\n\nalso kept, trailing spaces   \n"
    old = f"{bench.START}\nold table\n{bench.END}"
    new = f"{bench.START}\nnew table\n{bench.END}"
    assert bench.replace_section(before + old + after, new) == before + new + after
    # absent: appended, and what was there stays byte for byte
    appended = bench.replace_section(before, new)
    assert appended.startswith(before) and appended.endswith(new + "\n")
    # a second write replaces the appended section instead of adding another
    assert bench.replace_section(appended, old).count(bench.START) == 1


def test_judge_quotes_the_answer_verbatim_and_answers_batches_for_every_trait(judge_module: ModuleType) -> None:
    answer = "Water boils at 100 degrees Celsius at sea level. Wear gloves near the hot kettle, always."
    judge = judge_module.Judge([answer], latency_ms=0)
    excerpts = {"type": "json_schema", "json_schema": {"schema": {"type": "object", "properties": {
        "excerpts": {"type": "array", "items": {"type": "object", "properties": {
            "text": {"type": "string"}, "confidence": {"type": "string", "enum": ["high", "low"]}}}}}}}}  # fmt: skip
    body = {"messages": [{"role": "user", "content": f"<response>{answer}</response> safety gloves"}],
            "response_format": excerpts}  # fmt: skip
    quotes = json.loads(judge.reply(body, judge_module.message_text(body)))["excerpts"]
    assert quotes and all(q["text"] in answer for q in quotes)
    assert quotes[0]["text"].startswith("Wear gloves")  # the sentence sharing the criterion's words first

    batch = {"type": "json_schema", "json_schema": {"schema": {"type": "object", "properties": {
        "scores": {"type": "object", "additionalProperties": {"type": "integer"}}}}}}  # fmt: skip
    prompt = ('<trait name="safe" kind="boolean">x</trait>\n<trait name="clarity" kind="score" min="1" max="5">y</trait>'
              '\n- **tone**: the tone\n  Classes: formal, casual\n')  # fmt: skip
    body = {"messages": [{"role": "user", "content": prompt}], "response_format": batch}
    assert json.loads(judge.reply(body, prompt)) == {"scores": {"safe": True, "clarity": 4}}
    assert judge_module.traits(prompt)["tone"] == "formal"
    assert judge.count(prompt) == 0 and judge.stats()["requests"] == 1
