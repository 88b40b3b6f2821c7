"""Batched rubric deep judgment (``deep_judgment_rubric_strategy: batched``): every deep-judgment
trait of a task in a few shared calls instead of ~3 calls per trait.

Steps, each for all traits at once: (1) one excerpt call quotes the response per trait; quotes are
validated per trait with the trait's own threshold and maximum (the per-trait validator); (2) one
retry call covers only the traits with no valid quote (or no usable entry), with feedback naming each
rejected quote, repeated while some trait still has retries left (its ``excerpt_retry_attempts``);
(3) when a trait uses search, each of its valid quotes is searched; (4) one call gives every trait's
reasoning over its own numbered evidence, its verdict and, for searched quotes, their hallucination
risk. Traits whose verdict entry is missing or invalid are asked again, alone, in a follow-up of that
conversation (up to :data:`VERDICT_ATTEMPTS` replies).

The evidence policy is :mod:`verify.judging.deep_judgment`'s, unchanged: a trait whose quotes never
validate is auto-failed; ``nothing_relevant`` is evidence of absence and a verdict that contradicts it
is auto-failed as ungrounded; a trait the judge never answered usably (the whole reply unparseable, or
its entry missing every time) is unscored, never failed. Results are the same ``TraitJudgment``s,
so nothing downstream knows which strategy ran. ``metadata.model_calls`` counts every call that
served the trait: a batch call counts once for each trait it covered.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from verify.benchmark.traits import LLMTrait
from verify.config.deep_judgment import TraitDJSettings
from verify.errors import ModelError
from verify.judging.batched_prompts import (
    TraitEvidence,
    batch_excerpt_prompt,
    batch_verdict_prompt,
    excerpts_reply,
    trait_keys,
    verdicts_reply,
)
from verify.judging.consistency import evidence_block, not_reasoning, opposed_verdict, ungrounded_verdict
from verify.judging.deep_fallback import fall_back
from verify.judging.deep_judgment import RISK_ORDER, TraitContext, TraitJudgment
from verify.judging.excerpts import validate_excerpts
from verify.judging.quotes import read_quotes
from verify.judging.verdicts import Conflicting, check_label, check_score
from verify.llm.ports import Message, Purpose, SearchHit
from verify.llm.resilience import redact
from verify.llm.structured import ask_structured
from verify.results.models import (
    Excerpt,
    HallucinationAssessment,
    RejectedExcerpt,
    TraitDeepMetadata,
    TraitOutcome,
)
from verify.results.reasons import CONTRADICTION, NO_VALID_QUOTE

if TYPE_CHECKING:
    from verify.config.prompts import PromptTask

__all__ = ["VERDICT_ATTEMPTS", "judge_traits"]

VERDICT_ATTEMPTS = 3
"""Verdict replies read per task: traits left out or answered unusably are asked again, alone."""


@dataclass
class _Quotes:
    """One trait's excerpt step so far (what ``deep_judgment.extract_evidence`` keeps per trait)."""

    valid: list[Excerpt] = field(default_factory=list)
    rejected: list[RejectedExcerpt] = field(default_factory=list)
    absence: bool = False
    attempts: int = 0
    quoted: int = 0  # attempts whose entry held at least one quote (not a placeholder)
    parsed: int = 0
    error: str | None = None
    raw_reply: str | None = None
    problem: str = ""  # this attempt's feedback line(s) for the retry

    @property
    def settled(self) -> bool:
        return bool(self.valid) or self.absence


def _entry(value: Any) -> tuple[Any, bool]:
    """A trait's entry in the excerpt reply as (quote items, nothing_relevant); a bare list is its quotes."""
    if isinstance(value, dict):
        return value.get("excerpts"), value.get("nothing_relevant") is True
    return value, False


def _read_entry(trait: LLMTrait, value: Any, s: TraitDJSettings, st: _Quotes, response: str, raw: str) -> None:
    name = trait.name
    if isinstance(value, Conflicting):  # two different entries for one trait: neither is taken
        st.error, st.raw_reply = f"the trait's entry is {value.problem}", raw
        st.problem = f"- {name}: {value.problem}"
        return
    quotes, nothing_relevant = _entry(value)
    items, placeholders = read_quotes(quotes, s.max_excerpts)
    if not items:
        if nothing_relevant:
            st.absence = True
            return
        st.error, st.raw_reply = "the judge gave no quote and did not say that nothing is relevant", raw
        why = "your quotes were placeholders copied from the instructions" if placeholders else "no excerpts"
        st.problem = f"- {name}: {why}; quote the relevant passages, or set nothing_relevant"
        return
    st.quoted += 1
    matches = validate_excerpts([q.text for q in items], response, s.fuzzy_match_threshold)
    for item, m in zip(items, matches, strict=True):
        if m.valid:
            st.valid.append(Excerpt(
                text=item.text, confidence=item.confidence, similarity_score=round(m.similarity, 4),
                start=m.start, end=m.end, match_method=m.method, spans=list(m.spans) if len(m.spans) > 1 else None,
                supports=item.supports if trait.kind == "boolean" else None))
        else:
            st.rejected.append(RejectedExcerpt(text=item.text, similarity_score=round(m.similarity, 4),
                                               reason=m.reason, attempt=st.attempts))
    if not st.valid:
        st.error = None
        bad = [r for r in st.rejected if r.attempt == st.attempts]
        st.problem = f"- {name} (threshold {s.fuzzy_match_threshold:.2f}): none of its quotes appear verbatim:\n" + "\n".join(
            f'  - "{r.text}" (similarity {r.similarity_score:.2f}: {r.reason})' for r in bad)


async def _quote(traits: list[LLMTrait], settings: dict[str, TraitDJSettings], ctx: TraitContext,
                 calls: dict[str, int]) -> tuple[dict[str, _Quotes], tuple[ModelError, list[str]] | None]:
    """Steps (1)-(2): the excerpt call, then retries for the traits still without evidence. A call
    that fails for good is returned with the traits it was for: only those are left unscored (a
    trait whose quotes validated on an earlier attempt keeps them)."""
    state = {t.name: _Quotes() for t in traits}
    pending = list(traits)
    feedback: str | None = None
    limits = {t.name: settings[t.name].max_excerpts for t in traits}
    while pending:
        attempt = state[pending[0].name].attempts + 1
        prompt = batch_excerpt_prompt(ctx.question, ctx.response, pending, limits, feedback)
        try:
            reply = await ask_structured(
                ctx.judge, ctx.instructions.messages("dj_rubric_excerpt_extraction", prompt),
                excerpts_reply(trait_keys(pending)), purpose=Purpose.DJ_BATCH_EXCERPTS, max_parse_retries=0,
            )
        except ModelError as exc:
            return state, (exc, [t.name for t in pending])
        entries = reply.value.locate([t.name for t in pending]) if reply.value is not None else {}
        for t in pending:
            st = state[t.name]
            st.attempts, calls[t.name] = attempt, calls[t.name] + reply.calls
            if reply.value is None:
                st.error, st.raw_reply = reply.error or "unparseable reply", reply.raw_text
                st.problem = ""
                continue
            st.parsed += 1
            if t.name not in entries:
                st.error, st.raw_reply = "the trait is missing from the judge's reply", reply.raw_text
                st.problem = f"- {t.name}: missing from your reply; give its quotes or set nothing_relevant"
                continue
            value, where = entries[t.name]
            _read_entry(t, value, settings[t.name], st, ctx.response, reply.raw_text)
            if where != "traits" and st.problem:
                st.problem += f' (it was found under {where}: put it directly under "traits")'

        pending = [t for t in pending
                   if not state[t.name].settled and attempt <= settings[t.name].excerpt_retry_attempts]
        if pending:
            total = 1 + max(settings[t.name].excerpt_retry_attempts for t in pending)
            # the attempt number makes every retry a new request (never answered from the response cache)
            lines = "\n".join(state[t.name].problem for t in pending if state[t.name].problem)
            unusable = f"Your previous reply could not be used ({reply.error}). " if reply.value is None else ""
            feedback = (f"Attempt {attempt + 1} of {total}. {unusable}Answer for these traits only.\n{lines}\n"
                        "Copy passages exactly as written.")
    return state, None


def _settle_quotes(result: TraitJudgment, st: _Quotes) -> bool:
    """Record the excerpt step on the trait; False when the trait is decided (auto-failed or unscored)."""
    meta = result.metadata
    meta.stages_completed.append("excerpt_extraction")
    meta.excerpt_retry_count, meta.rejected_excerpts = max(0, st.attempts - 1), st.rejected
    if not st.settled and st.quoted == 0:  # never a usable entry: a judge failure, not missing evidence
        result.reason, result.raw_reply = f"excerpt reply unusable: {st.error}", st.raw_reply
        result.unscored_category = "invalid_reply" if st.parsed else "unparseable"
        return False
    if not st.settled:
        meta.excerpt_validation_failed, meta.evidence = True, "failed"
        result.status, result.reason = "auto_failed", NO_VALID_QUOTE
        return False
    meta.had_excerpts, meta.evidence = bool(st.valid), "excerpts" if st.valid else "absence"
    result.excerpts = st.valid
    return True


def _render_hits(hits: list[SearchHit]) -> str:
    return "\n".join(f"- {h.content} ({h.url or h.title or 'no source'})" for h in hits) or "(no results)"


async def _search(excerpts: list[Excerpt], ctx: TraitContext) -> list[str | None]:
    """Step (3): each excerpt searched (as ``check_with_search`` does); ``None`` where the search failed."""
    assert ctx.search is not None
    search = ctx.search

    async def one(excerpt: Excerpt) -> str | None:
        try:
            hits = await search.search(excerpt.text[:400])
        except Exception:  # search outages degrade to "not assessed"
            return None
        excerpt.search_results = [{"content": h.content, "title": h.title, "url": h.url} for h in hits]
        return _render_hits(hits)

    return list(await asyncio.gather(*(one(e) for e in excerpts)))


def _risks(item: dict[str, Any], excerpts: list[Excerpt], found: list[str | None]) -> HallucinationAssessment:
    failed = sum(f is None for f in found)
    if failed == len(found):
        return HallucinationAssessment(overall_risk="not_assessed", per_excerpt_risks=[], assessed=False,
                                       note="search failed for every excerpt")
    given = item.get("risks")
    by_id = {str(r.get("excerpt_id", "")).strip(): r for r in given if isinstance(r, dict)} if isinstance(given, list) else {}
    risks: list[str] = []
    for i, (excerpt, hits) in enumerate(zip(excerpts, found, strict=True), 1):
        verdict = by_id.get(f"E{i}")
        risk = str(verdict.get("risk", "")).strip().lower() if verdict and hits is not None else ""
        if risk in RISK_ORDER and verdict is not None:
            excerpt.hallucination_risk = risk
            excerpt.hallucination_justification = str(verdict.get("justification") or "")
            risks.append(risk)
    overall = max(risks, key=lambda r: RISK_ORDER[r]) if risks else "not_assessed"
    note = f"{failed} excerpt search(es) failed" if failed else None if risks else "no risk given for the excerpts"
    return HallucinationAssessment(overall_risk=overall, per_excerpt_risks=risks, assessed=bool(risks), note=note)


def _read_verdict(trait: LLMTrait, item: Any) -> TraitOutcome:
    if isinstance(item, Conflicting):
        return TraitOutcome(status="unscored", reason=item.problem, unscored_category="invalid_reply")
    if not isinstance(item, dict) or "verdict" not in item:
        return TraitOutcome(status="unscored", reason='no "verdict" given', unscored_category="invalid_reply")
    outcome = (check_label if trait.kind == "literal" else check_score)(trait, item["verdict"])
    why = not_reasoning(str(item.get("reasoning") or ""), trait) if outcome.status == "scored" else None
    if why is not None:  # a verdict without reasoning behind it is asked again, like a bad verdict
        return TraitOutcome(status="unscored", reason=f'"reasoning" is not reasoning: {why}',
                            unscored_category="invalid_reply")
    return outcome


@dataclass
class _Round:
    """One verdict reply's reading: the feedback lines for the traits asked again."""

    problems: list[str] = field(default_factory=list)
    contradicted: set[str] = field(default_factory=set)  # sent back once with their evidence already
    again: set[str] = field(default_factory=set)  # contradictions sent back by this reply's feedback


def _conclude(result: TraitJudgment, trait: LLMTrait, item: dict[str, Any], outcome: TraitOutcome,
              rounds: _Round, last: bool) -> None:
    """Record a readable verdict; one that contradicts the judge's finding of nothing relevant is sent
    back once (a feedback line), then left unscored as a contradiction."""
    meta = result.metadata
    reasoning = item.get("reasoning")
    result.reasoning = reasoning if isinstance(reasoning, str) else ""
    for stage in ("reasoning_generation", "score_extraction"):
        if stage not in meta.stages_completed:
            meta.stages_completed.append(stage)
    assert outcome.score is not None
    problem = (ungrounded_verdict(trait, outcome.score) if meta.evidence == "absence"
               else opposed_verdict(trait, outcome.score, result.excerpts))
    if problem is not None:
        result.reason, result.unscored_category = f"{CONTRADICTION}: {problem}", "contradiction"
        if trait.name not in rounds.contradicted and not last:
            rounds.contradicted.add(trait.name)
            rounds.again.add(trait.name)
            evidence = evidence_block(result.excerpts).replace("\n", "; ")
            rounds.problems.append(f"- {trait.name}: your verdict contradicts your own evidence: {problem}. Its "
                                   f"evidence: {evidence} Give a verdict that agrees with it.")
        return
    result.label_read_as = outcome.label_read_as
    result.status, result.score, result.label = "scored", outcome.score, outcome.label
    result.reason = result.unscored_category = None


def _read_item(name: str, trait: LLMTrait, located: tuple[Any, str] | None, result: TraitJudgment,
               found: dict[str, list[str | None]]) -> tuple[TraitOutcome, str]:
    """The outcome of one trait's verdict entry and, for the feedback, where the entry was found."""
    if located is None:
        return TraitOutcome(status="unscored", reason="trait missing from the judge's reply",
                            unscored_category="invalid_reply"), ""
    item, where = located
    outcome = _read_verdict(trait, item)
    if name in found and isinstance(item, dict) and not (result.hallucination and result.hallucination.assessed):
        result.hallucination = _risks(item, result.excerpts, found[name])
    return outcome, "" if where == "traits" else f' (found under {where}: put it directly under "traits")'


async def _verdicts(items: list[TraitEvidence], found: dict[str, list[str | None]], ctx: TraitContext,
                    results: dict[str, TraitJudgment], calls: dict[str, int]) -> None:
    """Step (4): reasoning, verdict and risks of every trait in one call, with follow-ups for the unusable ones."""
    by_name = {item.trait.name: item.trait for item in items}
    # one call does the work of three per-trait steps: the user's instructions for each of them apply
    config = ctx.instructions.prompt_config
    tasks: list[PromptTask] = ["dj_rubric_score_extraction"]
    if found:
        tasks.append("dj_rubric_hallucination")
    extras = [config.get_for_task(task) for task in tasks] if config is not None else []
    system = "\n\n".join([ctx.instructions.system("dj_rubric_reasoning"), *(e for e in extras if e and e.strip())])
    conversation = [Message("system", system), Message("user", batch_verdict_prompt(ctx.question, ctx.response, items))]
    pending = list(by_name)
    rounds = _Round()
    for attempt in range(1, VERDICT_ATTEMPTS + 1):
        schema = verdicts_reply(trait_keys([by_name[n] for n in pending]), bool(found))
        reply = await ask_structured(ctx.judge, conversation, schema, purpose=Purpose.DJ_BATCH_SCORE)
        for name in pending:
            calls[name] += reply.calls
        if reply.value is None:
            for name in pending:
                result = results[name]
                result.reason = f"score reply unparseable after {reply.attempts} attempt(s): {reply.error}"
                result.raw_reply, result.unscored_category = reply.raw_text, "unparseable"
            return
        located = reply.value.locate(pending)
        rounds.problems, rounds.again = [], set()
        for name in pending:
            trait, result = by_name[name], results[name]
            outcome, where = _read_item(name, trait, located.get(name), result, found)
            if outcome.status == "unscored":
                result.reason, result.raw_reply = f"score reply unusable: {outcome.reason}", reply.raw_text
                result.unscored_category = "invalid_reply"
                rounds.problems.append(f"- {name}: {outcome.reason}{where}")
                continue
            stages = result.metadata.stages_completed
            if result.hallucination is not None and result.hallucination.assessed and "hallucination_assessment" not in stages:
                stages.append("hallucination_assessment")
            item = located[name][0]
            _conclude(result, trait, item, outcome, rounds, attempt == VERDICT_ATTEMPTS)
            result.raw_reply = reply.raw_text if result.status == "unscored" else None
        pending = [n for n in pending if results[n].status == "unscored"
                   and (results[n].unscored_category != "contradiction" or n in rounds.again)]
        if not pending or attempt == VERDICT_ATTEMPTS:
            return
        said = reply.raw_text if reply.raw_text.strip() else "(empty reply)"
        conversation += [Message("assistant", said), Message("user", (
            "Some traits of your reply could not be used:\n" + "\n".join(rounds.problems) +
            f"\nReply again (attempt {attempt + 1} of {VERDICT_ATTEMPTS}) for these traits only, with their exact "
            'names, directly under "traits", each with its reasoning and its verdict.'))]


def _failed(results: dict[str, TraitJudgment], names: list[str], exc: ModelError, calls: dict[str, int]) -> None:
    for name in names:
        result = results[name]
        calls[name] += 1  # the failed call still served (and is recorded for) the trait
        result.metadata.error = redact(str(exc))
        result.reason = f"judge call failed ({exc.category}): {result.metadata.error}"
        result.error_category = exc.category


async def judge_traits(traits: list[LLMTrait], settings: dict[str, TraitDJSettings],
                       ctx: TraitContext) -> list[TraitJudgment]:
    """Deep judgment of ``traits`` in shared calls; one ``TraitJudgment`` per trait, in order.

    Never raises for model or parse failures: an outage leaves the traits its call served unscored.
    """
    results = {t.name: TraitJudgment(name=t.name, status="unscored",
                                     metadata=TraitDeepMetadata(settings=settings[t.name].as_dict())) for t in traits}
    calls = dict.fromkeys(results, 0)
    quoting = [t for t in traits if settings[t.name].excerpt_enabled]
    going = [t for t in traits if not settings[t.name].excerpt_enabled]
    quotes, failure = await _quote(quoting, settings, ctx, calls) if quoting else ({}, None)
    if failure is not None:
        exc, lost = failure
        _failed(results, lost, exc, calls)
        quoting = [t for t in quoting if t.name not in lost]
    evidence: dict[str, list[str] | None] = {t.name: None for t in going}
    for t in quoting:
        if _settle_quotes(results[t.name], quotes[t.name]):
            going.append(t)
            evidence[t.name] = [e.text for e in quotes[t.name].valid]
    going.sort(key=traits.index)
    searched = [t for t in going if results[t.name].excerpts and settings[t.name].search_enabled and ctx.search is not None]
    found = dict(zip([t.name for t in searched],
                     await asyncio.gather(*(_search(results[t.name].excerpts, ctx) for t in searched)), strict=True))
    items = [TraitEvidence(t, evidence[t.name], found.get(t.name)) for t in going]
    if items:
        try:
            await _verdicts(items, found, ctx, results, calls)
        except ModelError as exc:
            _failed(results, [t.name for t in going if results[t.name].status == "unscored"], exc, calls)
    await fall_back(traits, settings, ctx, results, calls)
    for name, result in results.items():
        result.metadata.model_calls = calls[name]
        if name in found and result.hallucination is None:
            result.hallucination = HallucinationAssessment(overall_risk="not_assessed", per_excerpt_risks=[],
                                                           assessed=False, note="risk reply unusable")
    return [results[t.name] for t in traits]
