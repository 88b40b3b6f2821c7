"""letta-style prompt graders: an LLM trait with its own prompt, scored 0.0-1.0 with a rationale.

The prompt is a template with ``{input}`` (the question), ``{submission}`` (the answer),
``{ground_truth}`` (the question's reference answer) and ``{rubric}`` (the trait's description);
``{{`` and ``}}`` are literal braces. It is checked when the trait is built: a placeholder we do not
fill, or a prompt without ``{submission}`` (the judge would grade nothing), is an error naming the
trait, so a bad suite fails at load rather than at the first call.

letta's temperature rule lives here too: reasoning models (o1, o3, o4, gpt-5 families) only accept
temperature 1.0, so a grader's temperature is forced to 1.0 for them whatever the suite says.
"""

from __future__ import annotations

import re
import string

__all__ = ["GRADER_PLACEHOLDERS", "grader_temperature", "is_reasoning_model", "prompt_problems", "render"]

GRADER_PLACEHOLDERS = ("input", "submission", "ground_truth", "rubric")
_REASONING = re.compile(r"^(?:[\w.-]+/)?(?:o1|o3|o4|gpt-5)(?:$|[-._:])", re.I)


def prompt_problems(name: str, text: str) -> list[str]:
    """What is wrong with trait ``name``'s grader prompt, each naming the trait."""
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
    except ValueError as exc:
        return [f"trait {name!r}: prompt: {exc} (write a literal brace as {{{{ or }}}})"]
    allowed = ", ".join("{" + p + "}" for p in GRADER_PLACEHOLDERS)
    problems = [f"trait {name!r}: prompt: unknown placeholder {{{f}}} (use {allowed}; a literal brace is {{{{)"
                for f in dict.fromkeys(fields) if f not in GRADER_PLACEHOLDERS]
    if "submission" not in fields:
        problems.append(f"trait {name!r}: prompt has no {{submission}} placeholder, so the judge would not see "
                        "the answer; add {submission} where the answer goes")
    return problems


def render(text: str, question: str, answer: str, reference: str | None, description: str | None) -> str:
    """The grader prompt with its placeholders filled (an absent reference or description is empty)."""
    return text.format(input=question, submission=answer, ground_truth=reference or "", rubric=description or "")


def is_reasoning_model(model: str | None) -> bool:
    """o1*, o3*, o4*, gpt-5* (with or without a provider prefix such as ``openai/``)."""
    return bool(model and _REASONING.match(model.strip()))


def grader_temperature(model: str | None, temperature: float | None) -> float | None:
    """The temperature a grader runs at: its own (None: the judge's), but 1.0 for reasoning models."""
    return 1.0 if is_reasoning_model(model) else temperature
