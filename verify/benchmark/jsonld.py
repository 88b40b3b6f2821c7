"""Benchmarks: questions, answer templates and rubrics, read from and written to karenina checkpoints.

A checkpoint is a JSON-LD schema.org ``DataFeed`` (karenina's ``benchmark.jsonld``).
:func:`load_benchmark` reads one into a :class:`Benchmark`, collecting every problem it finds into
one :class:`~verify.errors.BenchmarkError`; :func:`save_benchmark` writes it back atomically in
karenina's layout. Differences from karenina: ``deep_judgment_*`` trait settings are always kept,
unknown keys and properties are written back instead of dropped, legacy top-level
``global_*_rubric_traits`` lists are migrated into ``rating`` entries, and ``dateModified`` is only
updated when asked.
"""

from __future__ import annotations

import copy
import difflib
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from verify.benchmark.access import KareninaBenchmarkMethods
from verify.benchmark.problems import (
    OPTIONAL_TEXT,
    Problems,
    build_model,
    check_unique_names,
    kind_of,
    trait_where,
    warn_similar_names,
    wrong_type,
)
from verify.benchmark.properties import property_value, read_properties
from verify.benchmark.question import (
    Question,
    decode_question,
    encode_question,
    now_iso,
    question_label,
    read_dates,
)
from verify.benchmark.ratings import decode_legacy, decode_ratings, encode_rubric, rubric_of
from verify.benchmark.traits import Provenance, Rubric, merge_rubrics
from verify.errors import BenchmarkError
from verify.files import JsonProblem, parse_json, read_text, render_path, write_atomic

FORMAT_VERSION = "3.0.0-jsonld"
CONTEXT: dict[str, Any] = {
    "@version": 1.1,
    "@vocab": "https://schema.org/",
    "karenina": "urn:karenina:vocab:",
    "dataFeedElement": {"@id": "dataFeedElement", "@container": "@set"},
    "item": {"@id": "item", "@type": "@id"},
    "acceptedAnswer": {"@id": "acceptedAnswer", "@type": "@id"},
    "rating": {"@id": "contentRating", "@container": "@set"},
    "additionalProperty": {"@id": "additionalProperty", "@container": "@set"},
    "hasPart": {"@id": "hasPart", "@container": "@set"},
    "keywords": {"@id": "keywords", "@container": "@set"},
}
_LEGACY_GLOBAL = (
    "global_regex_rubric_traits", "global_callable_rubric_traits", "global_metric_rubric_traits"
)
_TOP_KEYS = {"@context", "@type", "@id", "name", "description", "version", "creator", "dateCreated",
             "dateModified", "rating", "dataFeedElement", "hasPart", "additionalProperty"}


class Benchmark(KareninaBenchmarkMethods, BaseModel):
    """A benchmark: metadata, a global rubric and the questions."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str | None = None
    version: str | None = None
    creator: str | dict[str, Any] | None = None
    id: str | None = Field(default_factory=lambda: f"urn:uuid:karenina-checkpoint-{time.time()}")
    date_created: str = Field(default_factory=now_iso)
    date_modified: str = Field(default_factory=now_iso)
    global_rubric: Rubric | None = None
    global_dynamic_rubric: Rubric | None = None
    questions: list[Question] = Field(default_factory=list)
    extra_properties: list[dict[str, Any]] = Field(
        default_factory=list, description="Top-level additionalProperty entries (not the format version)."
    )
    scenarios: list[dict[str, Any]] = Field(default_factory=list, description="Top-level hasPart, verbatim.")
    extra_keys: dict[str, Any] = Field(default_factory=dict)
    source: str | None = Field(default=None, exclude=True, description="The file it was read from, for messages.")
    warnings: list[str] = Field(
        default_factory=list, exclude=True,
        description="Located lines about suspicious but valid content found at load (e.g. near-duplicate trait names).",
    )

    def __eq__(self, other: object) -> bool:
        # the file a benchmark was read from is not part of what it is
        if not isinstance(other, Benchmark):
            return NotImplemented
        return self.model_dump() == other.model_dump()

    __hash__ = None  # type: ignore[assignment]

    @field_validator("name")
    @classmethod
    def _name_ok(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("benchmark name is empty")
        return value

    @model_validator(mode="after")
    def _unique_ids(self) -> Benchmark:
        seen: set[str] = set()
        for question in self.questions:
            if question.id in seen:
                raise ValueError(f"question id {question.id!r} appears twice")
            seen.add(question.id)
        return self

    def question(self, question_id: str) -> Question:
        for question in self.questions:
            if question.id == question_id:
                return question
        close = difflib.get_close_matches(question_id, [q.id for q in self.questions], n=3)
        suggestion = f"; did you mean {', '.join(close)}?" if close else ""
        raise KeyError(f"no question {question_id!r}{suggestion}")

    @classmethod
    def load(cls, path: str | Path) -> Benchmark:
        """Read a checkpoint (karenina's ``Benchmark.load``; same as :func:`load_benchmark`)."""
        return load_benchmark(path)

    def save(self, path: str | Path) -> None:
        """Write the checkpoint atomically (karenina's ``Benchmark.save``; see :func:`save_benchmark`)."""
        save_benchmark(self, path)

    def finished_questions(self) -> list[Question]:
        return [q for q in self.questions if q.finished]

    def rubric_for(self, question: Question | str) -> tuple[Rubric, dict[str, Provenance]]:
        """Global traits then the question's own; a name in both raises ValueError (as in karenina)."""
        if isinstance(question, str):
            question = self.question(question)
        return merge_rubrics(self.global_rubric, question.rubric)

    @classmethod
    def from_jsonld(cls, data: Any, source: str = "<checkpoint>") -> Benchmark:
        """Decode a parsed checkpoint; raises one BenchmarkError listing every problem found."""
        problems = Problems()
        benchmark = _decode_document(data, problems)
        if problems or benchmark is None:
            hint = "fix the listed entries in the checkpoint and load it again"
            if problems.dropped:
                hint = f"{problems.dropped} more problem(s) not shown; " + hint
            raise BenchmarkError(source, problems.items or ["checkpoint could not be read"], hint)
        benchmark.source = source
        if problems.warnings:
            benchmark.warnings = [f"{source}: {line}" for line in problems.warnings]
        return benchmark

    def to_jsonld(self) -> dict[str, Any]:
        """The checkpoint as a JSON-ready dict in karenina's layout."""
        doc: dict[str, Any] = {"@context": CONTEXT, "@type": "DataFeed"}
        if self.id is not None:
            doc["@id"] = self.id
        doc["name"] = self.name
        optional = {"description": self.description, "version": self.version, "creator": self.creator}
        doc.update({key: value for key, value in optional.items() if value is not None})
        doc.update(dateCreated=self.date_created, dateModified=self.date_modified)
        ratings = encode_rubric(self.global_rubric, "global") + encode_rubric(
            self.global_dynamic_rubric, "global", dynamic=True
        )
        if ratings:
            doc["rating"] = ratings
        doc["dataFeedElement"] = [encode_question(q) for q in self.questions]
        if self.scenarios:
            doc["hasPart"] = self.scenarios
        version = property_value("benchmark_format_version", FORMAT_VERSION)
        doc["additionalProperty"] = [version, *self.extra_properties]
        for key, value in self.extra_keys.items():
            doc.setdefault(key, value)
        return copy.deepcopy(doc)  # callers may edit the dict without touching the model


def load_benchmark(path: str | Path) -> Benchmark:
    """Read a karenina checkpoint (UTF-8, BOM or not; no NaN/Infinity); all problems in one BenchmarkError."""
    source = str(path)
    try:  # the decoder bounds the depth of what it keeps verbatim (cheaper than walking everything)
        data = parse_json(read_text(Path(path)), max_depth=None)
    except JsonProblem as exc:
        problem = exc.problem
        if exc.path is not None:
            where, field = _locate(exc.document, exc.path)
            problem = f"{where}: {field} {exc.detail}"
        raise BenchmarkError(source, [problem], exc.hint) from None
    return Benchmark.from_jsonld(data, source)


def save_benchmark(benchmark: Benchmark, path: str | Path, *, update_modified: bool = False) -> Path:
    """Write the checkpoint atomically (temp file in the same folder, then ``os.replace``).

    ``update_modified=True`` first sets ``benchmark.date_modified`` to now, as karenina's save does.
    """
    path = Path(path)
    if update_modified:
        benchmark.date_modified = now_iso()
    text = json.dumps(benchmark.to_jsonld(), indent=2, ensure_ascii=False) + "\n"
    try:
        write_atomic(path, text)
    except OSError as exc:
        hint = "check that the folder exists and is writable"
        raise BenchmarkError(str(path), [f"cannot write file: {exc}"], hint) from None
    return path


# ---------------------------------------------------------------------------------------- decoding


def _decode_document(data: Any, problems: Problems) -> Benchmark | None:
    top = "top level"
    if not isinstance(data, dict):
        problems.add(top, f"must be a JSON object (a schema.org DataFeed), got {kind_of(data)}")
        return None
    if not isinstance(data.get("@context"), dict):
        got = "it is missing" if "@context" not in data else f"got {type(data['@context']).__name__}"
        problems.add(top, f"'@context' must be a JSON object ({got}); use karenina's JSON-LD context object")
    if data.get("@type", "DataFeed") != "DataFeed":
        problems.add(top, f"'@type' is {data['@type']!r}; a checkpoint is a 'DataFeed'")
    name = data.get("name")
    if "name" in data and not isinstance(name, str):
        problems.add(top, wrong_type("name", name, "text (the benchmark's name)"))
    elif not isinstance(name, str) or not name.strip():
        problems.add(top, "'name' is missing or empty; give the benchmark a name")
    description, version, node_id = data.get("description"), data.get("version"), data.get("@id")
    if not (isinstance(description, OPTIONAL_TEXT) and isinstance(version, OPTIONAL_TEXT)
            and isinstance(node_id, OPTIONAL_TEXT)):
        problems.optional_text(top, {"description": description, "version": version, "@id": node_id})
    dates = read_dates(data, top, problems)
    ratings = decode_ratings(data.get("rating"), None, problems)
    known = frozenset({"benchmark_format_version", *_LEGACY_GLOBAL})
    values, extras = read_properties(data.get("additionalProperty"), known, top, problems)
    traits = list(ratings.traits)
    for key in _LEGACY_GLOBAL:
        traits += decode_legacy(key, values[key], problems) if key in values else []
    check_unique_names(traits, lambda n: f"global trait {n!r}", problems)
    check_unique_names(ratings.dynamic, lambda n: f"global trait {n!r}", problems)
    folded = warn_similar_names(traits, "global rubric", problems)
    warn_similar_names(ratings.dynamic, "global rubric", problems)
    scenarios = data.get("hasPart") or []
    if not isinstance(scenarios, list) or not all(isinstance(s, dict) for s in scenarios):
        problems.add(top, f"'hasPart' must be a list of Scenario objects (it is {kind_of(scenarios)})")
    problems.check_depth(top, "hasPart", scenarios)
    problems.check_depth(top, "creator", data.get("creator"))
    extra_keys = {k: v for k, v in data.items() if k not in _TOP_KEYS}
    problems.check_keys(top, extra_keys)
    elements = data.get("dataFeedElement")
    if not isinstance(elements, list):
        problems.wrong(top, data, "dataFeedElement", "a list of DataFeedItem objects (use [] for none)",
                       "missing 'dataFeedElement' (the list of questions; use [] for none)")
        elements = []
    seen: dict[str, int] = {}
    names = {t.name for t in traits}
    questions = [decode_question(i, entry, names, folded, seen, problems) for i, entry in enumerate(elements)]
    if problems or dates is None:
        return None
    benchmark: Benchmark | None = build_model(Benchmark, {
        "name": name, "description": data.get("description"), "version": data.get("version"),
        "creator": data.get("creator"), "id": data.get("@id"), "date_created": dates[0],
        "date_modified": dates[1], "global_rubric": rubric_of(traits),
        "global_dynamic_rubric": rubric_of(ratings.dynamic),
        "questions": questions, "extra_properties": extras, "scenarios": scenarios, "extra_keys": extra_keys,
    }, top, problems)
    return benchmark


# ---------------------------------------------------------------------------------------- locating


def _locate(data: Any, path: Sequence[str | int]) -> tuple[str, str]:
    """``(where, field)`` of the value at ``path`` in a raw checkpoint, labelled as the decoder labels it."""
    where, rest, node = "top level", list(path), data
    if rest[:1] == ["dataFeedElement"] and len(rest) > 1 and isinstance(rest[1], int):
        node = data["dataFeedElement"][rest[1]]
        where, rest = question_label(node, rest[1]), rest[2:]
        if rest[:1] == ["item"]:
            node, rest, where = node["item"], rest[1:], f"{where}.item"
            container = where.removesuffix(".item")
            if rest[:1] == ["rating"] and len(rest) > 1 and isinstance(rest[1], int):
                node = node["rating"][rest[1]]
                where, rest = trait_where(container, rest[1], node.get("name")), rest[2:]
    elif rest[:1] == ["rating"] and len(rest) > 1 and isinstance(rest[1], int):
        node = data["rating"][rest[1]]
        where, rest = trait_where(None, rest[1], node.get("name")), rest[2:]
    if rest[:1] == ["additionalProperty"] and len(rest) > 1 and isinstance(rest[1], int):
        entry = node["additionalProperty"][rest[1]]
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and rest[2:3] == ["value"]:
            tail = render_path(rest[3:])
            return where, f"property {entry['name']!r}" + (f" at {tail}" if tail else "")
    return where, render_path(rest) or "the document"
