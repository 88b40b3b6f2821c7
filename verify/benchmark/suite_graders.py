"""A suite's letta graders and Docent-style judges as suite-wide rubric traits.

A letta grader (``kind: rubric`` with ``prompt`` or ``prompt_path``, ``model``, ``temperature``, and for a
judge that uses tools ``tools`` and ``tool_rounds``) is an
:class:`LLMTrait` with its own prompt, scored 0.0-1.0; its placeholders are checked when the trait is
built (:mod:`verify.benchmark.grader_prompt`). A judge (``rubric_text``, ``prompt_templates``,
``output_schema``, ...) is a :class:`SchemaJudgeTrait` whose spec is checked against Docent's
metaschema. Both apply to every test, so they go into the global rubric.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from verify.benchmark.suite_fields import GRADER_KEYS, JUDGE_KEYS, SuiteProblems, build_trait, weighting_entry
from verify.benchmark.traits import LLMTrait, SchemaJudgeTrait
from verify.files import JsonProblem, read_text

__all__ = ["MAX_PROMPT_BYTES", "Graders", "grader_entry", "grader_traits", "judge_entry", "judge_traits"]

#: A grader's prompt file is read whole and sent with every judge call.
MAX_PROMPT_BYTES = 1024 * 1024


@dataclass
class Graders:
    traits: list[LLMTrait] = field(default_factory=list)
    model: str | None = None  # the first grader's model: the run's judge when no preset names one
    temperature: float | None = None


def _named(where: str, value: Any, problems: SuiteProblems) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        problems.add(where, f"{where}: must map names to settings, e.g. {where}: {{quality: {{...}}}}")
        return {}
    return {str(k): v for k, v in value.items()}


def grader_traits(value: Any, folder: Path, problems: SuiteProblems, *, outside_ok: bool = False) -> Graders:
    found = Graders()
    for name, spec in _named("graders", value, problems).items():
        where = f"grader {name!r}"
        problems.keys(where, spec, GRADER_KEYS)
        if spec.get("kind", "rubric") != "rubric":
            problems.add(where, f"kind {spec.get('kind')!r} is not supported; verify reads kind: rubric graders")
            continue
        prompt = _prompt(where, spec, folder, problems, outside_ok)
        if prompt is None:
            continue
        fields: dict[str, Any] = {"name": name, "kind": "score", "prompt": prompt, "description": f"letta grader {name}"}
        own = ("model", "temperature", "weight", "required", "tools", "tool_rounds")  # tools: a tool judge
        fields.update({k: spec[k] for k in own if spec.get(k) is not None})
        if spec.get("min_score") is not None:
            fields["pass_threshold"] = spec["min_score"]
        trait = build_trait(where, fields, problems)
        if trait is not None:
            found.traits.append(trait)
            found.model = found.model or trait.model
            found.temperature = found.temperature if found.temperature is not None else trait.temperature
    return found


def _prompt(where: str, spec: dict[str, Any], folder: Path, problems: SuiteProblems, outside_ok: bool) -> str | None:
    """``prompt`` inline, or ``prompt_path`` relative to the suite file (letta's rule), inside the suite's
    folder: a prompt's text goes to the judge, so a suite from elsewhere must not send it any file it names."""
    if ("prompt" in spec) == ("prompt_path" in spec):
        problems.add(where, "give exactly one of prompt (inline text) and prompt_path (a file next to the suite)")
        return None
    if "prompt" in spec:
        if not isinstance(spec["prompt"], str) or not spec["prompt"].strip():
            problems.add(where, "prompt: must be the grader's prompt text")
            return None
        return spec["prompt"]
    path = folder / str(spec["prompt_path"])
    if not outside_ok and not path.resolve().is_relative_to(folder.resolve()):
        problems.add(where, f"prompt_path: {spec['prompt_path']} is outside the suite's folder {folder}; move the "
                     "prompt file next to the suite, or pass --allow-outside-paths if you trust this suite")
        return None
    try:
        return read_text(path, limit=MAX_PROMPT_BYTES, limit_hint="a grader's prompt is at most 1 MB; shorten it")
    except JsonProblem as exc:
        problems.add(where, f"prompt_path: {path} {exc.problem}; the path is relative to the suite file")
        return None


def judge_traits(value: Any, problems: SuiteProblems) -> list[SchemaJudgeTrait]:
    traits: list[SchemaJudgeTrait] = []
    for name, spec in _named("judges", value, problems).items():
        where = f"judge {name!r}"
        problems.keys(where, spec, JUDGE_KEYS)
        judge = {k: spec[k] for k in JUDGE_KEYS if k in spec and k not in ("model", "weight", "required")}
        if isinstance(judge.get("prompt_templates"), list):  # plain strings are user messages
            judge["prompt_templates"] = [{"content": t} if isinstance(t, str) else t for t in judge["prompt_templates"]]
        if spec.get("model") is not None:
            judge["judge_model"] = {"model_name": spec["model"]}
        fields = {"name": name, "judge": judge, **{k: spec[k] for k in ("weight", "required") if k in spec}}
        try:
            traits.append(SchemaJudgeTrait(**fields))
        except ValidationError as exc:
            for error in exc.errors():
                loc = ".".join(str(p) for p in error["loc"] if p != "judge")
                message = error["msg"].removeprefix("Value error, ")
                for part in message.split("; ") if not loc else [message]:  # the spec lists its problems joined
                    problems.add(where, f"{loc}: {part}" if loc else part)
    return traits


def grader_entry(trait: LLMTrait) -> dict[str, Any]:
    """A prompt-grader trait as a letta grader (what differs from the defaults)."""
    entry: dict[str, Any] = {"kind": "rubric", "prompt": trait.prompt}
    entry.update({k: getattr(trait, k) for k in ("model", "temperature") if getattr(trait, k) is not None})
    if trait.tools is not None:
        entry.update(tools=trait.tools, tool_rounds=trait.tool_rounds)
    return {**entry, **weighting_entry(trait)}


def judge_entry(trait: SchemaJudgeTrait) -> dict[str, Any]:
    """A schema-judge trait as a suite judge (the spec's fields that differ from the defaults)."""
    entry = trait.judge.model_dump(exclude_defaults=True, exclude={"judge_model"})
    if trait.judge.judge_model and trait.judge.judge_model.get("model_name"):
        entry["model"] = trait.judge.judge_model["model_name"]
    if "prompt_templates" in trait.judge.model_fields_set:
        entry["prompt_templates"] = [t.model_dump() for t in trait.judge.prompt_templates]
    return {**entry, **{k: v for k, v in weighting_entry(trait).items() if k != "min_score"}}
