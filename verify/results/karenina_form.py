"""A result as karenina's readers take it, and back.

karenina validates an exported result with its own models: the ``metadata`` section forbids keys it
does not know, every other section (and the result itself) ignores them. So an exported result keeps
karenina's sections with karenina's keys (and karenina's defaults for what verify does not fill), and
what only verify has in ``metadata`` (the task key, the stages that ran, the verdict, the coverage,
stage errors and, when the run revises until satisfied, every grading pass) moves to a ``verify`` section of its own at the result level, which karenina skips.
Reading an export back (:func:`from_export`) merges that section into verify's models again.

karenina has no ``incomplete`` verdict: a result passes there when ``metadata.failure`` is empty. An
incomplete verify result without a failure therefore gets one in its karenina form (a system failure
naming what was not judged), so a karenina reader never counts it as passed; the ``verify`` section
keeps verify's own failure (empty) for reading back.
"""

from __future__ import annotations

from typing import Any

from verify.results.karenina_read import from_karenina, is_karenina_result
from verify.results.models import (
    SCHEMA_VERSION,
    DeepJudgmentRubricSection,
    DeepJudgmentSection,
    Metadata,
    RubricSection,
    TemplateSection,
    VerificationResult,
)
from verify.secrets import scrub

__all__ = ["KARENINA_FAILURE_GROUPS", "OWN_SECTION", "from_export", "karenina_failure", "to_karenina", "verify_metadata"]

OWN_SECTION = "verify"

#: karenina's failure categories, each with the group karenina computes for it.
KARENINA_FAILURE_GROUPS = {
    "content": "content", "recursion_limit": "autofail", "trace_validation": "autofail",
    "deep_judgment": "autofail", "deep_judgment_rubric": "autofail", "timeout": "retry", "connection": "retry",
    "rate_limit": "retry", "server_error": "retry", "abstention": "abstained", "sufficiency": "abstained",
    "template_validation": "system", "parsing": "system", "unexpected_error": "system",
}
_CAVEATS = frozenset({"partial_content", "embedding_override", "retries_used", "parse_decision_malformed"})
#: verify's metadata keys karenina's metadata would refuse.
_OWN_METADATA = ("task_key", "stages", "verdict", "coverage", "errors")
#: why an evaluation was not judged -> the karenina failure category closest to it. ``untrusted`` (a
#: pickled callable skipped because --trust-checkpoint-code was not given) is a deliberate skip, not a
#: fault: karenina's ``system`` group (template_validation, parsing, unexpected_error) would count it
#: as a bug, and ``content``/``autofail``/``abstained`` would blame the answer. Group ``retry`` is
#: karenina's "no verdict yet; run the row again" bucket (``karenina repair --failure-group retry``
#: reruns exactly those), which is the fix here; its category ``connection`` is karenina's catch-all
#: for a budget spent outside the answer. The reason and ``details.unscored`` name the real cause.
_GAP_CATEGORY = {"unparseable": "parsing", "invalid_reply": "parsing", "contradiction": "parsing",
                 "code": "unexpected_error", "untrusted": "connection"}

# karenina's keys that verify does not fill, with karenina's defaults: an export has every key a
# karenina export has, so code reading the JSON directly finds them. Keys verify fills win.
_METADATA_DEFAULTS: dict[str, Any] = {
    "partial_content": None, "retry_counts": None, "parsing_system_prompt": None, "few_shot_enabled": False,
    "few_shot_example_count": 0, "scenario_id": None, "scenario_node": None, "scenario_turn": None,
    "scenario_path": None,
}
_TEMPLATE_DEFAULTS: dict[str, Any] = {
    "trace_messages": [], "conversation_context": [], "field_results": None, "field_scores": None,
    "composition_strategy": None,
    "usage_unavailable": False, "investigation_trace": None, "agentic_parsing_performed": False,
    "agentic_extraction_recovery": None, "agentic_extraction_error": None, "dynamic_parsing_performed": False,
    "dynamic_parse_decision": None, "dynamic_decision_reasoning": None, "answering_mcp_servers": None,
    "agent_metrics": None,
}
_RUBRIC_DEFAULTS: dict[str, Any] = {
    "agentic_trait_scores": None, "agentic_trait_investigation_traces": None,
    "agentic_trait_extraction_metadata": None, "dynamic_rubric_skipped_traits": None,
    "dynamic_rubric_promoted_traits": None,
}
_SECTIONS: dict[str, Any] = {
    "template": TemplateSection, "rubric": RubricSection, "deep_judgment": DeepJudgmentSection,
    "deep_judgment_rubric": DeepJudgmentRubricSection,
}

_ROOT_TRACE = ("evaluation_input", "used_full_trace", "trace_extraction_error")


def to_karenina(result: VerificationResult) -> dict[str, Any]:
    """``result`` as a karenina ``VerificationResult`` dict, with verify's own data under ``verify``."""
    data = result.model_dump(mode="json")
    meta = data["metadata"]
    own: dict[str, Any] = {"schema_version": data.pop("schema_version", SCHEMA_VERSION)}
    for key in _OWN_METADATA:
        own[key] = meta.pop(key)
    revision = meta.pop("revision", None)
    if revision is not None:  # only runs that revise carry it, so other exports stay as they were
        own["revision"] = revision
    failure = karenina_failure(result)
    mine = meta["failure"]
    if (failure is None) != (mine is None) or (mine and failure and mine["category"] != failure["category"]):
        own["failure"] = mine  # verify's own, read back instead of karenina's
    meta["failure"] = failure
    caveats = [c for c in meta["caveats"] if c in _CAVEATS]
    if caveats != meta["caveats"]:
        own["caveats"] = meta["caveats"]
        meta["caveats"] = caveats
    template = data["template"]
    if template is not None:
        if template["raw_llm_response"] is None:  # karenina requires text here
            template["raw_llm_response"] = ""
            own["no_answer_text"] = True
        data["template"] = {**_TEMPLATE_DEFAULTS, **template}
    if data["rubric"] is not None:
        data["rubric"] = {**_RUBRIC_DEFAULTS, **data["rubric"]}
    out: dict[str, Any] = {"metadata": {**_METADATA_DEFAULTS, **meta}}
    out.update((name, data[name]) for name in _SECTIONS)
    out.update((name, data[name]) for name in _ROOT_TRACE)
    out[OWN_SECTION] = own
    return out


def karenina_failure(result: VerificationResult) -> dict[str, Any] | None:
    """The failure karenina should see: verify's, in karenina's categories, or one naming what an
    incomplete result did not judge."""
    failure = result.metadata.failure
    if failure is not None:
        # verify's own categories in karenina's terms: a failed rubric verdict (group content) is content
        own = "content" if failure.group == "content" else "unexpected_error"
        category = failure.category if failure.category in KARENINA_FAILURE_GROUPS else own
        # masked here already, so masking the whole export later cannot push it past karenina's 500 characters
        return {"category": category, "stage": failure.stage, "reason": scrub(failure.reason)[:500], "details": None,
                "group": KARENINA_FAILURE_GROUPS[category]}
    if result.verdict == "failed":  # a result written before verdicts and failures were both recorded
        return {"category": "content", "stage": "verify_template", "reason": "template verification failed",
                "details": None, "group": "content"}
    if result.verdict != "incomplete":
        return None
    gaps = result.metadata.coverage.unscored if result.metadata.coverage else {}
    # a real gap decides the category before a deliberate skip does
    first = next((why for why in gaps.values() if why != "untrusted"), next(iter(gaps.values()), "unexpected_error"))
    category = first if first in KARENINA_FAILURE_GROUPS else _GAP_CATEGORY.get(first, "unexpected_error")
    stage = "verify_template" if list(gaps)[:1] == ["template"] else "rubric_evaluation"
    named = ", ".join(f"{name} ({why})" for name, why in gaps.items()) or "an evaluation"
    if "untrusted" in gaps.values():
        named += "; untrusted: pickled callable code not run, rerun with --trust-checkpoint-code to judge it"
    return {"category": category, "stage": stage, "reason": f"not judged: {named}"[:500],
            "details": {"unscored": gaps}, "group": KARENINA_FAILURE_GROUPS[category]}


def verify_metadata(data: dict[str, Any]) -> dict[str, Any] | None:
    """verify's ``metadata`` of a saved result, raw: karenina's form merged with the ``verify``
    section, or the metadata itself for verify's own form. ``None`` when there is none."""
    meta = data.get("metadata")
    own = data.get(OWN_SECTION)
    if not isinstance(own, dict):
        return meta if isinstance(meta, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    # keys written into metadata (an older export, or one edited by hand) win over the section's
    merged = {key: own[key] for key in _OWN_METADATA if key in own}
    merged.update((k, v) for k, v in meta.items() if k in Metadata.model_fields)
    for key in ("failure", "caveats", "revision"):
        if key in own:
            merged[key] = own[key]
    failure = merged.get("failure")
    if isinstance(failure, dict):
        category = failure.get("category")
        failure = {k: v for k, v in failure.items() if k in ("category", "stage", "reason", "group")}
        failure.setdefault("group", KARENINA_FAILURE_GROUPS.get(str(category), "system"))
        merged["failure"] = failure
    return merged


def from_export(data: dict[str, Any]) -> VerificationResult:
    """A result read from an export: karenina's form with a ``verify`` section, verify's own (older
    exports and progress lines, whose metadata still holds the task key), or one karenina wrote."""
    own = data.get(OWN_SECTION)
    if not isinstance(own, dict):
        return from_karenina(data) if is_karenina_result(data) else VerificationResult.model_validate(data)
    out: dict[str, Any] = {"schema_version": own.get("schema_version", SCHEMA_VERSION),
                           "metadata": verify_metadata(data)}
    for name, model in _SECTIONS.items():
        section = data.get(name)
        out[name] = {k: v for k, v in section.items() if k in model.model_fields} if isinstance(section, dict) else None
    out.update((name, data[name]) for name in _ROOT_TRACE if data.get(name) is not None)
    if own.get("no_answer_text") and out["template"] is not None:
        out["template"]["raw_llm_response"] = None
    return VerificationResult.model_validate(out)
