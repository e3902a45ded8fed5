"""`SqlSessionService`: durable sessions on SQLite (the embedded default) or PostgreSQL.

The contract is `InMemorySessionService`'s (SPEC R3, R4); what the database adds:

- **No lost update.** An append is one transaction that bumps the session version only if it
  still is the version the handle was read at (`UPDATE … WHERE version = :v`, rowcount 1),
  inserts the event and merges its `app:` / `user:` / session deltas. A stale handle stores
  nothing and raises `StaleSessionError`.
- **No lost event.** `append_event` returns after the commit, and the Runner yields an event
  only after that.
- **Cheap at any length.** Each session's `EventLog` stays cached in-process, validated by the
  session version: `get_session` costs one small query when nothing changed and otherwise
  decodes only the events appended since. Reusing the log also keeps the incremental contents
  view (`EventLog.derived`) alive across invocations.

Transactions are async functions of an `Executor` running the hand-written statements of
`_statements.py`, handed to `Database` (see `_sqlengine`, which also says which URL runs which
driver). On PostgreSQL each operation is one statement — one round trip; on SQLite's stdlib
driver nothing in a transaction suspends.
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from sys import intern
from typing import Any, NoReturn

from sqlalchemy.engine import URL

from rondo._state_values import check_state_delta
from rondo.errors import (
    InvalidPageError,
    InvocationNotFoundError,
    SessionExistsError,
    SessionNotFoundError,
    StaleSessionError,
)
from rondo.events import NO_ACTIONS, Event, EventActions, PendingCall
from rondo.sessions._run_claims import RunClaims
from rondo.sessions._run_frames import PostgresRunFrames
from rondo.sessions._schema import SessionTables
from rondo.sessions._sqlengine import Executor, Sql, default_sqlite_url, open_database
from rondo.sessions._statements import SessionStatements
from rondo.sessions.base import (
    BaseSessionService,
    ClaimResult,
    EventLog,
    EventsView,
    LazyEventLog,
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
from rondo.sessions.rewind import CREATED_AUTHOR, apply_rewinds, pending_calls
from rondo.sessions.run_frames import RunFrames

__all__ = ["SqlSessionService", "decoded_records", "default_sqlite_url"]

_Key = tuple[str, str, str]
# Where a cached log records the cache entry it belongs to.
_OWNER = "rondo.sessions.sql:owner"
_Params = dict[str, Any]


class _Cached:
    """What this process knows of one stored session.

    `log` holds the events with `seq` in `[first_seq, version)` — every event when
    `first_seq == 0`; `state` (the session scope only) and `pending` are those at `version`.
    """

    __slots__ = ("created", "first_seq", "log", "pending", "rewinds", "state", "version", "visible")

    def __init__(self, created: float, first_seq: int) -> None:
        self.created = created
        self.first_seq = first_seq
        self.log = EventLog()
        self.log.derived[_OWNER] = self
        self.version = first_seq
        self.state: dict[str, Any] = {}
        self.pending: list[PendingCall] = []
        # Issue 21.5: how many rewind records `log` holds, and the visible log readers of the
        # whole history share (with the records it hides) at the version it was built for.
        self.rewinds = 0
        self.visible: tuple[int, EventLog, list[Event]] | None = None

    def add(self, seq: int, event: Event) -> None:
        """Append the event stored at `seq` unless the log already has it."""
        if seq == self.version:
            self.log.append(event)
            self.version += 1
            if event.actions.rewind_before_invocation_id is not None:
                self.rewinds += 1

    def extend(self, events: Sequence[Event]) -> None:
        self.log.extend(events)
        self.version += len(events)
        self.rewinds += sum(1 for e in events if e.actions.rewind_before_invocation_id)

    def load(self, payloads: list[str], stamps: list[float]) -> None:
        """Start the empty log with these stored records, decoded when read (SPEC K3)."""
        log = LazyEventLog(payloads, stamps, _decode_event, _decode_events)
        log.derived[_OWNER] = self
        self.log = log
        self.version += len(payloads)
        # The rewind records among them: only those that may be one are read.
        maybe = [i for i, p in enumerate(payloads) if _REWIND_KEY in p]
        self.rewinds = sum(1 for i in maybe if log[i].actions.rewind_before_invocation_id)

    def view(self, start: int, stop: int) -> tuple[EventLog, int, int, list[Event]]:
        """The log a handle of the events `[start, stop)` reads, its bounds in it, and what
        rewinds hide."""
        lo, hi = start - self.first_seq, stop - self.first_seq
        if not self.rewinds:
            return self.log, lo, hi, []
        whole = lo == 0 and self.first_seq == 0 and hi == len(self.log)
        cached = self.visible
        if whole and cached is not None and cached[0] == stop:
            return cached[1], 0, len(cached[1]), cached[2]
        shown, hidden = apply_rewinds(self.log[lo:hi])
        log = EventLog(shown)
        if whole:
            self.visible = (stop, log, hidden)
        return log, 0, len(log), hidden

    def advance(
        self,
        seq: int,
        event: Event,
        sess: dict[str, Any],
        pending: list[PendingCall],
        drop: Sequence[str] = (),
    ) -> None:
        """Take in an event this process appended at `seq`, with its effects."""
        if seq == self.version:
            self.add(seq, event)
            self.state.update(sess)
            for key in drop:
                self.state.pop(key, None)
            self.pending = pending


@dataclass(slots=True)
class _Read:
    """What one `get_session` query found: the session row and the events to add (their
    stored JSON and timestamps: decoding is left to whoever reads them)."""

    version: int
    created: float
    update_time: float
    state: dict[str, Any]
    pending: str  # JSON, decoded only when the cache does not have it
    app_state: dict[str, Any] | None
    user_state: dict[str, Any] | None
    start: int  # the first seq the handle shows
    loaded_from: int  # the seq of `payloads[0]`
    fresh: bool  # the events start a new cache entry
    payloads: list[str]
    stamps: list[float]


def _read(
    row: Sequence[Any],
    start: int,
    loaded_from: int,
    usable: bool,
    payloads: list[str],
    stamps: list[float],
) -> _Read:
    """A `_Read` from the session row (version, times, states, pending) and the payloads and
    timestamps of the events from `loaded_from` on."""
    version, created, update_time, state, pending, app_state, user_state = row
    return _Read(
        version,
        created,
        update_time,
        _loads(state),
        pending,
        _loads(app_state),
        _loads(user_state),
        start,
        loaded_from,
        not usable,
        payloads,
        stamps,
    )


class _Changed(Exception):
    """The session was deleted or re-created while it was being read."""


def _encode_event(event: Event) -> str:
    """The stored payload. Default values are left out: they come back as defaults, and the
    decoded record then marks only its real fields as set (see `_compact`)."""
    return event.model_dump_json(exclude_defaults=True)


_decoded = 0  # records this process decoded from stored payloads (`decoded_records`)


def decoded_records() -> int:
    """How many `Event` records this process has decoded from stored payloads so far (a
    count for tests and benchmarks: what a fresh replica's first request costs)."""
    return _decoded


def _decode_events(payloads: Sequence[str]) -> list[Event]:
    """Events from their stored JSON texts, each validated as an `Event` — through Event's
    validator directly: `model_validate_json` is a Python frame per event, which a long
    history pays 20,000 times on a fresh replica."""
    global _decoded
    if not payloads:
        return []
    _decoded += len(payloads)
    validate = Event.__pydantic_validator__.validate_json  # built on first use (defer_build)
    return [_compact(validate(p)) for p in payloads]


def _decode_event(payload: str) -> Event:
    """One stored event (a `LazyEventLog` reading one record)."""
    global _decoded
    _decoded += 1
    return _compact(Event.__pydantic_validator__.validate_json(payload))


# A stored rewind record's JSON holds this (its value is a string; None is never stored).
_REWIND_KEY = '"rewind_before_invocation_id":"'


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


# Records are frozen (SPEC G1), so what many decoded events hold alike can be one object: the
# empty actions (events.NO_ACTIONS, whose maps refuse changes), the set of field names pydantic
# keeps per model, the author and role strings. This halves the memory of a cached history and
# the objects the garbage collector walks (bench/SESSIONS.md).
_FIELD_SETS: dict[tuple[str, ...], set[str]] = {}
# The shared sets met last for events, contents and parts (slots 0-2), and the ones met
# before those (3-5): a history has a handful of record shapes, often one or two in turn (a
# user message, a model answer), and comparing two small sets (C code, sizes first) is
# cheaper than building a key.
_LAST: list[set[str]] = [set() for _ in range(6)]
_set = object.__setattr__  # the field-name set is pydantic's own slot, not a field
_FIELDS = "__pydantic_fields_set__"


def _shared(names: set[str]) -> set[str]:
    # Keyed by the set's iteration order: equal keys mean equal sets (a different order only
    # costs a second entry). A handful of shapes in practice; never unbounded.
    key = tuple(names)
    found = _FIELD_SETS.get(key)
    if found is None:
        if len(_FIELD_SETS) >= 512:
            return names
        found = _FIELD_SETS[key] = set(names)
    return found


def _share_recent(names: set[str], kind: int) -> set[str]:
    """The shared set equal to `names`, the last one of its `kind` now. Inlined in `_compact`
    for its two common cases (the last shape, the one before), which cost no call."""
    last = _LAST
    shared = last[kind + 3]
    if shared != names:
        shared = _shared(names)
    last[kind + 3] = last[kind]
    last[kind] = shared
    return shared


def _compact(event: Event) -> Event:
    last = _LAST
    values = vars(event)
    names = event.__pydantic_fields_set__
    # Payloads leave defaults out: no "actions" means the default, NO_ACTIONS, already.
    if "actions" in names:
        actions = values["actions"]
        if actions.is_empty():
            values["actions"] = NO_ACTIONS
        else:
            _set(actions, _FIELDS, _shared(actions.__pydantic_fields_set__))
    shared = last[0]
    if shared != names:
        shared = _share_recent(names, 0)
    _set(event, _FIELDS, shared)
    # Only keys are cached by the JSON parser (Event's config): the few author names are
    # shared here instead.
    values["author"] = intern(event.author)
    content = values["content"]
    if content is not None:
        content.__dict__["role"] = intern(content.role)
        names = content.__pydantic_fields_set__
        shared = last[1]
        if shared != names:
            shared = last[4]
            if shared == names:  # a user message after a model answer, or the reverse
                last[4] = last[1]
                last[1] = shared
            else:
                shared = _share_recent(names, 1)
        _set(content, _FIELDS, shared)
        shared = last[2]
        for part in content.parts:
            names = part.__pydantic_fields_set__
            if shared != names:
                shared = _share_recent(names, 2)
            _set(part, _FIELDS, shared)
    return event


def _decode_pending(raw: str | None) -> list[PendingCall]:
    if not raw or raw == "[]":
        return []
    return [PendingCall.model_validate(p) for p in json.loads(raw)]


def _encode_token(update_time: float, session_id: str, user_id: str) -> str:
    raw = json.dumps([update_time, session_id, user_id]).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_token(token: str) -> tuple[float, str, str]:
    try:
        update_time, session_id, user_id = json.loads(base64.urlsafe_b64decode(token))
        return float(update_time), str(session_id), str(user_id)
    except (ValueError, TypeError) as exc:
        raise InvalidPageError(f"invalid page_token {token!r}") from exc


def _raise_stale(session_id: str, stored: int, read_at: int) -> NoReturn:
    raise StaleSessionError(
        f"session {session_id!r} is at version {stored} but this handle was read at "
        f"version {read_at}; re-read it with get_session()"
    )


def _refuse(session_id: str, stored: int | None, read_at: int) -> None:
    """Raise why an append through a handle read at `read_at` cannot go ahead."""
    if stored is None:
        raise SessionNotFoundError(f"session {session_id!r} does not exist")
    if stored != read_at:
        _raise_stale(session_id, stored, read_at)


async def _fetch(ex: Executor, stmt: Sql, values: Mapping[str, object]) -> Sequence[Sequence[Any]]:
    return await ex.fetch(stmt, values)


class SqlSessionService(BaseSessionService):
    """Sessions in SQLite (default `.rondo/sessions.db`) or PostgreSQL.

    `url`: `sqlite:///path` or a file path (Python's sqlite3 driver), `sqlite+aiosqlite:///path`
    (aiosqlite), or `postgresql+asyncpg://user@host/db` (asyncpg, up to `pool_size`
    connections); see `rondo.sessions._sqlengine`. A database with an older schema is refused
    with `SchemaVersionError` unless `migrate=True` (or `await service.migrate()`).
    `cache_sessions` bounds how many sessions keep their events in memory.
    `sqlite_synchronous="FULL"` makes every SQLite commit survive power loss too (the default
    `NORMAL` survives a killed process). `connect_args` go to the driver's connect call.
    """

    def __init__(
        self,
        url: str | URL | os.PathLike[str] | None = None,
        *,
        migrate: bool = False,
        cache_sessions: int = 1024,
        table_prefix: str = "rondo_",
        sqlite_synchronous: str = "NORMAL",
        pool_size: int = 10,
        connect_args: Mapping[str, object] | None = None,
    ) -> None:
        self._db = open_database(
            url if url is not None else default_sqlite_url(),
            sqlite_synchronous=sqlite_synchronous,
            pool_size=pool_size,
            connect_args=connect_args,
        )
        self._tables = SessionTables(table_prefix)
        self._sql = SessionStatements(self._tables, self._db.dialect)
        self._migrate = migrate
        self._cache: OrderedDict[_Key, _Cached] = OrderedDict()
        self._cache_sessions = max(cache_sessions, 0)
        # Other processes write to a PostgreSQL store too: runs claim their session there.
        self._claims = RunClaims(self._db, table_prefix) if self._db.postgres else None
        # …and a run's lifecycle frames are kept for the other replicas (SPEC W7).
        self._frames = PostgresRunFrames(self._db, table_prefix) if self._db.postgres else None

    @property
    def url(self) -> str:
        """The database this store runs on, with the driver that runs it."""
        return self._db.url

    async def migrate(self) -> None:
        """Upgrade an older database schema to this version of rondo."""
        await self._tables.schema.ready(self._db, migrate=True)

    async def close(self) -> None:
        self._cache.clear()
        await self._db.close()

    # -- run claims (PostgreSQL: replicas share the database) -------------------------------

    @property
    def shared(self) -> bool:
        return self._claims is not None

    async def claim_run(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        owner: str,
        ttl: float,
        resume: bool = False,
    ) -> ClaimResult:
        # The ids are checked and the schema is set up before the claim's statement runs: a
        # bad id is a 400 and a fresh database's first run finds its tables (issue 26).
        check_ids(app_name, user_id, session_id)
        if self._claims is None:
            return "claimed"
        await self._ready()
        return await self._claims.claim((app_name, user_id, session_id), owner, ttl, resume)

    async def renew_runs(self, owners: Sequence[str], ttl: float) -> int:
        if self._claims is None:
            return len(owners)
        return await self._claims.renew(list(owners), ttl)

    async def release_run(
        self, *, app_name: str, user_id: str, session_id: str, owner: str
    ) -> None:
        if self._claims is not None:
            await self._claims.release((app_name, user_id, session_id), owner)

    async def run_claimed(
        self, *, app_name: str, user_id: str, session_id: str, lapsed_within: float = 0.0
    ) -> bool:
        if self._claims is None:
            return False
        return await self._claims.held((app_name, user_id, session_id), lapsed_within)

    async def take_lapsed_run(
        self, *, owner: str, ttl: float, app_names: Sequence[str]
    ) -> tuple[tuple[str, str, str], int] | None:
        if self._claims is None or not app_names:
            return None
        await self._ready()
        return await self._claims.take_lapsed(owner, ttl, list(app_names))

    @property
    def run_frames(self) -> RunFrames | None:
        return self._frames

    async def notify(self, channel: str, payload: str) -> None:
        if self._claims is not None:
            await self._claims.notify(channel, payload)

    async def listen(
        self, channel: str, callback: Callable[[str], None]
    ) -> Callable[[], Awaitable[None]] | None:
        if self._claims is None:
            return None
        return await self._db.listen(channel, callback)

    async def _ready(self) -> None:
        await self._tables.schema.ready(self._db, migrate=self._migrate)

    # -- transactions (run by Database) -----------------------------------------------------

    async def _merge_scopes(
        self, ex: Executor, values: _Params, app: dict[str, Any], user: dict[str, Any]
    ) -> None:
        """SQLite: merge the app and user deltas into their rows (dict.update semantics). The
        transaction holds the write lock (BEGIN IMMEDIATE): reading and then writing cannot
        interleave with another writer. Always app before user, as on PostgreSQL."""
        for scope, delta in (("app", app), ("user", user)):
            if delta:
                rows = await ex.fetch(self._sql.scope[scope], values)
                old: dict[str, Any] = _loads(rows[0][0]) if rows else {}
                merged = {**old, **delta}
                await ex.execute(self._sql.upsert_scope[scope], {**values, "state": _dumps(merged)})

    async def _create_tx(
        self, ex: Executor, values: _Params, app: dict[str, Any], user: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        sql = self._sql
        if sql.postgres:
            stmt = sql.create(bool(app), bool(user), "payload" in values)
            inserted, app_state, user_state = (await ex.fetch(stmt, values))[0]
        elif await ex.execute(sql.insert_session, values):
            inserted = 1
            await self._merge_scopes(ex, {**values, "ts": values["created"]}, app, user)
            app_state, user_state = (await ex.fetch(sql.scopes, values))[0]
        else:
            inserted = app_state = user_state = None
        if not inserted:
            raise SessionExistsError(f"session {values['sid']!r} already exists")
        if "payload" in values and not sql.postgres:
            await ex.execute(sql.insert_created, values)
        return _loads(app_state), _loads(user_state)

    async def _read_tx(
        self,
        ex: Executor,
        params: _Params,
        known: tuple[float, int, int] | None,
        recent: int | None,
        after: float | None,
    ) -> _Read | None:
        if self._sql.postgres and recent is None and after is None:
            return await self._read_all_pg(ex, params, known)
        rows = await ex.fetch(self._sql.session, params)
        if not rows:
            return None
        row = rows[0]
        version, created = row[0], row[1]
        start = 0
        if recent is not None:
            start = max(0, version - max(recent, 0))
        if after is not None:
            found = await ex.fetch(self._sql.first_after, {**params, "ts": after, "hi": version})
            first = found[0][0] if found else None
            start = max(start, version if first is None else int(first))
        # Extend what the cache knows when it is this session and reaches back far enough;
        # otherwise start a new entry at `start`.
        usable = (
            known is not None and known[0] == created and known[1] <= version and known[2] <= start
        )
        lo = known[1] if known is not None and usable else start
        payloads: list[str] = []
        stamps: list[float] = []
        if lo < version:
            rows = await ex.fetch(self._sql.events, {**params, "lo": lo, "hi": version})
            if len(rows) != version - lo:
                raise _Changed
            stamps = [t for t, _ in rows]
            payloads = [p for _, p in rows]
        return _read(row[:7], start, lo, usable, payloads, stamps)

    async def _read_all_pg(
        self, ex: Executor, params: _Params, known: tuple[float, int, int] | None
    ) -> _Read | None:
        """PostgreSQL, no bounds: the session and the events this process lacks, one query."""
        # Whether the cache holds every event up to its version (not a bounded window).
        whole = known if known is not None and known[2] == 0 else None
        values: _Params = {
            **params,
            "created": whole[0] if whole else -1.0,
            "known": whole[1] if whole else 0,
        }
        rows = await ex.fetch(self._sql.session_and_events, values)
        if not rows:
            return None
        row = rows[0]
        version, created, lo, payloads, stamps = row[0], row[1], row[7], row[8], row[9]
        usable = whole is not None and whole[0] == created and whole[1] <= version
        return _read(row[:7], 0, lo, usable, payloads, stamps)

    async def _append_tx(
        self,
        ex: Executor,
        values: _Params,
        sess: dict[str, Any],
        base: dict[str, Any] | None,
        app: dict[str, Any],
        user: dict[str, Any],
    ) -> None:
        sql = self._sql
        read_at: int = values["old_version"]
        has_pending = "pending" in values
        drop: list[str] = values.get("drop") or []
        if sql.postgres:  # one statement; the session delta merges in it
            if sess or drop:
                values["state"] = _dumps(sess)
            stmt = sql.append(bool(sess or drop), has_pending, bool(app), bool(user), bool(drop))
            if await ex.execute(stmt, values) != 1:
                await self._refuse_append(ex, values, read_at)
            return
        values.pop("drop", None)
        if sess or drop:
            if base is None:  # this process has not seen the state at `read_at`: read it
                rows = await ex.fetch(sql.version_state, values)
                _refuse(values["sid"], rows[0][0] if rows else None, read_at)
                base = _loads(rows[0][1])
            merged = {**(base or {}), **sess}
            for key in drop:
                merged.pop(key, None)
            values["state"] = _dumps(merged)
        if await ex.execute(sql.update(bool(sess or drop), has_pending), values) != 1:
            await self._refuse_append(ex, values, read_at)
        await ex.execute(sql.insert_event, values)
        if app or user:
            await self._merge_scopes(ex, values, app, user)

    async def _refuse_append(self, ex: Executor, values: _Params, read_at: int) -> NoReturn:
        rows = await ex.fetch(self._sql.version, values)
        _refuse(values["sid"], rows[0][0] if rows else None, read_at)
        _raise_stale(values["sid"], read_at, read_at)  # the row vanished and came back

    async def _delete_tx(self, ex: Executor, params: _Params) -> None:
        if self._sql.postgres:
            frames = self._frames is not None and self._frames.ready
            await ex.execute(self._sql.delete_with_frames if frames else self._sql.delete, params)
            return
        await ex.execute(self._sql.delete_events, params)
        await ex.execute(self._sql.delete_session, params)

    # -- the cache --------------------------------------------------------------------------

    def _remember(self, key: _Key, entry: _Cached) -> None:
        if self._cache_sessions == 0:
            return
        current = self._cache.get(key)
        # Keep whichever knows more of the same stored session; a re-created one replaces it.
        if current is None or current.created != entry.created or current.version <= entry.version:
            self._cache[key] = entry
        self._cache.move_to_end(key)
        while len(self._cache) > self._cache_sessions:
            self._cache.popitem(last=False)

    # -- the contract -----------------------------------------------------------------------

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str | None = None,
        state: Mapping[str, object] | None = None,
    ) -> Session:
        check_scope(app_name, user_id)
        session_id = uuid.uuid4().hex if session_id is None else check_session_id(session_id)
        check_state_delta(state or {})
        await self._ready()
        app, user, sess = split_state_delta(state or {})
        created = now()
        values: _Params = {
            "app": app_name,
            "user": user_id,
            "sid": session_id,
            "state": _dumps(sess),
            "app_state": _dumps(app),
            "user_state": _dumps(user),
            "created": created,
        }
        if sess:
            kept = Event(author=CREATED_AUTHOR, actions=EventActions(state_delta=sess))
            values["payload"] = _encode_event(kept)
            values["event_id"] = kept.id
            values["author"] = CREATED_AUTHOR
        app_state, user_state = await self._db.write(
            partial(self._create_tx, values=values, app=app, user=user),
            single=self._sql.postgres,  # one statement there
        )
        entry = _Cached(created, 0)
        entry.state = dict(sess)
        self._remember((app_name, user_id, session_id), entry)
        return Session(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state={**(app_state or {}), **(user_state or {}), **sess},
            events=EventsView(entry.log, 0),
            pending=entry.pending,
            version=0,
            last_update_time=created,
        )

    async def copy_history(
        self,
        source: Session,
        *,
        new_session_id: str | None,
        before_event_id: str | None,
        state: Mapping[str, Any],
        pending: Sequence[PendingCall],
    ) -> Session | None:
        # The rows of the log prefix are copied inside the database (one INSERT … SELECT):
        # a fork costs the same few statements whatever the length of the history, and
        # keeps the prefix as it was stored (rewound records and rewinds too, for audit).
        session_id = (
            uuid.uuid4().hex if new_session_id is None else check_session_id(new_session_id)
        )
        await self._ready()
        values: _Params = {
            "app": source.app_name,
            "user": source.user_id,
            "source": source.id,
            "sid": session_id,
            "bound": source.version,
            "event_id": before_event_id,
            "state": _dumps(dict(state)),
            "pending": _dumps([p.model_dump(mode="json") for p in pending]),
            "created": now(),
        }
        await self._db.write(partial(self._copy_tx, values=values))
        copied = await self.get_session(
            app_name=source.app_name, user_id=source.user_id, session_id=session_id
        )
        assert copied is not None
        return copied

    async def _copy_tx(self, ex: Executor, values: _Params) -> None:
        sql = self._sql
        if values["event_id"] is not None:
            where = {
                "app": values["app"],
                "user": values["user"],
                "sid": values["source"],
                "event_id": values.pop("event_id"),
            }
            rows = await ex.fetch(sql.seq_of, where)
            if not rows or rows[0][0] is None:
                raise InvocationNotFoundError(f"record {where['event_id']!r} is not stored")
            values["bound"] = int(rows[0][0])
        else:
            del values["event_id"]
        if not await ex.execute(sql.insert_fork, values):
            raise SessionExistsError(f"session {values['sid']!r} already exists")
        await ex.execute(sql.copy_events, values)

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
        await self._ready()
        key = (app_name, user_id, session_id)
        params = {"app": app_name, "user": user_id, "sid": session_id}
        read: _Read | None = None
        entry: _Cached | None = None
        # A concurrent delete and re-create can cut a read short; try again.
        for _ in range(3):
            entry = self._cache.get(key)
            known = None if entry is None else (entry.created, entry.version, entry.first_seq)
            try:
                read = await self._db.read(
                    partial(
                        self._read_tx,
                        params=params,
                        known=known,
                        recent=num_recent_events,
                        after=after_timestamp,
                    )
                )
            except _Changed:
                self._cache.pop(key, None)
                continue
            break
        else:
            raise SessionNotFoundError(f"session {session_id!r} kept changing while being read")
        if read is None:
            self._cache.pop(key, None)
            return None
        version = read.version
        hit = entry is not None and not read.fresh and entry.version == version
        new = entry is None or read.fresh
        if entry is None or new:
            entry = _Cached(read.created, read.loaded_from)
        # Skips the events another task added meanwhile (`_Cached.add`, in one go); a new
        # entry's history is decoded as it is read (SPEC K3).
        payloads = read.payloads
        skip = entry.version - read.loaded_from
        if new and payloads:
            entry.load(payloads, read.stamps)
        elif 0 <= skip < len(payloads):
            entry.extend(_decode_events(payloads[skip:] if skip else payloads))
        self._remember(key, entry)
        if hit:
            pending = entry.pending  # unchanged since the cache saw this version
        else:
            pending = _decode_pending(read.pending)
            if entry.version == version:
                entry.state = dict(read.state)
                entry.pending = pending
        log, lo, hi, rewound = entry.view(read.start, version)
        return Session(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state={**(read.app_state or {}), **(read.user_state or {}), **read.state},
            events=EventsView(log, lo, hi),
            pending=pending,
            version=version,
            last_update_time=read.update_time,
            rewound=list(rewound),
        )

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        delta = event.actions.state_delta
        if delta:
            check_state_delta(delta)  # before anything is written (SPEC G3)
        check_event_text(event)
        await self._ready()
        key = (session.app_name, session.user_id, session.id)
        entry = self._cache.get(key)
        read_at = session.version
        if entry is not None and entry.version > read_at:
            _raise_stale(session.id, entry.version, read_at)  # known stale: no round trip
        event = strip_temp_state(event)
        delta = event.actions.state_delta
        app, user, sess = split_state_delta(delta) if delta else ({}, {}, {})
        target = event.actions.rewind_before_invocation_id
        drop: list[str] = []
        if target is None:
            pending = apply_pending(session.pending, event)
        else:  # the calls waiting before the rewound invocation; a rewind's None removes
            shown = list(session.events)
            cut = next((i for i, e in enumerate(shown) if e.invocation_id == target), 0)
            pending = pending_calls(shown[:cut])
            drop = [k for k, v in sess.items() if v is None]
            sess = {k: v for k, v in sess.items() if v is not None}
        values: _Params = {
            "app": key[0],
            "user": key[1],
            "sid": key[2],
            "old_version": read_at,
            "event_id": event.id,
            "invocation_id": event.invocation_id,
            "author": event.author,
            "ts": event.timestamp,
            "payload": _encode_event(event),
        }
        if pending is not session.pending:
            values["pending"] = _dumps([p.model_dump(mode="json") for p in pending])
        if drop:
            values["drop"] = drop
        if app:
            values["app_state"] = _dumps(app)
        if user:
            values["user_state"] = _dumps(user)
        base = entry.state if entry is not None and entry.version == read_at else None
        await self._db.write(
            partial(self._append_tx, values=values, sess=sess, base=base, app=app, user=user),
            single=self._sql.postgres or (not app and not user),
        )
        self._after_commit(session, event, self._cache.get(key), pending, sess, drop)
        return event

    def _after_commit(
        self,
        session: Session,
        event: Event,
        entry: _Cached | None,
        pending: list[PendingCall],
        sess: dict[str, Any],
        drop: Sequence[str] = (),
    ) -> None:
        """Advance the handle and the cache past the event just committed.

        The handle's log may belong to a cache entry — this service's or another instance's —
        which then advances with it, so a log never holds an event its entry has not seen.
        """
        read_at = session.version
        view = session.events
        log = view.log
        owner: _Cached | None = log.derived.get(_OWNER)
        if owner is None and entry is not None and entry.log is log:
            owner = entry  # even if someone cleared `derived`, never append twice
        rewind = event.actions.rewind_before_invocation_id is not None
        if entry is not None and not rewind:
            visible = entry.visible
            if visible is not None and visible[1] is log and visible[0] == read_at:
                entry.visible = (read_at + 1, log, visible[2])  # grows with the append below
        if owner is None and not rewind:
            if view.start + len(view) != len(log):
                # Events of another handle follow this one's (a re-created session): give
                # this handle a log of its own.
                log = EventLog(list(view))
                session.events = EventsView(log, 0)
            log.append(event)
        for cached in (owner, entry) if entry is not owner else (owner,):
            if cached is not None:
                # Appends unless a concurrent get_session already read the event back.
                cached.advance(read_at, event, sess, pending, drop)
        session._after_append(event, read_at + 1, pending)  # pyright: ignore[reportPrivateUsage]

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
        await self._ready()
        params: _Params = {"app": app_name, "user": user_id}
        if page_token:
            after_time, after_id, after_user = _decode_token(page_token)
            params.update(after_time=after_time, after_id=after_id, after_user=after_user)
        if limit is not None:
            params["limit"] = limit + 1  # one more tells whether a next page exists
        stmt = self._sql.list(user_id is not None, bool(page_token), limit is not None)
        rows = list(await self._db.read(partial(_fetch, stmt=stmt, values=params)))
        next_token = None
        if limit is not None and len(rows) > limit:
            rows = rows[:limit]
            last = rows[-1]
            next_token = _encode_token(last[3], last[0], last[1])
        sessions = [
            Session(
                id=sid,
                app_name=app_name,
                user_id=uid,
                state={**(_loads(app_state) or {}), **(_loads(user_state) or {}), **_loads(state)},
                pending=_decode_pending(pending),
                version=version,
                last_update_time=update_time,
            )
            for sid, uid, version, update_time, state, pending, app_state, user_state in rows
        ]
        return ListSessionsResponse(sessions=sessions, next_page_token=next_token)

    async def created_state(
        self, *, app_name: str, user_id: str, session_id: str
    ) -> dict[str, Any] | None:
        check_ids(app_name, user_id, session_id)
        await self._ready()
        params = {"app": app_name, "user": user_id, "sid": session_id, "lo": -1, "hi": 0}

        async def read(ex: Executor) -> Sequence[Sequence[Any]]:
            return await ex.fetch(self._sql.events, params)

        rows = await self._db.read(read)
        if not rows:
            return {}
        return dict(_decode_event(rows[0][1]).actions.state_delta)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        check_ids(app_name, user_id, session_id)
        await self._ready()
        params = {"app": app_name, "user": user_id, "sid": session_id}
        await self._db.write(partial(self._delete_tx, params=params), single=self._sql.postgres)
        self._cache.pop((app_name, user_id, session_id), None)
