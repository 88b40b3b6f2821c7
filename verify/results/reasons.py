"""The one wording of each deep-judgment outcome's reason.

The trait's ``reason``, the task's failure reason, the run's warning, the summary line and the
export all say the same thing for the same outcome, so a reader never sees three explanations of
one event (and a contradiction is never counted as missing evidence).
"""

from __future__ import annotations

__all__ = ["CONTRADICTION", "NO_VALID_QUOTE"]

NO_VALID_QUOTE = "no quote found in the answer"
"""A deep-judgment trait whose quotes never matched the answer: auto-failed (its evidence is unproven)."""

CONTRADICTION = "the verdict contradicts the judge's own evidence"
"""A verdict the judge kept after being shown that its own evidence says the opposite: unscored
(category ``contradiction``), a judge failure, never the answer's."""
