"""``verify BENCHMARK --interactive [--mode basic|advanced]``: build the config by answering questions.

As karenina's interactive mode: pick questions, replicates, evaluation mode, the checks, deep
judgment, the answering and judge models, then optionally save the result as a preset. ``basic``
asks the essentials; ``advanced`` adds temperatures, system prompts, the rubric deep-judgment
settings and concurrency. An answer the config does not accept is asked again, with the reason.
Every answer has a default, so pressing Enter throughout gives a working config. API keys are
never asked for: they come from the environment, as in a normal run.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from verify.errors import UserError

__all__ = ["build_config_interactively"]

T = TypeVar("T")
INTERFACES = ("langchain", "openrouter", "openai_endpoint", "manual", "simulated")


def _ask(text: str, default: str, parse: Callable[[str], T] = str) -> T:  # type: ignore[assignment]
    while True:
        raw = typer.prompt(text, default=default, show_default=True)
        try:
            return parse(str(raw).strip())
        except (ValueError, UserError) as exc:
            typer.secho(f"  not accepted: {getattr(exc, 'message', exc)}", fg="yellow")


def _choice(text: str, choices: tuple[str, ...], default: str) -> str:
    def parse(raw: str) -> str:
        if raw not in choices:
            raise ValueError(f"choose one of {', '.join(choices)}")
        return raw

    return _ask(f"{text} ({'/'.join(choices)})", default, parse)


def _number(low: float, high: float | None, kind: Callable[[str], T]) -> Callable[[str], T]:
    def parse(raw: str) -> T:
        value = kind(raw)
        if float(value) < low or (high is not None and float(value) > high):  # type: ignore[arg-type]
            raise ValueError(f"give a number from {low}" + (f" to {high}" if high is not None else " up"))
        return value

    return parse


def _workers(raw: str) -> int | None:
    return None if raw.lower() == "auto" else _number(1, None, int)(raw)


def _model(role: str, number: int, advanced: bool) -> dict[str, Any]:
    typer.secho(f"\n{role} model {number}", bold=True)
    interface = _choice("Interface", INTERFACES if role == "Answering" else INTERFACES[:3] + INTERFACES[4:], "langchain")
    model: dict[str, Any] = {
        "id": _ask("Model ID", f"{role.lower()}-{number}"),
        "model_name": _ask("Model name", "gpt-4.1-mini" if interface != "simulated" else f"simulated-{role.lower()}"),
        "interface": interface,
    }
    if interface in ("langchain", "simulated"):
        model["model_provider"] = _ask("Model provider", "openai" if interface == "langchain" else "simulated")
    if interface == "openai_endpoint":
        model["endpoint_base_url"] = _ask("Endpoint base URL (the API key comes from the environment)", "")
    if advanced:
        model["temperature"] = _ask("Temperature (0.0-2.0)", "0.1", _number(0.0, 2.0, float))
        prompt: str = _ask("System prompt (empty: verify's default)", "")
        if prompt:
            model["system_prompt"] = prompt
    return model


def _models(role: str, advanced: bool) -> list[dict[str, Any]]:
    models = [_model(role, 1, advanced)]
    while typer.confirm(f"Add another {role.lower()} model?", default=False):
        models.append(_model(role, len(models) + 1, advanced))
    return models


def build_config_interactively(benchmark: Any, mode: str, manual_traces: Any = None) -> tuple[Any, list[str]]:
    """Ask for the config; return it with the ids of the questions chosen (finished ones).

    Answers come from stdin; when it ends before the last question (no terminal: a pipe, a
    scheduler, ``< /dev/null``) that is one :class:`UserError`, not a bare ``Abort``.
    """
    try:
        return _build(benchmark, mode, manual_traces)
    except typer.Abort as exc:
        if isinstance(exc.__context__, KeyboardInterrupt):  # Ctrl-C or SIGTERM at a prompt: a stop, not a missing answer
            raise exc.__context__ from None
        where = "stdin is not a terminal" if not sys.stdin.isatty() else "the input ended"
        raise UserError(f"--interactive asks questions, but {where}, so no answer could be read",
                        "run it in a terminal, or give the settings with --preset PRESET and flags instead") from None


def _build(benchmark: Any, mode: str, manual_traces: Any) -> tuple[Any, list[str]]:
    from verify.cli.inputs import parse_indices
    from verify.config.verification import VerificationConfig

    if mode not in ("basic", "advanced"):
        raise UserError(f"--mode {mode!r} is not a mode", "use --mode basic or --mode advanced")
    advanced = mode == "advanced"
    finished = benchmark.finished_questions()
    if not finished:
        raise UserError(f"{benchmark.source or 'the benchmark'} has no finished questions to verify",
                        "mark questions finished in the checkpoint")
    typer.secho(f"Interactive configuration ({mode}): {len(finished)} finished question(s)", bold=True)
    for index, question in enumerate(finished):
        typer.echo(f"  {index:>3}  {question.id}  {question.text[:70]}")
    picked = _ask("Questions ('all', or e.g. 0,2,5-9)", "all",
                  lambda raw: list(range(len(finished))) if raw == "all" else parse_indices(raw, len(finished)))
    data: dict[str, Any] = {
        "replicate_count": _ask("Replicates per question and model", "1", _number(1, None, int)),
        "evaluation_mode": _choice("Evaluation mode", ("template_only", "template_and_rubric", "rubric_only"), "template_only"),
        "abstention_enabled": typer.confirm("Detect abstentions?", default=False),
        "sufficiency_enabled": typer.confirm("Detect insufficient responses?", default=False),
        "embedding_check_enabled": typer.confirm("Embedding check (second chance for failed templates)?", default=False),
        "deep_judgment_mode": _choice("Template deep judgment", ("disabled", "reasoning_only", "full"), "disabled"),
    }
    if data["evaluation_mode"] != "template_only":
        data["deep_judgment_rubric_mode"] = _choice(
            "Rubric deep judgment", ("disabled", "enable_all", "use_checkpoint"), "disabled")
        if advanced and data["deep_judgment_rubric_mode"] != "disabled":
            data["deep_judgment_rubric_max_excerpts_default"] = _ask("Excerpts per trait", "7", _number(1, None, int))
            data["deep_judgment_rubric_fuzzy_match_threshold_default"] = _ask(
                "Fuzzy match threshold (0-1)", "0.8", _number(0.0, 1.0, float))
            data["deep_judgment_rubric_search_enabled"] = typer.confirm("Check excerpts with web search?", default=False)
    data["answering_models"] = _models("Answering", advanced)
    data["parsing_models"] = _models("Judge", advanced)
    if advanced:
        data["async_enabled"] = typer.confirm("Run tasks concurrently?", default=True)
        if data["async_enabled"]:
            workers = _ask("Questions in parallel (auto: verify adapts to each server)", "auto", _workers)
            if workers is not None:
                data["async_max_workers"] = workers
    if manual_traces is not None:
        data["manual_traces"] = manual_traces
    try:
        config = VerificationConfig.model_validate(data)
    except ValueError as exc:
        raise UserError(f"the answers do not make a valid config: {exc}".splitlines()[0],
                        "run --interactive again, or write a preset file") from None
    if typer.confirm("Save this configuration as a preset?", default=False):
        name: str = _ask("Preset name", "interactive")
        saved = config.save_preset(name, _ask("Description (optional)", "") or None)
        typer.secho(f"saved preset {saved['filepath']}", fg="green")
    return config, [finished[i].id for i in picked]
