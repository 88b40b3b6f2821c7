"""Validation of verbatim excerpts that a judge model quotes from the answer it evaluates.

:func:`match_excerpt` and :func:`validate_excerpts` accept an excerpt when it is an exact substring
of the text, a substring after :func:`normalize_text`, or a close fuzzy match whose numbers,
negations, names and wording survive a set of guards; each result is an :class:`ExcerptMatch` with
offsets into the original text. The work is split into :mod:`.normalise` (normalisation and offset
map), :mod:`.guards` (checks that reject meaning-changing near-matches), :mod:`.align` (fuzzy
alignment) and :mod:`.match` (the entry points).
"""

from verify.judging.excerpts.match import ExcerptMatch, match_excerpt, validate_excerpts
from verify.judging.excerpts.normalise import normalize_text

__all__ = ["ExcerptMatch", "match_excerpt", "normalize_text", "validate_excerpts"]
