"""Judges that use tools before they grade (letta's agent-as-judge): search, command runners and
``submit_grade(score, rationale)``.

The tools are checked when the trait is built (no submit tool: refused naming the trait, before any
model call); every call and result is kept in ``trait_status.<trait>.tool_calls``; a judge that
never submits, or runs out of rounds, leaves the trait unscored with its transcript, never 0.0.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from fakes import ScriptedModel, run_pipeline, simulated_judge
from pydantic import ValidationError

from verify.benchmark.traits import LLMTrait
from verify.errors import ConfigError
from verify.judging.judge_commands import run_command
from verify.judging.tool_judge import judge_with_tools
from verify.llm.ports import ChatReply, ChatRequest, Purpose, SearchHit, ToolCall
from verify.llm.simulated.search import SimulatedSearch

ANSWER = "The capital of France is Paris, on the Seine."
QUESTION = "What is the capital of France?"
PROMPT = "Rubric: {rubric}\nQuestion: {input}\nSubmission: {submission}\nCheck it, then call submit_grade."


def tool_trait(tools: list[Any], **kw: Any) -> LLMTrait:
    return LLMTrait(name="checked", description="names the capital correctly", prompt=PROMPT, tools=tools, **kw)


@dataclass
class Spy:
    """Passes requests to ``inner``, keeping them."""

    inner: Any
    requests: list[ChatRequest] = field(default_factory=list)

    @property
    def model_id(self) -> str:
        return str(self.inner.model_id)

    async def complete(self, request: ChatRequest) -> ChatReply:
        self.requests.append(request)
        reply: ChatReply = await self.inner.complete(request)
        return reply


def calling(*calls: ToolCall | str) -> ScriptedModel:
    """A judge making ``calls`` in turn (a string is a plain text reply); the last one again after."""
    seen: list[int] = []

    def script(request: ChatRequest) -> ChatReply:
        seen.append(1)
        call = calls[min(len(seen), len(calls)) - 1]
        if isinstance(call, str):
            return ChatReply(text=call, model="scripted:test")
        return ChatReply(text="", tool_calls=(call,), model="scripted:test")

    return ScriptedModel(script)


# -- the definition: refused before any call ------------------------------------------------------------


@pytest.mark.parametrize(("tools", "expected"), [
    (["search"], "trait 'checked': judge tool 'submit_grade' not found among its tools ['search']"),
    ([{"name": "submit_grade", "parameters": {"type": "object", "properties": {"score": {"type": "number"}}}}],
     "trait 'checked': tool 'submit_grade' must take both score and rationale parameters"),
    (["submit_grade", "fetch_webpage"], "trait 'checked': unknown tool 'fetch_webpage'"),
    (["submit_grade", {"name": "run", "commands": []}], "trait 'checked': tool 'run': a command runner needs commands"),
])
def test_a_judge_without_a_usable_submit_tool_is_refused_naming_the_trait(tools: list[Any], expected: str) -> None:
    with pytest.raises(ValidationError) as info:
        tool_trait(tools)
    assert expected in str(info.value)


async def test_a_hand_built_trait_without_submit_grade_makes_no_model_call() -> None:
    trait = tool_trait(["search", "submit_grade"]).model_copy(update={"tools": ["search"]})
    judge = calling(ToolCall("c1", "submit_grade", {"score": 1.0, "rationale": "x"}))
    outcome = await judge_with_tools(judge, QUESTION, ANSWER, trait, "Paris", SimulatedSearch())
    assert outcome.status == "unscored" and "submit_grade" in (outcome.reason or "")
    assert judge.requests == []


def test_a_tool_judge_without_a_prompt_gets_the_default_one_and_scores_0_to_1() -> None:
    trait = LLMTrait(name="checked", tools=["submit_grade"])
    assert trait.prompt is not None and "{submission}" in trait.prompt
    assert (trait.kind, trait.min_score, trait.max_score, trait.tool_rounds) == ("score", 0, 1, 5)


# -- judging ----------------------------------------------------------------------------------------------


async def test_the_simulated_judge_searches_then_submits_through_the_tool_offline() -> None:
    judge = Spy(simulated_judge())
    search = SimulatedSearch()
    result = await run_pipeline([tool_trait(["search", "submit_grade"])], ANSWER, judge, search=search)
    assert result.rubric is not None
    outcome = result.rubric.trait_status["checked"]
    assert outcome.status == "scored" and isinstance(outcome.score, float) and 0.4 <= outcome.score <= 1.0
    assert result.rubric.llm_trait_scores == {"checked": outcome.score}
    calls = outcome.tool_calls or []
    assert [c["name"] for c in calls] == ["search", "submit_grade"]
    query = calls[0]["arguments"]["query"]
    assert query.startswith(QUESTION)
    hits = await search.search(query)
    assert hits and hits[0].content in calls[0]["result"]  # the search port's result, recorded
    assert calls[1]["arguments"] == {"score": outcome.score, "rationale": outcome.rationale}
    assert "search" in (outcome.rationale or "")
    graded = [r for r in judge.requests if r.purpose is Purpose.RUBRIC_GRADER]
    assert len(graded) == 2 and [t.name for t in graded[0].tools] == ["search", "submit_grade"]
    back = graded[1].messages[-1]  # the search result went back as a tool message
    assert (back.role, back.tool_call_id, back.content) == ("tool", calls[0]["id"], calls[0]["result"])
    again = await run_pipeline([tool_trait(["search", "submit_grade"])], ANSWER, simulated_judge(), search=search)
    assert again.rubric is not None and again.rubric.trait_status["checked"] == outcome  # deterministic


async def test_an_invalid_grade_is_sent_back_and_the_next_one_counts() -> None:
    judge = calling(ToolCall("c1", "submit_grade", {"score": 7, "rationale": "out of ten"}),
                    ToolCall("c2", "submit_grade", {"score": 0.7, "rationale": "mostly right"}))
    outcome = await judge_with_tools(judge, QUESTION, ANSWER, tool_trait(["submit_grade"]), "Paris", None)
    assert (outcome.status, outcome.score, outcome.rationale) == ("scored", 0.7, "mostly right")
    calls = outcome.tool_calls or []
    assert "score must be a number from 0.0 to 1.0" in calls[0]["result"] and calls[1]["result"] == "grade accepted"


async def test_a_judge_that_never_submits_is_unscored_with_its_transcript_never_0() -> None:
    judge = calling(ToolCall("c1", "search", {"query": "capital of France"}), "It looks right to me.")

    class Found:
        async def search(self, query: str) -> list[SearchHit]:
            return [SearchHit("Paris is the capital of France.", "Paris", "https://example.org/paris")]

    result = await run_pipeline([tool_trait(["search", "submit_grade"])], ANSWER, judge, search=Found())
    assert result.rubric is not None
    outcome = result.rubric.trait_status["checked"]
    assert outcome.status == "unscored" and outcome.score is None and not result.rubric.llm_trait_scores
    assert "without calling submit_grade" in (outcome.reason or "") and outcome.raw_reply == "It looks right to me."
    assert outcome.tool_calls == [
        {"round": 1, "id": "c1", "name": "search", "arguments": {"query": "capital of France"},
         "result": "[1] Paris https://example.org/paris\nParis is the capital of France."},
        {"round": 2, "reply": "It looks right to me."},
    ]
    assert result.verdict == "incomplete"


async def test_running_out_of_tool_rounds_leaves_the_trait_unscored() -> None:
    judge = calling(ToolCall("c1", "search", {"query": "capital"}))
    outcome = await judge_with_tools(judge, QUESTION, ANSWER, tool_trait(["search", "submit_grade"], tool_rounds=3),
                                     "Paris", None)
    assert outcome.status == "unscored" and outcome.score is None
    assert "no grade after 3 tool round(s)" in (outcome.reason or "")
    assert len(judge.requests) == 3 and [c["round"] for c in outcome.tool_calls or []] == [1, 2, 3]
    assert all(c["result"] == "error: search is not available in this run" for c in outcome.tool_calls or [])


# -- the command runner -----------------------------------------------------------------------------------


async def test_the_command_runner_times_out_a_long_command() -> None:
    command = f"{sys.executable} -c 'import time; time.sleep(30)'"
    started = time.perf_counter()
    said = await run_command(command, [command], 0.5)
    assert said.startswith("timed out after 0.5s") and time.perf_counter() - started < 10


async def test_the_command_runner_refuses_a_command_not_given() -> None:
    allowed = [f"{sys.executable} -c 'print(1)'"]
    said = await run_command("rm -rf /tmp/nothing-here", allowed, 5)
    assert said.startswith("refused:")
    assert (await run_command(allowed[0], allowed, 5)) == "exit code 0\n1\n"


async def test_the_simulated_judge_runs_a_given_command_then_submits() -> None:
    command = f"{sys.executable} -c 'print(6 * 7)'"
    trait = tool_trait([{"name": "run", "commands": [command], "timeout": 20}, "submit_grade"])
    outcome = await judge_with_tools(simulated_judge(), QUESTION, ANSWER, trait, "Paris", None)
    calls = outcome.tool_calls or []
    assert outcome.status == "scored" and [c["name"] for c in calls] == ["run", "submit_grade"]
    assert calls[0]["arguments"] == {"command": command} and calls[0]["result"] == "exit code 0\n42\n"


# -- the langchain adapter: bind_tools, tool calls, tool messages -----------------------------------------


async def test_the_langchain_adapter_binds_tools_and_returns_the_calls() -> None:
    """At the adapter seam: a fake langchain chat model that calls tools stands in for the provider
    (the simulated HTTP server has no tool support)."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from verify.config.models import ModelConfig
    from verify.llm.adapters.langchain import LangChainModel

    class FakeToolChat(BaseChatModel):
        seen: list[list[BaseMessage]] = []
        bound: list[Any] = []

        @property
        def _llm_type(self) -> str:
            return "fake-tool-chat"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            self.bound.append(tools)
            return self.bind(tools=tools, **kwargs)

        def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:
            self.seen.append(list(messages))
            if not any(isinstance(m, ToolMessage) for m in messages):
                call = {"id": "c1", "name": "search", "args": {"query": "capital of France"}}
            else:
                call = {"id": "c2", "name": "submit_grade", "args": {"score": 0.75, "rationale": "checked"}}
            message = AIMessage(content="", tool_calls=[call])
            return ChatResult(generations=[ChatGeneration(message=message)])

    model = LangChainModel(ModelConfig(id="judge", model_name="local-model", interface="openai_endpoint",
                                       endpoint_base_url="http://127.0.0.1:9", temperature=0.0))
    fake = FakeToolChat()
    model._llm = fake
    outcome = await judge_with_tools(model, QUESTION, ANSWER, tool_trait(["search", "submit_grade"]), "Paris",
                                     SimulatedSearch())
    assert (outcome.status, outcome.score, outcome.rationale) == ("scored", 0.75, "checked")
    assert [c["name"] for c in outcome.tool_calls or []] == ["search", "submit_grade"]
    assert [[t["function"]["name"] for t in tools] for tools in fake.bound] == [["search", "submit_grade"]] * 2
    second = fake.seen[1]
    asked = [m for m in second if isinstance(m, AIMessage)]
    assert asked and asked[-1].tool_calls[0]["id"] == "c1"
    answered = [m for m in second if isinstance(m, ToolMessage)]
    assert len(answered) == 1 and answered[0].tool_call_id == "c1"
    assert answered[0].content == (outcome.tool_calls or [])[0]["result"]


# -- the checkpoint ---------------------------------------------------------------------------------------


def tool_benchmark() -> Any:
    from verify.benchmark.jsonld import Benchmark
    from verify.benchmark.question import Question
    from verify.benchmark.traits import Rubric

    trait = tool_trait(["search", {"name": "run", "commands": ["python -c 'print(1)'"], "timeout": 5},
                        "submit_grade"], tool_rounds=3)
    question = Question(id="q1", text=QUESTION, raw_answer="Paris", finished=True, rubric=Rubric(traits=[trait]))
    return Benchmark(name="tool judges", questions=[question])


def test_a_tool_judge_round_trips_through_the_checkpoint(tmp_path: Any) -> None:
    from verify.benchmark.jsonld import load_benchmark, save_benchmark

    bench = tool_benchmark()
    loaded = load_benchmark(save_benchmark(bench, tmp_path / "tools.jsonld"))
    rubric = loaded.questions[0].rubric
    assert rubric is not None and rubric.traits == bench.questions[0].rubric.traits
    assert rubric.llm_traits[0].tool_rounds == 3 and rubric.llm_traits[0].tools is not None


def test_a_checkpoint_tool_judge_without_submit_grade_is_a_located_error(tmp_path: Any) -> None:
    import json

    from verify.benchmark.jsonld import load_benchmark, save_benchmark
    from verify.errors import VerifyError

    path = save_benchmark(tool_benchmark(), tmp_path / "tools.jsonld")
    text = path.read_text(encoding="utf-8")
    stored = json.dumps(json.dumps(["search", {"name": "run", "commands": ["python -c 'print(1)'"], "timeout": 5},
                                    "submit_grade"]))
    assert stored in text
    path.write_text(text.replace(stored, json.dumps(json.dumps(["search"]))), encoding="utf-8")
    with pytest.raises(VerifyError) as info:
        load_benchmark(path)
    message = str(info.value)
    assert "tools.jsonld" in message and "q1" in message
    assert "trait 'checked': judge tool 'submit_grade' not found among its tools ['search']" in message


# -- suite files (letta graders with tools) ---------------------------------------------------------------


def _suite(tmp_path: Any, tools: list[Any]) -> Any:
    import yaml

    data = {"name": "tool judges", "tests": [{"id": "t1", "input": QUESTION, "expected_output": "Paris",
                                              "output": ANSWER, "assertions": ["names Paris"]}],
            "graders": {"checked": {"kind": "rubric", "prompt": PROMPT, "tools": tools, "tool_rounds": 2}}}
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_a_suite_grader_with_tools_maps_and_is_written_back(tmp_path: Any) -> None:
    from verify.benchmark.suite import load_suite, write_suite

    suite = load_suite(_suite(tmp_path, ["search", "submit_grade"]))
    (trait,) = [t for t in suite.benchmark.global_rubric.llm_traits if t.name == "checked"]  # type: ignore[union-attr]
    assert (trait.tools, trait.tool_rounds) == (["search", "submit_grade"], 2)
    back = tmp_path / "back.yaml"
    write_suite(suite.benchmark, back)
    assert load_suite(back).benchmark.global_rubric == suite.benchmark.global_rubric


def test_a_suite_grader_without_submit_grade_is_a_located_error(tmp_path: Any) -> None:
    from verify.benchmark.suite import load_suite
    from verify.errors import BenchmarkError

    path = _suite(tmp_path, ["search"])
    with pytest.raises(BenchmarkError) as caught:
        load_suite(path)
    message = caught.value.message
    assert message.startswith(str(path)) and "grader 'checked'" in message
    assert "judge tool 'submit_grade' not found" in message


@pytest.mark.skipif(__import__("peers").karenina_python() is None, reason="karenina is not importable (set KARENINA_PYTHON)")
def test_karenina_loads_a_checkpoint_with_a_tool_judge(tmp_path: Any) -> None:
    import json
    import subprocess

    from peers import karenina_python

    from verify.benchmark.jsonld import save_benchmark

    path = save_benchmark(tool_benchmark(), tmp_path / "tools.jsonld")
    code = ("import json, sys\nfrom karenina.benchmark import Benchmark\nb = Benchmark.load(sys.argv[1])\n"
            "q = b.get_all_questions(ids_only=False)[0]\nt = b.get_question_rubric(q['id']).llm_traits[0]\n"
            "print(json.dumps([t.name, t.kind, t.min_score, t.max_score]))\n")
    out = subprocess.run([str(karenina_python()), "-c", code, str(path)], capture_output=True, text=True, check=True,
                         timeout=120)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == ["checked", "score", 0, 1]


def test_a_run_keeps_the_tool_calls_and_karenina_reads_the_results(tmp_path: Any) -> None:
    """End to end, offline: the run gives the judge the configured search port (here the simulated
    one); the export keeps the calls; karenina's reader loads it (when KARENINA_PYTHON is set)."""
    import json
    import subprocess

    from peers import karenina_python

    from verify.config.verification import VerificationConfig
    from verify.run.runner import run_verification

    sim = {"model_provider": "simulated", "interface": "simulated", "temperature": 0.0}
    config = VerificationConfig.model_validate({
        "answering_models": [{"id": "answerer", "model_name": "simulated-answerer", **sim}],
        "parsing_models": [{"id": "judge", "model_name": "simulated-judge", **sim}],
        "evaluation_mode": "rubric_only", "deep_judgment_rubric_search_tool": "simulated",
    })
    # its command runner runs commands from the checkpoint: refused before any call without the opt-in
    with pytest.raises(ConfigError, match=r"question 'q1' / trait 'checked': its judge tool 'run' runs commands"):
        run_verification(tool_benchmark(), config, answers={"answerer": {"q1": ANSWER}})
    config = config.model_copy(update={"trust_checkpoint_code": True})
    out = tmp_path / "results.json"
    outcome = run_verification(tool_benchmark(), config, answers={"answerer": {"q1": ANSWER}}, output=out,
                               keep_results=True)
    (result,) = outcome.results
    assert result.rubric is not None
    calls = result.rubric.trait_status["checked"].tool_calls or []
    assert [c["name"] for c in calls] == ["search", "run", "submit_grade"]
    assert calls[0]["result"] and not calls[0]["result"].startswith("error")  # the run's search port answered
    stored = json.loads(out.read_text(encoding="utf-8"))["results"][0]["rubric"]["trait_status"]["checked"]
    assert [c["name"] for c in stored["tool_calls"]] == ["search", "run", "submit_grade"]
    python = karenina_python()
    if python is None:
        return
    code = ("import sys\nfrom karenina.benchmark.core.results_io import ResultsIOManager\n"
            "print(len(ResultsIOManager.load_result_set_from_json(sys.argv[1])))\n")
    done = subprocess.run([str(python), "-c", code, str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "1"
