"""Reading a result karenina wrote (no ``verify`` section) into verify's models.

karenina's result is a superset of verify's in most places (karenina's sections carry keys verify
does not model: ``tools`` on a model identity, ``details`` on a failure, token details on usage) and a
subset in others (no task key, no evaluation mode, no per-trait status). So a karenina result is
fitted: what verify does not model is dropped, what verify needs is derived from what karenina
recorded (the mode from the sections that ran, each trait's status from its score), and the verdict
is left to :func:`verify.results.verdict.outcome_of`, which reads karenina's rule: a task passes
when nothing failed, and a rubric-only task with no failure is ``judged`` (nothing decided it).
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import ValidationError

from verify.results.models import VerificationResult
from verify.results.verdict import coverage_of

__all__ = ["from_karenina", "is_karenina_result"]

_SCORES = ("llm_trait_scores", "regex_trait_scores", "callable_trait_scores", "metric_trait_scores")
_FITS = 20  # passes that drop what verify does not model; each drops every key the last one named


def is_karenina_result(data: dict[str, Any]) -> bool:
    """A result karenina wrote: no ``verify`` section, and no task key in its metadata (verify's own
    older form keeps the key there)."""
    meta = data.get("metadata")
    return "verify" not in data and isinstance(meta, dict) and "task_key" not in meta


def _mode(data: dict[str, Any]) -> str:
    template = data.get("template")
    template = template if isinstance(template, dict) else {}
    rubric = data.get("rubric")
    rubric = rubric if isinstance(rubric, dict) else {}
    ran_template = bool(template.get("template_verification_performed")) or template.get("verify_result") is not None
    ran_rubric = bool(rubric.get("rubric_evaluation_performed"))
    if ran_template:
        return "template_and_rubric" if ran_rubric else "template_only"
    # karenina fails a template it could not parse (group system) before verifying it: still a template run
    failure = data["metadata"].get("failure") or {}
    stage = failure.get("stage") if isinstance(failure, dict) else None
    return "rubric_only" if ran_rubric and stage not in ("parse_template", "validate_template") else "template_only"


def _trait_status(rubric: dict[str, Any]) -> dict[str, Any]:
    """Each scored trait ``scored`` (with its label), each one karenina left at None ``unscored``."""
    labels = rubric.get("llm_trait_labels") or {}
    status: dict[str, Any] = {}
    for kind in _SCORES:
        for name, score in (rubric.get(kind) or {}).items():
            if kind == "metric_trait_scores":  # a metric trait's scores are a dict; the report reads the dict
                status[name] = {"status": "scored" if score else "unscored"}
            elif score is None:
                status[name] = {"status": "unscored", "unscored_category": "unparseable"}
            else:
                status[name] = {"status": "scored", "score": score, "label": labels.get(name)}
    return status


def _drop(data: Any, loc: tuple[int | str, ...]) -> bool:
    """Remove the deepest value on the path ``loc`` that exists (a union's member names in a
    pydantic location are not keys); False when not even its first key is there."""
    parent: Any = None
    key: int | str | None = None
    for step in loc:
        found = (isinstance(data, dict) and step in data) or (
            isinstance(data, list) and isinstance(step, int) and step < len(data))
        if not found:
            break
        parent, key, data = data, step, data[step]
    if parent is None or key is None:
        return False
    del parent[key]
    return True


def from_karenina(data: dict[str, Any]) -> VerificationResult:
    """``data`` (one result of karenina's export) in verify's models; raises ``ValidationError`` when
    it cannot be fitted (a required key missing or of the wrong type)."""
    out: dict[str, Any] = copy.deepcopy({k: v for k, v in data.items() if k != "row_index"})
    meta = out["metadata"]
    answering, parsing = meta.get("answering") or {}, meta.get("parsing") or {}
    meta.setdefault("task_key", "|".join(str(x) for x in (
        meta.get("question_id"), answering.get("model_name"), parsing.get("model_name"), meta.get("replicate") or 0)))
    meta["evaluation_mode"] = meta.get("evaluation_mode") or _mode(data)
    rubric = out.get("rubric")
    if isinstance(rubric, dict) and "trait_status" not in rubric:
        out["rubric"] = {**rubric, "trait_status": _trait_status(rubric)}
    result = _fitted(out)
    result.metadata.coverage = coverage_of(
        planned_traits=result.rubric.trait_status if result.rubric else [], rubric=result.rubric,
        template_planned=result.metadata.evaluation_mode != "rubric_only", template=result.template,
        failure=result.metadata.failure, answered=True)
    return result


def _fitted(out: dict[str, Any]) -> VerificationResult:
    for _ in range(_FITS):
        try:
            return VerificationResult.model_validate(out)
        except ValidationError as exc:
            # drop what verify does not model (extra keys) and optional values of another shape
            dropped = [_drop(out, tuple(e["loc"])) for e in exc.errors() if e["type"] != "missing"]
            if not any(dropped):
                raise
    return VerificationResult.model_validate(out)
