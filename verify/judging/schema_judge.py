"""Docent-style schema judges as rubric traits: render, ask, read, send problems back, prove citations.

The spec's prompt templates are rendered with ``{agent_run}`` (the answer as numbered segments,
:func:`~verify.judging.citations.numbered`), ``{rubric}`` (the rubric text) and ``{output_schema}``
(the schema as JSON). In ``xml_key`` mode the judge answers in plain text with the JSON inside the
response tag; with ``constrained_decoding`` the request carries the output schema (structured
output) and the whole reply is the JSON. Either way :func:`~verify.judging.schema_reply.read_reply`
checks it against the schema.

A reply with problems (no tag, bad JSON, the schema echoed, a value that breaks the schema) is sent
back with the problems, up to two more times; so is a valid output whose cited fields cite nothing
that holds (a quote not in the answer, a segment that does not exist, no citation at all). Each
retry names its attempt, so it never repeats an earlier request (and is never answered from the
cache with the reply just rejected). Then the result is Docent's: ``direct_result`` with the output,
or ``failure`` with the problems and the raw reply, which leaves the trait ``unscored`` (never a
fail). An output whose citations are still unproven after the retries is kept, flagged
``proven: false``, and its trait is ``auto_failed`` (the stage fails the task, as for a
deep-judgment trait without valid evidence).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from verify.judging.citations import numbered, prove
from verify.judging.schema_reply import read_reply
from verify.judging.schema_verdict import verdict_of
from verify.llm.ports import ChatRequest, Message, Purpose
from verify.results.models import TraitOutcome
from verify.results.schema_judgment import CitedField, SchemaJudgment

if TYPE_CHECKING:
    from verify.benchmark.judge_spec import SchemaJudgeSpec
    from verify.benchmark.traits import SchemaJudgeTrait
    from verify.llm.ports import ChatModel

__all__ = ["ATTEMPTS", "SCHEMA_TITLE", "JudgeOutcome", "judge_schema_trait", "render_messages", "wire_schema"]

ATTEMPTS = 3
"""The first request and up to two more with the problems of the reply before."""
SCHEMA_TITLE = "SchemaJudgeOutput"
"""The title a constrained-decoding request's schema carries when the spec's schema has none."""
_UNREADABLE = ("no <", "not valid JSON", "must be a JSON object")


@dataclass(frozen=True)
class JudgeOutcome:
    """One schema-judge trait: its status in ``trait_status`` and Docent's result."""

    name: str
    outcome: TraitOutcome
    judgment: SchemaJudgment


def render_messages(spec: SchemaJudgeSpec, answer: str) -> list[Message]:
    values = {"agent_run": numbered(answer), "rubric": spec.rubric_text,
              "output_schema": json.dumps(spec.output_schema, indent=2)}
    return [Message(t.role, t.content.format(**values)) for t in spec.prompt_templates]


def _feedback(problems: list[str], attempt: int, spec: SchemaJudgeSpec) -> str:
    where = (f"inside <{spec.response_xml_key}>...</{spec.response_xml_key}>"
             if spec.output_parsing_mode == "xml_key" else "as the whole reply")
    lines = "\n".join(f"- {p}" for p in problems)
    return (f"Your evaluation could not be used:\n{lines}\n"
            f"Reply again (attempt {attempt} of {ATTEMPTS}) with the complete JSON output {where}. Cite the agent "
            "run by segment ([E1], [E2-E3]) or by a verbatim quote in double quotes.")


def _citation_problems(cited: list[CitedField]) -> list[str]:
    problems: list[str] = []
    for found in cited:
        if not found.citations:
            problems.append(f"output.{found.path}: cites nothing; cite segments like [E1] or quote the run verbatim")
        for c in found.citations:
            if not c.valid:
                problems.append(f"output.{found.path}: {c.kind} {c.text[:80]!r} does not hold ({c.reason})")
    return problems


def wire_schema(node: Any) -> Any:
    """The output schema as sent for structured output: Docent's ``"citations"`` marker is not JSON
    Schema (strict providers refuse unknown keywords), so it is left out; the prompt still shows it."""
    if isinstance(node, dict):
        return {k: wire_schema(v) for k, v in node.items() if k != "citations"}
    if isinstance(node, list):
        return [wire_schema(v) for v in node]
    return node


def _reply_text(text: str, parsed: dict[str, Any] | None) -> str:
    return json.dumps(parsed) if parsed is not None and not text.strip() else text


async def judge_schema_trait(judge: ChatModel, trait: SchemaJudgeTrait, answer: str) -> JudgeOutcome:
    spec = trait.judge
    conversation = render_messages(spec, answer)
    constrained = spec.output_parsing_mode == "constrained_decoding"
    schema = {"title": SCHEMA_TITLE, **wire_schema(spec.output_schema)} if constrained else None
    history: list[list[str]] = []
    raw, output, cited = "", None, []
    for attempt in range(1, ATTEMPTS + 1):
        reply = await judge.complete(ChatRequest(tuple(conversation), schema=schema,
                                                 purpose=Purpose.RUBRIC_SCHEMA_JUDGE, trait=trait.name))
        raw = _reply_text(reply.text, reply.parsed)
        read = read_reply(raw, spec.output_schema, spec.output_parsing_mode, spec.response_xml_key)
        problems = read.problems
        if read.output is not None:
            output, cited = read.output, prove(read.output, spec.citation_paths(), answer)
            problems = _citation_problems(cited)
        history.append(problems)
        if not problems:
            break
        if reply.forget is not None:
            reply.forget()  # never replay a rejected reply from the cache
        if attempt < ATTEMPTS:
            conversation += [Message("assistant", raw or "(empty reply)"),
                             Message("user", _feedback(problems, attempt + 1, spec))]
    return _outcome(trait, output, cited, raw, history)


def _outcome(trait: SchemaJudgeTrait, output: dict[str, Any] | None, cited: list[CitedField], raw: str,
             history: list[list[str]]) -> JudgeOutcome:
    attempts = len(history)
    if output is None:
        failed: dict[str, Any] = {"problems": history, "raw_reply": raw}
        judgment = SchemaJudgment(result_type="failure", result_metadata=failed, attempts=attempts)
        unreadable = any(u in p for p in history[-1] for u in _UNREADABLE)
        why = f"schema judge reply unusable after {attempts} attempt(s): " + "; ".join(history[-1])
        outcome = TraitOutcome(status="unscored", reason=why[:1000], raw_reply=raw,
                               unscored_category="unparseable" if unreadable else "invalid_reply")
        return JudgeOutcome(trait.name, outcome, judgment)
    proven = all(f.proven for f in cited) if cited else None
    meta = {"problems": history} if any(history) else None
    judgment = SchemaJudgment(result_type="direct_result", output=output, result_metadata=meta, attempts=attempts,
                              citations=cited, proven=proven)
    score, label = verdict_of(trait.judge, output)
    if proven is False:
        why = "citations not proven after retries: " + "; ".join(history[-1])
        return JudgeOutcome(trait.name, TraitOutcome(status="auto_failed", score=score, label=label,
                                                     reason=why[:1000], raw_reply=raw), judgment)
    return JudgeOutcome(trait.name, TraitOutcome(status="scored", score=score, label=label), judgment)
