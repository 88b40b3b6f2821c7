"""The one-pass YAML builder means exactly what PyYAML's safe loader means, on every kind of document."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verify.files import JsonProblem, parse_yaml
from verify.yaml_build import Unsupported, build

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _built(text: str) -> Any:
    return build(yaml, LOADER, text, max_depth=100, max_values=10_000)


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (True is not 1, a date is not a string)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) or (a != a and b != b)  # NaN


TRICKY = [
    "", "~", "null", "a:\n", "a: ''\n", "a: yes\nb: No\nc: on\nd: OFF\ne: y\n", "a: 0o17\nb: 017\nc: 0x1F\nd: 1_000\ne: 190:20:30\n",
    "a: .inf\nb: -.Inf\nc: .nan\nd: 1e3\ne: 1.5e-3\nf: 6.8523015e+5\ng: 3.\n", "a: 2024-01-01\nb: 2001-12-14t21:59:43.10-05:00\nc: '2024-01-01'\n",
    "a: !!str 123\nb: !!int '7'\nc: !!float 1\nd: !!bool 'true'\ne: !!null ''\n", "- a\n- 'b'\n- \"c\\td\"\n- |\n  block\n  text\n- >\n  folded\n  text\n",
    "base: &b {x: 1, y: 2}\nother: *b\nmerged:\n  <<: *b\n  y: 3\n",
    "a: &a {k: 1, z: 0}\nb: &b {k: 2, w: 5}\nm:\n  <<: [*a, *b]\n  own: 1\n",
    "a: &a {k: 1}\nb: &b {k: 2}\nm:\n  <<: *a\n  <<: *b\n",
    "s: &s [1, 2]\nt: [*s, *s]\n", "x: &x hello\ny: *x\n", "? simple key\n: value\n", "a: 1\na: 2\n",
    "{a: [1, {b: [2, 3]}], 'c d': \"e\"}\n", "'=': 1\n'<<': 2\n", "key with spaces: value, with commas\n",
    "- - - deep\n", "a: '-'\nb: +\nc: .\nd: ~x\ne: 'yes'\n", "n: 12345678901234567890\nm: -0\n",
]


@pytest.mark.parametrize("text", TRICKY)
def test_tricky_documents_mean_what_the_safe_loader_says(text: str) -> None:
    assert _same(_built(text), yaml.load(text, Loader=LOADER)), text


@pytest.mark.parametrize("key", ["k", "a_rather_long_key_name_here"])
def test_merged_mappings_follow_the_merge_spec_whatever_the_key(key: str) -> None:
    # The merge-key spec: mappings earlier in the list win over later ones, the mapping's own keys win
    # over all. PyYAML dedups merged keys by the identity of the key string, so its answer for a long
    # (not interned) key is the later mapping's: a quirk we do not copy.
    text = f"a: &a {{{key}: 1}}\nb: &b {{{key}: 2}}\nm: {{<<: [*a, *b], own: 1}}\nn: {{<<: [*a, *b], {key}: 3}}\n"
    data = _built(text)
    assert data["m"] == {key: 1, "own": 1} and data["n"] == {key: 3}


def test_an_alias_is_the_same_object_as_its_anchor() -> None:
    data = _built("a: &a [1]\nb: *a\n")
    assert data["a"] is data["b"]


@pytest.mark.parametrize("text", ["a: !!binary aGVsbG8=\n", "a: !!set {x, y}\n", "a: !custom 1\n", "? [1, 2]\n: v\n"])
def test_rare_tags_and_complex_keys_are_left_to_pyyaml(text: str) -> None:
    with pytest.raises(Unsupported):
        _built(text)


def test_parse_yaml_falls_back_for_rare_tags_and_refuses_unknown_ones() -> None:
    assert parse_yaml("a: !!binary aGVsbG8=\n") == {"a": b"hello"}
    with pytest.raises(JsonProblem, match="not valid YAML"):
        parse_yaml("a: !custom 1\n")


def test_two_documents_and_undefined_aliases_are_errors() -> None:
    with pytest.raises(JsonProblem, match="not valid YAML"):
        parse_yaml("a: 1\n---\nb: 2\n")
    with pytest.raises(JsonProblem, match="not valid YAML"):
        parse_yaml("a: *nope\n")


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                    st.text(max_size=20), st.dates(), st.sampled_from(["yes", "no", "on", "~", "1_0", "0o7", "2024-01-01",
                                                                       "<<", "=", "-", ".inf", "3.", "0x1f", "1:30"]))
documents = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=4)), max_leaves=30)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents, st.sampled_from([None, True, False]))
def test_any_dumped_document_reads_back_as_the_safe_loader_reads_it(data: Any, flow: bool | None) -> None:
    text = yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True)
    assert _same(_built(text), yaml.load(text, Loader=LOADER)), text


def test_dates_stay_dates() -> None:
    assert _built("d: 2024-01-01\n") == {"d": datetime.date(2024, 1, 1)}
