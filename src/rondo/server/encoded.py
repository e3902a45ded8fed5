"""Records in ADK's JSON, encoded once (issue 25.5).

A run's events go out as SSE frames and, a moment later, once more in the session a client
reads back: the same immutable records projected and encoded twice. `event_bytes` keeps the
encoding of the records encoded lately, and `session_bytes` writes a session around its
events' encodings — byte for byte what `dumps(session_json(session))` writes.

The memo holds at most `_ENTRIES` records, each encoding at most `_LARGEST` bytes (a record
with a large blob is encoded every time rather than kept alive here); an entry is found by
the record's identity, never by its id, so a record is never answered with another's JSON.
"""

from __future__ import annotations

from rondo.events import Event
from rondo.server.streams import dumps
from rondo.server.wire import event_json, session_json
from rondo.sessions.base import Session

__all__ = ["event_bytes", "session_bytes"]

_ENTRIES = 2048
_LARGEST = 8192

# id(record) -> (the record, its encoding); the record is held so its id is not reused.
_memo: dict[int, tuple[Event, bytes]] = {}


def event_bytes(event: Event) -> bytes:
    """`dumps(event_json(event))`, encoded once per record while it is recent."""
    key = id(event)
    hit = _memo.get(key)
    if hit is not None and hit[0] is event:
        return hit[1]
    encoded = dumps(event_json(event))
    if len(encoded) <= _LARGEST and not event.partial:
        if len(_memo) >= _ENTRIES:
            try:  # noqa: SIM105  (not `suppress`: this runs on most inserts, and it costs three calls)
                del _memo[next(iter(_memo))]  # the oldest entry
            except (KeyError, RuntimeError, StopIteration):
                pass  # another server thread of this process evicted at the same moment
        _memo[key] = (event, encoded)
    return encoded


def session_bytes(session: Session) -> bytes:
    """`dumps(session_json(session))`, with each event's encoding from `event_bytes`."""
    # The projection without its events, then the events spliced into its (last, so never
    # the state's) empty list: one place says what a session's JSON holds.
    head, _, tail = dumps(session_json(session, events=False)).rpartition(b'"events":[]')
    events = b",".join([event_bytes(event) for event in session.events])
    return head + b'"events":[' + events + b"]" + tail
