"""The in-memory session service: the same contract as the SQL store, nothing persisted."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from rondo._state_values import check_state_delta
from rondo.errors import (
    InvalidPageError,
    SessionExistsError,
    SessionNotFoundError,
    StaleSessionError,
)
from rondo.events import Event, PendingCall
from rondo.sessions.base import (
    BaseSessionService,
    EventLog,
    EventsView,
    ListSessionsResponse,
    Session,
    apply_pending,
    check_event_text,
    check_ids,
    check_scope,
    check_session_id,
    now,
    split_state_delta,
    strip_temp_state,
)
from rondo.sessions.rewind import apply_rewinds, pending_calls

__all__ = ["InMemorySessionService", "SessionExistsError"]


@dataclass
class _Stored:
    log: EventLog
    state: dict[str, object]
    version: int
    last_update_time: float
    pending: list[PendingCall] = field(default_factory=list[PendingCall])
    created: dict[str, object] = field(default_factory=dict[str, object])
    # Issue 21.5: once the log holds a rewind, readers see `visible` (rebuilt when `version`
    # moves past the one it was built at; appends through its handles keep it current).
    rewinds: int = 0
    visible: tuple[int, EventLog, list[Event]] | None = None

    def view(self) -> tuple[EventLog, list[Event]]:
        """The log readers see and the records rewinds hide (callers skip the call when the
        log holds no rewind: `rewinds` is 0)."""
        if not self.rewinds:
            return self.log, []
        cached = self.visible
        if cached is None or cached[0] != self.version:
            shown, hidden = apply_rewinds(self.log)
            cached = self.visible = (self.version, EventLog(shown), hidden)
        return cached[1], cached[2]


def _first_after(log: EventLog, timestamp: float) -> int:
    lo, hi = 0, len(log)
    while lo < hi:
        mid = (lo + hi) // 2
        if log[mid].timestamp < timestamp:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _offset(page_token: str) -> int:
    if not page_token.isdigit():
        raise InvalidPageError(f"invalid page_token {page_token!r}")
    return int(page_token)


def _new_id() -> str:
    """`uuid.uuid4().hex`, the same 16 random bytes with the same version and variant
    bits, without building a `UUID` (a third of the cost; one per new session)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    return raw.hex()


class InMemorySessionService(BaseSessionService):
    """Sessions in a dict. Handles share the event log; nothing is deep-copied."""

    def __init__(self) -> None:
        self._sessions: dict[tuple[str, str, str], _Stored] = {}
        self._app_state: dict[str, dict[str, object]] = {}
        self._user_state: dict[tuple[str, str], dict[str, object]] = {}

    def _merged_state(self, app_name: str, user_id: str, stored: _Stored) -> dict[str, object]:
        return {
            **self._app_state.get(app_name, {}),
            **self._user_state.get((app_name, user_id), {}),
            **stored.state,
        }

    def _handle(
        self, app_name: str, user_id: str, session_id: str, stored: _Stored, start: int = 0
    ) -> Session:
        log, rewound = stored.view() if stored.rewinds else (stored.log, ())
        return Session(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state=self._merged_state(app_name, user_id, stored),
            events=EventsView(log, start),
            rewound=list(rewound),
            pending=stored.pending,
            version=stored.version,
            last_update_time=stored.last_update_time,
        )

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str | None = None,
        state: Mapping[str, object] | None = None,
    ) -> Session:
        check_scope(app_name, user_id)
        session_id = _new_id() if session_id is None else check_session_id(session_id)
        check_state_delta(state or {})
        key = (app_name, user_id, session_id)
        if key in self._sessions:
            raise SessionExistsError(f"session {session_id!r} already exists")
        app, user, sess = split_state_delta(state or {})
        if app:
            self._app_state.setdefault(app_name, {}).update(app)
        if user:
            self._user_state.setdefault((app_name, user_id), {}).update(user)
        stored = _Stored(
            log=EventLog(), state=sess, version=0, last_update_time=now(), created=dict(sess)
        )
        self._sessions[key] = stored
        return self._handle(app_name, user_id, session_id, stored)

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        num_recent_events: int | None = None,
        after_timestamp: float | None = None,
    ) -> Session | None:
        check_ids(app_name, user_id, session_id)
        stored = self._sessions.get((app_name, user_id, session_id))
        if stored is None:
            return None
        start = 0
        log = stored.view()[0] if stored.rewinds else stored.log
        if after_timestamp is not None:
            start = _first_after(log, after_timestamp)
        if num_recent_events is not None:
            start = max(start, len(log) - max(num_recent_events, 0))
        return self._handle(app_name, user_id, session_id, stored, start)

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        delta = event.actions.state_delta
        if delta:
            check_state_delta(delta)  # before anything is written (SPEC G3)
        check_event_text(event)
        stored = self._sessions.get((session.app_name, session.user_id, session.id))
        if stored is None:
            raise SessionNotFoundError(f"session {session.id!r} does not exist")
        if session.version != stored.version:
            raise StaleSessionError(
                f"session {session.id!r} is at version {stored.version} but this handle was "
                f"read at version {session.version}; re-read it with get_session()"
            )
        event = strip_temp_state(event)
        rewind = event.actions.rewind_before_invocation_id is not None
        delta = event.actions.state_delta
        if delta:
            app, user, sess = split_state_delta(delta)
            if app:
                self._app_state.setdefault(session.app_name, {}).update(app)
            if user:
                self._user_state.setdefault((session.app_name, session.user_id), {}).update(user)
            if sess:
                stored.state.update(sess)
                if rewind:  # a rewind's None removes the key
                    for key in [k for k, v in sess.items() if v is None]:
                        del stored.state[key]
        shown = stored.view()[0] if stored.rewinds else stored.log
        stored.log.append(event)
        stored.version += 1
        stored.last_update_time = event.timestamp
        if rewind:
            stored.rewinds += 1
            stored.pending = pending_calls(stored.view()[0])
        else:
            stored.pending = apply_pending(stored.pending, event)
            if stored.visible is not None and shown is stored.visible[1]:
                # The handle reads the visible log: it grows with the physical one.
                shown.append(event)
                stored.visible = (stored.version, shown, stored.visible[2])
        session._after_append(event, stored.version, stored.pending)  # pyright: ignore[reportPrivateUsage]
        return event

    async def list_sessions(
        self,
        *,
        app_name: str,
        user_id: str | None = None,
        limit: int | None = None,
        page_token: str | None = None,
    ) -> ListSessionsResponse:
        check_scope(app_name, user_id)
        if limit is not None and limit < 1:
            raise InvalidPageError("limit must be at least 1")
        keys = sorted(
            (
                k
                for k in self._sessions
                if k[0] == app_name and (user_id is None or k[1] == user_id)
            ),
            key=lambda k: (-self._sessions[k].last_update_time, k[2]),
        )
        offset = _offset(page_token) if page_token else 0
        end = len(keys) if limit is None else offset + limit
        page = keys[offset:end]
        sessions = [
            Session(
                id=k[2],
                app_name=k[0],
                user_id=k[1],
                state=self._merged_state(k[0], k[1], self._sessions[k]),
                pending=self._sessions[k].pending,
                version=self._sessions[k].version,
                last_update_time=self._sessions[k].last_update_time,
            )
            for k in page
        ]
        next_token = str(end) if end < len(keys) else None
        return ListSessionsResponse(sessions=sessions, next_page_token=next_token)

    async def created_state(
        self, *, app_name: str, user_id: str, session_id: str
    ) -> dict[str, object] | None:
        stored = self._sessions.get((app_name, user_id, session_id))
        return None if stored is None else dict(stored.created)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        check_ids(app_name, user_id, session_id)
        self._sessions.pop((app_name, user_id, session_id), None)
