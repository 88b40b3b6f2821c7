"""Located problems found while reading a checkpoint, collected so one error lists them all."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from verify.errors import validation_lines

__all__ = ["MAX_PROBLEMS", "Problems", "build_model"]

MAX_PROBLEMS = 10


class Problems:
    """Collects located one-line problems; keeps the first :data:`MAX_PROBLEMS` and counts the rest."""

    def __init__(self, limit: int = MAX_PROBLEMS) -> None:
        self.items: list[str] = []
        self.dropped = 0
        self._limit = limit

    @property
    def count(self) -> int:
        return len(self.items) + self.dropped

    def add(self, where: str, message: str) -> None:
        if len(self.items) < self._limit:
            self.items.append(f"{where}: {message}")
        else:
            self.dropped += 1

    def __bool__(self) -> bool:
        return bool(self.items)


def build_model(cls: type[BaseModel], data: dict[str, Any], where: str, problems: Problems) -> Any:
    """``cls.model_validate(data)``; a ValidationError becomes located problems and None."""
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        for line in validation_lines(exc, root=cls):
            problems.add(where, line)
        return None
