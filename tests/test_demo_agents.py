"""The offline agents demo (benchmarks/demo/agents*): the README's commands run with the simulated
provider and exit 0, and show what they claim: a recorded transcript judged with the full trace
(quotes in the tool block) or the final answer, a judge that searches then submits its grade, and an
answering model that uses its search tool."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from verify.cli import app

DEMO = Path(__file__).resolve().parent.parent / "benchmarks" / "demo"
BENCH, PRESET, ANSWERS = DEMO / "agents.jsonld", DEMO / "agents.json", DEMO / "agent_answers.json"


def verify(*args: object) -> Result:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}\n{result.exception!r}"
    return result


def results(path: Path) -> dict[str, dict[str, Any]]:
    return {r["metadata"]["question_id"]: r for r in json.loads(path.read_text())["results"]}


def test_the_demo_files_are_what_the_generator_writes(tmp_path: Path) -> None:
    from verify.benchmark.jsonld import save_benchmark

    spec = importlib.util.spec_from_file_location("make_agents_demo", DEMO / "make_agents_demo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert json.loads(ANSWERS.read_text()) == module.ANSWERS
    assert json.loads(PRESET.read_text()) == module.PRESET
    save_benchmark(module.build(), tmp_path / "agents.jsonld")
    assert (tmp_path / "agents.jsonld").read_text() == BENCH.read_text()


def test_a_recorded_transcript_judged_with_the_full_trace_quotes_the_tool_block(tmp_path: Path) -> None:
    out = tmp_path / "full.json"
    verify(BENCH, "--preset", PRESET, "--answers", ANSWERS, "--output", out, "--no-cache")
    boiling = results(out)["agent-boiling"]
    rendered = boiling["template"]["raw_llm_response"]
    quotes = boiling["deep_judgment_rubric"]["extracted_rubric_excerpts"]["cites_boiling_point"]
    in_tool = [q for q in quotes if q["block"] == 3]
    assert in_tool and all(rendered[q["start"]:q["end"]] == q["text"] for q in quotes)
    assert "[B3] tool search: Water boils at 100 degrees Celsius" in rendered
    assert "Water boils at 100" in in_tool[0]["text"]
    # the judge with tools searched, then submitted its grade through the tool
    checked = boiling["rubric"]["trait_status"]["fact_checked"]
    assert [c["name"] for c in checked["tool_calls"]] == ["search", "submit_grade"]
    assert checked["status"] == "scored" and 0.0 <= checked["score"] <= 1.0


def test_the_same_transcript_judged_with_the_final_answer_only(tmp_path: Path) -> None:
    out = tmp_path / "final.json"
    verify(BENCH, "--preset", PRESET, "--answers", ANSWERS, "--output", out, "--no-cache",
           "--use-final-message-for-rubric")
    boiling = results(out)["agent-boiling"]
    quotes = boiling["deep_judgment_rubric"]["extracted_rubric_excerpts"]["cites_boiling_point"]
    assert quotes and all(q["block"] is None for q in quotes)  # quotes from the final answer, not the trace
    assert all("tool search" not in q["text"] for q in quotes)
    assert boiling["template"]["raw_llm_response"].startswith("[B1] user:")  # the result keeps the transcript


def test_an_answering_model_with_tools_searches_then_answers(tmp_path: Path) -> None:
    out = tmp_path / "live.json"
    verify(BENCH, "--preset", PRESET, "--output", out, "--no-cache")
    for qid, result in results(out).items():
        messages = result["template"]["trace_messages"]
        assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"], qid
        assert messages[2]["tool_calls"][0]["name"] == "search"
        assert result["template"]["answer_source"] == "model"
        assert "According to my search tool" in messages[4]["content"]
        assert result["template"]["usage_metadata"]["answer_generation"]["calls"] == 2


def test_show_plan_names_the_extractor_and_the_full_trace_choices() -> None:
    shown = verify(BENCH, "--preset", PRESET, "--answers", ANSWERS, "--show-plan", "--transcript-extractor",
                   "all_assistant", "--use-final-message-for-template").output
    line = " ".join(next(x for x in shown.splitlines() if x.startswith("transcripts")).split())
    assert "answering model 'agent' uses tools ['search']" in shown and "recorded answers (--answers)" in shown
    assert "transcript_extractor all_assistant" in line
    assert "rubric judges read the full trace" in " ".join(shown.split())
    assert "template judges read the submission" in " ".join(shown.split())


def test_a_bad_extractor_flag_is_one_clean_error() -> None:
    result = CliRunner().invoke(app, [str(BENCH), "--preset", str(PRESET), "--show-plan",
                                      "--transcript-extractor", "first_message"])
    assert result.exit_code != 0 and "transcript_extractor" in result.output
    assert "Traceback" not in result.output
