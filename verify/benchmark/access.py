"""karenina's ``Benchmark`` read methods (``get_question``, ``get_all_questions``, ``get_global_rubric``, ...).

Thin and documented, so a karenina script that reads a benchmark runs after changing its imports.
Questions come back as karenina's question dicts (``id``, ``question``, ``raw_answer``,
``answer_template``, ``finished``, ...); rubrics as verify's :class:`~verify.benchmark.traits.Rubric`
(one ordered ``traits`` list, with ``llm_traits`` and :meth:`~verify.benchmark.traits.Rubric.of_type`),
not karenina's per-kind lists. Writing stays verify's: edit the models, then ``save``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from verify.benchmark.question import Question
    from verify.benchmark.traits import Rubric

__all__ = ["KareninaBenchmarkMethods", "question_dict"]


def question_dict(question: Question) -> dict[str, Any]:
    """A question in karenina's dict shape."""
    return {
        "id": question.id, "question": question.text, "raw_answer": question.raw_answer,
        "answer_template": question.template_code or None, "finished": question.finished,
        "date_created": question.date_created, "date_modified": question.date_modified,
        "author": question.author, "sources": question.sources,
        "custom_metadata": question.custom_metadata or None, "question_rubric": question.rubric,
        "keywords": list(question.keywords), "few_shot_examples": question.few_shot_examples,
        "answer_notes": question.answer_notes, "workspace_path": question.workspace_path,
    }


class KareninaBenchmarkMethods:
    """Mixed into :class:`~verify.benchmark.jsonld.Benchmark`."""

    questions: list[Question]
    global_rubric: Rubric | None

    def _get(self, question_id: str) -> Question:
        for question in self.questions:
            if question.id == question_id:
                return question
        raise ValueError(f"Question not found: {question_id}")

    def get_question_ids(self) -> list[str]:
        return [q.id for q in self.questions]

    def get_question(self, question_id: str) -> dict[str, Any]:
        """The question as karenina's dict; ValueError when there is none with that id."""
        return question_dict(self._get(question_id))

    def get_question_as_object(self, question_id: str) -> Question:
        return self._get(question_id)

    def get_all_questions(self, ids_only: bool = False) -> list[str] | list[dict[str, Any]]:
        return self.get_question_ids() if ids_only else [question_dict(q) for q in self.questions]

    def get_all_questions_as_objects(self) -> list[Question]:
        return list(self.questions)

    def get_finished_questions(self, ids_only: bool = False) -> list[str] | list[dict[str, Any]]:
        chosen = [q for q in self.questions if q.finished]
        return [q.id for q in chosen] if ids_only else [question_dict(q) for q in chosen]

    def get_unfinished_questions(self, ids_only: bool = False) -> list[str] | list[dict[str, Any]]:
        chosen = [q for q in self.questions if not q.finished]
        return [q.id for q in chosen] if ids_only else [question_dict(q) for q in chosen]

    def has_template(self, question_id: str) -> bool:
        return bool(self._get(question_id).template_code.strip())

    def get_template(self, question_id: str) -> str:
        """The question's answer-template source; ValueError when it has none."""
        code = self._get(question_id).template_code
        if not code.strip():
            raise ValueError(f"Question {question_id} has no template")
        return code

    def get_missing_templates(self, ids_only: bool = False) -> list[str] | list[dict[str, Any]]:
        chosen = [q for q in self.questions if not q.template_code.strip()]
        return [q.id for q in chosen] if ids_only else [question_dict(q) for q in chosen]

    def get_global_rubric(self) -> Rubric | None:
        return self.global_rubric

    def get_question_rubric(self, question_id: str) -> Rubric | None:
        return self._get(question_id).rubric

    @property
    def question_count(self) -> int:
        return len(self.questions)

    @property
    def finished_count(self) -> int:
        return sum(q.finished for q in self.questions)

    @property
    def is_empty(self) -> bool:
        return not self.questions

    @property
    def is_complete(self) -> bool:
        """Every question finished and with a template (karenina's readiness test)."""
        return bool(self.questions) and all(q.finished and q.template_code.strip() for q in self.questions)

    def __len__(self) -> int:
        return len(self.questions)

    def __contains__(self, question_id: object) -> bool:
        return any(q.id == question_id for q in self.questions)
