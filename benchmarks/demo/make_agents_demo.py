"""Regenerate the offline agents demo: agents.jsonld, agent_answers.json (recorded transcripts) and the
agents.json preset (a simulated answering model with a search tool, a simulated judge).

Run: python benchmarks/demo/make_agents_demo.py

What it shows (README, "Agents as answers" and "Judges with tools"), all offline:

* a recorded transcript with tool calls judged with the full trace (deep-judgment quotes land in the
  tool-result block) or the final answer only (``--use-final-message-for-rubric``);
* a judge with tools (``fact_checked``): it searches, then grades through ``submit_grade``;
* an answering model with tools: without ``--answers`` the simulated answerer searches, then answers.
"""

from __future__ import annotations

import json
from pathlib import Path

from verify.benchmark.jsonld import Benchmark, save_benchmark
from verify.benchmark.question import Question
from verify.benchmark.traits import LLMTrait, RegexTrait, Rubric

HERE = Path(__file__).parent


def build() -> Benchmark:
    rubric = Rubric(traits=[
        LLMTrait(name="cites_boiling_point", kind="boolean", min_score=0, max_score=1,
                 description="States the temperature at which water boils, in degrees Celsius"),
        LLMTrait(name="fact_checked", description="The answer is factually correct",
                 tools=["search", "submit_grade"], tool_rounds=3),
        RegexTrait(name="has_number", pattern=r"\d+", description="Contains a number"),
    ])
    questions = [
        Question(id="agent-boiling", text="At what temperature does pure water boil at sea level?",
                 raw_answer="100 degrees Celsius", finished=True, keywords=["physics"]),
        Question(id="agent-freezing", text="At what temperature does water freeze at standard pressure?",
                 raw_answer="0 degrees Celsius", finished=True, keywords=["physics"]),
    ]
    for question in questions:  # fixed dates, so regenerating gives the same file
        question.date_created = question.date_modified = "2026-11-24T00:00:00"
    return Benchmark(name="verify-agents-demo", description="Offline demo: agent transcripts and judges with tools",
                     version="1.0.0", creator="verify", id="urn:verify:agents-demo",
                     date_created="2026-11-24T00:00:00", date_modified="2026-11-24T00:00:00",
                     global_rubric=rubric, questions=questions)


BOILING = "Water boils at 100 degrees Celsius (212 degrees Fahrenheit) at sea-level pressure."
FREEZING = "Water freezes at 0 degrees Celsius (32 degrees Fahrenheit) at standard pressure."
ANSWERS = {
    "agent": {
        # OpenAI chat format: the evidence is in the tool result, the final answer is short
        "agent-boiling": [
            {"role": "user", "content": "At what temperature does pure water boil at sea level?"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
                "name": "search", "arguments": json.dumps({"query": "boiling point of water at sea level"})}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": BOILING},
            {"role": "assistant", "content": "It boils at 100 degrees Celsius."},
        ],
        # karenina's trace_messages form
        "agent-freezing": [
            {"role": "user", "content": "At what temperature does water freeze at standard pressure?", "block_index": 0},
            {"role": "assistant", "content": "", "block_index": 1,
             "tool_calls": [{"id": "t1", "name": "search", "input": {"query": "freezing point of water"}}]},
            {"role": "tool", "content": FREEZING, "block_index": 2,
             "tool_result": {"tool_use_id": "t1", "is_error": False}},
            {"role": "assistant", "content": "Water freezes at 0 degrees Celsius.", "block_index": 3},
        ],
    },
}

PRESET = {
    "_comment": "Offline agents demo (benchmarks/demo/make_agents_demo.py): a simulated answering model with a "
                "search tool and a simulated judge; search is the offline simulated corpus.",
    "name": "agents-demo",
    "description": "Agent transcripts (recorded or live, with tools) judged with deep judgment and a tool-using judge.",
    "config": {
        "answering_models": [{"id": "agent", "model_provider": "simulated", "model_name": "simulated-agent",
                              "interface": "simulated", "temperature": 0.0, "tools": ["search"], "tool_rounds": 3}],
        "parsing_models": [{"id": "judge", "model_provider": "simulated", "model_name": "simulated-judge",
                            "interface": "simulated", "temperature": 0.0}],
        "evaluation_mode": "rubric_only",
        "deep_judgment_rubric_mode": "enable_all",
        "deep_judgment_rubric_search_tool": "simulated",
    },
    "created_at": "2026-11-24T00:00:00+00:00",
    "updated_at": "2026-11-24T00:00:00+00:00",
}

if __name__ == "__main__":
    save_benchmark(build(), HERE / "agents.jsonld")
    (HERE / "agent_answers.json").write_text(json.dumps(ANSWERS, indent=2) + "\n")
    (HERE / "agents.json").write_text(json.dumps(PRESET, indent=2) + "\n")
    print("wrote", HERE / "agents.jsonld", HERE / "agent_answers.json", HERE / "agents.json")
