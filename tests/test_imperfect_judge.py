"""The imperfect simulated judge: each behaviour shows when forced, changes the form only (the
verdict underneath is the perfect judge's), is decided per request by hashing, and is switched by
the simulated model's extra_kwargs and the server's options."""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

import pytest

from verify.benchmark.traits import LLMTrait
from verify.config.models import ModelConfig
from verify.judging import prompts
from verify.judging.deep_judgment import verdict_schema
from verify.llm.ports import PURPOSE_HEADER, ChatRequest, Message, Purpose
from verify.llm.simulated import brain, imperfect
from verify.llm.simulated.__main__ import main as simulated_main
from verify.llm.simulated.imperfect import BEHAVIOURS, Imperfections
from verify.llm.simulated.model import SimulatedModel
from verify.llm.simulated.server import start_server
from verify.llm.simulated.text import sentences, traits
from verify.llm.structured import json_schema_of
from verify.templates import prompts as template_prompts
from verify.templates.compiler import FieldSpec

QUESTION = "At what temperature does pure water boil at sea level? Answer briefly."
ANSWER = (
    "Pure water boils at 100 degrees Celsius (212 degrees Fahrenheit) at sea level. "
    "At that altitude the atmospheric pressure is 1 atm, so the boiling point is reached at 100 degrees. "
    "Safety matters: boiling water causes burns, so handle the pot with care and wear gloves."
)
CLARITY = LLMTrait(name="clarity", kind="score", min_score=1, max_score=5,
                   description="The response is clear, well organized and easy to understand")
STATES_FACT = LLMTrait(name="states_fact", kind="boolean",
                       description="The response states a concrete fact that answers the question")
REGISTER = LLMTrait(name="register", kind="literal", description="The register of the response",
                    classes={"formal": "Formal, precise and technical register",
                             "casual": "Casual, chatty register with informal words"})
TONE = LLMTrait(name="tone_of_voice", kind="literal", description="The tone of the response",
                classes={"neutral": "Neutral and factual tone", "warm": "Warm, friendly and caring tone"})
CELSIUS = FieldSpec(name="celsius", type="int", description="The boiling temperature in degrees Celsius")
TEMPLATE_SCHEMA = {"title": "Answer", "type": "object",
                   "properties": {"celsius": {"anyOf": [{"type": "integer"}, {"type": "null"}], "title": "Celsius"}}}


Request = tuple[Purpose, list[Message], dict[str, Any] | None]
"""(purpose, messages, schema): the arguments of ``brain.reply`` before the faults."""


def ask(purpose: Purpose, text: str, schema: Any = None) -> Request:
    messages = [Message("system", prompts.JUDGE_SYSTEM), Message("user", text)]
    as_schema = json_schema_of(schema) if isinstance(schema, type) else schema
    return purpose, messages, as_schema


def batch() -> Request:
    text = prompts.batch_rubric_prompt(QUESTION, ANSWER, [CLARITY, STATES_FACT], None)
    return ask(Purpose.RUBRIC_BATCH, text, prompts.BatchRubricScores)


def literal_batch() -> Request:
    text = prompts.batch_literal_prompt(QUESTION, ANSWER, [REGISTER, TONE])
    return ask(Purpose.RUBRIC_LITERAL_BATCH, text, prompts.BatchLiteralClassifications)


def single(trait: LLMTrait) -> Request:
    return ask(Purpose.RUBRIC_SINGLE, prompts.single_trait_prompt(QUESTION, ANSWER, trait, None), verdict_schema(trait))


def dj_score(trait: LLMTrait) -> Request:
    _, messages, _ = ask(Purpose.DJ_REASONING, prompts.reasoning_prompt(QUESTION, ANSWER, trait, None))
    reasoning = brain.reply(Purpose.DJ_REASONING, messages, None)
    return ask(Purpose.DJ_SCORE, prompts.score_prompt(trait, reasoning), verdict_schema(trait))


def excerpts(trait: LLMTrait = CLARITY, feedback: str | None = None) -> Request:
    text = prompts.excerpt_prompt(QUESTION, ANSWER, trait, 3, feedback)
    return ask(Purpose.DJ_EXCERPTS, text, prompts.TraitExcerptsOutput)


def template_excerpts() -> Request:
    text = template_prompts.template_excerpt_prompt(QUESTION, ANSWER, "Answer", [CELSIUS], 3, None)
    return ask(Purpose.TEMPLATE_DJ_EXCERPTS, text, template_prompts.TemplateExcerptsOutput)


def parsing(schema: dict[str, Any] | None) -> Request:
    text = template_prompts.parse_prompt(QUESTION, ANSWER, "Answer", [CELSIUS], TEMPLATE_SCHEMA)
    return ask(Purpose.PARSING, text, schema)


def abstention() -> Request:
    return ask(Purpose.ABSTENTION_CHECK, template_prompts.abstention_prompt(QUESTION, ANSWER),
               template_prompts.AbstentionResult)


def forced(behaviour: str, seed: int = 0) -> brain.Faults:
    return brain.Faults(seed=seed, imperfections=Imperfections(1.0, (behaviour,)))


def perfect(request: Request) -> Any:
    return json.loads(brain.reply(*request))


def replies(request: Request, behaviour: str, seeds: int = 24) -> list[str]:
    """The replies under ``behaviour`` forced, one per seed (the seed varies the variant drawn)."""
    return [brain.reply(*request, forced(behaviour, seed)) for seed in range(seeds)]


def loads(texts: list[str]) -> list[Any]:
    return [json.loads(t) for t in texts]


# -- each behaviour, forced ---------------------------------------------------------------------------


def test_every_behaviour_has_its_function() -> None:
    assert {name: f.__name__ for name, f in imperfect.BEHAVIOUR_FUNCTIONS.items()} == {b: b for b in BEHAVIOURS}


def test_schema_echo_replies_with_the_request_schema() -> None:
    for request in (batch(), literal_batch(), excerpts(), single(CLARITY), abstention(), parsing(TEMPLATE_SCHEMA)):
        assert all(json.loads(text) == request[2] for text in replies(request, "schema_echo", 3))


def test_schema_echo_finds_the_schema_in_the_prompt_without_a_request_schema() -> None:
    assert loads(replies(parsing(None), "schema_echo", 3)) == [TEMPLATE_SCHEMA] * 3


def test_placeholder_copy_in_excerpts_keeps_the_real_quotes() -> None:
    real = perfect(excerpts())["excerpts"]
    seen = set()
    for reply in loads(replies(excerpts(), "placeholder_copy")):
        items = reply["excerpts"]
        assert [i["text"] for i in items[: len(real)]] == [i["text"] for i in real]
        if len(items) == len(real):
            assert {i["confidence"] for i in items} == {"high|medium|low"}
            seen.add("confidence")
        else:
            assert len(items) == len(real) + 1 and items[-1]["text"] in ("...", "text")
            seen.add(items[-1]["text"])
    assert seen == {"confidence", "...", "text"}


def test_placeholder_copy_in_checks_and_literal_batches() -> None:
    for reply in loads(replies(abstention(), "placeholder_copy", 3)):
        assert reply == {**perfect(abstention()), "reasoning": "..."}
    for reply in loads(replies(literal_batch(), "placeholder_copy", 3)):
        assert reply["classifications"] == perfect(literal_batch())["classifications"] + [
            {"trait_name": "...", "class_name": "..."}
        ]


def test_class_description_names_the_perfect_class_by_its_description() -> None:
    chosen = {c["trait_name"]: c["class_name"] for c in perfect(literal_batch())["classifications"]}
    for reply in loads(replies(literal_batch(), "class_description", 3)):
        for item in reply["classifications"]:
            trait = REGISTER if item["trait_name"] == "register" else TONE
            assert trait.classes is not None
            assert item["class_name"] == trait.classes[chosen[item["trait_name"]]]
    for request in (single(REGISTER), dj_score(REGISTER)):
        label = perfect(request)["classification"]
        assert REGISTER.classes is not None
        assert loads(replies(request, "class_description", 3)) == [{"classification": REGISTER.classes[label]}] * 3


def test_class_description_only_for_literal_traits() -> None:
    for request in (batch(), single(CLARITY), single(STATES_FACT), dj_score(CLARITY), excerpts()):
        assert replies(request, "class_description", 3) == [brain.reply(*request)] * 3


def test_invented_trait_renames_or_adds_but_keeps_every_score() -> None:
    scores = perfect(batch())["scores"]
    specs = {s.name: s for s in traits(batch()[1][1].content)}
    renamed = added = 0
    for reply in loads(replies(batch(), "invented_trait", 30)):
        got = reply["scores"]
        assert set(got) != set(scores)
        missing = [n for n in scores if n not in got]
        assert len(missing) <= 1
        for name in missing:  # renamed: the same score under a name derived from the trait
            new = [k for k in got if k not in scores and k in imperfect.renamings(specs[name], set(scores))]
            assert len(new) == 1 and got[new[0]] == scores[name]
            renamed += 1
        for name in scores.keys() - set(missing):
            assert got[name] == scores[name]
        extra = [k for k in got if k not in scores and k not in imperfect.renamings(specs[missing[0]], set(scores))
                 ] if missing else [k for k in got if k not in scores]
        added += bool(extra)
    assert renamed and added


def test_invented_trait_in_literal_batches() -> None:
    chosen = {c["trait_name"]: c["class_name"] for c in perfect(literal_batch())["classifications"]}
    for reply in loads(replies(literal_batch(), "invented_trait", 12)):
        names = [c["trait_name"] for c in reply["classifications"]]
        assert set(names) != set(chosen)
        assert {c["class_name"] for c in reply["classifications"]} <= set(chosen.values())


def test_quote_question_quotes_the_question_not_the_response() -> None:
    question_sentences = sentences(QUESTION)
    for request in (excerpts(), template_excerpts()):
        for reply in loads(replies(request, "quote_question", 6)):
            quotes = reply["excerpts"] if isinstance(reply["excerpts"], list) else reply["excerpts"]["celsius"]
            assert [q["text"] in question_sentences for q in quotes] == [True]
            assert quotes[0]["text"] not in ANSWER


def test_insert_words_inserts_one_word_into_one_quote() -> None:
    real = [e["text"] for e in perfect(excerpts())["excerpts"]]
    for reply in loads(replies(excerpts(), "insert_words")):
        got = [e["text"] for e in reply["excerpts"]]
        changed = [(a, b) for a, b in zip(real, got, strict=True) if a != b]
        assert len(changed) == 1
        before, after = changed[0]
        extra = [w for w in after.split() if w not in before.split()]
        assert extra in (["very"], ["also"], ["clearly"]) and after.replace(f"{extra[0]} ", "", 1) == before


def test_elide_quotes_real_passages_with_the_middle_cut() -> None:
    real = [e["text"] for e in perfect(excerpts())["excerpts"]]
    for request in (excerpts(), template_excerpts()):
        for reply in loads(replies(request, "elide")):
            quotes = reply["excerpts"] if isinstance(reply["excerpts"], list) else reply["excerpts"]["celsius"]
            cut = [q["text"] for q in quotes if q["text"] not in ANSWER]
            assert len(cut) == 1
            head, tail = re.split(r"\s*(?:\[\.\.\.\]|\.\.\.|…)\s*", cut[0], maxsplit=1)
            assert head in ANSWER and tail in ANSWER and ANSWER.index(head) < ANSWER.index(tail)
            if request[0] is Purpose.DJ_EXCERPTS:
                assert any(q.startswith(head) for q in real)  # it starts where a perfect quote starts


def test_prose_wrap_surrounds_the_perfect_json() -> None:
    for request in (batch(), excerpts(), single(REGISTER), parsing(TEMPLATE_SCHEMA)):
        for text in replies(request, "prose_wrap", 8):
            with pytest.raises(ValueError):
                json.loads(text)
            start = text.index("{")
            found, _ = json.JSONDecoder().raw_decode(text, start)
            assert found == perfect(request)
            assert text[:start].strip() and text[start:].strip() != json.dumps(found)


def test_out_of_range_only_for_score_traits() -> None:
    scores = perfect(batch())["scores"]
    for reply in loads(replies(batch(), "out_of_range", 8)):
        assert not 1 <= reply["scores"]["clarity"] <= 5
        assert reply["scores"]["states_fact"] == scores["states_fact"]
        # it leans the way the perfect score does
        assert (reply["scores"]["clarity"] > 5) == (scores["clarity"] >= 3)
    for request in (single(CLARITY), dj_score(CLARITY)):
        assert all(not 1 <= r["score"] <= 5 for r in loads(replies(request, "out_of_range", 8)))
    for request in (single(STATES_FACT), single(REGISTER), dj_score(REGISTER), literal_batch(), excerpts()):
        assert replies(request, "out_of_range", 3) == [brain.reply(*request)] * 3


def test_free_text_replies_are_never_imperfect() -> None:
    faults = brain.Faults(imperfections=Imperfections(1.0))
    for purpose, text in ((Purpose.ANSWER, QUESTION),
                          (Purpose.DJ_REASONING, prompts.reasoning_prompt(QUESTION, ANSWER, CLARITY, None))):
        request = ask(purpose, text)
        assert brain.reply(*request, faults) == brain.reply(*request)


# -- deciding: per request, by hashing ------------------------------------------------------------------


def requests() -> list[Request]:
    traits_ = [CLARITY, STATES_FACT, REGISTER, TONE]
    out = [batch(), literal_batch(), template_excerpts(), abstention(), parsing(TEMPLATE_SCHEMA)]
    out += [excerpts(t, feedback) for t in traits_ for feedback in (None, "try again", "copy exactly")]
    out += [single(t) for t in traits_] + [dj_score(t) for t in traits_]
    return out


def test_the_same_request_always_gets_the_same_reply() -> None:
    faults = brain.Faults(seed=5, imperfections=Imperfections(0.5))
    for request in requests():
        assert len({brain.reply(*request, faults) for _ in range(3)}) == 1
        model = SimulatedModel(ModelConfig(id="j", model_name="simulated-judge", interface="simulated",
                                           extra_kwargs={"imperfection_rate": 0.5, "seed": 5}))
        assert brain.reply(*request, model.faults) == brain.reply(*request, faults)


def test_a_retry_is_drawn_again() -> None:
    faults = brain.Faults(imperfections=Imperfections(0.5))
    changed = 0
    for purpose, messages, schema in requests():
        first = brain.reply(purpose, messages, schema, faults)
        retry = [*messages, Message("assistant", first), Message("user", "Your previous reply could not be used.")]
        again = brain.reply(purpose, retry, schema, faults)
        changed += (first == brain.reply(purpose, messages, schema)) != (again == brain.reply(purpose, retry, schema))
    assert changed >= 3


def test_the_rate_is_the_share_of_imperfect_replies() -> None:
    many = [excerpts(CLARITY, f"attempt {i}") for i in range(200)]
    for rate in (0.0, 0.3, 1.0):
        faults = brain.Faults(imperfections=Imperfections(rate))
        share = sum(brain.reply(*r, faults) != brain.reply(*r) for r in many) / len(many)
        assert abs(share - rate) < 0.1


def test_the_seed_changes_the_draw() -> None:
    many = [excerpts(CLARITY, f"attempt {i}") for i in range(40)]
    one, other = (brain.Faults(seed=s, imperfections=Imperfections(0.5)) for s in (1, 2))
    assert [brain.reply(*r, one) for r in many] != [brain.reply(*r, other) for r in many]


def test_no_imperfection_is_the_perfect_reply() -> None:
    for request in requests():
        assert brain.reply(*request, brain.Faults(imperfections=Imperfections(0.0))) == brain.reply(*request)
        assert brain.reply(*request, brain.Faults(imperfections=Imperfections(1.0, ()))) == brain.reply(*request)


def test_the_behaviour_is_one_that_applies() -> None:
    purpose, messages, schema = single(STATES_FACT)  # a boolean verdict: only schema_echo and prose_wrap apply
    prompt = messages[1].content
    value = perfect((purpose, messages, schema))
    chosen = set()
    for seed in range(30):
        got = imperfect.imperfect_reply(purpose, messages, prompt, schema or {}, value, Imperfections(1.0), seed)
        assert got is not None
        faults = brain.Faults(seed=seed, imperfections=Imperfections(1.0))
        assert got.text == brain.reply(purpose, messages, schema, faults)
        chosen.add(got.behaviour)
    assert chosen == {"schema_echo", "prose_wrap"}


# -- switching ------------------------------------------------------------------------------------------


def judge(**extra: Any) -> SimulatedModel:
    return SimulatedModel(ModelConfig(id="judge", model_name="simulated-judge", interface="simulated",
                                      extra_kwargs=extra or None))


def test_settings_come_from_extra_kwargs() -> None:
    model = judge(imperfection_rate=0.25, imperfections=["elide", "schema_echo"], seed=3)
    assert model.faults.imperfections == Imperfections(0.25, ("elide", "schema_echo"))
    assert model.faults.seed == 3
    assert judge(imperfections="elide, prose_wrap").faults.imperfections.behaviours == ("elide", "prose_wrap")
    assert judge().faults.imperfections == Imperfections() and Imperfections().behaviours == BEHAVIOURS
    with pytest.raises(ValueError, match="unknown imperfection"):
        judge(imperfections=["elide", "hallucinate"])
    with pytest.raises(ValueError, match="between 0 and 1"):
        judge(imperfection_rate=1.5)


def test_model_id_differs_with_the_settings() -> None:
    ids = {
        judge().model_id,
        judge(imperfection_rate=0.3).model_id,
        judge(imperfection_rate=0.5).model_id,
        judge(imperfection_rate=0.3, imperfections=["elide"]).model_id,
        judge(constant_reply="I think so.").model_id,
        judge(constant_reply="I do not think so.").model_id,
    }
    assert len(ids) == 6
    assert judge().model_id == f"simulated:simulated-judge:v{brain.VERSION}:f0.0:0.0:0"
    assert judge(imperfection_rate=0.0, imperfections=["elide"]).model_id == judge().model_id
    assert judge(imperfection_rate=0.3).model_id.endswith(":i0.3:all")
    assert judge(imperfection_rate=0.3, imperfections="elide,prose_wrap").model_id.endswith(":i0.3:elide+prose_wrap")


async def test_the_model_replies_imperfectly() -> None:
    purpose, messages, schema = batch()
    model = judge(imperfection_rate=1.0, imperfections=["schema_echo"])
    reply = await model.complete(ChatRequest(tuple(messages), schema, purpose=purpose))
    assert reply.text == json.dumps(schema) and reply.parsed == schema


async def test_constant_reply_answers_every_judge_call() -> None:
    model = judge(constant_reply="I am a helpful assistant.")
    for purpose, messages, schema in requests():
        reply = await model.complete(ChatRequest(tuple(messages), schema, purpose=purpose))
        assert reply.text == "I am a helpful assistant." and reply.parsed is None
    answer = ChatRequest((Message("user", QUESTION),), purpose=Purpose.ANSWER)
    assert (await model.complete(answer)).text == f"This is a simulated answer to: {QUESTION}"


def test_the_server_replies_imperfectly() -> None:
    purpose, messages, schema = single(CLARITY)
    settings = Imperfections(1.0, ("out_of_range",))
    expected = brain.reply(purpose, messages, schema, brain.Faults(seed=2, imperfections=settings))
    assert json.loads(expected)["score"] > 5 or json.loads(expected)["score"] < 1
    body = {
        "model": "simulated-judge",
        "messages": [{"role": m.role, "content": m.content} for m in messages],
        "response_format": {"type": "json_schema", "json_schema": {"name": "SingleNumericScore", "schema": schema}},
    }
    with start_server(seed=2, imperfections=settings) as server:
        request = urllib.request.Request(
            server.url + "/chat/completions", data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", PURPOSE_HEADER: purpose.value},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            payload = json.loads(response.read())
    assert payload["choices"][0]["message"]["content"] == expected


def test_the_server_command_rejects_unknown_imperfections(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        simulated_main(["serve", "--imperfections", "elide,teleport"])
    assert stopped.value.code == 2
    assert "unknown imperfection" in capsys.readouterr().err
