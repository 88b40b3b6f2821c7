"""karenina's ``verify`` options that have no counterpart in verify's own flags.

* ``--resume PATH`` (karenina: a ``<output>.state`` file) next to verify's boolean ``--resume``:
  :class:`ResumeAwareCommand` reads ``--resume X`` as a path when ``X`` names a results, progress
  or ``.state`` file, and the run then continues the results file ``X`` belongs to, with the
  benchmark and judging config saved in it unless the command line gives them.
* ``--run-root DIR`` / ``--run-label L``: karenina's run directory
  ``DIR/L_<UTC time>/{run_manifest.json, results.json, traces/, workspaces/}``, with a manifest
  karenina's ``RunManifest`` reads (status ``running`` -> ``completed`` | ``interrupted`` | ``failed``).
* ``--replay FILE``: karenina's replay store; its recorded traces are the answers of the pairs it
  holds, and the others are answered live (``miss_policy: strict`` makes a miss an error instead).
  verify judges the replayed answers again: stored parsed fields and verdicts are not reused.
* The agent workspace options are accepted and reported inert (verify's agents have tools but no workspace).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from verify.cli.command_types import GroupedHelpCommand
from verify.errors import UserError

__all__ = [
    "ResumeAwareCommand", "RunDirectory", "inert_option_warnings", "read_replay", "resume_target", "saved_run",
]

log = logging.getLogger("verify")

RESUME_SUFFIXES = (".progress.jsonl", ".state")
_SAFE_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
MAX_LABEL = 200


def _is_resume_path(token: str) -> bool:
    if token.startswith("-"):
        return False
    if token.endswith(RESUME_SUFFIXES):
        return True
    from verify.results.export import is_export

    path = Path(token)
    return not token.lower().endswith((".jsonld", ".json-ld")) and path.is_file() and is_export(path)


def rewrite_resume(args: list[str]) -> list[str]:
    """``--resume PATH`` / ``--resume=PATH`` -> ``--resume-from PATH``; a bare ``--resume`` stays a flag."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--resume="):
            out += ["--resume-from", arg.partition("=")[2]]
        elif arg == "--resume" and i + 1 < len(args) and _is_resume_path(args[i + 1]):
            out += ["--resume-from", args[i + 1]]
            i += 1
        else:
            out.append(arg)
        i += 1
    return out


REVISE_FLAG, REVISE_DEFAULT = "--revise-until-satisfied", "3"


def rewrite_revise(args: list[str]) -> list[str]:
    """A bare ``--revise-until-satisfied`` (no number after it) -> ``--revise-until-satisfied 3``: click
    options take a value or none, never an optional one."""
    out: list[str] = []
    for i, arg in enumerate(args):
        out.append(arg)
        if arg == REVISE_FLAG and not (i + 1 < len(args) and args[i + 1].lstrip("-").isdigit()):
            out.append(REVISE_DEFAULT)
    return out


class ResumeAwareCommand(GroupedHelpCommand):
    """The ``verify`` command, reading karenina's ``--resume PATH`` (and a bare ``--revise-until-satisfied``)
    before click parses the line."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, rewrite_resume(rewrite_revise(list(args))))


# --------------------------------------------------------------------------- --resume PATH


def resume_target(path: Path) -> Path:
    """The results file a ``--resume PATH`` continues (PATH, or PATH without ``.state``/``.progress.jsonl``)."""
    from verify.results.store import progress_path

    text = str(path)
    for suffix in RESUME_SUFFIXES:
        if text.endswith(suffix):
            output = Path(text[: -len(suffix)])
            break
    else:
        output = path
    if suffix_is_karenina_state(path) and not progress_path(output).exists() and not output.exists():
        raise UserError(
            f"--resume {path}: this is karenina's progressive-save state; verify does not continue a run "
            "karenina started (its results would mix with verify's)",
            f"run the benchmark with verify: verify BENCHMARK --preset PRESET --output {output.with_suffix('')}-verify.json",
        )
    if not output.exists() and not progress_path(output).exists():
        raise UserError(f"--resume {path}: there is no run to continue (neither {output} nor "
                        f"{progress_path(output)} exists)", "give the --output of the interrupted run")
    return output


def suffix_is_karenina_state(path: Path) -> bool:
    if not (str(path).endswith(".state") and path.is_file()):
        return False
    from verify.files import JsonProblem, parse_json, read_text

    try:
        data = parse_json(read_text(path))
    except JsonProblem:
        return False
    return isinstance(data, dict) and "task_manifest" in data


def saved_run(output: Path) -> tuple[str | None, dict[str, Any] | None]:
    """The benchmark path and judging config saved with the run in ``output`` (either may be None)."""
    from verify.results.export import read_export_header
    from verify.results.store import progress_path, read_header

    for header in (read_header(progress_path(output)) if progress_path(output).exists() else None,
                   read_export_header(output) if output.exists() else None):
        if not header:
            continue
        section = header.get("run")
        run: dict[str, Any] = section if isinstance(section, dict) else header
        benchmark, config = run.get("benchmark"), run.get("config")
        if benchmark or config:
            return (str(benchmark) if benchmark else None), (config if isinstance(config, dict) else None)
    return None, None


# --------------------------------------------------------------------------- --run-root


@dataclass
class RunDirectory:
    """karenina's run directory: ``results.json`` and a ``run_manifest.json`` that tracks the run."""

    path: Path
    manifest: dict[str, Any]

    @classmethod
    def create(cls, root: Path, label: str, *, benchmark_path: str, config: Any, questions: int) -> RunDirectory:
        from verify.config.report import config_to_dict

        if not _SAFE_LABEL.fullmatch(label):
            raise UserError(f"--run-label {label!r} is not a safe directory name",
                            "use letters, digits, dots, underscores and hyphens, starting with a letter or digit")
        if len(label) > MAX_LABEL:  # the folder name adds a timestamp; file systems allow 255 bytes
            raise UserError(f"--run-label is {len(label)} characters long; at most {MAX_LABEL} fit in a folder name",
                            "use a shorter --run-label")
        if Path(root).exists() and not Path(root).is_dir():
            raise UserError(f"--run-root {root} is a file, not a folder", "give the folder that run directories go into")
        now = datetime.now(UTC)
        path = Path(root) / f"{label}_{now.strftime('%Y%m%dT%H%M%SZ')}"
        if path.exists():
            raise UserError(f"--run-root: {path} already exists", "wait a second and run again, or use another --run-label")
        try:
            (path / "traces").mkdir(parents=True)
            (path / "workspaces").mkdir()
        except OSError as exc:
            raise UserError(f"--run-root {root}: cannot create the run directory {path} ({exc.strerror or exc})",
                            "give a folder you can write to, e.g. --run-root runs") from None
        stamp = _stamp(now)
        manifest = {
            "schema_version": "1.0", "status": "running", "label": label, "run_name": label,
            "created_at": stamp, "updated_at": stamp, "completed_at": None,
            "benchmark_path": benchmark_path, "selected_question_count": questions,
            "replicate_count": config.replicate_count,
            "answering_models": [_identity(m) for m in config.answering_models],
            "parsing_models": [_identity(m) for m in config.parsing_models],
            "configuration": config_to_dict(config),
            "results_path": "results.json", "traces_path": "traces", "workspaces_path": "workspaces",
            "failure_type": None, "failure_message": None,
        }
        directory = cls(path, manifest)
        directory.write()
        return directory

    @property
    def results_path(self) -> Path:
        return self.path / "results.json"

    def finish(self, status: str, error: BaseException | None = None) -> None:
        from verify.secrets import scrub

        stamp = _stamp(datetime.now(UTC))
        self.manifest.update(status=status, updated_at=stamp, completed_at=stamp,
                             failure_type=type(error).__name__ if error else None,
                             failure_message=scrub(str(error))[:500] if error else None)
        self.write()

    def write(self) -> None:
        from verify.files import write_atomic
        from verify.secrets import mask_data

        write_atomic(self.path / "run_manifest.json", json.dumps(mask_data(self.manifest), indent=2, sort_keys=True) + "\n")


def _stamp(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _identity(model: Any) -> dict[str, Any]:
    name = model.model_name or "unknown"
    return {"interface": model.interface, "model_name": name, "tools": [],
            "config_id": model.id if model.id and model.id != name else None}


# --------------------------------------------------------------------------- --replay


def read_replay(path: Path) -> tuple[dict[str, dict[str, str]], bool]:
    """karenina's replay store as recorded answers ``{model id or "*": {question id: trace}}``, and
    whether a miss is an error (``miss_policy: strict``) rather than answered live."""
    from verify.files import read_json_file

    data = read_json_file(path, "replay store")
    if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("entries"), list):
        raise UserError(f"replay store {path}: not a karenina replay store (version 1 with 'entries')",
                        "build it with karenina's VerificationResultSet.to_replay_store(...).save(path)")
    answers: dict[str, dict[str, str]] = {}
    skipped = 0
    for number, item in enumerate(data["entries"]):
        key = item.get("key") if isinstance(item, dict) else None
        entry = item.get("entry") if isinstance(item, dict) else None
        if not (isinstance(key, dict) and isinstance(entry, dict) and isinstance(key.get("question_id"), str)
                and isinstance(entry.get("raw_trace"), str)):
            raise UserError(f"replay store {path}: entry {number} has no key.question_id or entry.raw_trace",
                            "rebuild the replay store with karenina")
        if key.get("scenario_id") is not None or key.get("replicate") not in (None, 1) or key.get("visit_index") not in (None, 0):
            skipped += 1  # scenario turns and per-replicate traces have no place in recorded answers
            continue
        model = key.get("answering_model_id")
        if model is not None and not isinstance(model, str):
            raise UserError(f"replay store {path}: entry {number}: key.answering_model_id must be text (a model id) "
                            f"or null, not {type(model).__name__}", "rebuild the replay store with karenina")
        answers.setdefault(model or "*", {})[key["question_id"]] = entry["raw_trace"]
    if skipped:
        log.warning("replay store %s: %d entr(ies) for scenarios, later visits or replicates after the first "
                    "were not used (verify replays one answer per question and model)", path, skipped)
    return answers, data.get("miss_policy") == "strict"


# --------------------------------------------------------------------------- inert options


def inert_option_warnings(flags: dict[str, Any]) -> list[str]:
    """One line per karenina option given whose feature verify does not have."""
    lines = []
    for flag, key, default in (("--workspace-output-mode", "workspace_output_mode", None),
                               ("--workspace-output-dir", "workspace_output_dir", None),
                               ("--workspace-output-exclude", "workspace_output_exclude", None)):
        if flags.get(key) not in (default, [], "none"):
            lines.append(f"{flag} has no effect: verify's agents run in no workspace, so there is nothing to capture")
    if flags.get("mode") is not None and not flags.get("interactive"):
        lines.append("--mode has no effect without --interactive")
    return lines


def resolve_resume(flags: dict[str, Any]) -> dict[str, Any] | None:
    """Apply ``--resume PATH`` (and refuse what karenina refuses with ``--run-root``) to ``flags``;
    return the judging config saved with the run when the command line gives no preset."""
    if flags["run_root"] is not None and (flags["resume"] or flags["resume_from"]):
        raise UserError("--run-root cannot be combined with --resume", "resume with --resume RUN_DIR/results.json")
    if flags["run_root"] is not None and flags["output"] is not None:
        raise UserError("--run-root cannot be combined with --output", "the run directory holds results.json")
    if flags["resume_from"] is None:
        return None
    output = resume_target(Path(flags["resume_from"]))
    if flags["output"] is not None and Path(flags["output"]).resolve() != output.resolve():
        raise UserError(f"--resume {flags['resume_from']} continues {output}, but --output says {flags['output']}",
                        "give only --resume PATH, or the same file to both")
    flags["output"], flags["resume"] = output, True
    benchmark, config = saved_run(output)
    if flags["benchmark"] is None:
        if benchmark is None:
            raise UserError(f"--resume {flags['resume_from']}: the run does not say which benchmark it verified",
                            "give the BENCHMARK file too")
        flags["benchmark"] = Path(benchmark)
    if flags["preset"] or config is None:
        return None
    return config
