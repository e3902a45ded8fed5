"""A session's runs, read from its log (SPEC W7): which runs it holds, how each one ended, and
the records a client rejoining a run has not seen.

Nothing here is written per run: a run is the records that carry its `run_id`, in log order.
Its *records* are numbered 1, 2, 3… in that order (compaction records, which the runner stores
beside the loop and never streams, are left out), and that ordinal is the first part of every
frame id a server sends for the run, so any process that can read the log can tell which
records a client holding a frame id has seen.

A deliberate stop (a cancel, an interrupt, a client that asked to stop the run when it leaves)
is written as records too: an answer naming the cancellation for every call the stop cut, then
a marker record whose `error_code` is `CANCELLED`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from rondo.events import Event, PendingCall
from rondo.types import FunctionCall

__all__ = [
    "CANCELLED",
    "RunStatus",
    "RunSummary",
    "cut_calls",
    "ended_status",
    "run_records",
    "runs_of",
]

RunStatus = Literal["running", "paused", "completed", "failed", "cancelled"]

# The `error_code` of the record a deliberate stop stores last.
CANCELLED = "CANCELLED"


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One run of a session as its log tells it (`status` is never `running`: only the
    process running it, or the session's run claim, knows that)."""

    run_id: str
    status: RunStatus
    records: int  # how many records it has (the ordinal of its last one)
    invocation_ids: tuple[str, ...]
    started: float
    updated: float


def _counts(event: Event) -> bool:
    return event.actions.compaction is None and not event.partial


def run_records(events: Sequence[Event], run_id: str) -> Iterator[tuple[int, Event]]:
    """The run's records with their ordinals (1, 2, 3…), in log order."""
    n = 0
    for event in events:
        if event.run_id == run_id and _counts(event):
            n += 1
            yield n, event


def ended_status(
    records: Sequence[Event], pending: Sequence[PendingCall], run_id: str
) -> RunStatus:
    """How a run that is no longer running ended, from its records."""
    if not records:
        return "failed"
    last = records[-1]
    if last.error_code == CANCELLED:
        return "cancelled"
    if any(p.run_id == run_id for p in pending):
        return "paused"
    if last.author == "user" or last.error_code:
        return "failed"  # never answered (the process died), or the model failed
    return "completed" if last.is_final_response() else "failed"


def runs_of(events: Sequence[Event], pending: Sequence[PendingCall]) -> list[RunSummary]:
    """The session's runs, newest first (by their first record)."""
    grouped: dict[str, list[Event]] = {}
    for event in events:
        if event.run_id and _counts(event):
            grouped.setdefault(event.run_id, []).append(event)
    out: list[RunSummary] = []
    for run_id, records in grouped.items():
        invocations = tuple(dict.fromkeys(e.invocation_id for e in records))
        out.append(
            RunSummary(
                run_id=run_id,
                status=ended_status(records, pending, run_id),
                records=len(records),
                invocation_ids=invocations,
                started=records[0].timestamp,
                updated=records[-1].timestamp,
            )
        )
    out.reverse()
    return out


def cut_calls(events: Sequence[Event], invocation_id: str) -> list[tuple[str, FunctionCall]]:
    """The calls of `invocation_id` that have no stored answer, with the agent that made
    each (long-running calls, which wait for an answer on purpose, included)."""
    answered: set[str] = set()
    calls: list[tuple[str, FunctionCall]] = []
    for event in events:
        if event.invocation_id != invocation_id or event.content is None:
            continue
        for part in event.content.parts:
            if part.function_response is not None and part.function_response.id:
                answered.add(part.function_response.id)
            elif part.function_call is not None and event.content.role == "model":
                calls.append((event.author, part.function_call))
    return [(author, call) for author, call in calls if call.id and call.id not in answered]
