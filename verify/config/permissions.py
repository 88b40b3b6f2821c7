"""Config fields that grant a permission, and where they may come from.

A permission (running code from the checkpoint: cloudpickle callables, judges' command runners) is
never taken from a file: not from a preset, a saved run's config, an export or a replay. It is given
on the command line (``--trust-checkpoint-code``) or in the Python call, each run, so a downloaded
or shared run cannot grant itself what its user never gave.
"""

from __future__ import annotations

__all__ = ["PERMISSION_FIELDS"]

PERMISSION_FIELDS = frozenset({"trust_checkpoint_code"})
