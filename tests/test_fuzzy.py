"""Tests for verify.judging.excerpts.match: excerpt validation for deep judgment."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from verify.judging.excerpts import ExcerptMatch, match_excerpt, normalize_text, validate_excerpts
from verify.judging.excerpts.match import MAX_FUZZY_CHARS, MIN_FUZZY_CHARS

WORDS = (
    "the of and to in is was for that with as on by at from it an be this which or are were has have "
    "had not but all can its more one their also been other into than only these two may first time "
    "would some after most such new used over any when where who what water energy cell system model "
    "data value level result process method study light heat change number point group form rate "
    "temperature pressure surface growth protein acid sample measure effect analysis structure "
    "function reaction solution increase decrease between during within under about through while "
    "because however therefore although usually often several large small high low early late "
    "important different similar common general specific direct indirect total average"
).split()


def make_text(rng: random.Random, length: int) -> str:
    """Realistic-looking prose: capitalised sentences, commas, numbers, paragraphs, some Markdown."""
    parts: list[str] = []
    size = 0
    while size < length:
        sentence_words = [rng.choice(WORDS) for _ in range(rng.randint(6, 18))]
        if rng.random() < 0.3:
            sentence_words[rng.randrange(len(sentence_words))] = str(rng.randint(1, 5000))
        if rng.random() < 0.2:
            k = rng.randrange(len(sentence_words))
            sentence_words[k] = f"**{sentence_words[k]}**"
        if rng.random() < 0.3:
            k = rng.randrange(1, len(sentence_words))
            sentence_words[k - 1] += ","
        sentence = " ".join(sentence_words)
        sentence = sentence[0].upper() + sentence[1:] + rng.choice([".", ".", ".", "?", ";"])
        roll = rng.random()
        separator = "\n\n" if roll < 0.1 else "\n- " if roll < 0.15 else " "
        parts.append(sentence + separator)
        size += len(sentence) + len(separator)
    return "".join(parts)[:length]


def random_quote(rng: random.Random, text: str, low: int, high: int) -> str:
    """A verbatim substring that starts and ends on word boundaries and is not blank."""
    while True:
        size = rng.randint(low, min(high, len(text) - 1))
        start = rng.randrange(0, len(text) - size)
        while start > 0 and text[start - 1].isalnum():
            start -= 1
        end = start + size
        while end < len(text) and text[end].isalnum():
            end += 1
        quote = text[start:end]
        if quote.strip():
            return quote


NEGATIONS = {"no", "not", "nor", "none", "never", "without"}


def with_typo(rng: random.Random, quote: str) -> str:
    """Replace one lowercase letter outside negation words (a typo there rightly changes the meaning)."""
    letters = [
        m.start() + k
        for m in re.finditer(r"\w+", quote)
        if m.group().lower() not in NEGATIONS
        for k, c in enumerate(m.group())
        if c.islower()
    ]
    i = rng.choice(letters)
    return quote[:i] + ("x" if quote[i] != "x" else "z") + quote[i + 1 :]


ANSWER = (
    "## Summary\n\n"
    "**Note**: The boiling point of water at sea level is 100 degrees Celsius, which is well known.\n"
    "- Marie Curie discovered radium in 1898 together with her husband.\n"
    "- The capital of France is Paris, and it is not the largest city in the European Union.\n\n"
    "The mitochondria is the powerhouse of the cell and produces most of the chemical energy "
    "needed to power the biochemical reactions of the cell.\n"
    "Photosynthesis converts light energy into chemical energy that is stored in glucose molecules "
    "and later released through cellular respiration.\n"
    "In 2019 the company reported revenue of 42 million dollars, a record for the firm.\n"
    "The treatment was never approved in Europe because the trial did not meet its primary endpoint.\n"
    "Use `numpy.linalg.solve` to solve the linear system \u2014 it is \u201cfast\u201d and stable\u2026\n"
)


# --------------------------------------------------------------------------------------------------
# Table-driven cases
# --------------------------------------------------------------------------------------------------

ACCEPTED = [
    pytest.param("The boiling point of water at sea level is 100 degrees Celsius", "exact", id="exact"),
    pytest.param("Curie", "exact", id="exact-short"),
    pytest.param(
        "The boiling point  of water\nat sea   level is 100 degrees Celsius", "normalized", id="whitespace"
    ),
    pytest.param('it is "fast" and stable...', "normalized", id="ascii-quotes-and-ellipsis-for-typographic"),
    pytest.param("solve the linear system - it is", "normalized", id="hyphen-for-em-dash"),
    pytest.param("the boiling point of water AT SEA LEVEL is 100 degrees celsius", "normalized", id="case"),
    pytest.param("Note: The boiling point of water", "normalized", id="markdown-bold"),
    pytest.param("Use numpy.linalg.solve to solve", "normalized", id="markdown-backticks"),
    pytest.param(
        "Marie Curie discovered radium in 1898 together with her husband. The capital of France is Paris",
        "normalized",
        id="markdown-list-bullets",
    ),
    pytest.param("\u201cThe capital of France is Paris\u201d", "normalized", id="quoted-by-judge"),
    pytest.param(
        "The mitochondria is the powerhuose of the cell and produces most of the chemical energy",
        "fuzzy",
        id="typo-transposition",
    ),
    pytest.param(
        "The mitochondria is the powerhouse of teh cell and produces most of the chemical enrgy needed",
        "fuzzy",
        id="two-typos",
    ),
    pytest.param(
        "Photosynthesis convert light energy into chemical energy that is stored in glucose molecules",
        "fuzzy",
        id="dropped-letter",
    ),
    pytest.param(
        "Teh treatment was never approved in Europe because the trial did not meet its primary endpoint",
        "fuzzy",
        id="typo-in-sentence-opener",
    ),
    pytest.param(
        "Photosynthesis converts light energy into chemicalenergy that is stored in glucose molecules",
        "fuzzy",
        id="missing-space",
    ),
    pytest.param(
        "The mitochondria is the powerhouse of the cell and produces ... reactions of the cell.",
        "elided",
        id="elided-with-ellipsis",
    ),
    pytest.param(
        "The mitochondria is the powerhouse of cell and produces most of the chemical energy",
        "fuzzy",
        id="dropped-article",
    ),
]


@pytest.mark.parametrize(("excerpt", "method"), ACCEPTED)
def test_accepted(excerpt: str, method: str) -> None:
    m = match_excerpt(excerpt, ANSWER)
    assert m.valid, m
    assert m.method == method
    assert m.reason is None
    assert m.matched == ANSWER[m.start : m.end]
    if method in ("exact", "normalized", "elided"):
        assert m.similarity == 1.0
    else:
        assert 0.8 <= m.similarity < 1.0


REJECTED = [
    pytest.param(
        "Quantum computers use qubits to perform calculations exponentially faster than classical ones.",
        "",
        id="fabricated",
    ),
    pytest.param(
        "Cells rely on mitochondria as their energy factories, generating most of the power they need.",
        "below threshold",
        id="paraphrase",
    ),
    pytest.param(
        "The boiling point of water at sea level is 90 degrees Celsius, which is well known.",
        "number changed: 100 -> 90",
        id="number-changed",
    ),
    pytest.param(
        "In 2019 the company reported revenue of 24 million dollars, a record for the firm.",
        "number changed: 42 -> 24",
        id="number-swapped-digits",
    ),
    pytest.param(
        "In 2018 the company reported revenue of 42 million dollars, a record for the firm.",
        "number changed",
        id="year-changed",
    ),
    pytest.param(
        "The boiling point of water at sea level is not 100 degrees Celsius, which is well known.",
        'negation added: "not"',
        id="negation-inserted",
    ),
    pytest.param(
        "The capital of France is Paris, and it is the largest city in the European Union.",
        'negation removed: "not"',
        id="negation-removed",
    ),
    pytest.param(
        "The treatment was approved in Europe because the trial did meet its primary endpoint.",
        'negation removed: "never", "not"',
        id="two-negations-removed",
    ),
    pytest.param(
        "The capital of France is Lyon, and it is not the largest city in the European Union.",
        "name changed",
        id="city-changed",
    ),
    pytest.param(
        "Pierre Curie discovered radium in 1898 together with her husband.",
        "name changed",
        id="person-changed",
    ),
    pytest.param(
        "The capital of Spain is Paris, and it is not the largest city in the European Union.",
        "name changed",
        id="country-changed-mid-sentence",
    ),
    pytest.param(
        "The mitochondria is the powerhouse of the cell and produces most of the chemical energy "
        "that is stored in glucose molecules and later released through cellular respiration.",
        "",
        id="spliced-halves",
    ),
    pytest.param(
        "Photosynthesis converts light energy into chemical energy that is stored in glucose molecules "
        "because the trial did not meet its primary endpoint.",
        "",
        id="spliced-unbalanced",
    ),
    pytest.param(
        "The mitochondria is the powerhouse of the cell and produces most of the electrical energy "
        "needed to power the biochemical reactions of the cell.",
        'changed words: "chemical" -> "electrical"',
        id="word-substituted",
    ),
    pytest.param(
        "The mitochondria is the powerhouse of the cell and makes most of the chemical energy "
        "needed to power the biochemical reactions of the cell.",
        'changed words: "produces" -> "makes"',
        id="synonym-substituted",
    ),
    pytest.param(
        "The boiling point of water at sea level ... did not meet its primary endpoint.",
        "parts too far apart",
        id="elided-parts-far-apart",
    ),
    pytest.param("Lyon", "not found", id="short-not-found"),
    pytest.param("capital of Spain", "not found", id="short-no-fuzzy"),
]


@pytest.mark.parametrize(("excerpt", "reason"), REJECTED)
def test_rejected(excerpt: str, reason: str) -> None:
    m = match_excerpt(excerpt, ANSWER)
    assert not m.valid, m
    assert m.method == "failed"
    assert m.reason is not None
    assert reason in m.reason
    assert 0.0 <= m.similarity <= 1.0


@pytest.mark.parametrize(("excerpt", "reason"), REJECTED)
def test_guards_do_not_depend_on_a_high_threshold(excerpt: str, reason: str) -> None:
    assert not match_excerpt(excerpt, ANSWER, threshold=0.5).valid


@pytest.mark.parametrize("excerpt", ["", "   ", "\n\t "])
def test_empty_excerpt(excerpt: str) -> None:
    m = match_excerpt(excerpt, ANSWER)
    assert m == ExcerptMatch(False, 0.0, -1, -1, "failed", "empty excerpt")


def test_excerpt_empty_after_normalisation() -> None:
    m = match_excerpt("\u200b\u200d\ufeff", "plain text without markers")
    assert not m.valid
    assert m.reason == "empty excerpt"


@pytest.mark.parametrize("text", ["", "  \n "])
def test_empty_text(text: str) -> None:
    m = match_excerpt("some excerpt of the answer", text)
    assert not m.valid
    assert m.similarity == 0.0
    assert (m.start, m.end) == (-1, -1)


@pytest.mark.parametrize("threshold", [-0.1, 1.5, float("nan")])
def test_invalid_threshold(threshold: float) -> None:
    with pytest.raises(ValueError):
        match_excerpt("abc", "abc", threshold=threshold)
    with pytest.raises(ValueError):
        validate_excerpts([], "abc", threshold=threshold)


def test_threshold_controls_fuzzy_acceptance() -> None:
    excerpt = "The mitochondria is the powerhouse of teh cell and produces most of the chemical enrgy needed"
    loose = match_excerpt(excerpt, ANSWER, threshold=0.8)
    strict = match_excerpt(excerpt, ANSWER, threshold=0.99)
    assert loose.valid
    assert not strict.valid
    assert strict.reason is not None and strict.reason.startswith("below threshold 0.99")
    assert strict.similarity == loose.similarity


def test_fuzzy_rejection_reports_candidate_span() -> None:
    m = match_excerpt("The boiling point of water at sea level is 90 degrees Celsius", ANSWER)
    assert not m.valid
    assert m.start >= 0
    assert "100 degrees" in m.matched
    assert m.matched == ANSWER[m.start : m.end]


def test_near_duplicate_passages_pick_the_right_one() -> None:
    first = "Return a list of the words in the string, using sep as the delimiter, starting from the left."
    second = "Return a list of the words in the string, using sep as the delimiter, starting from the right."
    text = f"{first}\n\nSome unrelated filler sentence goes here.\n\n{second}"
    m = match_excerpt(
        "Return a list of the wrods in the string, using sep as the delimiter, starting from the right", text
    )
    assert m.valid, m
    assert m.start > len(first)
    assert m.matched == second[:-1]


def test_name_guard_allows_lowercased_name() -> None:
    text = "Everyone agrees that the city of Paris hosted the summer games in 1924 and again later."
    m = match_excerpt("that the city of paris hosted the sumer games in 1924 and again later", text)
    assert m.valid, m


def test_typo_in_name_is_rejected() -> None:
    text = "The prize was shared with Marie Curie and Henri Becquerel for their work on radioactivity."
    m = match_excerpt("The prize was shared with Marie Curei and Henri Becquerel for their work", text)
    assert not m.valid
    assert m.reason is not None and "name changed" in m.reason


def test_thousands_separator_is_not_a_number_change() -> None:
    text = "The survey collected responses from 12,500 participants across the whole country last year."
    m = match_excerpt("The survey colected responses from 12500 participants across the whole country", text)
    assert m.valid, m


# --------------------------------------------------------------------------------------------------
# Offsets
# --------------------------------------------------------------------------------------------------

OFFSET_CASES = [
    pytest.param("Hello world. The answer is 42.", "The answer is 42.", "The answer is 42.", id="exact"),
    pytest.param(
        "  ...  leading punctuation, then the quoted sentence is here.",
        "the quoted sentence is here",
        "the quoted sentence is here",
        id="leading-punctuation-and-space",
    ),
    pytest.param(
        "# Title\n\n**Bold** intro. The   value\nis 42 here.",
        "the value is 42 here",
        "The   value\nis 42 here",
        id="markdown-before-whitespace-in-quote",
    ),
    pytest.param(
        "> quoted\n\n* item one\n* The\u00a0value \u2014 \u201cforty\u201d",
        'The value - "forty"',
        "The\u00a0value \u2014 \u201cforty\u201d",
        id="nbsp-dash-quotes",
    ),
    pytest.param(
        "\u200bzero\u200b width and Stra\u00dfe street name",
        "ZERO WIDTH AND STRASSE",
        "zero\u200b width and Stra\u00dfe",
        id="zero-width-and-casefold-expansion",
    ),
    pytest.param(
        "See [the docs](https://example.com/x) for details\u2026 more",
        "See the docs for details...",
        "See [the docs](https://example.com/x) for details\u2026",
        id="markdown-link-and-ellipsis",
    ),
    pytest.param(
        "Intro.\n- first point about things\n- second point",
        "first point about things second point",
        "first point about things\n- second point",
        id="list-items",
    ),
]


@pytest.mark.parametrize(("text", "excerpt", "expected"), OFFSET_CASES)
def test_offsets_map_to_original(text: str, excerpt: str, expected: str) -> None:
    m = match_excerpt(excerpt, text)
    assert m.valid, m
    assert m.similarity == 1.0
    assert text[m.start : m.end] == expected
    assert m.matched == expected


def test_exact_offsets_keep_surrounding_whitespace_of_excerpt() -> None:
    text = "alpha beta gamma delta"
    m = match_excerpt(" beta gamma ", text)
    assert m.method == "exact"
    assert text[m.start : m.end] == " beta gamma "
    m = match_excerpt("  beta gamma\n", text)
    assert m.method == "exact"
    assert text[m.start : m.end] == "beta gamma"


def test_fuzzy_offsets_cover_the_quoted_sentence() -> None:
    m = match_excerpt(
        "Photosynthesis converts light enegry into chemical energy that is stored in glucose", ANSWER
    )
    assert m.valid and m.method == "fuzzy"
    assert m.matched == "Photosynthesis converts light energy into chemical energy that is stored in glucose"


def test_normalize_text() -> None:
    assert normalize_text("  **Hello**\u00a0\u201cWorld\u201d \u2014 `x`\u2026 ") == 'hello "world" - x...'
    assert normalize_text("snake_case and 2*3 and a * b") == "snake_case and 2*3 and a * b"
    assert normalize_text("# Heading\n> quote\n- item\n+ other") == "heading quote item other"


# --------------------------------------------------------------------------------------------------
# Batches
# --------------------------------------------------------------------------------------------------


def test_validate_excerpts_matches_single_calls() -> None:
    excerpts = [row.values[0] for row in ACCEPTED + REJECTED] + ["", "Curie"]
    batch = validate_excerpts(excerpts, ANSWER, threshold=0.8)
    assert batch == [match_excerpt(e, ANSWER, 0.8) for e in excerpts]


# --------------------------------------------------------------------------------------------------
# Deterministic acceptance of verbatim quotes
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [2_000, 20_000, 100_000])
def test_verbatim_quotes_always_accepted(length: int) -> None:
    rng = random.Random(length)
    text = make_text(rng, length)
    assert len(text) == length
    quotes = []
    for _ in range(200):
        size = rng.randint(40, 200)
        start = rng.randrange(0, length - size)
        quotes.append(text[start : start + size])
    results = validate_excerpts(quotes, text, threshold=0.8)
    assert all(m.valid and m.similarity == 1.0 for m in results)
    assert all(text[m.start : m.end] == q for m, q in zip(results, quotes, strict=True))


@pytest.mark.parametrize("length", [2_000, 20_000, 100_000])
def test_quotes_with_one_typo_accepted_and_splices_rejected(length: int) -> None:
    rng = random.Random(7 * length)
    text = make_text(rng, length)
    accepted = 0
    for _ in range(40):
        quote = random_quote(rng, text, 60, 200)
        accepted += match_excerpt(with_typo(rng, quote), text).valid
        first = random_quote(rng, text[: length // 2 - 200], 40, 100)
        second = random_quote(rng, text[length // 2 :], 40, 100)
        splice = first.rstrip() + " " + second.lstrip()
        assert not match_excerpt(splice, text).valid, splice
    assert accepted == 40


def test_long_excerpts_in_long_text() -> None:
    rng = random.Random(11)
    text = make_text(rng, 100_000)
    for size in (500, 2_000, 4_000):
        start = rng.randrange(0, len(text) - size)
        quote = text[start : start + size]
        typo = match_excerpt(with_typo(rng, quote), text)
        assert typo.valid and typo.method == "fuzzy", typo.reason
        assert abs(typo.start - start) <= 2 and abs(typo.end - (start + size)) <= 2
        other = rng.randrange(0, len(text) - size)
        spliced = match_excerpt(quote[: size // 2] + text[other + size // 2 : other + size], text)
        assert not spliced.valid


def test_fuzzy_matching_is_capped_for_huge_excerpts() -> None:
    rng = random.Random(12)
    text = make_text(rng, 20_000)
    quote = with_typo(rng, text[100 : 100 + MAX_FUZZY_CHARS + 100])
    m = match_excerpt(quote, text)
    assert not m.valid
    assert m.reason is not None and "limited to" in m.reason


# --------------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------------

PROPERTY_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@PROPERTY_SETTINGS
@given(
    seed=st.integers(0, 2**32 - 1),
    length=st.sampled_from([50, 300, 2_000, 20_000, 100_000]),
    data=st.data(),
)
def test_any_substring_of_wordish_text_is_exact(seed: int, length: int, data: st.DataObject) -> None:
    text = make_text(random.Random(seed), length)
    size = data.draw(st.integers(10, min(400, len(text))), label="size")
    start = data.draw(st.integers(0, len(text) - size), label="start")
    excerpt = text[start : start + size]
    assume(excerpt.strip())
    m = match_excerpt(excerpt, text)
    assert m.valid and m.method == "exact" and m.similarity == 1.0
    assert text[m.start : m.end] == excerpt == m.matched


@PROPERTY_SETTINGS
@given(text=st.text(min_size=10, max_size=3_000), data=st.data())
def test_any_substring_of_arbitrary_text_is_exact(text: str, data: st.DataObject) -> None:
    size = data.draw(st.integers(10, len(text)), label="size")
    start = data.draw(st.integers(0, len(text) - size), label="start")
    excerpt = text[start : start + size]
    assume(excerpt.strip())
    m = match_excerpt(excerpt, text)
    assert m.valid and m.similarity == 1.0
    assert text[m.start : m.end] == excerpt


@PROPERTY_SETTINGS
@given(text=st.text(max_size=2_000), excerpt=st.text(max_size=300), threshold=st.floats(0.0, 1.0))
def test_arbitrary_inputs_never_crash(text: str, excerpt: str, threshold: float) -> None:
    m = match_excerpt(excerpt, text, threshold)
    assert 0.0 <= m.similarity <= 1.0
    assert (m.method == "failed") == (not m.valid)
    if m.start >= 0:
        assert 0 <= m.start <= m.end <= len(text)
        assert m.matched == text[m.start : m.end]
    else:
        assert m.end == -1 and not m.valid


@PROPERTY_SETTINGS
@given(
    seed=st.integers(0, 2**32 - 1),
    length=st.sampled_from([300, 2_000, 20_000, 100_000]),
    upper=st.booleans(),
    data=st.data(),
)
def test_reformatted_substring_matches_after_normalisation(
    seed: int, length: int, upper: bool, data: st.DataObject
) -> None:
    rng = random.Random(seed)
    text = make_text(rng, length)
    excerpt = random_quote(rng, text, 10, 300)
    # Re-space only between words: "- " at a line start is a list bullet, "-\n" would not be one.
    spacing = data.draw(st.sampled_from(["  ", "\n", " \t "]), label="space")
    reformatted = re.sub(r"(?<=\w) (?=\w)", spacing, excerpt)
    reformatted = reformatted.upper() if upper else reformatted
    m = match_excerpt(reformatted, text)
    assert m.valid and m.similarity == 1.0
    assert m.method in ("exact", "normalized")
    assert normalize_text(text[m.start : m.end]) == normalize_text(reformatted)


@PROPERTY_SETTINGS
@given(seed=st.integers(0, 2**32 - 1), length=st.sampled_from([2_000, 20_000, 100_000]))
def test_single_typo_in_long_quote_is_accepted(seed: int, length: int) -> None:
    rng = random.Random(seed)
    text = make_text(rng, length)
    quote = random_quote(rng, text, 60, 300)
    assume(len(normalize_text(quote)) >= MIN_FUZZY_CHARS)
    typo = with_typo(rng, quote)
    m = match_excerpt(typo, text)
    assert m.valid, (m, typo)
    assert m.similarity >= 0.8


def test_a_quote_starting_at_a_bulleted_list_number_keeps_its_number() -> None:
    # found by test_single_typo_in_long_quote_is_accepted (seed 389): "* 226." is a bullet and a list
    # number, which normalisation drops, so the number guard must not count 226 as inserted
    text = "Intro line.\n* 226. Other and small group been all acid point within about not acid early protein."
    quote = "* 226. Other and small group been all acid point within about not acid early protien."
    m = match_excerpt(quote, text)
    assert m.valid, m
    assert match_excerpt("* 227. Other and small group been all acid point within about not acid early protien.",
                         "Intro line.\nOther 226 and small group been all acid point within about not acid early protein.").valid is False
