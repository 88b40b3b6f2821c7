"""One result as the page's task record: what the task view shows, in plain JSON.

Everything the result holds about judging is kept (scores, labels, reasons, raw replies, reasoning,
excerpts, rejected quotes, search results, hallucination risks, the template's parse and verdict,
coverage, errors); token counts per stage and model identities beyond their display name are not.
The answer is not stored as a string: it is the mark tree of :mod:`verify.report.highlight`, which
holds its text once. Question text and expected answer are stored once per question
(:func:`question_record`), not once per model and replicate. A transcript answer is kept as its
blocks (:mod:`verify.report.transcript_data`), each excerpt marked in the text its judge read; the
answer's tree is then the submission. A revised task carries its revision record
(:mod:`verify.report.revision_data`).

Status (the table's ``data-status``): ``passed``, ``judged`` (complete, but no pass rule decided
it), ``failed`` (a judged failure: content, abstention), ``auto_failed`` (failed because evidence
could not be proven: karenina's ``autofail`` group) or ``incomplete``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from verify.report.evidence import collect, reasoning_parts
from verify.report.highlight import Node
from verify.report.revision_data import revision_record
from verify.report.transcript_data import Reading, blocks, reading
from verify.results.models import (
    DeepJudgmentRubricSection,
    DeepJudgmentSection,
    RubricSection,
    TemplateSection,
    TraitOutcome,
    VerificationResult,
)
from verify.results.verdict import outcome_of

__all__ = ["STATUSES", "question_record", "task_id", "task_record", "task_status", "trait_kind"]

STATUSES = ("passed", "judged", "failed", "incomplete", "auto_failed")


def task_id(task_key: str) -> str:
    """A short id for a task, safe in HTML ids and CSS selectors, the same in every run."""
    return "t" + hashlib.sha256(task_key.encode("utf-8")).hexdigest()[:12]


def task_status(result: VerificationResult) -> str:
    verdict = outcome_of(result)  # as the summary counts it: ``judged`` when no rule decided the task
    failure = result.metadata.failure
    if verdict == "failed" and failure is not None and failure.group == "autofail":
        return "auto_failed"
    return verdict


def trait_kind(name: str, rubric: RubricSection, outcome: TraitOutcome | None) -> str:
    """The trait's kind as far as its result shows it (results do not carry the rubric)."""
    if rubric.schema_judgments and name in rubric.schema_judgments:
        return "schema_judge"
    if outcome is not None and outcome.rationale is not None:
        return "grader"
    for kind, scores in (("regex", rubric.regex_trait_scores), ("callable", rubric.callable_trait_scores),
                         ("metric", rubric.metric_trait_scores), ("literal", rubric.llm_trait_labels)):
        if scores and name in scores:
            return kind
    if any(key.startswith(name + ".") for key in rubric.llm_trait_scores or {}):
        return "template"
    score = outcome.score if outcome is not None else None
    if isinstance(score, bool):
        return "boolean"
    return "score" if isinstance(score, int | float) else "llm"


def question_record(result: VerificationResult) -> dict[str, Any]:
    meta = result.metadata
    return {"text": meta.question_text, "expected": meta.raw_answer, "keywords": meta.keywords or []}


def _trait(name: str, outcome: TraitOutcome | None, rubric: RubricSection) -> dict[str, Any]:
    record: dict[str, Any] = {"name": name, "kind": trait_kind(name, rubric, outcome),
                              "provenance": rubric.trait_provenance.get(name)}
    if outcome is not None:
        record.update(outcome.model_dump(mode="json", exclude_none=True))
    fields = {k.split(".", 1)[1]: v for k, v in (rubric.llm_trait_scores or {}).items() if k.startswith(name + ".")}
    if fields:
        record["fields"] = fields
    if rubric.metric_trait_scores and name in rubric.metric_trait_scores:
        record["metrics"] = rubric.metric_trait_scores[name]
        record["confusion"] = (rubric.metric_trait_confusion_lists or {}).get(name)
    return record


def _deep_trait(name: str, dj: DeepJudgmentRubricSection, numbers: list[int]) -> dict[str, Any]:
    meta = dj.trait_metadata.get(name)
    record: dict[str, Any] = {"excerpts": numbers}
    if name in dj.rubric_trait_reasoning:
        record["reasoning"] = reasoning_parts(dj.rubric_trait_reasoning[name], numbers)
    if name in dj.deep_judgment_rubric_scores:
        record["score"] = dj.deep_judgment_rubric_scores[name]
    if meta is not None:
        record.update(meta.model_dump(mode="json", exclude={"stages_completed"}, exclude_defaults=True))
    risk = (dj.rubric_hallucination_risk_assessment or {}).get(name)
    if risk is not None:
        record["risk"] = risk.model_dump(mode="json")
    record["without_valid_excerpts"] = name in dj.traits_without_valid_excerpts
    return record


def _template(template: TemplateSection) -> dict[str, Any]:
    record = template.model_dump(mode="json", exclude={"raw_llm_response", "usage_metadata"}, exclude_defaults=True)
    record["template_verification_performed"] = template.template_verification_performed
    record["verify_result"] = template.verify_result
    return record


def _template_deep(section: DeepJudgmentSection, numbers: dict[tuple[str, str], list[int]]) -> dict[str, Any]:
    record = section.model_dump(mode="json", exclude={"extracted_excerpts", "attribute_reasoning"})
    record["reasoning"] = {
        attr: reasoning_parts(text, numbers.get(("attribute", attr), []))
        for attr, text in section.attribute_reasoning.items()
    }
    record["excerpts"] = {attr: numbers.get(("attribute", attr), []) for attr in section.extracted_excerpts}
    return record


def _usage(template: TemplateSection | None) -> dict[str, int]:
    total = template.usage_metadata.get("total") if template is not None else None
    if total is None:
        return {}
    return {"tokens": total.total_tokens, "calls": total.calls, "cached_calls": total.cached_calls}


def _transcript(template: TemplateSection, read: Reading, tree: list[Node]) -> dict[str, Any]:
    calls = sum(len(m.get("tool_calls") or []) for m in template.trace_messages)
    return {"messages": len(template.trace_messages), "tool_calls": calls, "extractor": read.extractor,
            "reads": read.reads, "how": read.how, "blocks": blocks(read, tree)}


def task_record(result: VerificationResult, tid: str, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The page's record of one task (see the module docstring); ``config``: the run's, if known."""
    meta = result.metadata
    template, rubric = result.template, result.rubric
    dj, tdj = result.deep_judgment_rubric, result.deep_judgment
    answer = template.raw_llm_response if template is not None else None
    by_trait = dj.extracted_rubric_excerpts if dj else {}
    by_attribute = tdj.extracted_excerpts if tdj else {}
    read = reading(template, {"trait": by_trait, "attribute": by_attribute}, config or {}) if template else None
    if read is None:
        evidence = collect(answer, by_trait, by_attribute)
    else:
        answer = read.submission
        evidence = collect(answer, by_trait, by_attribute, trace=read.rendered, reads=read.reads)
    traits: list[dict[str, Any]] = []
    if rubric is not None:
        names = list(rubric.trait_status)
        names += [n for n in (dj.extracted_rubric_excerpts if dj else {}) if n not in rubric.trait_status]
        for name in names:
            trait = _trait(name, rubric.trait_status.get(name), rubric)
            if dj is not None and (name in dj.trait_metadata or name in dj.extracted_rubric_excerpts):
                trait["deep"] = _deep_trait(name, dj, evidence.numbers.get(("trait", name), []))
            traits.append(trait)
    return {
        "id": tid, "key": meta.task_key, "question": meta.question_id, "replicate": meta.replicate,
        "answering": meta.answering.display, "judge": meta.parsing.display,
        "status": task_status(result), "verdict": outcome_of(result),
        "failure": meta.failure.model_dump(mode="json") if meta.failure else None,
        "has_answer": answer is not None, "answer_source": template.answer_source if template else None,
        "tree": evidence.tree, "excerpts": evidence.excerpts, "traits": traits,
        "transcript": _transcript(template, read, evidence.trace_tree) if read and template else None,
        "revision": revision_record(meta.revision) if meta.revision else None,
        "template": _template(template) if template is not None else None,
        "template_deep": _template_deep(tdj, evidence.numbers) if tdj is not None else None,
        "coverage": meta.coverage.model_dump(mode="json") if meta.coverage else None,
        "errors": [e.model_dump(mode="json") for e in meta.errors], "warnings": meta.warnings,
        "caveats": meta.caveats, "stages": meta.stages, "evaluation_mode": meta.evaluation_mode,
        "time": meta.execution_time, "timestamp": meta.timestamp, **_usage(template),
    }
