"""Identifier generation. Event ids, invocation ids, run ids and call ids are distinct (SPEC R2).

Ids are a random per-process prefix plus a counter: unique across processes and restarts
(the prefix), cheap to make (no system call per id), and ordered within a process.
"""

from __future__ import annotations

import itertools
import os

# Function-call ids the framework invents when a model gives none; they are stripped again
# before the history goes back to a model (SPEC C7).
CLIENT_CALL_ID_PREFIX = "rondo-"

_prefix = os.urandom(8).hex()
_counter = itertools.count(1)


# Each spelled out in full (no shared helper): an id is made for every record, and a
# helper's frame was one Python call more each time (issue 25.5).


def new_event_id() -> str:
    return f"{_prefix}{next(_counter):08x}"


def new_invocation_id() -> str:
    return f"inv-{_prefix}{next(_counter):08x}"


def new_run_id() -> str:
    return f"run-{_prefix}{next(_counter):08x}"


def new_reason_id() -> str:
    return f"rsn-{_prefix}{next(_counter):08x}"


def new_client_call_id() -> str:
    return f"{CLIENT_CALL_ID_PREFIX}{_prefix}{next(_counter):08x}"


def _reset_after_fork() -> None:
    # A forked child must not repeat its parent's ids.
    global _prefix, _counter
    _prefix = os.urandom(8).hex()
    _counter = itertools.count(1)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
