"""What the user reads in the terminal: the plan (``--show-plan``) and the end-of-run summary."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from verify.benchmark.traits import (
    AssertionTrait,
    CallableTrait,
    LLMTrait,
    MetricTrait,
    RegexTrait,
    SchemaJudgeTrait,
)
from verify.config.deep_judgment import resolve_trait
from verify.errors import ConfigError
from verify.judging.deterministic import is_pickled
from verify.results.reasons import NO_VALID_QUOTE
from verify.results.verdict import NO_PASS_RULE
from verify.results.verdict_plan import verdict_plan
from verify.run.pipeline import FINALIZE, plan
from verify.stages.transcripts import plan_note

if TYPE_CHECKING:
    from verify.benchmark.jsonld import Benchmark
    from verify.benchmark.question import Question
    from verify.config.verification import VerificationConfig
    from verify.run.runner import RunOutcome


def _console() -> Console:
    return Console(width=160, soft_wrap=True)


def trait_kind(trait: object) -> str:
    if isinstance(trait, LLMTrait):
        return "llm/grader (0-1)" if trait.prompt is not None else f"llm/{trait.kind}"
    if isinstance(trait, SchemaJudgeTrait):
        return f"schema_judge/{trait.judge.output_parsing_mode}"
    if isinstance(trait, AssertionTrait):
        return f"assertion/{trait.assertion}"
    for cls, name in ((RegexTrait, "regex"), (CallableTrait, "callable"), (MetricTrait, "metric")):
        if isinstance(trait, cls):
            return name
    return "agentic"


def render_plan(
    benchmark: Benchmark, config: VerificationConfig, questions: Sequence[Question], *,
    code_time_limit: float | None = None, answers: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """The plan of a run, before any model call: stages, tasks, whether each question's answer
    template compiles (and how it decides; each compile within ``code_time_limit`` seconds, default
    that of a run), and each trait's deep-judgment settings. Raises ConfigError when a custom
    deep-judgment config names a trait or question the benchmark lacks."""
    from rich.text import Text

    from verify.results.gates import check_gates
    from verify.results.rubric_verdict import gives_verdict
    from verify.run.tasks import check_deep_judgment_names, check_templates, task_rubric
    from verify.templates.time_limit import DEFAULT_CODE_TIME_LIMIT

    notes = check_deep_judgment_names(benchmark, config)
    console = _console()

    def print_wide(table: Table) -> None:
        # never truncate cells (long karenina question ids differ only in their hash suffix): widen instead
        needed = Measurement.get(console, console.options.update_width(10_000), table).maximum
        (Console(width=needed, soft_wrap=True) if needed > console.width else console).print(table)

    stages = [s.name for s in plan(config)] + [FINALIZE]
    tasks = len(questions) * len(config.answering_models) * len(config.parsing_models) * config.replicate_count
    console.print(f"evaluation_mode: {config.evaluation_mode}")
    console.print(f"deep_judgment_rubric_mode: {config.deep_judgment_rubric_mode}")
    console.print(f"deep_judgment_rubric_strategy: {config.deep_judgment_rubric_strategy}")
    console.print("stages: " + " -> ".join(stages))
    if config.revision_max_iterations is not None:
        console.print(f"revise until satisfied: up to {config.revision_max_iterations} answer-and-grade pass(es) per task "
                      "(a failing criterion goes back to the answering model)")
    console.print(
        f"tasks: {tasks} = {len(questions)} question(s) x {len(config.answering_models)} answering x "
        f"{len(config.parsing_models)} parsing x {config.replicate_count} replicate(s)"
    )
    transcripts = plan_note(config, answers)  # what judges read of transcripts (recorded --answers too)
    if transcripts:
        console.print(Text(transcripts))
    for note in notes:
        console.print(Text(f"warning: {note}"))
    if config.template_enabled:
        checks = check_templates(questions, code_time_limit or DEFAULT_CODE_TIME_LIMIT)
        broken = sum(check.error is not None for check in checks)
        templates = Table(title=f"answer templates: {len(checks) - broken} compile, {broken} broken "
                                "(a broken one fails only its own tasks)")
        for col in ("question", "template", "style / problem"):
            templates.add_column(col)
        for check in checks:
            problem = (check.error or "").removeprefix(f"question {check.question_id!r}: ")
            templates.add_row(Text(check.question_id), "ok" if check.error is None else "broken",
                              Text(check.style if check.error is None else problem))
        print_wide(templates)
    else:
        console.print(f"answer templates: not used in {config.evaluation_mode} mode")
    if config.gates:
        rubrics = [task_rubric(benchmark, config, q)[0] for q in questions]
        pass_rule = config.template_enabled or any(gives_verdict(r, config) for r in rubrics)
        check_gates(config.gates, rubrics, pass_rule=pass_rule)  # a typo fails here too
        console.print(Text("gates: " + "; ".join(config.gates) + " (checked at the end; not met: exit 4)"))
    if not config.rubric_enabled:
        console.print("rubric traits are not evaluated in template_only mode")
        return
    table = Table(title="per-trait evaluation", show_lines=False)
    for col in ("question", "trait", "kind", "deep judgment", "excerpts", "max", "threshold", "retries", "search", "source"):
        table.add_column(col)
    pickled: dict[str, None] = {}  # pickled callable traits, in order, once each
    for q in questions:
        try:
            rubric, _ = benchmark.rubric_for(q)
        except ValueError as exc:  # a trait name in both rubrics: the run would refuse it too
            raise ConfigError(f"question {q.id!r}: {exc}") from None
        for trait in rubric.traits:
            if isinstance(trait, CallableTrait) and is_pickled(trait):
                pickled[trait.name] = None
                run = "runs in a worker (trusted)" if config.trust_checkpoint_code else "skipped: untrusted"
                table.add_row(q.id, trait.name, "callable (cloudpickle)", "n/a", "", "", "", "", "", run)
            elif isinstance(trait, LLMTrait) and trait.prompt is None:  # a prompt grader never runs deep judgment
                s = resolve_trait(config, q.id, trait)
                if s.enabled:
                    table.add_row(q.id, trait.name, trait_kind(trait), "on", str(s.excerpt_enabled), str(s.max_excerpts),
                                  f"{s.fuzzy_match_threshold:.2f}", str(s.excerpt_retry_attempts), str(s.search_enabled), s.source)
                    continue
                table.add_row(q.id, trait.name, trait_kind(trait), "off", "", "", "", "", "", s.source)
            else:
                table.add_row(q.id, trait.name, trait_kind(trait), "n/a", "", "", "", "", "", "")
    print_wide(table)
    verdicts = verdict_plan(benchmark, config, questions)
    console.print(Text(verdicts.line))
    if verdicts.rows:
        weights = Table(title="rubric verdict: per-trait weighting")
        for col in ("trait", "scope", "weight", "required", "pass at", "normalised as"):
            weights.add_column(col)
        for row in verdicts.rows:
            weights.add_row(*(Text(cell) for cell in row))
        print_wide(weights)
    if pickled:
        names = ", ".join(repr(n) for n in pickled)
        if config.trust_checkpoint_code:
            console.print(Text(f"note: {len(pickled)} callable trait(s) stored as cloudpickle will be unpickled and "
                               f"run in worker processes (--trust-checkpoint-code): {names}"))
        else:
            console.print(Text(f"warning: {len(pickled)} callable trait(s) stored as cloudpickle will not run and "
                               f"count as not judged (their tasks end incomplete): {names}; rerun with "
                               "--trust-checkpoint-code if you trust this checkpoint"))


def render_summary(outcome: RunOutcome) -> None:
    console = _console()
    s = outcome.summary
    console.print(f"coverage: {s.coverage_line()}")
    untrusted = s.untrusted_line()
    if untrusted:
        console.print(untrusted, style="yellow", markup=False, highlight=False)
    judged = f"judged (no pass rule) {s.judged_tasks} | " if s.judged_tasks else ""
    rate = s.pass_rate_text() + ("" if not s.has_pass_rule else " (of complete tasks)")
    console.print(
        f"tasks: {s.total} (resumed {outcome.resumed}) | passed {s.passed} | {judged}failed {s.failed} | "
        f"incomplete {s.incomplete} | with errors {s.errors} | pass rate {rate}"
    )
    console.print(
        f"model calls: {s.model_calls} live ({s.http_attempts} HTTP attempts), {s.cached_calls} from cache; "
        f"tokens {s.tokens}" + (f" (the earlier run's results, not counted: {s.earlier_calls} calls, "
                                f"{s.earlier_tokens} tokens)" if outcome.resumed else "")
    )
    if s.prices is not None:
        unpriced = f" (no price for: {', '.join(sorted(s.unpriced_models))})" if s.unpriced_models else ""
        console.print(f"estimated cost: ${s.cost_usd:.4f}{unpriced}")
    if s.dj_traits:
        console.print(
            f"deep judgment: {s.dj_traits} trait evaluations, {s.dj_excerpts} excerpts validated, "
            f"{s.dj_rejected} rejected, {s.dj_retries} retries, {s.dj_without_evidence} traits with {NO_VALID_QUOTE}, "
            f"{s.dj_high_risk} with medium/high hallucination risk"
        )
    if s.failure_categories:
        console.print("failures: " + ", ".join(f"{k} {v}" for k, v in sorted(s.failure_categories.items())))
    rubric = s.rubric_line()
    if rubric:
        console.print(rubric, markup=False, highlight=False)
    revision = s.revision.line()
    if revision:
        console.print(revision, markup=False, highlight=False)
    models = Table(title="by model (answering / judge)")
    for col in ("models", "passed", "complete tasks", "pass rate"):
        models.add_column(col)
    for key, (passed, total) in sorted(s.by_model.items()):
        models.add_row(key, str(passed), str(total), f"{passed / total:.3f}" if total else
                       ("-" if s.has_pass_rule else NO_PASS_RULE))
    console.print(models)
    if s.by_trait:
        traits = Table(title="by trait")
        for col in ("trait", "scored", "mean score", "unscored", "auto-failed", "at its bar (of weighed)"):
            traits.add_column(col)
        for name, t in sorted(s.by_trait.items()):
            mean = f"{t.mean:.3f}" if t.mean is not None else "-"
            share = f"{t.passed}/{t.weighed}" if t.weighed else "-"
            traits.add_row(name, str(t.scored), mean, str(t.unscored), str(t.auto_failed), share)
        console.print(traits)
    gates = s.gate_results()
    if gates:
        table = Table(title="gates (met when the whole run meets them)")
        for col in ("gate", "scope", "value", "verdict"):
            table.add_column(col)
        for g in gates:
            rows = [("run", g.value, g.passed), *((pair, *vp) for pair, vp in sorted(g.by_model.items()))]
            for scope, value, met in rows:
                table.add_row(g.gate, scope, "n/a" if value is None else f"{value:.3f}", "met" if met else "NOT MET")
        console.print(table)
    if outcome.output:
        console.print(f"results: {outcome.output}")
