"""Identifier generation. Event ids, invocation ids, run ids and call ids are distinct (SPEC R2)."""

from __future__ import annotations

import os

# Function-call ids the framework invents when a model gives none; they are stripped again
# before the history goes back to a model (SPEC C7).
CLIENT_CALL_ID_PREFIX = "rondo-"


def _hex() -> str:
    return os.urandom(12).hex()


def new_event_id() -> str:
    return _hex()


def new_invocation_id() -> str:
    return "inv-" + _hex()


def new_run_id() -> str:
    return "run-" + _hex()


def new_reason_id() -> str:
    return "rsn-" + _hex()


def new_client_call_id() -> str:
    return CLIENT_CALL_ID_PREFIX + _hex()
