"""The versioned result of one task (question x answering model x judge x replicate).

Sections follow karenina's ``VerificationResult`` (``metadata``, ``template``, ``rubric``,
``deep_judgment``, ``deep_judgment_rubric``) with seed-003 field names, so existing analysis code
keeps working. Failures are data: a stage that raised is in ``metadata.errors``; a trait the judge
could not score is ``unscored`` in ``rubric.trait_status`` with the reason, never a failing score.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from verify.results.revisions import Revision
from verify.results.schema_judgment import SchemaJudgment

SCHEMA_VERSION = "1.0"


def verify_version() -> str:
    """The installed verify's version (``"unknown"`` when run from a source tree that is not installed)."""
    try:
        return importlib.metadata.version("verify-judge")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


TraitStatus = Literal["scored", "unscored", "skipped", "auto_failed"]
Score = bool | int | float
TraitValue = Score | str | list[bool | int | float | str]
"""An ``llm_trait_scores`` value: a trait's score, or one field of a template-kind trait ("trait.field")."""
Verdict = Literal["passed", "judged", "failed", "incomplete"]
"""``incomplete``: some evaluation the task needed was not judged (an unusable reply, an outage, a
template that did not compile), so neither pass nor fail is known. ``judged``: everything was judged
but no rule decides the task (no template verification, no rubric verdict asked for), so nothing
passed; a rubric verdict itself is never ``judged``."""

UnscoredCategory = Literal[
    "unparseable", "invalid_reply", "code", "untrusted", "no_answer", "nothing_to_evaluate", "contradiction"]
"""Why an evaluation was not judged when no model call failed for good (those carry the model
error's category: ``timeout``, ``rate_limit``, ...). ``unparseable``: no reply held usable JSON;
``invalid_reply``: JSON, but wrong (a label not offered, a score out of range, the schema echoed);
``code``: a regex or callable trait (or the template's code) could not run; ``untrusted``: a pickled
callable trait was skipped because the run does not trust the checkpoint (``status`` "skipped");
``contradiction``: the judge's verdict kept contradicting its own evidence (:mod:`verify.results.reasons`)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelIdentity(_Model):
    interface: str
    model_name: str
    config_id: str | None = None

    @property
    def display(self) -> str:
        suffix = f" ({self.config_id})" if self.config_id and self.config_id != self.model_name else ""
        return f"{self.interface}:{self.model_name}{suffix}"


class Failure(_Model):
    """Why a task did not pass. ``group`` buckets categories (content, autofail, retry, system...)."""

    category: str
    stage: str
    reason: str
    group: str


class StageError(_Model):
    stage: str
    message: str
    category: str = "unexpected_error"


class StageUsage(_Model):
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    calls: int = 0
    cached_calls: int = 0
    failed_calls: int = 0
    http_attempts: int = Field(default=0, description="requests sent over the wire (retries included; 0 for cached calls)")


class Coverage(_Model):
    """How many of the task's evaluations were judged: each rubric trait that was not skipped,
    plus the template verification when the template stages run."""

    judged: int = 0
    total: int = 0
    by_code_judged: int = Field(default=0, description="of judged: regex and callable traits (no judge involved)")
    by_code_total: int = Field(default=0, description="of total: regex and callable traits")
    unscored: dict[str, str] = Field(
        default_factory=dict, description="evaluation (trait name, or 'template') -> why it was not judged"
    )

    @property
    def complete(self) -> bool:
        return self.judged == self.total and not self.unscored


class Metadata(_Model):
    question_id: str
    template_id: str
    task_key: str
    result_id: str
    question_text: str
    raw_answer: str | None = None
    keywords: list[str] | None = None
    answering: ModelIdentity
    parsing: ModelIdentity
    answering_system_prompt: str | None = None
    replicate: int | None = None
    run_name: str | None = None
    evaluation_mode: str
    stages: list[str] = Field(default_factory=list, description="stages that ran, in order")
    failure: Failure | None = None
    verdict: Verdict | None = Field(default=None, description="None in results written before verdicts existed")
    coverage: Coverage | None = None
    caveats: list[str] = Field(default_factory=list, description="e.g. embedding_override")
    errors: list[StageError] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    revision: Revision | None = Field(default=None, description="revise until satisfied: every grading pass")
    execution_time: float = 0.0
    timestamp: str = ""


class TemplateSection(_Model):
    """karenina's ``template`` section: the answer, what the judge parsed, and every check's outcome.

    ``verify_result`` is the template's verdict (``verify()`` and the regex checks, after any
    abstention, sufficiency, embedding or deep-judgment override); ``None`` when it did not run.
    ``sufficiency_detected`` is ``True`` when the answer was judged *sufficient*.
    """

    raw_llm_response: str | None = None  # a transcript: rendered in numbered blocks (the full trace)
    trace_messages: list[dict[str, Any]] = Field(default_factory=list, description="a transcript's messages")
    answer_source: Literal["model", "recorded"] | None = None
    parsed_gt_response: dict[str, Any] | None = None
    parsed_llm_response: dict[str, Any] | None = None
    template_verification_performed: bool = False
    verify_result: bool | None = None
    verify_granular_result: float | None = None
    # karenina's agent flags: a tool-using answerer still calling tools after its rounds, or cut by agent_timeout
    recursion_limit_reached: bool = False
    response_timeout_partial: bool = False
    # VerifiedField templates (karenina's names): each field's check() and score(), and the strategy
    field_results: dict[str, bool | None] | None = None
    field_scores: dict[str, float | None] | None = None
    composition_strategy: str | None = None
    field_verification_error: str | None = None
    regex_validations_performed: bool = False
    regex_validation_results: dict[str, bool] = Field(default_factory=dict)
    regex_validation_details: dict[str, dict[str, Any]] = Field(default_factory=dict)
    regex_overall_success: bool | None = None
    regex_extraction_results: dict[str, Any] = Field(default_factory=dict)
    abstention_check_performed: bool = False
    abstention_detected: bool | None = None
    abstention_override_applied: bool = False
    abstention_reasoning: str | None = None
    sufficiency_check_performed: bool = False
    sufficiency_detected: bool | None = None
    sufficiency_override_applied: bool = False
    sufficiency_reasoning: str | None = None
    embedding_check_performed: bool = False
    embedding_similarity_score: float | None = None
    embedding_override_applied: bool = False
    embedding_model_used: str | None = None
    usage_metadata: dict[str, StageUsage] = Field(default_factory=dict)


class TraitOutcome(_Model):
    status: TraitStatus
    score: Score | None = None
    label: str | None = None
    reason: str | None = None
    raw_reply: str | None = None
    error_category: str | None = Field(
        default=None, description="set when a model call failed for good (rate_limit, timeout, ...)"
    )
    unscored_category: UnscoredCategory | None = Field(
        default=None, description="why an unscored trait was not judged, when no model call failed"
    )
    label_read_as: str | None = Field(
        default=None, description="the judge's label as written, when it was mapped leniently to a class name"
    )
    rationale: str | None = Field(default=None, description="a prompt grader's explanation of its score")
    tool_calls: list[dict[str, Any]] | None = Field(
        default=None, description="a tool judge's calls in order: round, id, name, arguments, result (or its reply)")


class TraitWeighing(_Model):
    """One trait's part in the rubric verdict (:mod:`verify.results.rubric_verdict`)."""

    normalised: float | None = Field(default=None, description="the score on 0-1, 1 best; None: not judged")
    weight: float = 1.0
    required: bool = False
    pass_at: float = Field(description="the bar normalised must reach: the trait's pass_threshold, else the rubric's")
    passed: bool | None = Field(default=None, description="None: not judged")


class RubricVerdict(_Model):
    """The task's weighted rubric score (AgentV's formula: sum of normalised score x weight over the total
    weight) and, when the rubric or the config asks for one, its verdict."""

    score: float | None = Field(default=None, description="None when a weighed trait was not judged")
    threshold: float
    verdict: Verdict | None = Field(
        default=None, description="None when no verdict was asked for (karenina's behaviour: scores only)")
    reason: str | None = None
    failed_required: list[str] = Field(default_factory=list, description="required traits that did not pass")
    traits: dict[str, TraitWeighing] = Field(default_factory=dict, description="the weighed traits")


class RubricSection(_Model):
    rubric_evaluation_performed: bool = True
    rubric_evaluation_strategy: str = "batch"
    llm_trait_scores: dict[str, TraitValue] | None = None
    llm_trait_labels: dict[str, str] | None = None
    regex_trait_scores: dict[str, bool] | None = None
    callable_trait_scores: dict[str, Score] | None = None
    metric_trait_scores: dict[str, dict[str, float]] | None = None
    metric_trait_confusion_lists: dict[str, dict[str, list[str]]] | None = None
    trait_provenance: dict[str, str] = Field(default_factory=dict)
    trait_status: dict[str, TraitOutcome] = Field(default_factory=dict)
    rubric_verdict: RubricVerdict | None = None
    schema_judgments: dict[str, SchemaJudgment] | None = Field(
        default=None, description="schema-judge traits: Docent's result (output or failure) and proven citations")


class Excerpt(_Model):
    text: str
    confidence: str = "medium"
    similarity_score: float
    start: int
    end: int
    match_method: str
    spans: list[tuple[int, int]] | None = Field(
        default=None, description="one (start, end) per part of a quote that elides text ('A ... B')"
    )
    search_results: list[dict[str, Any]] | None = None
    hallucination_risk: str | None = None
    hallucination_justification: str | None = None
    block: int | None = Field(default=None, description="a transcript's block [B<n>] the quote starts in")
    supports: str | None = Field(default=None, description="boolean traits: 'meets' or 'fails', the way the judge "
                                 "said the passage points (a verdict against every quote is a contradiction)")


class RejectedExcerpt(_Model):
    text: str
    similarity_score: float
    reason: str | None = None
    attempt: int


class TraitDeepMetadata(_Model):
    stages_completed: list[str] = Field(default_factory=list)
    model_calls: int = 0
    had_excerpts: bool = False
    excerpt_retry_count: int = 0
    excerpt_validation_failed: bool = False
    evidence: Literal["excerpts", "absence", "none", "failed"] = "none"
    settings: dict[str, Any] = Field(default_factory=dict)
    rejected_excerpts: list[RejectedExcerpt] = Field(default_factory=list)
    error: str | None = None


class HallucinationAssessment(_Model):
    overall_risk: str
    per_excerpt_risks: list[str]
    assessed: bool = True
    note: str | None = None


class DeepJudgmentRubricSection(_Model):
    deep_judgment_rubric_performed: bool = True
    extracted_rubric_excerpts: dict[str, list[Excerpt]] = Field(default_factory=dict)
    rubric_trait_reasoning: dict[str, str] = Field(default_factory=dict)
    deep_judgment_rubric_scores: dict[str, Score] = Field(default_factory=dict)
    standard_rubric_scores: dict[str, Score] = Field(default_factory=dict)
    trait_metadata: dict[str, TraitDeepMetadata] = Field(default_factory=dict)
    traits_without_valid_excerpts: list[str] = Field(default_factory=list)
    rubric_hallucination_risk_assessment: dict[str, HallucinationAssessment] | None = None
    total_deep_judgment_model_calls: int = 0
    total_traits_evaluated: int = 0
    total_excerpt_retries: int = 0


class DeepJudgmentSection(_Model):
    """Template deep judgment (karenina's ``deep_judgment`` section), per template attribute."""

    deep_judgment_mode: Literal["reasoning_only", "full"]
    deep_judgment_performed: bool = False
    extracted_excerpts: dict[str, list[Excerpt]] = Field(default_factory=dict)
    rejected_excerpts: dict[str, list[RejectedExcerpt]] = Field(default_factory=dict)
    attribute_reasoning: dict[str, str] = Field(default_factory=dict)
    deep_judgment_stages_completed: list[str] = Field(default_factory=list)
    deep_judgment_model_calls: int = 0
    deep_judgment_excerpt_retry_count: int = 0
    attributes_without_excerpts: list[str] = Field(default_factory=list)
    deep_judgment_search_enabled: bool = False
    hallucination_risk_assessment: dict[str, str] | None = None
    error: str | None = None


class VerificationResult(_Model):
    schema_version: str = SCHEMA_VERSION
    metadata: Metadata
    template: TemplateSection | None = None
    rubric: RubricSection | None = None
    deep_judgment: DeepJudgmentSection | None = None
    deep_judgment_rubric: DeepJudgmentRubricSection | None = None
    # karenina's root trace fields: for a transcript answer, the text the rubric judges read (the
    # template's when no rubric ran) and whether that was the whole rendered trace
    evaluation_input: str | None = None
    used_full_trace: bool = True
    trace_extraction_error: str | None = None

    @property
    def verdict(self) -> Verdict:
        if self.metadata.verdict is not None:
            return self.metadata.verdict
        if self.metadata.failure is not None or (self.template is not None and self.template.verify_result is False):
            return "failed"  # a result written before verdicts existed
        return "passed"

    @property
    def passed(self) -> bool:
        return self.verdict == "passed"
