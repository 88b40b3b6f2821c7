"""Three classes of quotes the excerpt matcher used to misjudge, and the threshold boundary.

1. A list quoted on one line with its markers, against the same items on separate lines: valid,
   with offsets from the first quoted item to the last.
2. A quote whose first (or last) word looks like a fragment of the text's word plus a typo
   (``foox`` against ``libfoo``): a different word, rejected. Truncation alone or a typo alone is fine.
3. A typo in a word capitalised only by its position (sentence start, after a dash, a colon or a list
   marker): valid. Names (capitalised mid-sentence, acronyms, CamelCase) still may not change.
"""

from __future__ import annotations

import math

import pytest

from verify.judging.excerpts import match_excerpt
from verify.judging.excerpts.guards import typo_limit
from verify.judging.excerpts.names import name_problem
from verify.judging.excerpts.normalise import list_on_lines

# --------------------------------------------------------------------------------------------------
# 1. Lists quoted on one line
# --------------------------------------------------------------------------------------------------

RECIPE = (
    "To bake the cake, follow these steps:\n"
    "{a} Preheat the oven to 180 degrees.\n"
    "{b} Mix the flour and sugar in a bowl.\n"
    "{c} Bake for forty minutes.\n\n"
    "Serve it warm."
)
SHOPPING = "You will need the following:\n{a} Eggs\n{b} Milk\n{c} Salt\n{d} Butter\n\nThat is all."

LISTS = [
    pytest.param(
        RECIPE.format(a="1.", b="2.", c="3."),
        "steps: 1. Preheat the oven to 180 degrees. 2. Mix the flour and sugar in a bowl.",
        "steps:\n1. Preheat the oven to 180 degrees.\n2. Mix the flour and sugar in a bowl.",
        id="numbered-with-label",
    ),
    pytest.param(
        RECIPE.format(a="1.", b="2.", c="3."),
        "1. Preheat the oven to 180 degrees. 2. Mix the flour and sugar in a bowl. 3. Bake for forty minutes.",
        "Preheat the oven to 180 degrees.\n2. Mix the flour and sugar in a bowl.\n3. Bake for forty minutes.",
        id="numbered-from-first-marker",
    ),
    pytest.param(
        RECIPE.format(a="1)", b="2)", c="3)"),
        "follow these steps: 1) Preheat the oven to 180 degrees. 2) Mix the flour and sugar",
        "follow these steps:\n1) Preheat the oven to 180 degrees.\n2) Mix the flour and sugar",
        id="numbered-parenthesis",
    ),
    pytest.param(
        RECIPE.format(a="1.", b="2.", c="3."),
        "steps: 1. Preheat the oven to 180 degres. 2. Mix the flour and sugar in a bowl.",
        "steps:\n1. Preheat the oven to 180 degrees.\n2. Mix the flour and sugar in a bowl.",
        id="numbered-with-typo",
    ),
    pytest.param(
        SHOPPING.format(a="-", b="-", c="-", d="-"),
        "the following: - Eggs - Milk - Salt - Butter",
        "the following:\n- Eggs\n- Milk\n- Salt\n- Butter",
        id="dash-bullets",
    ),
    pytest.param(
        SHOPPING.format(a="*", b="*", c="*", d="*"),
        "the following: * Eggs * Milk * Salt * Butter",
        "the following:\n* Eggs\n* Milk\n* Salt\n* Butter",
        id="star-bullets",
    ),
    pytest.param(
        SHOPPING.format(a="+", b="+", c="+", d="+"),
        "+ Eggs + Milk + Salt + Butter",
        "Eggs\n+ Milk\n+ Salt\n+ Butter",
        id="plus-bullets-from-first-marker",
    ),
    pytest.param(
        SHOPPING.format(a="\u2022", b="\u2022", c="\u2022", d="\u2022"),
        "the following: \u2022 Eggs \u2022 Milk \u2022 Salt",
        "the following:\n\u2022 Eggs\n\u2022 Milk\n\u2022 Salt",
        id="round-bullets",
    ),
    pytest.param(
        RECIPE.format(a="a)", b="b)", c="c)"),
        "steps: a) Preheat the oven to 180 degrees. b) Mix the flour and sugar in a bowl.",
        "steps:\na) Preheat the oven to 180 degrees.\nb) Mix the flour and sugar in a bowl.",
        id="letter-markers",
    ),
]


@pytest.mark.parametrize(("text", "quote", "matched"), LISTS)
def test_list_quoted_on_one_line_is_valid(text: str, quote: str, matched: str) -> None:
    m = match_excerpt(quote, text)
    assert m.valid, m
    assert m.matched == matched
    assert text[m.start : m.end] == matched


LIST_CHANGES = [
    pytest.param(
        "steps: 1. Preheat the oven to 180 degrees. 3. Mix the flour and sugar in a bowl.",
        "list number changed: 2 -> 3",
        id="list-number-changed",
    ),
    pytest.param(
        "1. Preheat the oven to 180 degrees. 2. Mix the flour and sugar in a bowl. 4. Bake for forty minutes.",
        "list number changed: 3 -> 4",
        id="last-list-number-changed",
    ),
    pytest.param(
        "steps: 1. Preheat the oven to 180 degrees. 2. Mix the salt and sugar in a bowl.",
        'changed words: "flour" -> "salt"',
        id="item-word-changed",
    ),
    pytest.param(
        "steps: 1. Preheat the oven to 250 degrees. 2. Mix the flour and sugar in a bowl.",
        "number changed: 180 -> 250",
        id="item-number-changed",
    ),
    pytest.param(
        "steps: 1. Preheat the oven to 180 degrees. 2. Mix the flour and sugar in a bowl. 3. Add two eggs.",
        "",
        id="item-inserted",
    ),
]


@pytest.mark.parametrize(("quote", "reason"), LIST_CHANGES)
def test_list_quoted_on_one_line_keeps_its_guards(quote: str, reason: str) -> None:
    m = match_excerpt(quote, RECIPE.format(a="1.", b="2.", c="3."))
    assert not m.valid, m
    assert m.reason is not None and reason in m.reason, m.reason


def test_list_markers_inside_the_text_line_still_match_as_written() -> None:
    text = "The plan is short: 1. Eggs 2. Milk 3. Salt 4. Butter, and nothing else."
    m = match_excerpt("plan is short: 1. Eggs 2. Milk 3. Salt 4. Butter", text)
    assert m.valid and m.method == "exact", m
    changed = match_excerpt("plan is short: 1. Eggs 2. Milk 5. Salt 4. Butter", text)
    assert not changed.valid, changed


def test_list_on_lines_moves_inline_markers_only() -> None:
    assert list_on_lines("steps: 1. Preheat. 2) Mix. - Bake. * Cool. + Serve.") == (
        "steps:\n1. Preheat.\n2) Mix.\n- Bake.\n* Cool.\n+ Serve."
    )
    assert list_on_lines("rose by 2.5 percent in 2024, to 3.1 million") is None
    assert list_on_lines("a well-known *bold* claim") is None


# --------------------------------------------------------------------------------------------------
# 2. A fragment at the window's edge plus a typo is another word
# --------------------------------------------------------------------------------------------------

EDGE_NAMES = [
    pytest.param(
        "The parser in libfoo handles the input files quickly and safely.",
        "foox handles the input files quickly and safely",
        '"libfoo" -> "foox"',
        id="libfoo-foox",
    ),
    pytest.param(
        "The loader uses pyyaml to read the configuration at start-up time.",
        "yamls to read the configuration at start-up time",
        '"pyyaml" -> "yamls"',
        id="pyyaml-yamls",
    ),
    pytest.param(
        "The pipeline calls ffmpeg to convert each uploaded video file.",
        "mpegs to convert each uploaded video file",
        '"ffmpeg" -> "mpegs"',
        id="ffmpeg-mpegs",
    ),
    pytest.param(
        "The service stores sessions in postgres with a daily backup job.",
        "gress with a daily backup job",
        '"postgres" -> "gress"',
        id="postgres-gress",
    ),
    pytest.param(
        "The build runs webpack before every release of the frontend.",
        "packs before every release of the frontend",
        '"webpack" -> "packs"',
        id="webpack-packs",
    ),
    pytest.param(
        "Most of the service is written in golang with a few shell helpers.",
        "langs with a few shell helpers",
        '"golang" -> "langs"',
        id="golang-langs",
    ),
    pytest.param(
        "The parser in libfoo handles the input files quickly and safely.",
        "The parser in libfoo handles the input files quikc",
        '"quickly" -> "quikc"',
        id="right-edge-quickly-quikc",
    ),
]


@pytest.mark.parametrize(("text", "quote", "reason"), EDGE_NAMES)
def test_truncation_and_typo_on_one_word_is_rejected(text: str, quote: str, reason: str) -> None:
    m = match_excerpt(quote, text)
    assert not m.valid, m
    assert m.reason is not None and reason in m.reason, m.reason


EDGE_VALID = [
    pytest.param("foo handles the input files quickly and safely", "foo handles", id="truncated"),
    pytest.param("bfoo handles the input files quickly and safely", "bfoo handles", id="truncated-longer"),
    pytest.param("libfo handles the input files quickly and safely", "libfoo handles", id="typo-deleted"),
    pytest.param("libffoo handles the input files quickly and safely", "libfoo handles", id="typo-doubled"),
    pytest.param("The parser in libfoo handles the input files quic", "files quic", id="truncated-end"),
    pytest.param("in libfoo handles the input files quickyl", "files quickly", id="typo-at-end"),
]


@pytest.mark.parametrize(("quote", "part"), EDGE_VALID)
def test_truncation_or_typo_alone_is_valid(quote: str, part: str) -> None:
    m = match_excerpt(quote, "The parser in libfoo handles the input files quickly and safely.")
    assert m.valid, m
    assert part in m.matched


def test_typo_in_a_cut_word_widens_the_span_to_the_whole_word() -> None:
    text = "In the tests throughput rose by a third after the cache was added."
    m = match_excerpt("thrughput rose by a third after the cache was added", text)
    assert m.valid, m
    assert m.matched == "throughput rose by a third after the cache was added"
    # Compared whole, a typo in a name capitalised mid-sentence is caught by the name guard.
    name = match_excerpt(
        "Thrughput rose by a third after the cache was added", text.replace("throughput", "Throughput")
    )
    assert not name.valid and name.reason is not None and '"Throughput"' in name.reason, name


# --------------------------------------------------------------------------------------------------
# 3. A typo in a word capitalised by its position is a typo, not a changed name
# --------------------------------------------------------------------------------------------------

POSITIONAL = [
    pytest.param(
        "Results - Throughput rose by a third after the cache was added.",
        "Results - Througput rose by a third after the cache was added.",
        id="after-spaced-dash",
    ),
    pytest.param(
        "Latency fell when the cache was added \u2014 Throughput rose by a third overall.",
        "the cache was added \u2014 Througput rose by a third overall.",
        id="after-em-dash",
    ),
    pytest.param(
        "Throughput rose by a third after the cache was added.",
        "Througpt rose by a third after the cache was added.",
        id="sentence-start-two-edits",
    ),
    pytest.param(
        "Findings:\na) Throughput rose by a third after the cache was added.",
        "a) Througput rose by a third after the cache was added.",
        id="after-letter-marker",
    ),
    pytest.param(
        "Findings:\na) Throughput rose by a third after the cache was added.",
        "Througput rose by a third after the cache was added.",
        id="item-after-letter-marker",
    ),
    pytest.param(
        "Summary \u2014 Memory use fell by half after the cache was added.",
        "Memroy use fell by half after the cache was added.",
        id="after-unspaced-dash-in-text",
    ),
    pytest.param(
        "2) Memory use fell by half after the cache was added.",
        "Memroy use fell by half after the cache was added.",
        id="after-number-marker",
    ),
    pytest.param(
        "Two changes helped. Throughput rose by a third, and Memory use fell by half.",
        "Two changes helped. Througput rose by a third, and",
        id="mid-quote-sentence-start",
    ),
]


@pytest.mark.parametrize(("text", "quote"), POSITIONAL)
def test_typo_in_positionally_capitalised_word_is_valid(text: str, quote: str) -> None:
    m = match_excerpt(quote, text)
    assert m.valid, m


NAMES = [
    pytest.param(
        "The conference moved to Paris after the venue in Lyon was closed for repairs.",
        "The conference moved to Berlin after the venue in Lyon was closed for repairs.",
        'name changed: "Paris" -> "Berlin"',
        id="paris-berlin",
    ),
    pytest.param(
        "Paris hosted the conference after the venue in Lyon was closed for repairs.",
        "Berlin hosted the conference after the venue in Lyon was closed for repairs.",
        "Paris",
        id="paris-berlin-at-sentence-start",
    ),
    pytest.param(
        "The parser in libfoo handles the input files quickly and safely.",
        "The parser in libbar handles the input files quickly and safely.",
        'changed words: "libfoo" -> "libbar"',
        id="libfoo-libbar",
    ),
    pytest.param(
        "The prize was shared with Marie Curie and Henri Becquerel for their work on radioactivity.",
        "The prize was shared with Marie Curei and Henri Becquerel for their work",
        "name changed",
        id="typo-in-mid-sentence-name",
    ),
    pytest.param(
        "ATP is the main energy carrier of the cell and is made in the mitochondria.",
        "ATO is the main energy carrier of the cell and is made in the mitochondria.",
        '"ATP"',
        id="acronym-at-sentence-start",
    ),
    pytest.param(
        "Results - McDonald reported the findings at the annual meeting in spring.",
        "Results - McDonalt reported the findings at the annual meeting in spring.",
        '"McDonald"',
        id="camel-case-after-dash",
    ),
    pytest.param(
        "The parser in libfoo handles the input files quickly and safely.",
        "The parser in libfoo handles the very input files quickly and safely.",
        'inserted words: "very"',
        id="inserted-word",
    ),
]


@pytest.mark.parametrize(("text", "quote", "reason"), NAMES)
def test_real_changes_are_still_rejected(text: str, quote: str, reason: str) -> None:
    m = match_excerpt(quote, text)
    assert not m.valid, m
    assert m.reason is not None and reason in m.reason, m.reason


def test_hyphen_inside_a_word_does_not_make_a_capital_positional() -> None:
    text = "The patients with non-Hodgkin lymphoma were treated first."
    quote = "The patients with non-Hodgkim lymphoma were treated first."
    assert name_problem(quote, text, 0, len(text)) is not None


def test_typo_allowance_grows_with_word_length() -> None:
    assert [typo_limit(word) for word in ("The", "Teh", "Memory", "Throughput")] == [1, 1, 2, 2]


# --------------------------------------------------------------------------------------------------
# The threshold: a similarity equal to it is valid (README: "similarity >= threshold")
# --------------------------------------------------------------------------------------------------


def test_similarity_equal_to_the_threshold_is_valid() -> None:
    text = "The committee approved the new budget after a long debate in the council."
    quote = "The commitee approved the new budgett after a long debate"
    probe = match_excerpt(quote, text, threshold=0.8)
    assert probe.valid and probe.method == "fuzzy" and 0.8 < probe.similarity < 1.0, probe
    at = match_excerpt(quote, text, threshold=probe.similarity)
    assert at.valid, at
    assert at.similarity == probe.similarity
    above = match_excerpt(quote, text, threshold=math.nextafter(probe.similarity, 1.0))
    assert not above.valid and above.reason is not None and "below threshold" in above.reason, above
