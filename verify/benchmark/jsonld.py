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
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from verify.benchmark.problems import Problems, build_model
from verify.benchmark.question import Question, generate_question_id, now_iso
from verify.benchmark.ratings import (
    AnyTrait,
    Scope,
    check_unique_names,
    decode_legacy,
    decode_ratings,
    encode_trait,
    json_value,
    property_value,
    read_properties,
)
from verify.benchmark.traits import Provenance, Rubric, merge_rubrics
from verify.errors import BenchmarkError
from verify.files import write_atomic

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
_QUESTION_PROPS = frozenset(
    {"finished", "author", "sources", "few_shot_examples", "answer_notes", "workspace_path"}
)
_TOP_KEYS = {"@context", "@type", "@id", "name", "description", "version", "creator", "dateCreated",
             "dateModified", "rating", "dataFeedElement", "hasPart", "additionalProperty"}
_FEED_KEYS = {"@type", "@id", "dateCreated", "dateModified", "item", "keywords"}
_ITEM_KEYS = {"@type", "@id", "text", "acceptedAnswer", "hasPart", "rating", "additionalProperty", "keywords"}


class Benchmark(BaseModel):
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
        ratings = _encode_rubric(self.global_rubric, "global") + _encode_rubric(
            self.global_dynamic_rubric, "global", dynamic=True
        )
        if ratings:
            doc["rating"] = ratings
        doc["dataFeedElement"] = [_encode_question(q) for q in self.questions]
        if self.scenarios:
            doc["hasPart"] = self.scenarios
        version = property_value("benchmark_format_version", FORMAT_VERSION)
        doc["additionalProperty"] = [version, *self.extra_properties]
        for key, value in self.extra_keys.items():
            doc.setdefault(key, value)
        return copy.deepcopy(doc)  # callers may edit the dict without touching the model


def load_benchmark(path: str | Path) -> Benchmark:
    """Read a karenina checkpoint; every problem is reported in one BenchmarkError."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BenchmarkError(source, ["file not found"], "check the path (a *.jsonld checkpoint)") from None
    except IsADirectoryError:
        raise BenchmarkError(source, ["is a directory"], "pass the checkpoint file, not its folder") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BenchmarkError(source, [f"cannot read file: {exc}"], "check permissions/encoding") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        problem = f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        raise BenchmarkError(source, [problem], "fix the JSON syntax (one JSON object)") from None
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
        problems.add(top, f"must be a JSON object (a schema.org DataFeed), got {type(data).__name__}")
        return None
    if not isinstance(data.get("@context"), dict):
        got = "it is missing" if "@context" not in data else f"got {type(data['@context']).__name__}"
        problems.add(top, f"'@context' must be a JSON object ({got}); use karenina's JSON-LD context object")
    if data.get("@type", "DataFeed") != "DataFeed":
        problems.add(top, f"'@type' is {data['@type']!r}; a checkpoint is a 'DataFeed'")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        problems.add(top, "'name' is missing or empty; give the benchmark a name")
    dates = _dates(data, top, problems)
    ratings = decode_ratings(data.get("rating"), None, problems)
    known = frozenset({"benchmark_format_version", *_LEGACY_GLOBAL})
    values, extras = read_properties(data.get("additionalProperty"), known, top, problems)
    traits = list(ratings.traits)
    for key in _LEGACY_GLOBAL:
        traits += decode_legacy(key, values[key], problems) if key in values else []
    for group in (traits, ratings.dynamic):
        check_unique_names(group, lambda n: f"global trait {n!r}", problems)
    scenarios = data.get("hasPart") or []
    if not isinstance(scenarios, list) or not all(isinstance(s, dict) for s in scenarios):
        problems.add(top, "'hasPart' must be a list of Scenario objects")
    elements = data.get("dataFeedElement")
    if not isinstance(elements, list):
        problems.add(top, "missing 'dataFeedElement' (the list of questions; use [] for none)")
        elements = []
    seen: dict[str, int] = {}
    names = {t.name for t in traits}
    questions = [_decode_question(i, entry, names, seen, problems) for i, entry in enumerate(elements)]
    if problems or dates is None:
        return None
    benchmark: Benchmark | None = build_model(Benchmark, {
        "name": name, "description": data.get("description"), "version": data.get("version"),
        "creator": data.get("creator"), "id": data.get("@id"), "date_created": dates[0],
        "date_modified": dates[1], "global_rubric": _rubric(traits),
        "global_dynamic_rubric": _rubric(ratings.dynamic),
        "questions": questions, "extra_properties": extras, "scenarios": scenarios,
        "extra_keys": {k: v for k, v in data.items() if k not in _TOP_KEYS},
    }, top, problems)
    return benchmark


def _dates(obj: dict[str, Any], where: str, problems: Problems) -> tuple[str, str] | None:
    created, modified = obj.get("dateCreated"), obj.get("dateModified")
    for key, value in (("dateCreated", created), ("dateModified", modified)):
        if not isinstance(value, str):
            problems.add(where, f"missing '{key}' (an ISO timestamp such as \"2025-01-11T00:00:00\")")
    return (created, modified) if isinstance(created, str) and isinstance(modified, str) else None


def _rubric(traits: list[AnyTrait]) -> Rubric | None:
    return Rubric(traits=traits) if traits else None


def _decode_question(
    i: int, entry: Any, global_names: set[str], seen: dict[str, int], problems: Problems
) -> Question | None:
    start, label = problems.count, f"dataFeedElement[{i}]"
    if not isinstance(entry, dict):
        problems.add(label, "not a DataFeedItem object")
        return None
    item = entry.get("item")
    text = item.get("text") if isinstance(item, dict) else None
    qid = entry.get("@id")
    if qid is None and isinstance(text, str) and text.strip():
        qid = generate_question_id(text)
    if isinstance(qid, str):
        label = f"question {qid!r}"
        if qid in seen:
            fix = "ids must be unique" if "@id" in entry else "same text and no '@id'; give each an '@id'"
            problems.add(label, f"duplicate question id (also dataFeedElement[{seen[qid]}]); {fix}")
        seen.setdefault(qid, i)
    if not isinstance(item, dict):
        problems.add(label, "missing 'item' (the schema.org Question with text, acceptedAnswer and hasPart)")
        return None
    where = f"{label}.item"
    if not isinstance(text, str) or not text.strip():
        problems.add(where, "missing 'text' (the question)")
    answer = item.get("acceptedAnswer")
    if not isinstance(answer, dict) or not isinstance(answer.get("text"), str):
        problems.add(where, "missing 'acceptedAnswer' with a 'text' (the reference answer); "
                            'add {"@type": "Answer", "text": "..."}')
    template = item.get("hasPart")
    if not isinstance(template, dict):
        problems.add(where, 'missing \'hasPart\' (the answer template); add {"@type": "SoftwareSourceCode", '
                            '"name": "...", "text": "<Python answer template>"} (text may be "" for a '
                            "rubric-only question)")
    else:
        for key in ("name", "text"):
            if not isinstance(template.get(key), str):
                problems.add(f"{where}.hasPart", f"missing '{key}' (a string; the template text may be \"\")")
    dates = _dates(entry, label, problems)
    keywords = item.get("keywords") if item.get("keywords") is not None else entry.get("keywords")
    if not isinstance(keywords, list | None) or not all(isinstance(k, str) for k in keywords or []):
        problems.add(where, "'keywords' must be a list of strings")
    ratings = decode_ratings(item.get("rating"), label, problems)
    for group in (ratings.traits, ratings.dynamic):
        check_unique_names(group, lambda n: f"{label} / trait {n!r}", problems)
    for trait in ratings.traits:
        if trait.name in global_names:
            problems.add(f"{label} / trait {trait.name!r}", "also defined in the global rubric; rename one")
    meta = _question_metadata(item.get("additionalProperty"), where, problems)
    if problems.count > start or dates is None or not isinstance(answer, dict):
        return None
    if not isinstance(template, dict):
        return None
    question: Question | None = build_model(Question, {
        "id": qid, "text": text, "raw_answer": answer["text"], "template_code": template["text"],
        "template_name": template["name"], "template_language": template.get("programmingLanguage", "Python"),
        "template_repository": template.get("codeRepository"), "keywords": keywords or [],
        "rubric": _rubric(ratings.traits), "dynamic_rubric": _rubric(ratings.dynamic),
        "date_created": dates[0], "date_modified": dates[1],
        "item_node_id": item.get("@id"), "answer_node_id": answer.get("@id"),
        "template_node_id": template.get("@id"), "ignored_ratings": ratings.ignored, **meta,
        "extra_item_keys": {k: v for k, v in item.items() if k not in _ITEM_KEYS},
        "extra_feed_keys": {k: v for k, v in entry.items() if k not in _FEED_KEYS},
    }, label, problems)
    return question


def _question_metadata(raw: Any, where: str, problems: Problems) -> dict[str, Any]:
    values, extras = read_properties(raw, _QUESTION_PROPS, where, problems)
    custom = [e for e in extras if e["name"].startswith("custom_")]
    meta: dict[str, Any] = {
        "custom_metadata": {e["name"].removeprefix("custom_"): e.get("value") for e in custom},
        "extra_properties": [e for e in extras if not e["name"].startswith("custom_")],
        "finished": values.get("finished", False),
    }
    if not isinstance(meta["finished"], bool):
        problems.add(where, f"property 'finished' must be true or false, got {meta['finished']!r}")
    author = values.get("author")
    if isinstance(author, str):
        try:
            parsed = json.loads(author)
            author = parsed if isinstance(parsed, dict) else author
        except json.JSONDecodeError:
            pass  # a plain-text author is kept as is (as karenina does)
    meta["author"] = author
    for key in ("sources", "few_shot_examples"):
        if values.get(key) is not None:
            meta[key] = json_value(values[key], list, f"property {key!r}", where, problems)
    if not all(isinstance(x, dict) for x in meta.get("few_shot_examples") or []):
        problems.add(where, 'property \'few_shot_examples\' must be a list of {"question", "answer"} objects')
    meta.update({key: values.get(key) for key in ("answer_notes", "workspace_path")})
    return meta


# ---------------------------------------------------------------------------------------- encoding


def _encode_rubric(rubric: Rubric | None, scope: Scope, dynamic: bool = False) -> list[dict[str, Any]]:
    return [encode_trait(t, scope, dynamic) for t in (rubric.traits if rubric else [])]


def _encode_question(q: Question) -> dict[str, Any]:
    def node(type_: str, node_id: str | None, **fields: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"@type": type_}
        if node_id is not None:
            out["@id"] = node_id
        out.update({k: v for k, v in fields.items() if v is not None})
        return out

    props = [property_value("finished", q.finished)]
    if q.author is not None:
        author = json.dumps(q.author) if isinstance(q.author, dict) else q.author
        props.append(property_value("author", author))
    if q.sources is not None:
        props.append(property_value("sources", json.dumps(q.sources)))
    props += [property_value(f"custom_{key}", value) for key, value in q.custom_metadata.items()]
    if q.few_shot_examples is not None:
        props.append(property_value("few_shot_examples", json.dumps(q.few_shot_examples)))
    for key in ("answer_notes", "workspace_path"):
        if getattr(q, key) is not None:
            props.append(property_value(key, getattr(q, key)))
    item = node("Question", q.item_node_id, text=q.text)
    item["acceptedAnswer"] = node("Answer", q.answer_node_id, text=q.raw_answer)
    item["hasPart"] = node(
        "SoftwareSourceCode", q.template_node_id, name=q.template_name or f"{q.text[:30]}... Answer Template",
        text=q.template_code, programmingLanguage=q.template_language, codeRepository=q.template_repository,
    )
    ratings = _encode_rubric(q.rubric, "question") + _encode_rubric(q.dynamic_rubric, "question", True)
    if ratings or q.ignored_ratings:
        item["rating"] = ratings + q.ignored_ratings
    item["additionalProperty"] = props + q.extra_properties
    if q.keywords:
        item["keywords"] = q.keywords
    for key, value in q.extra_item_keys.items():
        item.setdefault(key, value)
    entry = {"@type": "DataFeedItem", "@id": q.id, "dateCreated": q.date_created,
             "dateModified": q.date_modified, "item": item}
    for key, value in q.extra_feed_keys.items():
        entry.setdefault(key, value)
    return entry
