"""Tests for the preparation of quoted texts: shared by every quote, bounded, and no more work than needed."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_fuzzy import make_text, random_quote, with_typo
from verify.judging.excerpts import match_excerpt, normalise, prepared, validate_excerpts
from verify.judging.excerpts.anchors import KeyIndex
from verify.judging.excerpts.folding import fold
from verify.judging.excerpts.normalise import Normalized
from verify.judging.excerpts.prepared import PreparedTexts


@pytest.fixture
def preparations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A fresh process-wide cache, and the texts prepared from now on (in order)."""
    prepared_texts: list[str] = []

    def counting(text: str) -> Normalized:
        prepared_texts.append(text)
        return Normalized(text)

    monkeypatch.setattr(prepared, "_SHARED", PreparedTexts())
    monkeypatch.setattr(prepared, "Normalized", counting)
    return prepared_texts


@pytest.fixture
def indexes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts whose key index is built from now on."""
    built: list[str] = []

    def counting(text: str) -> KeyIndex:
        built.append(text)
        return KeyIndex(text)

    monkeypatch.setattr(normalise, "KeyIndex", counting)
    return built


def test_an_answer_is_prepared_once_for_every_trait_and_juror_that_quotes_it(preparations: list[str]) -> None:
    answer = "The **patient** received 5 mg of aspirin.\n\n- It reduced the fever within two hours."
    # Each trait validates its own quotes, from its own copy of the answer (an equal string).
    for trait in range(5):
        copy = "".join(list(answer))
        matches = validate_excerpts(["the patient received 5mg", f"reduced the  fever {trait}"], copy)
        assert matches[0].valid
    assert match_excerpt("received 5 mg of Aspirin", answer).valid
    assert preparations == [answer]


def test_an_exact_quote_needs_no_preparation(preparations: list[str]) -> None:
    assert match_excerpt("received 5 mg", "The patient received 5 mg of aspirin.").method == "exact"
    assert preparations == []


def test_the_answers_of_many_tasks_in_flight_stay_prepared(preparations: list[str]) -> None:
    rng = random.Random(3)
    answers = [make_text(rng, 3_000) + f" Task {n}." for n in range(100)]
    for _ in range(3):  # three traits per task, the tasks interleaved as they are in a run
        for answer in answers:
            assert match_excerpt(normalise.normalize_text(answer[100:180]).upper(), answer).valid
    assert preparations == answers


def test_the_cache_is_bounded_in_characters() -> None:
    cache = PreparedTexts(max_chars=10_000)
    texts = [f"{n} " + "word " * 800 for n in range(3)]  # about 4,000 characters each
    for text in texts:
        cache.get(text)
    assert len(cache) == 2
    first = cache.get(texts[1])  # the most recently used ones are kept ...
    assert cache.get(texts[1]) is first
    huge = "x " * 20_000
    assert cache.get(huge).original == huge  # ... and the newest, even when it alone is too long
    assert len(cache) == 1
    cache.clear()
    assert len(cache) == 0


def test_the_first_fuzzy_quote_on_a_long_answer_does_not_index_it(
    preparations: list[str], indexes: list[str]
) -> None:
    rng = random.Random(60)
    text = make_text(rng, 60_000)
    quote = with_typo(rng, random_quote(rng, text, 100, 200))
    found = match_excerpt(quote, text)
    assert found.valid and found.method == "fuzzy"
    assert indexes == []
    for _ in range(20):  # quoted fuzzily again and again, the answer is indexed once
        assert match_excerpt(with_typo(rng, random_quote(rng, text, 100, 200)), text).valid
    assert len(indexes) == 1


@pytest.mark.parametrize("seed", range(3))
def test_matches_are_the_same_with_and_without_the_index(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    text = make_text(rng, 30_000)
    quotes = [with_typo(rng, random_quote(rng, text, 40, 300)) for _ in range(20)]
    half = len(text) // 2
    quotes += [
        random_quote(rng, text[:half], 40, 90) + " " + random_quote(rng, text[half:], 40, 90)
        for _ in range(5)
    ]
    monkeypatch.setattr(prepared, "_SHARED", PreparedTexts())
    monkeypatch.setattr(normalise, "INDEX_COST_SCANS", 10**9)
    searched = validate_excerpts(quotes, text)
    monkeypatch.setattr(prepared, "_SHARED", PreparedTexts())
    monkeypatch.setattr(normalise, "INDEX_COST_SCANS", 0)
    assert validate_excerpts(quotes, text) == searched


# The normalisation looks for special sequences only where one can start. The reference below looks
# at every character that might start one (as the first version did), so the two must agree.
_TRIGGERS = frozenset("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f*_`[]!")


def _reference(text: str) -> str:
    folded = fold(text)[0]
    candidates = sorted(
        {0, *(i for i, char in enumerate(folded) if char in _TRIGGERS)}
        | {m.start() + 1 for m in re.finditer(rf"\d (?={normalise._UNIT})", folded)}
        | {m.start() for m in re.finditer(r"(?=  )", folded)}
    )
    parts: list[str] = []
    last = 0
    for pos in candidates:
        if pos < last:
            continue
        begin = pos
        while begin > last and folded[begin - 1] == " ":
            begin -= 1
        m = normalise._SPECIAL_RE.match(folded, begin)
        if begin < pos and (m is None or m.end() <= pos):
            m = normalise._SPECIAL_RE.match(folded, pos)
        if m is None or m.end() == m.start():
            continue
        parts.append(folded[last : m.start()])
        kind = m.lastgroup or ""
        kept = kind == "md" and normalise._is_marker_kept(folded, m.start(), m.end())
        parts.append(m.group() if kept else normalise._REPLACEMENTS[kind])
        last = m.end()
    parts.append(folded[last:])
    return re.sub(r"[\t\n\x0b\x0c\r\x1c-\x1f]", " ", "".join(parts))


_PIECES = [
    "a",
    "b",
    "1",
    "42",
    " ",
    "  ",
    "\n",
    "\n\n",
    "\t",
    "*",
    "**",
    "_",
    "`",
    "[",
    "]",
    "(",
    ")",
    "!",
    "[t](http://x.org)",
    "# ",
    "> ",
    "- ",
    "+ ",
    "1. ",
    "2) ",
    "mg",
    "°c",
    "%",
    "é",
    "\u00a0",
    ",",
    "\u0663",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join))
def test_the_normalised_text_is_the_same_as_looking_everywhere(text: str) -> None:
    assert Normalized(text).norm == _reference(text)


def test_a_long_text_is_normalised_as_looking_everywhere() -> None:
    rng = random.Random(5)
    text = "".join(rng.choice(_PIECES + [" word"] * 20) for _ in range(6_000))  # non-ASCII here and there
    assert Normalized(text).norm == _reference(text)


@pytest.mark.parametrize("ascii_before", range(250, 262))
def test_an_accent_is_composed_with_its_letter_wherever_the_text_is_cut_into_blocks(
    ascii_before: int,
) -> None:
    text = "x" * ascii_before + "e\u0301 caf\u00e9 " + "y" * 600 + "\u00c9"
    assert fold(text)[0] == "x" * ascii_before + "\u00e9 caf\u00e9 " + "y" * 600 + "\u00e9"
