"""What the ``verify`` command reads from its flags: index and duration syntax, the JSON input files
(answers, prices), the files the run must never overwrite, and the config built from preset + flags.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from verify.errors import UserError
from verify.files import refuse_same_outputs

__all__ = ["build_config", "check_call_log", "default_output", "parse_duration", "parse_indices", "read_answers", "read_json", "read_prices", "run_inputs"]


def default_output(benchmark: Path, folder: Path = Path("verify-results")) -> Path:
    """Where a run without ``--output`` writes: ``verify-results/<name>.json``, or ``<name>-2.json``,
    ``-3``, ... when an earlier run holds that name (its results or its unfinished progress), so
    running the same command twice keeps both runs instead of failing on the first one's file."""
    stem = Path(benchmark).stem
    for n in range(1, 10_000):
        path = folder / (f"{stem}.json" if n == 1 else f"{stem}-{n}.json")
        if not path.exists() and not path.with_name(path.name + ".progress.jsonl").exists():
            return path
    raise UserError(f"{folder} holds 10,000 runs of {stem}", "give the results file with --output")


def parse_indices(spec: str, count: int) -> list[int]:
    """'0,1,5-10' -> indices (inclusive ranges); out of range is an error."""
    out: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            start, end = int(lo), int(hi or lo)
        except ValueError:
            raise UserError(f"--questions: {part!r} is not an index or a range", "use e.g. --questions 0,2,5-9") from None
        if start > end or end >= count or start < 0:
            raise UserError(f"--questions: {part!r} is out of range 0-{count - 1}", "see the list with --show-plan")
        out.extend(range(start, end + 1))
    return out


def parse_duration(text: str) -> float:
    """'90', '90s', '30m', '2h' -> seconds."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if not found or float(found.group(1)) <= 0:
        raise UserError(f"--deadline {text!r} is not a duration", "use seconds or a unit, e.g. --deadline 90, 30m or 2h")
    return float(found.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[found.group(2)]


def read_json(path: Path, what: str) -> Any:
    from verify.files import read_json_file

    return read_json_file(path, what)


def read_answers(path: Path) -> dict[str, dict[str, Any]]:
    data = read_json(path, "answers")
    if not isinstance(data, dict):
        raise UserError(f"answers file {path} must be a JSON object", 'use {"<model id>": {"<question id>": "answer"}}')
    if all(isinstance(v, str | list) for v in data.values()):  # a list is a transcript (message list)
        return {"*": data}
    bad = [k for k, v in data.items() if not (isinstance(v, dict) and all(isinstance(a, str | list) for a in v.values()))]
    if bad:
        raise UserError(
            f"answers file {path}: entry {bad[0]!r} must map question ids to answer strings",
            'use {"<model id>": {"<question id>": "answer"}} or {"<question id>": "answer"}',
        )
    return data


def read_manual_traces(flags: dict[str, Any]) -> Any:
    """karenina's manual traces, with every transcript (a message list) checked, located."""
    from verify.judging.transcript import TranscriptError, parse_transcript

    path = flags["manual_traces"]
    data = read_json(path, "manual traces")
    model = flags.get("answering_id") or flags.get("answering_model") or "manual"
    for key, value in (data.items() if isinstance(data, dict) else []):
        if isinstance(value, list):
            try:
                parse_transcript(value)
            except TranscriptError as exc:
                raise UserError(f"manual traces {path}: model {model!r}, question {key!r}: {exc}",
                                "use OpenAI chat messages or karenina's trace messages") from None
    return data


def read_prices(path: Path) -> dict[str, dict[str, float]]:
    data = read_json(path, "prices")
    ok = isinstance(data, dict) and all(
        isinstance(v, dict) and all(isinstance(x, int | float) for x in v.values()) for v in data.values()
    )
    if not ok:
        raise UserError(
            f"prices file {path} has the wrong shape",
            'use {"<model name>": {"input_per_million": 0.4, "output_per_million": 1.6}}',
        )
    return {k: {kk: float(vv) for kk, vv in v.items()} for k, v in data.items()}


def run_inputs(flags: dict[str, Any]) -> list[Path]:
    """The files this run reads, which --output must never name."""
    found = [flags[k] for k in ("benchmark", "answers", "manual_traces", "deep_judgment_rubric_config", "prices", "replay") if flags[k]]
    if flags["preset"]:
        found += [p for p in (Path(flags["preset"]), Path("presets") / f"{flags['preset']}.json") if p.is_file()]
    return found


def check_call_log(flags: dict[str, Any], output: Path) -> None:
    """``--log-calls`` names a file of its own: not the results, the page or an input of the run."""
    log = flags["log_calls"]
    if log is None:
        return
    refuse_same_outputs([("--output", output), ("--report", flags["report_path"]), ("--log-calls", log)])
    if Path(log).resolve() in {p.resolve() for p in run_inputs(flags)}:
        raise UserError(f"--log-calls {log} names an input of the run",
                        "give the call log its own name, e.g. --log-calls calls.jsonl")


def saved_config(data: dict[str, Any], manual_traces: Any) -> Any:
    """The judging config saved with a run (no secrets, no manual traces, no permissions such as
    ``trust_checkpoint_code``: those come from this run)."""
    from verify.config.permissions import PERMISSION_FIELDS
    from verify.config.verification import VerificationConfig
    from verify.errors import ConfigError, format_validation_error

    # permissions never come from the saved run: they are given again on this command line
    data = {k: v for k, v in data.items() if k not in PERMISSION_FIELDS}
    defaults = {k: f.default for k, f in VerificationConfig.model_fields.items() if f.default_factory is None}
    # fields at their default stay unset, as they were in the saved run (config warnings look at what was set)
    data = {k: v for k, v in json.loads(json.dumps(data)).items() if k not in defaults or v != defaults[k]}
    for model in data.get("answering_models") or []:
        if isinstance(model, dict) and model.get("interface") == "manual":
            if manual_traces is None:
                raise UserError("the run being resumed answered from manual traces, which are not saved with it",
                                "pass --manual-traces FILE again")
            model["manual_traces"] = manual_traces
    from pydantic import ValidationError

    try:
        return VerificationConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError("the config saved with the run does not load: "
                          + format_validation_error(exc, root=VerificationConfig).splitlines()[0],
                          "give --preset (and the flags) of the interrupted run") from None


def build_config(flags: dict[str, Any], saved: dict[str, Any] | None = None) -> Any:
    from verify.config.deep_judgment import DeepJudgmentRubricCustomConfig
    from verify.config.preset import load_preset
    from verify.config.verification import VerificationConfig

    traces = read_manual_traces(flags) if flags["manual_traces"] else None
    base: Any
    if flags["preset"]:
        base = load_preset(flags["preset"])
    else:
        base = saved_config(saved, traces) if saved is not None else None
    ov: dict[str, Any] = {
        k: flags[k]
        for k in (
            "answering_model", "answering_provider", "answering_id", "parsing_model", "parsing_provider",
            "parsing_id", "temperature", "evaluation_mode", "rubric_evaluation_strategy", "replicate_count",
            "abstention", "sufficiency", "embedding_check", "embedding_threshold", "embedding_model",
            "deep_judgment_rubric_mode", "deep_judgment_rubric_excerpts", "deep_judgment_rubric_max_excerpts",
            "deep_judgment_rubric_fuzzy_threshold", "deep_judgment_rubric_retry_attempts",
            "deep_judgment_rubric_search", "deep_judgment_rubric_search_tool", "use_full_trace_for_template",
            "use_full_trace_for_rubric", "max_concurrent_requests", "deep_judgment_rubric_strategy",
        )
    }
    if flags.get("transcript_extractor") is not None:
        ov["transcript_extractor"] = flags["transcript_extractor"]
    if flags["interface"]:
        ov["answering_interface"] = flags["interface"]
        if flags["interface"] != "manual":
            ov["parsing_interface"] = flags["interface"]
    if flags["deep_judgment"] is not None:
        ov["deep_judgment_mode"] = "full" if flags["deep_judgment"] else "disabled"
    if flags["no_async"]:
        ov["async_execution"] = False
    if flags["async_workers"] is not None:
        ov["async_workers"] = flags["async_workers"]
    if flags["deep_judgment_rubric_config"]:
        path = flags["deep_judgment_rubric_config"]
        data = read_json(path, "deep-judgment rubric config")
        from pydantic import ValidationError

        try:
            ov["deep_judgment_rubric_config"] = DeepJudgmentRubricCustomConfig.model_validate(data)
        except ValidationError as exc:
            from verify.errors import format_validation_error

            detail = format_validation_error(exc, str(path), root=DeepJudgmentRubricCustomConfig)
            raise UserError(f"{path}: {detail}", "see 'The custom-mode file' in docs/deep-judgment.md") from None
    from_saved = saved is not None and not flags["preset"]
    if traces is not None and not from_saved:  # a saved config got them above
        ov["manual_traces"] = traces
    extra_gates = [*(flags.get("gate") or []), *([f"pass_rate >= {flags['fail_under']}"] if flags.get("fail_under") is not None else [])]
    if extra_gates:
        ov["gates"] = [*(base.gates if base is not None else []), *extra_gates]
    if flags.get("revise_until_satisfied") is not None:
        ov["revision_max_iterations"] = flags["revise_until_satisfied"]
    if flags.get("seed") is not None:
        ov["seed"] = flags["seed"]
    if flags.get("trust_checkpoint_code"):
        ov["trust_checkpoint_code"] = True
    for item in flags["set_"] or []:
        key, sep, raw = item.partition("=")
        if not sep:
            raise UserError(f"--set {item!r} is not key=value", "use e.g. --set async_max_workers=4")
        try:
            ov[key.strip()] = json.loads(raw)
        except ValueError:
            ov[key.strip()] = raw
    return VerificationConfig.from_overrides(base, **ov)
