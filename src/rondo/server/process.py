"""Process settings for a long-running server (`rondo api-server`, `rondo web`).

A server keeps many long-lived records (cached sessions, loaded apps). With Python's default
collector thresholds (a young collection every 700 allocations, a full one whenever the old
generation grew by a quarter) loading one long session — 20,000 events are about 170,000
objects — walks the heap dozens of times: measured here, two thirds of such a first request
was the collector. `tune_gc` is what the server commands apply before serving; library users
keep Python's defaults.
"""

from __future__ import annotations

import gc

__all__ = ["SERVER_GC_THRESHOLDS", "tune_gc"]

# Young collections every 50,000 allocations instead of 700; the older generations as before,
# relative to that. Memory stays bounded: cycles are still collected, just in fewer passes.
SERVER_GC_THRESHOLDS = (50_000, 20, 100)


def tune_gc() -> None:
    """Freeze what is loaded so far (it lives as long as the process: no collection needs to
    walk it again) and collect in fewer, larger passes."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVER_GC_THRESHOLDS)
