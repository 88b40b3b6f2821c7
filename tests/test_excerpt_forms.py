"""Quotes as judges write them: elisions, Unicode variants, Markdown, and reasons that name the difference."""

from __future__ import annotations

import random
import unicodedata

import pytest

from verify.judging.excerpts import ExcerptMatch, match_excerpt, normalize_text, validate_excerpts
from verify.judging.excerpts.elision import MAX_ELISION_GAP

ANSWER = (
    "# Findings\n\n"
    "The mitochondria is the powerhouse of the cell and produces most of the chemical energy needed to "
    "power the biochemical reactions of the cell. Atmospheric CO\u2082 rose from 280\u00a0ppm to 415\u00a0ppm "
    "between 1800 and 2020, according to measurements made at Mauna Loa in Hawaii.\n\n"
    "- The compound inhibited the kinase with an IC\u2085\u2080 of 0.5\u00a0\u00b5M, which is not considered "
    "potent for a drug candidate.\n"
    "- Cells were incubated at 37\u00a0\u00b0C for 24 hours in 5\u202fmL of medium with 10\u2009\u00b5g of "
    "ampicillin.\n\n"
    "> The cafe\u0301 near the station serves 2 kinds of cre\u0302pes and does not accept cards on Sundays.\n\n"
    "1. The \ufb01nal product was puri\ufb01ed by \ufb02ash chromatography on silica in Paris.\n"
    "2. Temperatures fell to \u221240\u00a0\u00b0C in January, and the apartment\u2010sized room measured "
    "12\u00a0m\u00b2.\n\n"
    "**Aspirin** reduces the risk of a second heart attack by about 25\u00a0% in patients with `CHD`, "
    "as shown in [the ISIS-2 trial](https://example.org/isis2) from Oxford. Levels of "
    "\uff21\uff34\uff30 dropped by half within 3 hours.\n"
)


def spans_text(m: ExcerptMatch) -> list[str]:
    return [ANSWER[start:end] for start, end in m.spans]


# --------------------------------------------------------------------------------------------------
# Elided quotes
# --------------------------------------------------------------------------------------------------

FIRST = "The mitochondria is the powerhouse of the cell"
SECOND = "the biochemical reactions of the cell"


@pytest.mark.parametrize(
    "marker",
    [
        " ... ",
        "...",
        " \u2026 ",
        "\u2026",
        " [...] ",
        " [..] ",
        " (...) ",
        " [\u2026] ",
        " (\u2026) ",
        " . . . ",
    ],
)
def test_elided_quote_is_valid_with_one_span_per_part(marker: str) -> None:
    m = match_excerpt(FIRST + marker + SECOND, ANSWER)
    assert m.valid, m
    assert m.method == "elided"
    assert m.similarity == 1.0
    assert spans_text(m) == [FIRST, SECOND]
    assert (m.start, m.end) == (m.spans[0][0], m.spans[-1][1])
    assert m.matched == ANSWER[m.start : m.end]


def test_elided_quote_with_three_parts_and_normalised_parts() -> None:
    quote = "the MITOCHONDRIA is the powerhouse ... produces most of the chemical energy \u2026 reactions of the cell"
    m = match_excerpt(quote, ANSWER)
    assert m.valid and m.method == "elided", m
    assert spans_text(m) == [
        "The mitochondria is the powerhouse",
        "produces most of the chemical energy",
        "reactions of the cell",
    ]


def test_elided_quote_across_unicode_and_markdown() -> None:
    quote = "Atmospheric CO2 rose from 280 ppm [...] made at Mauna Loa in Hawaii. The compound inhibited the kinase"
    m = match_excerpt(quote, ANSWER)
    assert m.valid and m.method == "elided", m
    assert spans_text(m) == [
        "Atmospheric CO\u2082 rose from 280\u00a0ppm",
        "made at Mauna Loa in Hawaii.\n\n- The compound inhibited the kinase",
    ]


def test_elided_quote_with_a_typo_in_a_long_part() -> None:
    quote = (
        "The mitochondria is the powerhouse of teh cell and produces ... biochemical reactions of the cell"
    )
    m = match_excerpt(quote, ANSWER)
    assert m.valid and m.method == "elided", m
    assert 0.8 <= m.similarity < 1.0
    assert spans_text(m) == [
        "The mitochondria is the powerhouse of the cell and produces",
        "biochemical reactions of the cell",
    ]


@pytest.mark.parametrize(
    ("quote", "span"),
    [
        ("... the powerhouse of the cell and produces", "the powerhouse of the cell and produces"),
        ("\u2026the powerhouse of the cell", "the powerhouse of the cell"),
        ("[...] the powerhouse of the cell", "the powerhouse of the cell"),
        ("the powerhouse of the cell ...", "the powerhouse of the cell"),
        ("the powerhouse of the cell (...)", "the powerhouse of the cell"),
        ("\u201c... the powerhouse of the cell [\u2026]\u201d", "the powerhouse of the cell"),
    ],
)
def test_leading_and_trailing_ellipsis(quote: str, span: str) -> None:
    m = match_excerpt(quote, ANSWER)
    assert m.valid, m
    assert m.matched == span
    assert m.spans == ((m.start, m.end),)


@pytest.mark.parametrize(
    ("quote", "reason"),
    [
        pytest.param(SECOND + " ... " + FIRST, "parts not in order", id="reordered"),
        pytest.param(
            "The mitochondria is the powerhouse ... reduces the risk of a second heart attack",
            "parts too far apart",
            id="distant-parts",
        ),
        pytest.param("The ... is", "part 1 too short", id="tiny-parts"),
        pytest.param(
            "The mitochondria is the powerhouse ... of the", "part 2 too short", id="tiny-second-part"
        ),
        pytest.param(
            "Atmospheric CO2 rose from 280 ppm to 415 ppm ... between 1800 and 2021, according to measurements",
            "number changed: 2020 -> 2021",
            id="number-changed-in-part",
        ),
        pytest.param(
            "The compound inhibited the kinase ... which is considered potent for a drug candidate",
            'negation removed: "not"',
            id="negation-removed-in-part",
        ),
        pytest.param(
            "The mitochondria is the powerhouse ... the sun is a very large star",
            'part 2 not found: "the sun is a very large star"',
            id="part-not-found",
        ),
        pytest.param(
            "Quantum computers use qubits ... the biochemical reactions of the cell",
            "part 1 not found",
            id="first-part-not-found",
        ),
    ],
)
def test_bad_elisions_fail(quote: str, reason: str) -> None:
    m = match_excerpt(quote, ANSWER)
    assert not m.valid, m
    assert m.method == "failed"
    assert m.reason is not None and reason in m.reason, m.reason
    assert all(0 <= start < end <= len(ANSWER) for start, end in m.spans)


def test_gap_limit_is_in_normalised_characters() -> None:
    filler = " ".join(f"word{i}" for i in range(200))
    text = f"Alpha beta gamma delta. {filler[: MAX_ELISION_GAP - 10]} Epsilon zeta eta theta."
    assert match_excerpt("Alpha beta gamma delta ... Epsilon zeta eta theta", text).valid
    far = f"Alpha beta gamma delta. {filler[: MAX_ELISION_GAP + 50]} Epsilon zeta eta theta."
    m = match_excerpt("Alpha beta gamma delta ... Epsilon zeta eta theta", far)
    assert not m.valid and m.reason is not None and "too far apart" in m.reason


def test_literal_ellipsis_of_the_text_still_matches_whole() -> None:
    text = "The loop runs for i in range(10) ... and then the program prints the total of all values."
    m = match_excerpt(
        "The loop runs for i in range(10) ... and then the program prints the totl of all values", text
    )
    assert m.valid, m


def test_elided_spliced_halves_of_distant_passages_fail() -> None:
    quote = "produces most of the chemical energy needed ... the ISIS-2 trial from Oxford"
    m = match_excerpt(quote, ANSWER)
    assert not m.valid
    assert m.reason is not None and "too far apart" in m.reason


# --------------------------------------------------------------------------------------------------
# Unicode compatibility forms
# --------------------------------------------------------------------------------------------------

UNICODE_CASES = [
    pytest.param(
        "Atmospheric CO2 rose from 280 ppm to 415 ppm",
        "Atmospheric CO\u2082 rose from 280\u00a0ppm to 415\u00a0ppm",
        id="subscript-digit",
    ),
    pytest.param(
        "Atmospheric CO2 rose from 280ppm to 415ppm",
        "Atmospheric CO\u2082 rose from 280\u00a0ppm to 415\u00a0ppm",
        id="unit-without-space",
    ),
    pytest.param(
        "with an IC50 of 0.5 \u03bcM", "with an IC\u2085\u2080 of 0.5\u00a0\u00b5M", id="ic50-and-greek-mu"
    ),
    pytest.param(
        "with an IC50 of 0.5\u00b5M", "with an IC\u2085\u2080 of 0.5\u00a0\u00b5M", id="micro-sign-no-space"
    ),
    pytest.param(
        "incubated at 37\u00b0C for 24 hours in 5 mL",
        "incubated at 37\u00a0\u00b0C for 24 hours in 5\u202fmL",
        id="degree-no-space",
    ),
    pytest.param(
        "incubated at 37 \u2103 for 24 hours in 5mL",
        "incubated at 37\u00a0\u00b0C for 24 hours in 5\u202fmL",
        id="celsius-sign",
    ),
    pytest.param(
        "in 5\u2007mL of medium with 10\u3000\u00b5g of",
        "in 5\u202fmL of medium with 10\u2009\u00b5g of",
        id="figure-and-ideographic-spaces",
    ),
    pytest.param(
        "The caf\u00e9 near the station serves 2 kinds of cr\u00eapes",
        "The cafe\u0301 near the station serves 2 kinds of cre\u0302pes",
        id="nfc-quote-nfd-text",
    ),
    pytest.param(
        "The final product was purified by flash chromatography",
        "The \ufb01nal product was puri\ufb01ed by \ufb02ash chromatography",
        id="ligatures",
    ),
    pytest.param(
        "Temperatures fell to -40 \u00b0C in January",
        "Temperatures fell to \u221240\u00a0\u00b0C in January",
        id="minus-sign",
    ),
    pytest.param(
        "the apartment-sized room measured 12 m2",
        "the apartment\u2010sized room measured 12\u00a0m\u00b2",
        id="hyphen-and-superscript",
    ),
    pytest.param("the apartment\u2013sized room", "the apartment\u2010sized room", id="en-dash-for-hyphen"),
    pytest.param(
        "Levels of ATP dropped by half", "Levels of \uff21\uff34\uff30 dropped by half", id="fullwidth"
    ),
    pytest.param(
        "by about 25% in patients with CHD",
        "by about 25\u00a0% in patients with `CHD`",
        id="percent-and-code",
    ),
]


@pytest.mark.parametrize(("quote", "expected"), UNICODE_CASES)
def test_unicode_variants_are_valid_with_original_offsets(quote: str, expected: str) -> None:
    m = match_excerpt(quote, ANSWER)
    assert m.valid, m
    assert m.method == "normalized"
    assert m.matched == expected
    assert m.spans == ((m.start, m.end),)


def test_nfd_quote_of_nfc_text() -> None:
    text = "Le caf\u00e9 cr\u00e8me co\u00fbte 3\u00a0\u20ac \u00e0 Montr\u00e9al."
    m = match_excerpt(unicodedata.normalize("NFD", "caf\u00e9 cr\u00e8me co\u00fbte 3 \u20ac"), text)
    assert m.valid and m.matched == "caf\u00e9 cr\u00e8me co\u00fbte 3\u00a0\u20ac"


def test_decomposed_accent_at_span_end_is_kept() -> None:
    m = match_excerpt("near the station. The caf\u00e9", "Stop near the station. The cafe\u0301 is closed.")
    assert m.valid and m.matched == "near the station. The cafe\u0301"


@pytest.mark.parametrize(
    "space", ["\u00a0", "\u202f", "\u2009", "\u2007", "\u2002", "\u205f", "\u3000", "\u200a"]
)
@pytest.mark.parametrize(
    "dash", ["\u2010", "\u2011", "\u2012", "\u2013", "\u2014", "\u2015", "\u2212", "\ufe63", "\uff0d"]
)
def test_every_space_and_dash_variant(space: str, dash: str) -> None:
    text = f"The test{space}value was 10{dash}20 units in all runs."
    m = match_excerpt("the test value was 10-20 units", text)
    assert m.valid and m.matched == f"The test{space}value was 10{dash}20 units"


def test_normalize_text_folds_compatibility_forms() -> None:
    assert (
        normalize_text("CO\u2082 at 37\u00a0\u2103, IC\u2085\u2080 = 5\u202f\u00b5M, \ufb01ne")
        == "co2 at 37°c, ic50 = 5μm, fine"
    )
    assert normalize_text("cafe\u0301") == normalize_text("caf\u00e9") == "caf\u00e9"
    assert normalize_text("\uff21\uff34\uff30 \u2014 x\u2212y") == "atp - x-y"
    assert normalize_text("2 and 3 in 1921 by") == "2 and 3 in 1921 by"  # only units lose their space


def test_random_word_spans_in_any_normal_form_are_valid() -> None:
    rng = random.Random(5)
    words = [w for w in ANSWER.split() if w.strip("*#>-`[]()")]
    for _ in range(300):
        i = rng.randrange(len(words) - 6)
        if words[i + 5].rstrip(".").isdigit():
            continue  # a quote that ends with the number of the next list item
        variant = unicodedata.normalize(rng.choice(["NFKC", "NFD", "NFC"]), " ".join(words[i : i + 6]))
        m = match_excerpt(variant, ANSWER)
        assert m.valid, (variant, m.reason)
        assert m.matched == ANSWER[m.start : m.end]


# --------------------------------------------------------------------------------------------------
# Markdown decoration
# --------------------------------------------------------------------------------------------------

MARKDOWN_CASES = [
    pytest.param(
        "Aspirin reduces the risk of a second heart attack",
        "**Aspirin** reduces the risk of a second heart attack",
        id="bold-in-text",
    ),
    pytest.param(
        "in patients with CHD, as shown in the ISIS-2 trial from Oxford",
        "in patients with `CHD`, as shown in [the ISIS-2 trial](https://example.org/isis2) from Oxford",
        id="code-and-link-in-text",
    ),
    pytest.param(
        "ampicillin. The cafe\u0301 near the station",
        "ampicillin.\n\n> The cafe\u0301 near the station",
        id="blockquote-in-text",
    ),
    pytest.param(
        "on Sundays. The final product", "on Sundays.\n\n1. The \ufb01nal product", id="ordered-list-in-text"
    ),
    pytest.param(
        "potent for a drug candidate. Cells were incubated",
        "potent for a drug candidate.\n- Cells were incubated",
        id="bullet-in-text",
    ),
    pytest.param("Findings The mitochondria is", "Findings\n\nThe mitochondria is", id="heading-in-text"),
    pytest.param(
        "- The compound inhibited the **kinase**", "The compound inhibited the kinase", id="markers-in-quote"
    ),
    pytest.param(
        "1. _The_ final product was purified",
        "The \ufb01nal product was puri\ufb01ed",
        id="ordered-marker-and-emphasis-in-quote",
    ),
    pytest.param(
        "> The mitochondria is the `powerhouse`",
        "The mitochondria is the powerhouse",
        id="blockquote-and-code-in-quote",
    ),
    pytest.param(
        "[the ISIS-2 trial](https://example.org/other) from Oxford",
        "[the ISIS-2 trial](https://example.org/isis2) from Oxford",
        id="link-in-quote",
    ),
]


@pytest.mark.parametrize(("quote", "expected"), MARKDOWN_CASES)
def test_markdown_decoration_is_tolerated(quote: str, expected: str) -> None:
    m = match_excerpt(quote, ANSWER)
    assert m.valid, m
    assert m.matched == expected


def test_quote_may_keep_the_number_of_a_list_item() -> None:
    m = match_excerpt("flash chromatography on silica in Paris. 2. Temperatures fell to -40 \u00b0C", ANSWER)
    assert m.valid, m
    assert (
        m.matched
        == "\ufb02ash chromatography on silica in Paris.\n2. Temperatures fell to \u221240\u00a0\u00b0C"
    )
    wrong = match_excerpt(
        "flash chromatography on silica in Paris. 3. Temperatures fell to -40 \u00b0C", ANSWER
    )
    assert not wrong.valid and wrong.reason == "list number changed: 2 -> 3"


def test_hard_wrapped_number_is_not_a_list_marker() -> None:
    text = "The count of samples reached\n42. Then the study stopped after the second interim analysis."
    assert normalize_text(text).startswith("the count of samples reached 42. then")
    m = match_excerpt("The count of samples reached 42. Then the study stoped after the second interim", text)
    assert m.valid, m


# --------------------------------------------------------------------------------------------------
# Meaning changes still fail, through every form
# --------------------------------------------------------------------------------------------------

CHANGED = [
    pytest.param(
        "Atmospheric CO3 rose from 280 ppm to 415 ppm between 1800 and 2020",
        "number changed: 2 -> 3",
        id="subscript-number",
    ),
    pytest.param(
        "The compound inhibited the kinase with an IC50 of 5 \u03bcM, which is not considered potent",
        "number changed: 0.5 -> 5",
        id="decimal",
    ),
    pytest.param(
        "Temperatures fell to 40 \u00b0C in January, and the apartment-sized room measured 12 m2",
        "number changed: -40 -> 40",
        id="sign",
    ),
    pytest.param(
        "Cells were incubated at 38\u00b0C for 24 hours in 5mL of medium with 10 \u03bcg of ampicillin",
        "number changed: 37 -> 38",
        id="unit-glued",
    ),
    pytest.param(
        "The caf\u00e9 near the station serves 2 kinds of cr\u00eapes and does accept cards on Sundays",
        'negation removed: "not"',
        id="negation-removed",
    ),
    pytest.param(
        "The mitochondria is not the powerhouse of the cell and produces most of the chemical energy",
        'negation added: "not"',
        id="negation-added",
    ),
    pytest.param(
        "The final product was purified by flash chromatography on silica in Lyon.",
        'name changed: "Paris" -> "Lyon"',
        id="city",
    ),
    pytest.param(
        "**Aspirin** reduces the risk of a second heart attack by about 25 % in patients with CHD, as shown in the ISIS-2 trial from Cambridge",
        'name changed: "Oxford" -> "Cambridge"',
        id="name-through-markdown",
    ),
    pytest.param(
        "The mitochondria is the powerhouse of the cell and produces most of the compound inhibited the kinase with an IC50",
        "",
        id="splice",
    ),
]


@pytest.mark.parametrize(("quote", "reason"), CHANGED)
def test_meaning_changes_fail(quote: str, reason: str) -> None:
    m = match_excerpt(quote, ANSWER)
    assert not m.valid, m
    assert m.reason is not None and reason in m.reason, m.reason


# --------------------------------------------------------------------------------------------------
# Reasons name the difference
# --------------------------------------------------------------------------------------------------

REASON_TEXT = (
    "The committee approved the new budget after a long debate. It was not a unanimous decision, "
    "and 3 members voted against it on Tuesday."
)

REASONS = [
    pytest.param(
        "The committee approved the very new budget after a long debate.",
        'inserted words: "very"',
        id="inserted",
    ),
    pytest.param(
        "The committee approved the new budget after a debate. It was not a unanimous",
        'missing words: "long"',
        id="missing",
    ),
    pytest.param(
        "The committee rejected the new budget after a long debate.",
        'changed words: "approved" -> "rejected"',
        id="changed",
    ),
    pytest.param(
        "It was a unanimous decision, and 3 members voted against it on Tuesday.",
        'negation removed: "not"',
        id="negation-removed",
    ),
    pytest.param(
        "It was not a unanimous decision, and 2 members voted against it on Tuesday.",
        "number changed: 3 -> 2",
        id="number-changed",
    ),
    pytest.param(
        "It was not a unanimous decision, and members voted against it on Tuesday.",
        "number missing: 3",
        id="number-missing",
    ),
    pytest.param(
        "It was not a unanimous decision, and 3 members voted against it on Friday.",
        'name changed: "Tuesday" -> "Friday"',
        id="name-changed",
    ),
    pytest.param(
        "The committee approved the new budget after a long debate. The decision was not unanimous.",
        "",
        id="rewritten",
    ),
]


@pytest.mark.parametrize(("quote", "reason"), REASONS)
def test_reasons_name_the_difference(quote: str, reason: str) -> None:
    m = match_excerpt(quote, REASON_TEXT)
    assert not m.valid, m
    assert m.reason is not None and m.reason.startswith(reason), m.reason
    assert "(none)" not in m.reason
    assert len(m.reason) < 160


def test_inserted_capitalised_word_is_not_called_a_name_change() -> None:
    text = "Mitochondria produce most chemical energy needed by cells, in the form of ATP."
    m = match_excerpt("The Mitochondria produce most chemical energy needed by cells", text)
    assert not m.valid
    assert m.reason == 'inserted words: "The"'


# --------------------------------------------------------------------------------------------------
# Spans and batches
# --------------------------------------------------------------------------------------------------


def test_spans_of_simple_matches() -> None:
    exact = match_excerpt("The mitochondria is the powerhouse", ANSWER)
    assert exact.method == "exact" and exact.spans == ((exact.start, exact.end),)
    fuzzy = match_excerpt("The mitochondria is the powerhuose of the cell and produces most", ANSWER)
    assert fuzzy.method == "fuzzy" and fuzzy.spans == ((fuzzy.start, fuzzy.end),)
    candidate = match_excerpt("Nothing like this is in the answer at all, really.", "Short answer.")
    assert not candidate.valid and candidate.spans == ((0, 13),)  # the closest passage, for feedback
    missing = match_excerpt("Lyon", ANSWER)
    assert not missing.valid and missing.spans == () and missing.start == -1


def test_validate_excerpts_matches_single_calls() -> None:
    quotes = [FIRST + " ... " + SECOND, SECOND + " ... " + FIRST, "CO2 rose from 280 ppm", "The ... is"]
    assert validate_excerpts(quotes, ANSWER) == [match_excerpt(q, ANSWER) for q in quotes]
