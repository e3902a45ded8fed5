"""Collect the garbage earlier tests left before a browser test starts.

Playwright allocates enough to set off a full garbage collection in the middle of a browser
test; a socket an earlier test in the same xdist worker dropped without closing is then
finalized there, and its ResourceWarning (an error under `filterwarnings = error`) fails the
browser test, which did not open it. Collecting first keeps every warning inside the browser
test its own.
"""

from __future__ import annotations

import gc
import warnings

__all__ = ["collect_earlier_garbage"]


def collect_earlier_garbage() -> None:
    """A full collection with ResourceWarnings silenced: what is unreachable now belongs to an
    earlier test, not to the one about to start."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
