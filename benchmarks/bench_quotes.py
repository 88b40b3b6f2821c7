"""Benchmark excerpt validation on quotes written the way judge models write them.

A deterministic labelled set of (answer, quote, expected valid) cases is generated in code: answers
of about 200, 2k, 20k and 60k characters are built from the prose paragraphs of the standard
library's ``pydoc_data.topics`` (as in ``bench_match.py``) with scientific sentences inserted at
evenly spaced places; those sentences carry the hard cases (``CO₂``, ``IC₅₀``, ``µg``, ``37 °C``,
``café``, ligatures, Markdown, names, negations, numbers). Quotes are derived per category:

* valid: ``verbatim``, ``whitespace``, ``typography``, ``case``, ``truncated``, ``typo``,
  ``elided`` (``...``, ``…``, ``[...]``, ``[..]``, ``(...)``, leading or trailing ellipsis),
  ``unicode`` (compatibility variants), ``markdown`` (decoration stripped or added);
* invalid: ``paraphrase``, ``fabricated``, ``spliced`` (halves of distant passages glued), ``number``
  (one number changed), ``negation`` (a negation added or removed), ``entity`` (a name changed),
  ``elided_bad`` (parts reordered, too far apart, or too short to prove anything).

Every quote is timed on its own with ``match_excerpt`` (the first quote of each answer also pays for
normalising it, as in a real run), in wall time and in CPU time of this process (the CPU figures hold
on a busy machine; compare runs by them). The first quote on a fresh 60k answer is measured apart
(``quotes_first_*``): a quote with a typo, so it pays for everything a text needs (normalisation,
offset map, anchors). Usage::

    python benchmarks/bench_quotes.py [--quick] [--verbose]

Prints ``name: value`` lines (floats with 3 decimals); ``--verbose`` lists misclassified cases on
stderr. :func:`run` returns the same figures as a dict.
"""

from __future__ import annotations

import argparse
import gc
import random
import re
import sys
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _path in (str(_HERE.parent), str(_HERE)):  # run as a script from anywhere
    if _path not in sys.path:
        sys.path.insert(0, _path)

from bench_match import build_answer as prose  # noqa: E402
from machine import Measured  # noqa: E402

from verify.judging.excerpts import match_excerpt  # noqa: E402

SIZES = {"200": 200, "2k": 2_000, "20k": 20_000, "60k": 60_000}
THRESHOLD = 0.8


@dataclass(frozen=True)
class Fact:
    """A sentence inserted into the answers, with the variants a judge might (wrongly) quote."""

    text: str  # as written in the answer
    plain: str  # the same words in plain ASCII, as a judge might retype them (still a valid quote)
    paraphrase: str
    negated: tuple[str, str]  # (fragment of text, the fragment with a negation added or removed)
    entity: tuple[str, str] | None  # (name in text, another name)


FACTS = [
    Fact(
        "Atmospheric CO\u2082 rose from 280 ppm to 415 ppm between 1800 and 2020, according to "
        "measurements made at Mauna Loa in Hawaii.",
        "Atmospheric CO2 rose from 280 ppm to 415 ppm between 1800 and 2020, according to "
        "measurements made at Mauna Loa in Hawaii.",
        "Measurements in Hawaii show that carbon dioxide in the air went up from 280 to 415 parts per "
        "million over two centuries.",
        ("rose from", "did not rise from"),
        ("Hawaii", "Alaska"),
    ),
    Fact(
        "The compound inhibited the kinase with an IC\u2085\u2080 of 0.5 \u00b5M, which is not "
        "considered potent for a drug candidate.",
        "The compound inhibited the kinase with an IC50 of 0.5 \u03bcM, which is not considered potent "
        "for a drug candidate.",
        "With a half-maximal inhibitory concentration of half a micromolar, the molecule is a weak kinase "
        "inhibitor.",
        ("is not considered", "is considered"),
        None,
    ),
    Fact(
        "Cells were incubated at 37\u00a0\u00b0C for 24 hours in 5\u202fmL of medium containing "
        "10\u2009\u00b5g of ampicillin per plate.",
        "Cells were incubated at 37\u00b0C for 24 hours in 5mL of medium containing 10 \u03bcg of "
        "ampicillin per plate.",
        "The plates were kept warm for a whole day, in a few millilitres of broth with a little ampicillin.",
        ("were incubated", "were never incubated"),
        None,
    ),
    Fact(
        "Marie Curie discovered radium in Paris in 1898 together with her husband Pierre, and she "
        "later won a second Nobel Prize.",
        "Marie Curie discovered radium in Paris in 1898 together with her husband Pierre, and she "
        "later won a second Nobel Prize.",
        "Radium was found by the Curies in the French capital at the end of the nineteenth century.",
        ("discovered radium", "never discovered radium"),
        ("Paris", "Lyon"),
    ),
    Fact(
        "The cafe\u0301 near the station serves 2 kinds of cre\u0302pes and does not accept cards on "
        "Sundays.",
        "The caf\u00e9 near the station serves 2 kinds of cr\u00eapes and does not accept cards on Sundays.",
        "On Sundays you must pay cash at the little restaurant by the station, which offers a pair of "
        "pancake recipes.",
        ("does not accept", "does accept"),
        ("Sundays", "Mondays"),
    ),
    Fact(
        "The reaction yield was 92\u00a0% after the \ufb01rst step, and the \ufb01nal product was "
        "puri\ufb01ed by \ufb02ash chromatography on silica.",
        "The reaction yield was 92% after the first step, and the final product was purified by flash "
        "chromatography on silica.",
        "Most of the material survived the opening stage and it was cleaned up on a silica column.",
        ("product was", "product was not"),
        None,
    ),
    Fact(
        "Temperatures fell to \u221240\u00a0\u00b0C in January in Yakutsk, and the river ice did not "
        "melt until late May.",
        "Temperatures fell to -40 \u2103 in January in Yakutsk, and the river ice did not melt until "
        "late May.",
        "Yakutsk is bitterly cold in winter and its river stays frozen well into spring.",
        ("did not melt", "did melt"),
        ("Yakutsk", "Irkutsk"),
    ),
    Fact(
        "According to the WHO, about 1.3 billion people live with a disability \u2013 roughly 16\u00a0% "
        "of the world\u2019s population \u2013 and many lack access to care.",
        "According to the WHO, about 1.3 billion people live with a disability - roughly 16 % of the "
        "world's population - and many lack access to care.",
        "The health agency estimates that one person in six has some form of disability.",
        ("many lack access", "many never lack access"),
        ("WHO", "UNICEF"),
    ),
    Fact(
        "Within 3 hours the levels of \uff21\uff34\uff30 dropped by half, while the apartment-sized "
        "incubator kept a floor area of 2 m\u00b2.",
        "Within 3 hours the levels of ATP dropped by half, while the apartment-sized incubator kept a "
        "floor area of 2 m2.",
        "Energy carriers in the cells fell to fifty percent in a few hours.",
        ("dropped by half", "never dropped by half"),
        None,
    ),
    Fact(
        "**Aspirin** reduces the risk of a second heart attack by about 25\u00a0% in patients with "
        "`CHD`, as shown in [the ISIS-2 trial](https://example.org/isis2) from Oxford.",
        "Aspirin reduces the risk of a second heart attack by about 25 % in patients with CHD, as shown "
        "in the ISIS-2 trial from Oxford.",
        "Taking aspirin cuts repeat heart attacks by a quarter in people with coronary disease.",
        ("reduces the risk", "does not reduce the risk"),
        ("Oxford", "Cambridge"),
    ),
    Fact(
        "- Insulin was first isolated in Toronto in 1921 by Banting and Best.\n"
        "- Penicillin was discovered in London in 1928 by Alexander Fleming.",
        "Insulin was first isolated in Toronto in 1921 by Banting and Best. Penicillin was discovered "
        "in London in 1928 by Alexander Fleming.",
        "Two Canadian researchers purified the pancreatic hormone, and a Scot found the mould antibiotic.",
        ("was discovered", "was not discovered"),
        ("Toronto", "Montreal"),
    ),
    Fact(
        "> 1. The half-life of caffeine is about 5 hours in healthy adults, but it is much longer "
        "in pregnant women.",
        "The half-life of caffeine is about 5 hours in healthy adults, but it is much longer in pregnant "
        "women.",
        "Healthy grown-ups clear half of their coffee stimulant in a few hours; expectant mothers take longer.",
        ("it is much longer", "it is not much longer"),
        None,
    ),
]

FABRICATED = [
    "The enzyme was crystallised at 4 \u00b0C and its structure solved at 1.8 \u00c5 resolution in Geneva.",
    "Quantum computers use qubits to perform certain calculations exponentially faster than classical ones.",
    "The patients who received the placebo reported fewer headaches than those in the treatment group.",
    "Glaciers in the Alps have lost about half of their volume since 1850, according to Swiss data.",
    "The new policy increased tax revenue by 12 % while unemployment stayed below 4 % for two years.",
    "A function decorated with this attribute is compiled ahead of time and cannot be redefined later.",
]

MARKERS = [" ... ", "...", "\u2026", " \u2026 ", " [...] ", " [..] ", " (...) ", " [\u2026] "]


@dataclass(frozen=True)
class Case:
    """One labelled quote."""

    category: str
    quote: str
    valid: bool


def build_answer(length: int, seed: int) -> tuple[str, list[Fact]]:
    """An answer of about ``length`` characters: prose with facts at evenly spaced places."""
    rng = random.Random(f"answer-{length}-{seed}")
    facts = FACTS[:]
    rng.shuffle(facts)
    if length <= 400:  # a single fact, one with a name (for the ``entity`` category)
        named = next(fact for fact in facts if fact.entity)
        return named.text, [named]
    count = min(len(facts), max(2, length // 300))
    facts = facts[:count]
    body = prose(length + 50 * seed)
    paragraphs = body.split("\n\n")
    step = max(1, len(paragraphs) // count)
    out: list[str] = []
    placed: list[Fact] = []
    for i, paragraph in enumerate(paragraphs):
        out.append(paragraph)
        if i % step == 0 and len(placed) < count:
            placed.append(facts[len(placed)])
            out.append(placed[-1].text)
    return "\n\n".join(out), placed


_LINK_RE = re.compile(r"\[[^\]]*\]\([^)]*\)")


def _words(text: str, rng: random.Random, low: int, high: int) -> tuple[int, int]:
    """A span of ``text`` of ``low``..``high`` characters on word boundaries, inside one paragraph."""
    for _ in range(200):
        size = rng.randint(low, high)
        if size >= len(text):
            size = len(text) - 1
        start = rng.randrange(0, len(text) - size)
        while start > 0 and text[start - 1].isalnum():
            start -= 1
        end = start + size
        while end < len(text) and text[end].isalnum():
            end += 1
        span = text[start:end]
        rest = _LINK_RE.sub("", span)
        if "](" in text and ("[" in rest or "](" in rest or "http" in rest):
            continue  # a judge quotes a Markdown link whole or not at all
        if (
            "\n\n" not in span
            and len(span.strip()) >= low * 0.8
            and not span.lstrip().startswith(("-", ">", "*"))
        ):
            return start, end
    return 0, min(len(text), high)


def _quote(text: str, rng: random.Random, low: int = 40, high: int = 200) -> str:
    start, end = _words(text, rng, low, high)
    return text[start:end].strip()


def _fact_quote(fact: Fact) -> str:
    """The fact as a judge quoting it would copy it (list and quote markers at the start dropped)."""
    return re.sub(r"^(?:[->] |\d\. )+", "", fact.text)


def _typo(quote: str, rng: random.Random) -> str:
    letters = [
        m.start() + k
        for m in re.finditer(r"(?<![\w'])[a-z]{5,}(?![\w'])", quote)
        if m.group() not in {"never", "nothing", "nobody", "without", "cannot"}
        for k in range(1, len(m.group()))
    ]
    i = rng.choice(letters)
    return quote[:i] + ("x" if quote[i] != "x" else "z") + quote[i + 1 :]


def _change_number(quote: str, rng: random.Random) -> str:
    found = list(re.finditer(r"(?<![\w/.])\d+(?:\.\d+)?(?!\w)", quote))
    m = rng.choice(found)
    value = m.group()
    if "." in value:
        new = value.replace(".", "")  # 0.5 -> 05 -> 5, 1.3 -> 13
        new = new.lstrip("0") or "1"
    else:
        new = str(int(value) + rng.choice([1, 2, 10]))
    return quote[: m.start()] + new + quote[m.end() :]


def _elide(text: str, rng: random.Random, marker: str) -> str:
    start, end = _words(text, rng, 90, 260)
    span = text[start:end].strip()
    cuts = [m.start() for m in re.finditer(" ", span)]
    first = rng.choice([c for c in cuts if 25 <= c <= len(span) // 2] or [len(span) // 3])
    second = rng.choice([c for c in cuts if c >= first + 10 and len(span) - c >= 25] or [first + 1])
    return span[:first].rstrip() + marker + span[second:].lstrip()


def _spliced(text: str, rng: random.Random, fact: Fact, other: Fact) -> str:
    if len(text) > 4_000:
        half = len(text) // 2
        first, second = _quote(text[: half - 500], rng, 60, 160), _quote(text[half:], rng, 60, 160)
    else:
        first, second = _fact_quote(fact), _fact_quote(other)
    return first[: len(first) // 2].rstrip() + " " + second[len(second) // 2 :].lstrip()


def _unicode_variant(fact: Fact, rng: random.Random) -> str:
    """A valid quote in another Unicode form: the fact's plain form, NFD / NFKC forms or new spaces."""
    choice = rng.randrange(4)
    if choice == 0 or fact.plain == fact.text:
        quote = _fact_quote(fact)
        return unicodedata.normalize(rng.choice(["NFD", "NFKC", "NFC"]), quote).replace(" ", "\u00a0", 2)
    if choice == 1:
        return fact.plain
    words = fact.plain.split(" ")
    if choice == 2:  # the ASCII form with special spaces
        return "".join(w + rng.choice([" ", "\u202f", "\u2009", "\u2007", "\u3000"]) for w in words).strip()
    return unicodedata.normalize("NFD", fact.plain.replace("-", "\u2212").replace("fi", "\ufb01"))


def _markdown_variant(fact: Fact, rng: random.Random) -> str:
    if "**" in fact.text or "- " in fact.text or "> " in fact.text:
        return fact.plain
    words = fact.plain.split(" ")
    k = rng.randrange(1, len(words) - 1)
    style = rng.choice(["**{}**", "_{}_", "`{}`", "[{}](https://example.org/x)"])
    words[k] = style.format(words[k])
    return rng.choice(["", "- ", "> ", "1. "]) + " ".join(words)


def _typography(fact: Fact, rng: random.Random) -> str:
    quote = fact.plain if rng.random() < 0.5 else _fact_quote(fact)
    quote = quote.replace("'", "\u2019").replace(" - ", " \u2014 ").replace("-", "\u2011")
    return "\u201c" + quote + "\u201d" if rng.random() < 0.5 else "'" + quote + "'"


def _elided_bad(text: str, rng: random.Random, kind: int) -> str:
    if kind == 0:  # reordered parts
        start, end = _words(text, rng, 120, 240)
        span = text[start:end].strip()
        cut = span.find(" ", len(span) // 2)
        return span[cut:].strip() + " ... " + span[:cut].strip()
    if kind == 1 and len(text) > 4_000:  # parts from distant passages
        half = len(text) // 2
        return _quote(text[: half - 1_000], rng, 40, 80) + " ... " + _quote(text[half:], rng, 40, 80)
    return rng.choice(["The ... is", "the ... of the", "It is ... not", "in the ... and"])


def cases_for(text: str, facts: list[Fact], rng: random.Random, per_category: int) -> list[Case]:
    """Labelled cases for one answer, ``per_category`` per category."""
    prose_ok = len(text) > 400
    out: list[Case] = []

    def add(category: str, valid: bool, make: Callable[[int], str]) -> None:
        out.extend(Case(category, make(i), valid) for i in range(per_category))

    def source(i: int) -> str:
        return text if prose_ok and i % 2 else _fact_quote(facts[i % len(facts)])

    def fact(i: int) -> Fact:
        return facts[i % len(facts)]

    def whitespace(i: int) -> str:
        return re.sub(
            r" ", lambda _: rng.choice(["  ", "\n", " \t", "\u00a0", "\n\n"]), _quote(source(i), rng)
        )

    def case(i: int) -> str:
        quote = _quote(source(i), rng)
        return quote.upper() if i % 2 else quote.lower()

    def truncated(i: int) -> str:
        quote = _quote(source(i), rng, 50, 200)
        quote = quote[rng.randint(1, 4) : len(quote) - rng.randint(1, 4)]
        return rng.choice(["", "...", "\u2026 "]) + quote + rng.choice(["", "...", " \u2026", " [...]"])

    def elided(i: int) -> str:
        marker = MARKERS[(i + rng.randrange(len(MARKERS))) % len(MARKERS)]
        if i % 3 == 2:  # leading or trailing ellipsis only
            quote = _quote(source(i), rng, 40, 160)
            return marker.strip() + " " + quote if i % 2 else quote + " " + marker.strip()
        return _elide(source(i), rng, marker)

    def negation(i: int) -> str:
        old, new = fact(i).negated
        return _fact_quote(fact(i)).replace(old, new, 1)

    def entity(i: int) -> str:
        named = [f for f in facts if f.entity]
        f = named[i % len(named)]
        old, new = f.entity or ("", "")
        return _fact_quote(f).replace(old, new)

    add("verbatim", True, lambda i: _quote(source(i), rng))
    add("whitespace", True, whitespace)
    add("typography", True, lambda i: _typography(fact(i), rng))
    add("case", True, case)
    add("truncated", True, truncated)
    add("typo", True, lambda i: _typo(_quote(source(i), rng, 60, 200), rng))
    add("elided", True, elided)
    add("unicode", True, lambda i: _unicode_variant(fact(i), rng))
    add("markdown", True, lambda i: _markdown_variant(fact(i), rng))
    add("paraphrase", False, lambda i: fact(i).paraphrase)
    add("fabricated", False, lambda i: FABRICATED[(i + len(text)) % len(FABRICATED)])
    add(
        "spliced",
        False,
        lambda i: _spliced(text, rng, fact(i), FACTS[(FACTS.index(fact(i)) + 3) % len(FACTS)]),
    )
    add("number", False, lambda i: _change_number(_fact_quote(fact(i)), rng))
    add("negation", False, negation)
    add("entity", False, entity)
    add("elided_bad", False, lambda i: _elided_bad(text, rng, i % 3))
    return out


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _timed(quote: str, text: str) -> tuple[bool, float, float]:
    """Whether ``quote`` is accepted, and the wall and CPU milliseconds that took."""
    started, cpu = time.perf_counter(), time.process_time()
    valid = match_excerpt(quote, text, THRESHOLD).valid
    return valid, (time.perf_counter() - started) * 1000.0, (time.process_time() - cpu) * 1000.0


def _first_quote(text: str, cases: list[Case]) -> tuple[float, float]:
    """Wall and CPU milliseconds of the first quote on a text never seen before (a quote with a typo)."""
    fresh = text + "\n"  # equal content, a different string: nothing prepared for it is cached
    quote = next(case.quote for case in cases if case.category == "typo")
    gc.collect()
    _, wall, cpu = _timed(quote, fresh)
    return wall, cpu


def run(quick: bool = False, verbose: bool = False) -> dict[str, float]:
    """Run the benchmark.

    Args:
        quick: One answer per size and fewer cases per category (a second or two).
        verbose: List misclassified cases, and the timings per category at 60k, on stderr.

    Returns:
        Figure name to value: mean milliseconds per quote, wall and CPU (overall and per size), the
        95th percentile at 60k, the first quote on a fresh 60k answer, accuracy overall and per
        category, and the number of cases.
    """
    answers, per_category = (1, 2) if quick else (3, 3)
    timings: dict[str, list[float]] = {label: [] for label in SIZES}
    cpu: dict[str, list[float]] = {label: [] for label in SIZES}
    first: list[tuple[float, float]] = []
    right: dict[str, list[bool]] = {}
    slow: dict[str, list[float]] = {}  # 60k CPU timings per category, for --verbose
    for label, length in SIZES.items():
        for seed in range(answers):
            text, facts = build_answer(length, seed)
            cases = cases_for(text, facts, random.Random(f"cases-{label}-{seed}"), per_category)
            if label == "60k":
                first.append(_first_quote(text, cases))
            gc.collect()
            for case in cases:
                valid, wall, spent = _timed(case.quote, text)
                timings[label].append(wall)
                cpu[label].append(spent)
                right.setdefault(case.category, []).append(valid == case.valid)
                if label == "60k":
                    slow.setdefault(case.category, []).append(spent)
                if verbose and valid != case.valid:
                    result = match_excerpt(case.quote, text, THRESHOLD)
                    print(
                        f"# {label} {case.category}: {case.quote!r} -> {result.method} {result.reason}",
                        file=sys.stderr,
                    )
    if verbose:
        for category, values in slow.items():
            print(
                f"# 60k {category}: mean {sum(values) / len(values):.3f} ms CPU, max {max(values):.3f} ms",
                file=sys.stderr,
            )
    every = [t for values in timings.values() for t in values]
    every_cpu = [t for values in cpu.values() for t in values]
    results: dict[str, float] = {
        "quotes_mean_ms": sum(every) / len(every),
        "quotes_mean_cpu_ms": sum(every_cpu) / len(every_cpu),
    }
    for label, values in timings.items():
        results[f"quotes_mean_ms_{label}"] = sum(values) / len(values)
        results[f"quotes_mean_cpu_ms_{label}"] = sum(cpu[label]) / len(cpu[label])
    results["quotes_p95_ms_60k"] = _percentile(timings["60k"], 0.95)
    results["quotes_p95_cpu_ms_60k"] = _percentile(cpu["60k"], 0.95)
    results["quotes_max_ms_60k"] = max(timings["60k"])
    results["quotes_first_ms_60k"] = sum(wall for wall, _ in first) / len(first)
    results["quotes_first_cpu_ms_60k"] = sum(spent for _, spent in first) / len(first)
    flags = [ok for values in right.values() for ok in values]
    results["quotes_accuracy"] = sum(flags) / len(flags)
    for category, values in right.items():
        results[f"quotes_accuracy_{category}"] = sum(values) / len(values)
    results["quotes_cases"] = len(flags)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one answer per size; finishes in seconds")
    parser.add_argument("--verbose", action="store_true", help="list misclassified cases on stderr")
    args = parser.parse_args(argv)
    with Measured("quotes_run") as measured:
        results = run(quick=args.quick, verbose=args.verbose)
    for name, value in results.items():
        print(f"{name}: {int(value)}" if name == "quotes_cases" else f"{name}: {value:.3f}")
    for line in measured.lines():
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
