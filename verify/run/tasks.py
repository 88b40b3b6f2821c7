"""Task expansion: which questions run, and every question x answering model x judge x replicate."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from verify.benchmark.traits import Provenance, Rubric
from verify.config.deep_judgment import resolve_trait
from verify.errors import ConfigError
from verify.run.state import Task
from verify.stages.rubric import evaluates

if TYPE_CHECKING:
    from verify.benchmark.jsonld import Benchmark
    from verify.benchmark.question import Question
    from verify.config.models import ModelConfig
    from verify.config.verification import VerificationConfig

__all__ = ["build_tasks", "canonical", "check_something_to_evaluate", "needs_search", "select_questions", "task_rubric"]


def canonical(model: ModelConfig) -> str:
    """The identity of a model inside a task key."""
    return f"{model.interface}:{model.model_name}:{model.id}"


def select_questions(
    benchmark: Benchmark, question_ids: Sequence[str] | None = None, include_unfinished: bool = False
) -> list[Question]:
    """The questions a run covers: the named ones, else the finished ones (or all)."""
    questions = list(benchmark.questions)
    if question_ids:
        wanted = list(question_ids)
        known = {q.id for q in questions}
        missing = [q for q in wanted if q not in known]
        if missing:
            raise ConfigError(f"unknown question id(s): {', '.join(missing)}", "list ids with --show-plan")
        questions = [q for q in questions if q.id in set(wanted)]
    elif not include_unfinished:
        questions = [q for q in questions if q.finished]
    return questions


def task_rubric(benchmark: Benchmark, config: VerificationConfig, question: Question) -> tuple[Rubric, dict[str, Provenance]]:
    """The question's merged rubric, narrowed to ``rubric_trait_names`` when set."""
    try:
        rubric, provenance = benchmark.rubric_for(question)
    except ValueError as exc:
        raise ConfigError(f"question {question.id!r}: {exc}") from None
    if config.rubric_trait_names is not None:  # honoured (inert in karenina's batch path)
        wanted = set(config.rubric_trait_names)
        rubric = Rubric(traits=[t for t in rubric.traits if t.name in wanted])
        provenance = {k: v for k, v in provenance.items() if k in wanted}
    return rubric, provenance


def check_something_to_evaluate(benchmark: Benchmark, config: VerificationConfig, questions: Sequence[Question]) -> None:
    """Fail before any call when a question would be judged on nothing (its result could only be empty).

    Without the template stages, a question needs a rubric trait the rubric stage evaluates.
    """
    if config.template_enabled:
        return
    empty = [q.id for q in questions if not any(evaluates(t) for t in task_rubric(benchmark, config, q)[0].traits)]
    if not empty:
        return
    where = benchmark.source or "the benchmark"
    more = f" and {len(empty) - 1} more" if len(empty) > 1 else ""
    raise ConfigError(
        f"{where}: nothing to evaluate for question {empty[0]!r}{more}: evaluation_mode "
        f"{config.evaluation_mode} judges rubric traits only, and it has none that can be evaluated",
        "add rubric traits, leave these questions out with --question-ids, or use evaluation_mode template_and_rubric",
    )


def build_tasks(benchmark: Benchmark, config: VerificationConfig, questions: Sequence[Question]) -> Iterator[Task]:
    """Every question x answering model x parsing model x replicate, lazily."""
    replicates: list[int | None] = (
        [None] if config.replicate_count == 1 else list(range(1, config.replicate_count + 1))
    )
    for question in questions:
        rubric, provenance = task_rubric(benchmark, config, question)
        for answering in config.answering_models:
            for parsing in config.parsing_models:
                for rep in replicates:
                    parts = [question.id, canonical(answering), canonical(parsing)] + ([f"rep{rep}"] if rep else [])
                    yield Task(question, rubric, dict(provenance), answering, parsing, rep, "\t".join(parts))


def needs_search(benchmark: Benchmark, config: VerificationConfig, questions: Sequence[Question]) -> bool:
    """Whether some trait of these questions may check its excerpts with rubric search."""
    if not config.rubric_enabled or config.deep_judgment_rubric_mode == "disabled":
        return False
    for question in questions:
        rubric, _ = benchmark.rubric_for(question)
        settings = (resolve_trait(config, question.id, t) for t in rubric.llm_traits)
        # search only checks validated excerpts, so a trait without excerpts never searches
        if any(s.enabled and s.excerpt_enabled and s.search_enabled for s in settings):
            return True
    return False
