"""Validation of verbatim excerpts that a judge model quotes from the answer it evaluates.

:func:`match_excerpt` and :func:`validate_excerpts` accept an excerpt when it is an exact substring
of the text, a substring after :func:`normalize_text`, or a close fuzzy match whose numbers,
negations, names and wording survive a set of guards, or an elided quote (``"A ... B"``) whose parts
are all found in order and close together; each result is an :class:`ExcerptMatch` with offsets into
the original text (one span per part for elided quotes) and, when rejected, a reason naming the
difference. The work is split into :mod:`.folding` (Unicode compatibility folding and offset maps),
:mod:`.normalise` (normalisation), :mod:`.prepared` (prepared answers, shared by every quote),
:mod:`.anchors` (an index of a long text for locating quotes),
:mod:`.guards` (checks that reject meaning-changing near-matches, and their reasons), :mod:`.names`
(the capitalised-word guard), :mod:`.align` (fuzzy alignment), :mod:`.elision` (elided quotes) and
:mod:`.match` (the entry points).
"""

from verify.judging.excerpts.match import ExcerptMatch, match_excerpt, validate_excerpts
from verify.judging.excerpts.normalise import normalize_text

__all__ = ["ExcerptMatch", "match_excerpt", "normalize_text", "validate_excerpts"]
