"""The CSV export: karenina's columns in karenina's order, then verify's own.

Cells are computed from the karenina form of each result (:mod:`verify.results.karenina_form`), so
the CSV says what karenina's own CSV writer would say about the JSON export of the same run. Like
karenina's, global rubric traits get a ``rubric_<name>`` column each (after ``keywords``) and the
other traits share one ``question_specific_rubrics`` JSON column. One deliberate difference: a
``verify_result`` of ``false`` (or a granular result of 0) is written as such, where karenina's
writer leaves the cell empty and a reader could not tell it from "not run".
"""

from __future__ import annotations

import json
import time
from typing import Any

from verify.results.models import VerificationResult

__all__ = ["KARENINA_HEAD", "KARENINA_TAIL", "OWN_COLUMNS", "CsvColumns", "csv_row", "trait_scores"]

KARENINA_HEAD = [
    "question_id", "success", "error", "question_text", "raw_llm_response", "parsed_gt_response",
    "parsed_llm_response", "template_verification_performed", "verify_result", "verify_granular_result",
    "rubric_evaluation_performed", "keywords",
]
KARENINA_TAIL = [
    "answering_model", "parsing_model", "replicate", "execution_time", "timestamp", "answering_system_prompt",
    "parsing_system_prompt", "run_name", "export_timestamp", "karenina_version", "job_id",
    "embedding_check_performed", "embedding_similarity_score", "embedding_override_applied", "embedding_model_used",
    "answering_mcp_servers",
    "deep_judgment_mode", "deep_judgment_performed", "extracted_excerpts", "attribute_reasoning",
    "deep_judgment_stages_completed", "deep_judgment_model_calls", "deep_judgment_excerpt_retry_count",
    "attributes_without_excerpts", "deep_judgment_search_enabled", "hallucination_risk_assessment",
    "deep_judgment_rubric_performed", "extracted_rubric_excerpts", "rubric_trait_reasoning",
    "deep_judgment_rubric_scores", "standard_rubric_scores", "trait_metadata", "traits_without_valid_excerpts",
    "rubric_hallucination_risk_assessment", "total_deep_judgment_model_calls", "total_traits_evaluated",
    "total_excerpt_retries", "metric_trait_confusion_lists", "metric_trait_metrics", "usage_metadata",
    "agent_metrics",
]
#: verify's columns, after karenina's: the verdict and what was not judged, verify's own failure
#: category (karenina's ``success``/``error`` follow karenina's form), the key resume uses, then a
#: revised task's terminal status and passes used, and a transcript answer's messages and tool calls
#: (blank when the task was not revised, or its answer is text).
OWN_COLUMNS = [
    "verdict", "judged", "unscored", "failure_category", "failure_stage", "trait_status", "evaluation_mode",
    "task_key", "revision_status", "revision_iterations", "transcript_messages", "transcript_tool_calls",
]
_SCORE_KINDS = ("llm_trait_scores", "regex_trait_scores", "callable_trait_scores", "metric_trait_scores")


def _json(value: Any) -> str:
    """karenina's rule for JSON cells: empty values leave the cell empty."""
    return json.dumps(value) if value else ""


def trait_scores(rubric: dict[str, Any] | None) -> dict[str, Any]:
    """Every trait's score in a karenina-form ``rubric`` section (LLM, regex, callable and metric traits)."""
    merged: dict[str, Any] = {}
    for kind in _SCORE_KINDS:
        merged.update((rubric or {}).get(kind) or {})
    return merged


class CsvColumns:
    """Every column in order, found one result at a time, with the global and the question-specific trait names."""

    def __init__(self) -> None:
        self._names: set[str] = set()
        self._global: set[str] = set()

    def add(self, k: dict[str, Any]) -> None:
        """Take the traits of one result in karenina's form."""
        rubric = k.get("rubric")
        self._names.update(name for name in trait_scores(rubric) if name and "\n" not in name and "\r" not in name)
        provenance = (rubric or {}).get("trait_provenance") or {}
        self._global.update(name for name, where in provenance.items() if where == "global")

    @property
    def global_traits(self) -> list[str]:
        return sorted(self._names & self._global)

    @property
    def specific(self) -> list[str]:
        return sorted(self._names - self._global)

    @property
    def names(self) -> list[str]:
        specific = self.specific
        return [*KARENINA_HEAD, *(f"rubric_{n}" for n in self.global_traits),
                *(["question_specific_rubrics"] if specific else []), *KARENINA_TAIL, *OWN_COLUMNS]


def _display(identity: dict[str, Any]) -> str:
    text = f"{identity['interface']}:{identity['model_name']}"
    if identity.get("config_id"):
        text += f" ({identity['config_id']})"
    return text


def csv_row(
    r: VerificationResult, k: dict[str, Any], global_traits: list[str], specific: list[str], *,
    job_id: str = "", exported: str | None = None,
) -> dict[str, Any]:
    """One row: ``k`` is the karenina form of ``r`` (see :func:`verify.results.karenina_form.to_karenina`)."""
    meta, tpl, rubric = k["metadata"], k.get("template") or {}, k.get("rubric")
    dj, djr = k.get("deep_judgment") or {}, k.get("deep_judgment_rubric") or {}
    failure = meta.get("failure")
    row: dict[str, Any] = {
        "question_id": meta["question_id"], "success": failure is None,
        "error": failure["reason"] if failure else "", "question_text": meta["question_text"],
        "raw_llm_response": tpl.get("raw_llm_response", ""),
        "parsed_gt_response": _json(tpl.get("parsed_gt_response")),
        "parsed_llm_response": _json(tpl.get("parsed_llm_response")),
        "template_verification_performed": bool(tpl.get("template_verification_performed")),
        "verify_result": "" if tpl.get("verify_result") is None else json.dumps(tpl["verify_result"]),
        "verify_granular_result": ("" if tpl.get("verify_granular_result") is None
                                   else json.dumps(tpl["verify_granular_result"])),
        "rubric_evaluation_performed": bool(rubric and rubric.get("rubric_evaluation_performed")),
        "keywords": _json(meta.get("keywords")),
        "answering_model": _display(meta["answering"]), "parsing_model": _display(meta["parsing"]),
        "replicate": meta.get("replicate") or "", "execution_time": meta["execution_time"],
        "timestamp": meta["timestamp"], "answering_system_prompt": meta.get("answering_system_prompt") or "",
        "parsing_system_prompt": meta.get("parsing_system_prompt") or "", "run_name": meta.get("run_name") or "",
        "export_timestamp": exported or time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "karenina_version": "", "job_id": job_id,
        "embedding_check_performed": bool(tpl.get("embedding_check_performed")),
        "embedding_similarity_score": tpl.get("embedding_similarity_score") or "",
        "embedding_override_applied": bool(tpl.get("embedding_override_applied")),
        "embedding_model_used": tpl.get("embedding_model_used") or "",
        "answering_mcp_servers": _json(tpl.get("answering_mcp_servers")),
        "deep_judgment_mode": dj.get("deep_judgment_mode"),
        "deep_judgment_performed": bool(dj.get("deep_judgment_performed")),
        "deep_judgment_model_calls": dj.get("deep_judgment_model_calls") or 0,
        "deep_judgment_excerpt_retry_count": dj.get("deep_judgment_excerpt_retry_count") or 0,
        "deep_judgment_search_enabled": bool(dj.get("deep_judgment_search_enabled")),
        "deep_judgment_rubric_performed": bool(djr.get("deep_judgment_rubric_performed")),
        "total_deep_judgment_model_calls": djr.get("total_deep_judgment_model_calls") or 0,
        "total_traits_evaluated": djr.get("total_traits_evaluated") or 0,
        "total_excerpt_retries": djr.get("total_excerpt_retries") or 0,
        "metric_trait_confusion_lists": _json((rubric or {}).get("metric_trait_confusion_lists")),
        "metric_trait_metrics": _json((rubric or {}).get("metric_trait_scores")),
        "usage_metadata": _json(tpl.get("usage_metadata")), "agent_metrics": _json(tpl.get("agent_metrics")),
    }
    for name in ("extracted_excerpts", "attribute_reasoning", "deep_judgment_stages_completed",
                 "attributes_without_excerpts", "hallucination_risk_assessment"):
        row[name] = _json(dj.get(name))
    for name in ("extracted_rubric_excerpts", "rubric_trait_reasoning", "deep_judgment_rubric_scores",
                 "standard_rubric_scores", "trait_metadata", "traits_without_valid_excerpts",
                 "rubric_hallucination_risk_assessment"):
        row[name] = _json(djr.get(name))
    scores = trait_scores(rubric)
    for name in global_traits:
        row[f"rubric_{name}"] = str(scores.get(name, "")) if rubric else ""  # karenina writes str(), not JSON
    if specific:
        row["question_specific_rubrics"] = json.dumps({n: scores[n] for n in specific if n in scores})
    row.update(_own_cells(r))
    return row


def _own_cells(r: VerificationResult) -> dict[str, Any]:
    m = r.metadata
    trace = r.template.trace_messages if r.template else []
    status = {name: o.status for name, o in (r.rubric.trait_status if r.rubric else {}).items() if o.status != "scored"}
    return {
        "verdict": r.verdict,
        "judged": f"{m.coverage.judged}/{m.coverage.total}" if m.coverage else "",
        "unscored": json.dumps(m.coverage.unscored) if m.coverage and m.coverage.unscored else "",
        "failure_category": m.failure.category if m.failure else "",
        "failure_stage": m.failure.stage if m.failure else "",
        "trait_status": json.dumps(status) if status else "",
        "evaluation_mode": m.evaluation_mode,
        "task_key": m.task_key,
        "revision_status": m.revision.status if m.revision else "",
        "revision_iterations": m.revision.iterations if m.revision else "",
        "transcript_messages": len(trace) if trace else "",
        "transcript_tool_calls": sum(len(msg.get("tool_calls") or []) for msg in trace) if trace else "",
    }
