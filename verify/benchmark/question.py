"""One benchmark question: its text, expected answer, answer template, rubric and metadata, and its
JSON-LD form (a schema.org ``DataFeedItem``: :func:`decode_question`, :func:`encode_question`).

Ids follow karenina: a question without ``@id`` gets ``urn:uuid:question-<slug>-<md5[:8]>``, and a
template is identified by the md5 of its normalised code. An ``@id`` that is present must be
non-empty text.
"""

from __future__ import annotations

import hashlib
import json
import textwrap
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from verify.benchmark.problems import (
    OPTIONAL_TEXT,
    Problems,
    build_model,
    check_unique_names,
    kind_of,
    warn_similar_names,
    wrong_type,
)
from verify.benchmark.properties import json_value, property_value, read_properties
from verify.benchmark.ratings import decode_ratings, encode_rubric, rubric_of
from verify.benchmark.traits import Rubric
from verify.files import JsonProblem, parse_json

__all__ = [
    "Question", "decode_question", "encode_question", "generate_question_id", "generate_template_id", "now_iso",
    "question_label", "read_dates",
]

_QUESTION_PROPS = frozenset(
    {"finished", "author", "sources", "few_shot_examples", "answer_notes", "workspace_path"}
)
_FEED_KEYS = {"@type", "@id", "dateCreated", "dateModified", "item", "keywords"}
_ITEM_KEYS = {"@type", "@id", "text", "acceptedAnswer", "hasPart", "rating", "additionalProperty", "keywords"}
_ADD_ANSWER = 'add {"@type": "Answer", "text": "..."}'
_ADD_TEMPLATE = ('add {"@type": "SoftwareSourceCode", "name": "...", "text": "<Python answer template>"} (text may '
                 'be "" for a rubric-only question)')


def now_iso() -> str:
    """The local time as karenina writes checkpoint dates."""
    return datetime.now().isoformat()


def generate_question_id(text: str) -> str:
    """karenina's id for a question without ``@id``: ``urn:uuid:question-<slug>-<md5[:8]>``."""
    digest = hashlib.md5(text.encode("utf-8")).hexdigest()
    slug = text.lower().replace(" ", "-").replace("?", "").replace(".", "").replace(",", "")[:50]
    return f"urn:uuid:question-{slug}-{digest[:8]}"


def generate_template_id(template_code: str | None) -> str:
    """md5 of the normalised template (32 hex chars), or ``"no_template"`` when it is empty."""
    code = textwrap.dedent(template_code or "").replace("\r\n", "\n").replace("\r", "\n")
    code = "\n".join(line.rstrip() for line in code.split("\n")).strip()
    return hashlib.md5(code.encode("utf-8")).hexdigest()[:32] if code else "no_template"


class Question(BaseModel):
    """One benchmark question (a schema.org ``DataFeedItem`` wrapping a ``Question``)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="The DataFeedItem @id (generated from the text when absent).")
    text: str
    raw_answer: str = Field(description="The reference answer (acceptedAnswer.text).")
    template_code: str = Field(default="", description="Answer template source (hasPart.text); may be empty.")
    template_name: str | None = Field(default=None, description="hasPart.name; a default is written if None.")
    template_language: str = "Python"
    template_repository: str | None = None
    keywords: list[str] = Field(default_factory=list)
    finished: bool = False
    author: dict[str, Any] | str | None = None
    sources: list[Any] | None = None
    few_shot_examples: list[dict[str, Any]] | None = None
    answer_notes: str | None = None
    workspace_path: str | None = None
    custom_metadata: dict[str, Any] = Field(default_factory=dict)
    rubric: Rubric | None = Field(default=None, description="Question-specific traits.")
    dynamic_rubric: Rubric | None = Field(default=None, description="Question-specific dynamic traits.")
    date_created: str = Field(default_factory=now_iso)
    date_modified: str = Field(default_factory=now_iso)
    item_node_id: str | None = Field(default=None, description="item.@id, kept for round trips.")
    answer_node_id: str | None = Field(default=None, description="acceptedAnswer.@id.")
    template_node_id: str | None = Field(default=None, description="hasPart.@id.")
    ignored_ratings: list[dict[str, Any]] = Field(
        default_factory=list, description="Global-typed ratings inside the question; karenina ignores them."
    )
    extra_properties: list[dict[str, Any]] = Field(default_factory=list)
    extra_item_keys: dict[str, Any] = Field(default_factory=dict)
    extra_feed_keys: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _id_ok(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question id is empty; give the question a unique id")
        return value

    @property
    def question_hash(self) -> str:
        """md5 of the text: karenina's key for manual traces."""
        return hashlib.md5(self.text.encode("utf-8")).hexdigest()

    @property
    def template_id(self) -> str:
        return generate_template_id(self.template_code)


# ---------------------------------------------------------------------------------------- JSON-LD


def _question_id(entry: dict[str, Any], text: Any) -> Any:
    """The ``@id`` as written, else (none or null) the id karenina generates from the text, else None."""
    qid = entry.get("@id")
    return generate_question_id(text) if qid is None and isinstance(text, str) and text.strip() else qid


def question_label(entry: Any, index: int) -> str:
    """How problems name a raw DataFeedItem: ``question '<id>'``, or ``dataFeedElement[<index>]``."""
    item = entry.get("item") if isinstance(entry, dict) else None
    qid = _question_id(entry, item.get("text") if isinstance(item, dict) else None) if isinstance(entry, dict) else None
    return f"question {qid!r}" if isinstance(qid, str) and qid.strip() else f"dataFeedElement[{index}]"


def read_dates(obj: dict[str, Any], where: str, problems: Problems) -> tuple[str, str] | None:
    """``(dateCreated, dateModified)`` of a DataFeed or DataFeedItem, or None (problems reported)."""
    created, modified = obj.get("dateCreated"), obj.get("dateModified")
    if isinstance(created, str) and isinstance(modified, str):
        return created, modified
    example = 'an ISO timestamp such as "2025-01-11T00:00:00"'
    for key, value in (("dateCreated", created), ("dateModified", modified)):
        if not isinstance(value, str):
            problems.wrong(where, obj, key, f"text ({example})", f"missing '{key}' ({example})")
    return None


def decode_question(
    i: int, entry: Any, global_names: set[str], global_folded: dict[str, str], seen: dict[str, int],
    problems: Problems,
) -> Question | None:
    """The ``i``-th DataFeedItem as a Question, or None (every problem reported to ``problems``).

    ``global_names`` are the global rubric's trait names, ``global_folded`` what :func:`warn_similar_names`
    returned for it;
    ``seen`` maps the question ids read so far to their index.
    """
    start, label = problems.count, f"dataFeedElement[{i}]"
    if not isinstance(entry, dict):
        problems.add(label, f"is {kind_of(entry)}, expected a DataFeedItem object")
        return None
    item = entry.get("item")
    text = item.get("text") if isinstance(item, dict) else None
    qid = _question_id(entry, text)
    if isinstance(qid, str) and qid.strip():
        label = f"question {qid!r}"
        if qid in seen:
            fix = "ids must be unique" if "@id" in entry else "same text and no '@id'; give each an '@id'"
            problems.add(label, f"duplicate question id (also dataFeedElement[{seen[qid]}]); {fix}")
        seen.setdefault(qid, i)
    elif isinstance(qid, str):
        problems.add(label, "'@id' is empty; give the question a unique id (or remove '@id' to have one made "
                            "from its text)")
    elif qid is not None:
        problems.add(label, wrong_type("'@id'", qid, "text (a unique question id)"))
    if not isinstance(item, dict):
        problems.wrong(label, entry, "item", "an object (the schema.org Question)",
                       "missing 'item' (the schema.org Question with text, acceptedAnswer and hasPart)")
        return None
    where = f"{label}.item"
    if not isinstance(text, str):
        problems.wrong(where, item, "text", "text (the question)", "missing 'text' (the question)")
    elif not text.strip():
        problems.add(where, "'text' is empty; write the question")
    answer, template = item.get("acceptedAnswer"), item.get("hasPart")
    if not isinstance(answer, dict):
        problems.wrong(where, item, "acceptedAnswer", f"an object; {_ADD_ANSWER}",
                       f"missing 'acceptedAnswer' with a 'text' (the reference answer); {_ADD_ANSWER}")
    elif not isinstance(answer.get("text"), str):
        problems.wrong(f"{where}.acceptedAnswer", answer, "text", "text (the reference answer)",
                       "missing 'text' (the reference answer)")
    if not isinstance(template, dict):
        problems.wrong(where, item, "hasPart", f"an object; {_ADD_TEMPLATE}",
                       f"missing 'hasPart' (the answer template); {_ADD_TEMPLATE}")
    else:
        for key in ("name", "text"):
            if not isinstance(template.get(key), str):
                problems.wrong(f"{where}.hasPart", template, key, "text (the template text may be \"\")",
                               f"missing '{key}' (a string; the template text may be \"\")")
    dates = read_dates(entry, label, problems)
    keywords = item.get("keywords") if item.get("keywords") is not None else entry.get("keywords")
    if not isinstance(keywords, list | None) or not all(isinstance(k, str) for k in keywords or []):
        problems.add(where, "'keywords' must be a list of strings")
    ratings = decode_ratings(item.get("rating"), label, problems)
    for group, folded in ((ratings.traits, global_folded), (ratings.dynamic, None)):
        if group:
            check_unique_names(group, lambda n: f"{label} / trait {n!r}", problems)
            warn_similar_names(group, label, problems, folded)
    for trait in ratings.traits:
        if trait.name in global_names:
            # karenina loads this too, and refuses it only when it evaluates the rubric: so does the run
            problems.warn(f"{label} / trait {trait.name!r}", "also defined in the global rubric, so runs that "
                          "evaluate rubrics refuse this question (as karenina does); rename one")
    meta = _metadata(item.get("additionalProperty"), where, problems)
    extra_item_keys = {k: v for k, v in item.items() if k not in _ITEM_KEYS}
    extra_feed_keys = {k: v for k, v in entry.items() if k not in _FEED_KEYS}
    if extra_item_keys or extra_feed_keys:
        problems.check_keys(where, extra_item_keys)
        problems.check_keys(label, extra_feed_keys)
    if problems.count > start or dates is None or not isinstance(answer, dict) or not isinstance(template, dict):
        return None
    item_id, answer_id, template_id = item.get("@id"), answer.get("@id"), template.get("@id")
    language, repository = template.get("programmingLanguage"), template.get("codeRepository")
    if not (isinstance(item_id, OPTIONAL_TEXT) and isinstance(answer_id, OPTIONAL_TEXT)
            and isinstance(template_id, OPTIONAL_TEXT) and isinstance(language, OPTIONAL_TEXT)
            and isinstance(repository, OPTIONAL_TEXT)):  # spelled out: this runs for every question
        problems.optional_text(where, {
            "@id": item_id, "acceptedAnswer.@id": answer_id, "hasPart.@id": template_id,
            "hasPart.programmingLanguage": language, "hasPart.codeRepository": repository,
        })
        return None
    question: Question | None = build_model(Question, {
        "id": qid, "text": text, "raw_answer": answer["text"], "template_code": template["text"],
        "template_name": template["name"], "template_language": language or "Python",
        "template_repository": repository, "keywords": keywords or [],
        "rubric": rubric_of(ratings.traits), "dynamic_rubric": rubric_of(ratings.dynamic),
        "date_created": dates[0], "date_modified": dates[1],
        "item_node_id": item_id, "answer_node_id": answer_id, "template_node_id": template_id,
        "ignored_ratings": ratings.ignored, **meta,
        "extra_item_keys": extra_item_keys, "extra_feed_keys": extra_feed_keys,
    }, label, problems)
    return question


def _metadata(raw: Any, where: str, problems: Problems) -> dict[str, Any]:
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
            parsed = parse_json(author)
            author = parsed if isinstance(parsed, dict) else author
        except JsonProblem:
            pass  # a plain-text author is kept as is (as karenina does)
    meta["author"] = author
    for key in ("sources", "few_shot_examples"):
        if values.get(key) is not None:
            meta[key] = json_value(values[key], list, f"property {key!r}", where, problems)
    if not all(isinstance(x, dict) for x in meta.get("few_shot_examples") or []):
        problems.add(where, 'property \'few_shot_examples\' must be a list of {"question", "answer"} objects')
    meta["answer_notes"], meta["workspace_path"] = values.get("answer_notes"), values.get("workspace_path")
    if not (isinstance(meta["answer_notes"], OPTIONAL_TEXT) and isinstance(meta["workspace_path"], OPTIONAL_TEXT)):
        problems.optional_text(where, {k: meta[k] for k in ("answer_notes", "workspace_path")})
    return meta


def encode_question(q: Question) -> dict[str, Any]:
    """A question as a DataFeedItem in karenina's layout."""
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
    ratings = encode_rubric(q.rubric, "question") + encode_rubric(q.dynamic_rubric, "question", True)
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
