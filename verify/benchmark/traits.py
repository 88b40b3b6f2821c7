"""Rubric traits as verify models them: LLM, regex, callable, metric and agentic traits.

Field names follow karenina's trait models, so checkpoints map one to one. These models hold data
only; evaluation lives in ``verify.stages.rubric`` and ``verify.judging.deep_judgment``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from verify.benchmark.grader_prompt import grader_temperature, prompt_problems
from verify.benchmark.judge_spec import SchemaJudgeSpec
from verify.benchmark.judge_tools import DEFAULT_TOOL_PROMPT, DEFAULT_TOOL_ROUNDS, tool_problems
from verify.benchmark.weighting import SCALE, ScoreRange, check_ranges, shorthand_ranges

TraitKind = Literal["boolean", "score", "literal", "template"]
Provenance = Literal["global", "question_specific"]


class _Trait(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str | None = None
    summary: str | None = None
    id: str | None = Field(default=None, description="The Rating's @id, kept for round trips.")
    extra_properties: list[dict[str, Any]] = Field(
        default_factory=list,
        description="additionalProperty entries verify does not interpret, kept verbatim on save.",
    )
    # the rubric verdict (verify.benchmark.weighting; AgentV's rubric fields)
    weight: float = Field(default=1.0, gt=0, allow_inf_nan=False, description="Share of the weighted rubric score.")
    required: bool = Field(default=False, description="A failing required trait fails the rubric verdict.")
    pass_threshold: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Bar (0-1, normalised) for the trait to pass; unset: the run's.")

    @field_validator("name")
    @classmethod
    def _name_ok(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("trait name is empty")
        if "." in value:
            raise ValueError(f"trait name {value!r} contains '.'; rename it without dots")
        if any(ord(c) < 32 or ord(c) == 127 for c in value):  # breaks every line that names the trait
            raise ValueError(f"trait name {value!r} contains a control character (newline, tab, NUL); "
                             "rename it to one line of plain text")
        return value


class LLMTrait(_Trait):
    """A trait the judge model scores: boolean, score (min..max) or literal (one of classes)."""

    trait_type: Literal["llm"] = "llm"
    kind: TraitKind = "score"
    min_score: int | None = 1
    max_score: int | None = 5
    classes: dict[str, str] | None = None
    higher_is_better: bool | None = True
    template_schema: dict[str, Any] | None = None
    include_ground_truth: bool = False
    deep_judgment_enabled: bool = False
    deep_judgment_excerpt_enabled: bool = True
    deep_judgment_max_excerpts: int | None = Field(default=None, ge=1)
    deep_judgment_fuzzy_match_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    deep_judgment_excerpt_retry_attempts: int | None = Field(default=None, ge=0)
    deep_judgment_search_enabled: bool = False
    score_ranges: Annotated[list[ScoreRange] | None, BeforeValidator(shorthand_ranges)] = Field(
        default=None, description="Analytic levels on a 0-10 score, shown to the judge (AgentV's score_ranges).")
    # letta's prompt graders (verify.benchmark.grader_prompt): the trait's own prompt, scored 0.0-1.0
    prompt: str | None = Field(default=None, description="Grader prompt: {input} {submission} {ground_truth} {rubric}.")
    model: str | None = Field(default=None, description="The grader's own model name (letta); recorded.")
    temperature: float | None = Field(default=None, ge=0.0, le=2.0, description="The grader's temperature (letta).")
    tools: list[str | dict[str, Any]] | None = Field(
        default=None, description="Tools the judge may call; it grades with submit_grade (verify.benchmark.judge_tools).")
    tool_rounds: int = Field(default=DEFAULT_TOOL_ROUNDS, ge=1, le=50, description="Most tool rounds of a tool judge.")

    @model_validator(mode="after")
    def _kind_rules(self) -> LLMTrait:
        if self.tools is not None:  # a tool judge is a prompt grader that may call tools first
            if problems := tool_problems(self.name, self.tools):
                raise ValueError("; ".join(problems))
            self.prompt = self.prompt if self.prompt is not None else DEFAULT_TOOL_PROMPT
        if self.prompt is not None:
            self._grader_rules(self.prompt)
        if self.score_ranges:
            self._analytic_scale(self.score_ranges)
        if self.kind == "literal":
            classes = self.classes or {}
            if not 2 <= len(classes) <= 20:
                raise ValueError(f"literal trait {self.name!r} needs 2-20 classes, has {len(classes)}")
            lowered = [c.strip().lower() for c in classes]
            if any(not c for c in lowered) or len(set(lowered)) != len(lowered):
                raise ValueError(f"literal trait {self.name!r} has empty or duplicate class names")
            self.min_score, self.max_score = 0, len(classes) - 1
        elif self.kind == "score":
            lo, hi = self.min_score, self.max_score
            if lo is not None and hi is not None and lo > hi:
                raise ValueError(
                    f"score trait {self.name!r} has min_score {lo} > max_score {hi}; swap them"
                )
            if lo is not None and lo == hi:  # one possible score says nothing about the answer
                raise ValueError(f"score trait {self.name!r} has min_score = max_score = {lo}; a score needs a "
                                 "range: raise max_score (or make it a boolean trait)")
        elif self.kind == "template" and self.deep_judgment_enabled:
            raise ValueError(f"template-kind trait {self.name!r} cannot enable deep judgment")
        if self.kind == "template" and (self.required or self.pass_threshold is not None or self.weight != 1.0):
            raise ValueError(f"template-kind trait {self.name!r} has no single score to weigh: remove its weight, "
                             "required and pass_threshold")
        return self

    @property
    def grader_temperature(self) -> float | None:
        """The temperature this grader runs at (letta: 1.0 for reasoning models, whatever is set)."""
        return grader_temperature(self.model, self.temperature)

    def _grader_rules(self, prompt: str) -> None:
        """A prompt grader scores 0.0-1.0 (a score trait 0-1, so its normalised score is the score as is)."""
        problems = prompt_problems(self.name, prompt)
        if self.kind != "score" or self.score_ranges or self.deep_judgment_enabled:
            problems.append(f"trait {self.name!r}: a prompt grader is a plain 0-1 score trait (no kind "
                            f"{self.kind!r}, score_ranges or deep judgment)")
        if self.model_fields_set & {"min_score", "max_score"} and (self.min_score, self.max_score) != (0, 1):
            problems.append(f"trait {self.name!r}: a prompt grader scores 0-1; leave min_score/max_score out")
        if problems:
            raise ValueError("; ".join(problems))
        self.min_score, self.max_score = 0, 1

    def _analytic_scale(self, ranges: list[ScoreRange]) -> None:
        """score_ranges put the trait on AgentV's 0-10 scale: set when left out, refused when another."""
        if self.kind != "score":
            raise ValueError(f"trait {self.name!r}: score_ranges need kind 'score' (a 0-10 score), not {self.kind!r}")
        check_ranges(self.name, ranges)
        if not self.model_fields_set & {"min_score", "max_score"}:
            self.min_score, self.max_score = SCALE
        elif (self.min_score, self.max_score) != SCALE:
            raise ValueError(f"trait {self.name!r}: score_ranges are on 0-10, but the trait scores "
                             f"{self.min_score}-{self.max_score}; set min_score 0 and max_score 10 (or leave both out)")

    @property
    def class_names(self) -> list[str]:
        return list((self.classes or {}).keys())


class RegexTrait(_Trait):
    """A deterministic ``re.search`` check, optionally inverted."""

    trait_type: Literal["regex"] = "regex"
    pattern: str = ""
    case_sensitive: bool = True
    invert_result: bool = False
    higher_is_better: bool | None = True

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"pattern {value!r} does not compile: {exc}") from None
        return value


ASSERTIONS = ("contains", "icontains", "equals", "starts-with", "regex", "is-json", "json-schema", "max-length")
"""promptfoo's deterministic assertions verify evaluates; each may be negated with ``not-`` (``not-contains``)."""
JSON_ASSERTIONS = ("is-json", "json-schema")
"""The assertions no regular expression states: evaluated by :mod:`verify.judging.deterministic`."""


class AssertionTrait(RegexTrait):
    """A promptfoo-style assertion (``contains: Paris``, ``regex: ^\\d+$``, ``is-json``, ...): a deterministic
    true/false check like a regex trait, with no model call. Where a regular expression says the same
    (every kind but ``is-json`` and ``json-schema``), ``pattern`` holds it and the trait is evaluated as
    a regex trait; the assertion and its value are kept so a suite is written back as it was read."""

    trait_type: Literal["assertion"] = "assertion"  # type: ignore[assignment]
    assertion: str = Field(description="contains, icontains, equals, starts-with, regex, is-json, json-schema, "
                                       "max-length; 'not-' before any negates it")
    value: Any = Field(default=None, description="the text, pattern, length or JSON schema the assertion checks")

    @property
    def base(self) -> str:
        """The assertion without its ``not-``."""
        return self.assertion.removeprefix("not-")

    @model_validator(mode="after")
    def _derive_pattern(self) -> AssertionTrait:
        base, value = self.base, self.value
        if base not in ASSERTIONS:
            raise ValueError(f"assertion {self.assertion!r} is not one of {', '.join(ASSERTIONS)} (or not-<one of them>)")
        self.invert_result = self.assertion.startswith("not-")
        self.case_sensitive = base != "icontains"
        if base == "max-length":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"max-length needs a whole number of characters >= 0, got {value!r}")
            self.pattern = rf"\A[\s\S]{{0,{value}}}\Z"
        elif base == "json-schema":
            if not isinstance(value, dict):
                raise ValueError(f"json-schema needs a JSON schema (an object) as its value, got {type(value).__name__}")
            _check_schema(value)
        elif base == "is-json":
            if value is not None:
                raise ValueError("is-json takes no value; leave it out (use json-schema to check the shape)")
        elif not isinstance(value, str) or (base != "equals" and not value):
            raise ValueError(f"{self.assertion} needs text as its value, got {value!r}")
        else:
            self.pattern = {"regex": value, "equals": rf"\A{re.escape(value)}\Z",
                            "starts-with": rf"\A{re.escape(value)}"}.get(base, re.escape(value))
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"regex {value!r} does not compile: {exc}") from None
        return self


def _check_schema(schema: dict[str, Any]) -> None:
    try:
        import jsonschema
    except ImportError:
        raise ValueError("json-schema assertions need the jsonschema package: pip install 'verify-judge[jsonschema]'") from None
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ValueError(f"json-schema: the schema is not valid: {exc.message}") from None


class KindlessRating(NamedTuple):
    """How a callable's rating was stored when it had no ``kind`` property: its bounds, and the
    properties with defaults it lacked. karenina reads such a rating as boolean whatever its bounds
    say; verify does too, and writes it back as it was while the trait stays boolean."""

    best: float
    worst: float
    absent: tuple[str, ...]


class CallableTrait(_Trait):
    """A Python function ``f(text)`` stored as base64 in the checkpoint: its source text, or a
    cloudpickle of it (what karenina writes; run only when the run trusts the checkpoint). A score
    bound left unset is not checked, as in karenina."""

    trait_type: Literal["callable"] = "callable"
    callable_code: str | None = None
    kind: Literal["boolean", "score", "literal"] = "boolean"
    min_score: int | None = None
    max_score: int | None = None
    classes: dict[str, str] | None = None
    invert_result: bool = False
    higher_is_better: bool | None = True
    kindless: KindlessRating | None = Field(default=None, exclude=True, repr=False,
                                            description="Set when read from a rating without 'kind'.")

    @model_validator(mode="after")
    def _range(self) -> CallableTrait:
        lo, hi = self.min_score, self.max_score
        if self.kind == "score" and lo is not None and hi is not None and lo >= hi:
            fix = "swap them" if lo > hi else "a score needs a range: raise max_score (or make it a boolean trait)"
            raise ValueError(f"callable score trait {self.name!r} has min_score {lo} and max_score {hi}; {fix}")
        return self


MetricName = Literal["precision", "recall", "specificity", "accuracy", "f1"]
_DEFAULT_METRICS: tuple[MetricName, ...] = ("precision", "recall", "f1")


class MetricTrait(_Trait):
    """A confusion-matrix trait: the judge sorts items into tp/fn/fp(/tn); metrics follow."""

    trait_type: Literal["metric"] = "metric"
    metrics: list[MetricName] = Field(default_factory=lambda: list(_DEFAULT_METRICS))
    repeated_extraction: bool = True
    evaluation_mode: Literal["tp_only", "full_matrix"] = "tp_only"
    higher_is_better: bool | None = None
    tp_instructions: list[str] = Field(default_factory=list)
    tn_instructions: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _mode_rules(self) -> MetricTrait:
        if not self.tp_instructions:
            raise ValueError(f"metric trait {self.name!r} needs non-empty tp_instructions")
        allowed = (
            {"precision", "recall", "f1"}
            if self.evaluation_mode == "tp_only"
            else {"precision", "recall", "specificity", "accuracy", "f1"}
        )
        bad = [m for m in self.metrics if m not in allowed]
        if bad:
            raise ValueError(
                f"metric trait {self.name!r}: metrics {bad} need evaluation_mode 'full_matrix'"
            )
        if self.evaluation_mode == "full_matrix" and not self.tn_instructions:
            raise ValueError(f"metric trait {self.name!r}: full_matrix needs tn_instructions")
        return self


class AgenticTrait(_Trait):
    """An agent-investigated trait. Loaded and saved; evaluation needs an agent runtime."""

    trait_type: Literal["agentic"] = "agentic"
    properties: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _not_weighed(self) -> AgenticTrait:
        if self.required or self.pass_threshold is not None:  # it is never judged, so it could never pass
            raise ValueError(f"agentic trait {self.name!r} is not evaluated yet: it cannot be required or have a "
                             "pass_threshold")
        return self


class SchemaJudgeTrait(_Trait):
    """A Docent-style judge (:class:`~verify.benchmark.judge_spec.SchemaJudgeSpec`) as a rubric trait:
    the judge fills the spec's output schema, cited fields are proven against the answer, and the
    spec's ``verdict_field`` (when set) gives the trait's score: a boolean, a value in ``pass_values``
    (true/false) or a number on its schema range. Without ``verdict_field`` the output is recorded
    and the trait is not weighed."""

    trait_type: Literal["schema_judge"] = "schema_judge"
    judge: SchemaJudgeSpec
    higher_is_better: bool | None = True


Trait = Annotated[
    LLMTrait | AssertionTrait | RegexTrait | CallableTrait | MetricTrait | AgenticTrait | SchemaJudgeTrait,
    Field(discriminator="trait_type"),
]


class Rubric(BaseModel):
    """An ordered list of traits (global or question-specific, or the two merged)."""

    model_config = ConfigDict(extra="forbid")

    traits: list[Trait] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_names(self) -> Rubric:
        seen: set[str] = set()
        for trait in self.traits:
            if trait.name in seen:
                raise ValueError(f"trait name {trait.name!r} appears twice; trait names must be unique")
            seen.add(trait.name)
        return self

    def of_type(self, cls: type[Any]) -> list[Any]:
        return [t for t in self.traits if isinstance(t, cls)]

    @property
    def llm_traits(self) -> list[LLMTrait]:
        return self.of_type(LLMTrait)

    def get(self, name: str) -> Trait | None:
        return next((t for t in self.traits if t.name == name), None)


def merge_rubrics(global_rubric: Rubric | None, question_rubric: Rubric | None) -> tuple[Rubric, dict[str, Provenance]]:
    """Global traits first, then question traits; a name in both is an error, as in karenina, which
    loads such a checkpoint but refuses to run its rubric (of the same trait type or not)."""
    traits: list[Any] = []
    provenance: dict[str, Provenance] = {}
    for source, rubric in (("global", global_rubric), ("question_specific", question_rubric)):
        for trait in (rubric.traits if rubric else []):
            if trait.name in provenance:
                raise ValueError(
                    f"trait {trait.name!r} is defined both globally and for the question (karenina refuses "
                    "this too); rename one, or run with evaluation_mode template_only"
                )
            provenance[trait.name] = source  # type: ignore[assignment]
            traits.append(trait)
    # both rubrics were validated when they were built and a name in both was refused above:
    # the merged one is not validated again (4 merges per task)
    return Rubric.model_construct(traits=traits), provenance
