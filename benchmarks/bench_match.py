"""Benchmark excerpt validation: ``verify.judging.excerpts.match.match_excerpt`` vs a difflib longest-match validator.

The baseline re-implements the reference system's approach: whitespace-normalised, case-sensitive
``SequenceMatcher(None, excerpt, text).find_longest_match(...)`` with the default ``autojunk=True``;
similarity is the longest common block divided by the excerpt length, and an excerpt is valid iff
the similarity is at least 0.75 and at least the threshold.

Answers of 2k, 20k and 100k characters are built deterministically from the prose paragraphs of
the standard library's ``pydoc_data.topics``; excerpts are sampled from them.

Usage::

    python benchmarks/bench_match.py [--quick]

Prints ``name: value`` lines; :func:`run` returns the same figures as a dict.
"""

from __future__ import annotations

import argparse
import math
import random
import re
import sys
import time
from collections.abc import Callable
from difflib import SequenceMatcher
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:  # run as a script from anywhere: make the ``verify`` package importable
    sys.path.insert(0, _ROOT)

from verify.judging.excerpts import match_excerpt  # noqa: E402

SIZES = {"2k": 2_000, "20k": 20_000, "100k": 100_000}
THRESHOLD = 0.8
KARENINA_FLOOR = 0.75


def difflib_validate(excerpt: str, text: str, threshold: float = THRESHOLD) -> bool:
    """The reference validator: longest common block / excerpt length, with difflib autojunk."""
    excerpt_norm = " ".join(excerpt.split())
    text_norm = " ".join(text.split())
    if not excerpt_norm or not text_norm:
        return False
    matcher = SequenceMatcher(None, excerpt_norm, text_norm)
    block = matcher.find_longest_match(0, len(excerpt_norm), 0, len(text_norm))
    similarity = block.size / len(excerpt_norm)
    return similarity >= KARENINA_FLOOR and similarity >= threshold


def build_answer(length: int) -> str:
    """A deterministic answer of exactly ``length`` characters made of documentation prose."""
    from pydoc_data.topics import topics

    paragraphs = [
        paragraph.strip()
        for key in sorted(topics)
        for paragraph in topics[key].split("\n\n")
        if len(paragraph) > 200 and not re.search(r"[|+=]{3}|>>>|^\s{4}", paragraph, re.MULTILINE)
    ]
    random.Random(length).shuffle(paragraphs)
    out: list[str] = []
    size = 0
    for paragraph in paragraphs:
        if size >= length:
            break
        out.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(out)[:length]


def sample_quotes(text: str, count: int, rng: random.Random) -> list[str]:
    """Verbatim quotes of 40-200 characters starting and ending on word boundaries."""
    quotes: list[str] = []
    while len(quotes) < count:
        size = rng.randint(40, 200)
        start = rng.randrange(0, len(text) - size)
        while start > 0 and text[start - 1].isalnum():
            start -= 1
        end = start + size
        while end < len(text) and text[end].isalnum():
            end += 1
        quote = text[start:end].strip()
        if len(quote) >= 40:
            quotes.append(quote)
    return quotes


def add_typo(quote: str, rng: random.Random) -> str:
    """Replace one letter of an ordinary lowercase word (not a name, number or negation)."""
    letters = [
        m.start() + k
        for m in re.finditer(r"(?<![\w'])[a-z]{4,}(?![\w'])", quote)
        if m.group() not in {"none", "never", "nothing", "nobody", "without", "cannot"}
        for k in range(len(m.group()))
    ]
    if not letters:
        return quote
    i = rng.choice(letters)
    return quote[:i] + ("x" if quote[i] != "x" else "z") + quote[i + 1 :]


def splice(text: str, rng: random.Random) -> str:
    """Join the first half of one quote with the second half of a distant one."""
    half = len(text) // 2
    first = sample_quotes(text[: half - 200], 1, rng)[0]
    second = sample_quotes(text[half:], 1, rng)[0]
    return first[: len(first) // 2 + 20].rstrip() + " " + second[len(second) // 2 - 20 :].lstrip()


def _time_calls(func: Callable[[str, str], bool], excerpts: list[str], text: str) -> tuple[float, float]:
    """Mean milliseconds per call and acceptance rate."""
    accepted = 0
    start = time.perf_counter()
    for excerpt in excerpts:
        accepted += func(excerpt, text)
    elapsed = time.perf_counter() - start
    return elapsed * 1000.0 / len(excerpts), accepted / len(excerpts)


def _verify(excerpt: str, text: str) -> bool:
    return match_excerpt(excerpt, text, THRESHOLD).valid


def run(quick: bool = False) -> dict[str, float]:
    """Run the benchmark.

    Args:
        quick: Use fewer excerpts (finishes in a few seconds).

    Returns:
        Metric name to value: per-call milliseconds, speedups (difflib / verify, plus their
        geometric mean ``excerpt_match_speedup``) and acceptance rates.
    """
    results: dict[str, float] = {}
    speedups: list[float] = []
    for label, length in SIZES.items():
        text = build_answer(length)
        rng = random.Random(f"bench-{label}")
        n_verify = 200
        n_difflib = {"2k": 200, "20k": 200, "100k": 100}[label]
        if quick:
            n_verify, n_difflib = 100, {"2k": 100, "20k": 60, "100k": 30}[label]
        quotes = sample_quotes(text, n_verify, rng)

        verify_ms, verify_rate = _time_calls(_verify, quotes, text)
        difflib_ms, difflib_rate = _time_calls(difflib_validate, quotes[:n_difflib], text)
        results[f"excerpt_match_ms_{label}"] = verify_ms
        results[f"difflib_match_ms_{label}"] = difflib_ms
        results[f"excerpt_match_speedup_{label}"] = difflib_ms / verify_ms
        speedups.append(difflib_ms / verify_ms)
        results[f"verbatim_accept_rate_verify_{label}"] = verify_rate
        results[f"verbatim_accept_rate_difflib_{label}"] = difflib_rate

        # Non-verbatim excerpts exercise the normalised/fuzzy path (the first call also pays for
        # normalising the text, which is then cached).
        n_fuzzy = 30 if quick else 100
        typos = [add_typo(q, rng) for q in quotes[:n_fuzzy]]
        fuzzy_ms, typo_rate = _time_calls(_verify, typos, text)
        results[f"excerpt_match_typo_ms_{label}"] = fuzzy_ms
        results[f"typo_accept_rate_verify_{label}"] = typo_rate
        splices = [splice(text, rng) for _ in range(n_fuzzy)]
        splice_ms, splice_rate = _time_calls(_verify, splices, text)
        results[f"excerpt_match_splice_ms_{label}"] = splice_ms
        results[f"splice_reject_rate_verify_{label}"] = 1.0 - splice_rate
    results["excerpt_match_speedup"] = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer excerpts; finishes in seconds")
    args = parser.parse_args(argv)
    for name, value in run(quick=args.quick).items():
        digits = 3 if "rate" in name else 4 if name.endswith(tuple(SIZES)) and "_ms_" in name else 1
        print(f"{name}: {value:.{digits}f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
