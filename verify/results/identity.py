"""What a results file belongs to: fingerprints of the benchmark, of the judging config and verify's version.

``--resume`` compares a saved run's identity with the current one, so results of another benchmark
or of another judging config are never merged into this run's. Settings that only change *how* a
run executes (workers, concurrency, time-outs, retries) are left out of the config fingerprint:
resuming with more workers is the same run. Dates are left out of the benchmark fingerprint
(karenina rewrites them on every save, and a checkpoint without them gets the load time).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from verify.config.report import config_to_dict

if TYPE_CHECKING:
    from verify.benchmark.jsonld import Benchmark
    from verify.benchmark.question import Question
    from verify.config.verification import VerificationConfig

__all__ = ["EXECUTION_ONLY", "differences", "run_identity"]

#: Config fields that change how a run executes, not what it judges.
EXECUTION_ONLY = frozenset({
    "async_enabled", "async_max_workers", "max_concurrent_requests", "batch_timeout_seconds", "task_ordering",
    "answerer_concurrency_limits", "request_timeout", "retry_policy", "custom_error_patterns",
    "max_requeue_count", "db_config",
    "gates",  # checked against the finished run; they change no task's result
})
#: Per-model fields of the same kind (and credentials, which are masked anyway).
MODEL_EXECUTION_ONLY = frozenset({
    "max_concurrent_requests", "request_timeout", "max_retries", "endpoint_api_key", "anthropic_api_key",
    "mcp_http_timeout", "mcp_sse_read_timeout", "agent_timeout",
})
#: ``extra_kwargs`` keys that only pace or bound calls (the simulated model's latency and faults too).
EXTRA_EXECUTION_ONLY = frozenset({
    "latency_ms", "timeout", "request_timeout", "max_retries", "rate_429", "rate_500", "fail_first", "fail_status",
})
#: Fields added after identities were first saved, with their defaults: left out when they hold them,
#: so a run saved by an earlier verify still resumes.
ADDED_DEFAULTS: dict[str, Any] = {
    "revision_max_iterations": None, "deep_judgment_rubric_strategy": "per_trait",
    "transcript_extractor": "last_assistant", "seed": 0,
}
MODEL_ADDED_DEFAULTS: dict[str, Any] = {"tools": None, "tool_rounds": 5}
_QUESTION_DATES = {"date_created", "date_modified", "finished"}


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def question_digest(question: Question) -> str:
    return _digest(question.model_dump(mode="json", exclude=_QUESTION_DATES))


def judging_config(config: VerificationConfig) -> dict[str, Any]:
    """The config as it bears on verdicts: the masked dump without execution-only settings."""
    data = {k: v for k, v in config_to_dict(config).items() if k not in EXECUTION_ONLY}
    for name, default in ADDED_DEFAULTS.items():
        if name in data and data[name] == default:
            del data[name]
    for role in ("answering_models", "parsing_models"):
        models = data.get(role)
        if isinstance(models, list):
            data[role] = [_judging_model(m) if isinstance(m, dict) else m for m in models]
    return data


def _judging_model(model: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in model.items()
           if k not in MODEL_EXECUTION_ONLY and not (k in MODEL_ADDED_DEFAULTS and v == MODEL_ADDED_DEFAULTS[k])}
    extra = out.pop("extra_kwargs", None)
    extra = {k: v for k, v in extra.items() if k not in EXTRA_EXECUTION_ONLY} if isinstance(extra, dict) else extra
    if extra:
        out["extra_kwargs"] = extra
    return out


def run_identity(benchmark: Benchmark, config: VerificationConfig, version: str) -> dict[str, Any]:
    """The identity stored in a results header: digests plus what is needed to say what differs."""
    questions = {q.id: question_digest(q) for q in benchmark.questions}
    rubrics = {
        "global_rubric": _digest(benchmark.global_rubric.model_dump(mode="json") if benchmark.global_rubric else None),
        "global_dynamic_rubric": _digest(
            benchmark.global_dynamic_rubric.model_dump(mode="json") if benchmark.global_dynamic_rubric else None
        ),
    }
    judging = judging_config(config)
    return {
        "benchmark": _digest([questions, rubrics]),
        "questions": questions,
        "rubrics": rubrics,
        "config": _digest(judging),
        "judging_config": judging,
        "verify_version": version,
    }


def _flatten(value: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(value, dict):
        out: dict[str, str] = {}
        for key, item in value.items():
            out.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        out = {}
        for i, item in enumerate(value):
            out.update(_flatten(item, f"{prefix}[{i}]"))
        return out
    return {prefix: json.dumps(value, sort_keys=True, default=str)}


def _few(items: list[str], limit: int = 4) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def differences(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """What differs between a saved identity and the current run's, one phrase each (empty: same run)."""
    out: list[str] = []
    if saved.get("benchmark") != current.get("benchmark"):
        old, new = saved.get("questions") or {}, current.get("questions") or {}
        removed = [q for q in old if q not in new]
        added = [q for q in new if q not in old]
        changed = [q for q in new if q in old and old[q] != new[q]]
        parts = [f"{label} {_few(ids)}" for label, ids in
                 (("questions only in the saved run:", removed), ("new questions:", added),
                  ("changed questions:", changed)) if ids]
        rubrics_old, rubrics_new = saved.get("rubrics") or {}, current.get("rubrics") or {}
        parts += [f"{name} changed" for name in rubrics_new if rubrics_old.get(name) != rubrics_new[name]]
        out.append("the benchmark differs (" + ("; ".join(parts) or "different content") + ")")
    if saved.get("config") != current.get("config"):
        old_cfg, new_cfg = _flatten(saved.get("judging_config") or {}), _flatten(current.get("judging_config") or {})
        fields = sorted(k for k in old_cfg.keys() | new_cfg.keys() if old_cfg.get(k) != new_cfg.get(k))
        shown = [f"{k} ({old_cfg.get(k, 'unset')} -> {new_cfg.get(k, 'unset')})" for k in fields[:4]]
        more = f" and {len(fields) - 4} more" if len(fields) > 4 else ""
        out.append("the judging config differs (" + (", ".join(shown) + more or "different content") + ")")
    return out
