"""Rewind as a record in the log (issue 21.5), shared by every store.

A rewind is one appended event whose `actions.rewind_before_invocation_id` names an
invocation: from then on the session reads as it was before that invocation's first record.
Nothing is copied or deleted — the records between stay stored (`Session.rewound` lists them
for audit) and the append is version-checked like any other, so a rewind computed from a
stale handle is refused with `StaleSessionError`. Its `state_delta` restores the session
scope as it was at that point (the state the session was created with included); a `None`
value in a rewind record removes the key. `app:` and `user:` keys are shared with other
sessions and are not rewound (google-adk does the same).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rondo._frozen import ReadOnlyDict
from rondo._ids import new_invocation_id
from rondo.errors import InvocationNotFoundError, SessionNotFoundError, StaleSessionError
from rondo.events import Event, EventActions, PendingCall
from rondo.sessions.base import BaseSessionService, Session, apply_pending

__all__ = [
    "CREATED_AUTHOR",
    "apply_rewinds",
    "artifact_version",
    "first_index",
    "fork_session",
    "is_rewind",
    "pending_calls",
    "rewind_session",
    "rewind_state_delta",
    "state_at",
]

# The author of the stored record that keeps the state a session was created with (SQL
# stores keep it at seq -1, outside every read of the history).
CREATED_AUTHOR = "rondo:created"

_SHARED = ("app:", "user:", "temp:")


def is_rewind(event: Event) -> bool:
    return event.actions.rewind_before_invocation_id is not None


def apply_rewinds(events: Sequence[Event]) -> tuple[list[Event], list[Event]]:
    """`(visible, rewound)`: the records a reader sees after every rewind in `events`, and
    the ones rewinds hide (the rewind records included), both in log order.

    Walks back from the end; a rewind hides itself and everything back to the first record
    of its invocation (all earlier records of `events` when that lies before the window)."""
    first: dict[str, int] | None = None
    visible: list[Event] = []
    rewound: list[Event] = []
    i = len(events) - 1
    while i >= 0:
        event = events[i]
        target = event.actions.rewind_before_invocation_id
        if target is None:
            visible.append(event)
            i -= 1
            continue
        if first is None:
            first = {}
            for index, e in enumerate(events):
                first.setdefault(e.invocation_id, index)
        start = first.get(target, 0)
        start = start if start < i else 0
        rewound.extend(events[j] for j in range(i, start - 1, -1))
        i = start - 1
    visible.reverse()
    rewound.reverse()
    return visible, rewound


def first_index(events: Sequence[Event], invocation_id: str) -> int:
    """The index of the invocation's first visible record, or `InvocationNotFoundError`."""
    for index, event in enumerate(events):
        if event.invocation_id == invocation_id:
            return index
    raise InvocationNotFoundError(
        f"invocation {invocation_id!r} is not in the session's history (unknown, or already "
        "rewound away)"
    )


def _session_scope(state: Mapping[str, object]) -> dict[str, object]:
    return {k: v for k, v in state.items() if not k.startswith(_SHARED)}


def state_at(created: Mapping[str, object], events: Sequence[Event]) -> dict[str, object]:
    """The session-scope state after `events`, starting from the state it was created with
    (a rewind record's `None` removes a key)."""
    state = _session_scope(created)
    for event in events:
        delta = event.actions.state_delta
        if not delta:
            continue
        rewind = is_rewind(event)
        for key, value in delta.items():
            if key.startswith(_SHARED):
                continue
            if value is None and rewind:
                state.pop(key, None)
            else:
                state[key] = value
    return state


def rewind_state_delta(
    target: Mapping[str, object], current: Mapping[str, object]
) -> dict[str, object]:
    """The delta that turns the session scope of `current` into `target` (`None` removes)."""
    now = _session_scope(current)
    delta: dict[str, object] = {k: v for k, v in target.items() if k not in now or now[k] != v}
    delta.update({k: None for k in now if k not in target})
    return delta


def pending_calls(events: Sequence[Event]) -> list[PendingCall]:
    """The calls waiting after `events` (as the stores keep them)."""
    pending: list[PendingCall] = []
    for event in events:
        pending = apply_pending(pending, event)
    return pending


async def rewind_session(
    service: BaseSessionService,
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    rewind_before_invocation_id: str,
    expected_version: int | None = None,
) -> Event:
    """Append the rewind record that makes the session read as before that invocation; the
    record. `expected_version`: refuse (`StaleSessionError`) unless the session is still at
    the version the caller saw; the append itself is version-checked either way."""
    session = await service.get_session(app_name=app_name, user_id=user_id, session_id=session_id)
    if session is None:
        raise SessionNotFoundError(f"session {session_id!r} does not exist")
    if expected_version is not None and expected_version != session.version:
        raise StaleSessionError(
            f"session {session_id!r} is at version {session.version}, not {expected_version}: "
            "it changed since you read it; read it again before rewinding"
        )
    cut = first_index(session.events, rewind_before_invocation_id)
    created = await service.created_state(app_name=app_name, user_id=user_id, session_id=session_id)
    target = state_at(created or {}, session.events[:cut])
    record = Event(
        author="user",
        invocation_id=new_invocation_id(),
        actions=EventActions(
            rewind_before_invocation_id=rewind_before_invocation_id,
            state_delta=rewind_state_delta(target, session.state),
        ),
    )
    return await service.append_event(session, record)


async def fork_session(
    service: BaseSessionService,
    *,
    app_name: str,
    user_id: str,
    session_id: str,
    before_invocation_id: str | None = None,
    new_session_id: str | None = None,
) -> Session:
    """A new session holding the history before that invocation (all of it by default) and
    the state it had then; the original is untouched.

    A SQL store copies the stored log prefix inside the database in one transaction
    (`copy_history`: a few statements whatever the history's length). Any other store gets
    the records appended to the new session as they are (the in-memory store keeps the same
    objects), except that `app:` / `user:` keys leave their deltas: those scopes are shared,
    and replaying an old value would overwrite today's."""
    session = await service.get_session(app_name=app_name, user_id=user_id, session_id=session_id)
    if session is None:
        raise SessionNotFoundError(f"session {session_id!r} does not exist")
    events = list(session.events)
    before_event_id: str | None = None
    if before_invocation_id is not None:
        cut = first_index(events, before_invocation_id)
        before_event_id = events[cut].id
        events = events[:cut]
    created = await service.created_state(app_name=app_name, user_id=user_id, session_id=session_id)
    copied = await service.copy_history(
        session,
        new_session_id=new_session_id,
        before_event_id=before_event_id,
        state=state_at(created or {}, events),
        pending=pending_calls(events),
    )
    if copied is not None:
        return copied
    fork = await service.create_session(
        app_name=app_name,
        user_id=user_id,
        session_id=new_session_id,
        state=_session_scope(created or {}),
    )
    for event in events:
        await service.append_event(fork, _without_shared(event))
    return fork


def _without_shared(event: Event) -> Event:
    delta = event.actions.state_delta
    if not any(k.startswith(_SHARED) for k in delta):
        return event
    kept = {k: v for k, v in delta.items() if not k.startswith(_SHARED)}
    return event.model_copy(
        update={"actions": event.actions.model_copy(update={"state_delta": ReadOnlyDict(kept)})}
    )


def artifact_version(session: Session, filename: str) -> tuple[bool, int | None]:
    """After a rewind a file reads at the version the visible history last recorded:
    `(True, version)`; `(True, None)` when only rewound records saved it (it reads as
    missing); `(False, None)` when no rewind concerns it (the store's latest version)."""
    if not session.rewound:
        return False, None
    for event in reversed(session.events):
        version = event.actions.artifact_delta.get(filename)
        if version is not None:
            return True, version
    if any(filename in e.actions.artifact_delta for e in session.rewound):
        return True, None
    return False, None
