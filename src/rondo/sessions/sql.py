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

Transactions are plain functions of an `Executor` running prebuilt Core statements, handed
to `Database` (see `_sqlengine`): nothing awaits in the middle of a transaction.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, NoReturn

import sqlalchemy as sa
from pydantic import BaseModel
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from rondo.errors import SessionExistsError, SessionNotFoundError, StaleSessionError
from rondo.events import Event, EventActions, PendingCall
from rondo.sessions._schema import SessionTables
from rondo.sessions._sqlengine import Database, Executor, default_sqlite_url
from rondo.sessions.base import (
    BaseSessionService,
    EventLog,
    EventsView,
    ListSessionsResponse,
    Session,
    apply_pending,
    now,
    split_state_delta,
    strip_temp_state,
)

__all__ = ["SqlSessionService", "default_sqlite_url"]

_Key = tuple[str, str, str]
# Where a cached log records the cache entry it belongs to.
_OWNER = "rondo.sessions.sql:owner"
_Params = dict[str, Any]


class _Cached:
    """What this process knows of one stored session.

    `log` holds the events with `seq` in `[first_seq, version)` — every event when
    `first_seq == 0`; `state` (the session scope only) and `pending` are those at `version`.
    """

    __slots__ = ("created", "first_seq", "log", "pending", "state", "version")

    def __init__(self, created: float, first_seq: int) -> None:
        self.created = created
        self.first_seq = first_seq
        self.log = EventLog()
        self.log.derived[_OWNER] = self
        self.version = first_seq
        self.state: dict[str, Any] = {}
        self.pending: list[PendingCall] = []

    def add(self, seq: int, event: Event) -> None:
        """Append the event stored at `seq` unless the log already has it."""
        if seq == self.version:
            self.log.append(event)
            self.version += 1

    def advance(
        self, seq: int, event: Event, sess: dict[str, Any], pending: list[PendingCall]
    ) -> None:
        """Take in an event this process appended at `seq`, with its effects."""
        if seq == self.version:
            self.add(seq, event)
            self.state.update(sess)
            self.pending = pending


@dataclass(slots=True)
class _Read:
    """What one `get_session` query found: the session row and the events to add."""

    version: int
    created: float
    update_time: float
    state: dict[str, Any]
    pending: list[Any]
    app_state: dict[str, Any] | None
    user_state: dict[str, Any] | None
    start: int  # the first seq the handle shows
    loaded_from: int  # the seq of `events[0]`
    fresh: bool  # the events start a new cache entry
    events: list[Event]


class _Changed(Exception):
    """The session was deleted or re-created while it was being read."""


def _encode_event(event: Event, postgres: bool) -> str | dict[str, Any]:
    """The stored payload. Default values are left out: they come back as defaults, and the
    decoded record then marks only its real fields as set (see `_compact`)."""
    if postgres:
        return event.model_dump(mode="json", exclude_defaults=True)
    return event.model_dump_json(exclude_defaults=True)


def _decode_event(payload: str | dict[str, Any]) -> Event:
    """An event from its payload: JSON text (SQLite) or the dict asyncpg decoded (PostgreSQL)."""
    if isinstance(payload, str):
        return _compact(Event.model_validate_json(payload))
    return _compact(Event.model_validate(payload))


# Records are frozen (SPEC G1), so what many decoded events hold alike can be one object: an
# empty `EventActions`, the empty id set, the set of field names pydantic keeps per model.
# This halves the memory of a cached history (bench/SESSIONS.md).
_EMPTY_ACTIONS = EventActions()
_NO_IDS: frozenset[str] = frozenset()
_FIELD_SETS: dict[frozenset[str], set[str]] = {}


def _share_fields_set(model: BaseModel) -> None:
    names = model.__pydantic_fields_set__
    key = frozenset(names)
    shared = _FIELD_SETS.get(key)
    if shared is None:
        if len(_FIELD_SETS) >= 512:  # a handful of shapes in practice; never unbounded
            return
        shared = _FIELD_SETS[key] = set(names)
    object.__setattr__(model, "__pydantic_fields_set__", shared)


def _compact(event: Event) -> Event:
    values = vars(event)
    if values["actions"].is_empty():
        values["actions"] = _EMPTY_ACTIONS
    else:
        _share_fields_set(values["actions"])
    if not values["long_running_tool_ids"]:
        values["long_running_tool_ids"] = _NO_IDS
    _share_fields_set(event)
    content = values["content"]
    if content is not None:
        _share_fields_set(content)
        for part in content.parts:
            _share_fields_set(part)
    return event


def _decode_pending(raw: Sequence[Any] | None) -> list[PendingCall]:
    return [PendingCall.model_validate(p) for p in raw or ()]


def _encode_token(update_time: float, session_id: str, user_id: str) -> str:
    raw = json.dumps([update_time, session_id, user_id]).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_token(token: str) -> tuple[float, str, str]:
    try:
        update_time, session_id, user_id = json.loads(base64.urlsafe_b64decode(token))
        return float(update_time), str(session_id), str(user_id)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"invalid page_token {token!r}") from exc


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


class SqlSessionService(BaseSessionService):
    """Sessions in SQLite (default `.rondo/sessions.db`) or PostgreSQL.

    `url`: `sqlite+aiosqlite:///path` or `postgresql+asyncpg://user@host/db`. A database with
    an older schema is refused with `SchemaVersionError` unless `migrate=True` (or `await
    service.migrate()`). `cache_sessions` bounds how many sessions keep their events in
    memory. `sqlite_synchronous="FULL"` makes every SQLite commit survive power loss too (the
    default `NORMAL` survives a killed process). Other keyword arguments go to SQLAlchemy's
    `create_engine` / `create_async_engine`.
    """

    def __init__(
        self,
        url: str | URL | None = None,
        *,
        migrate: bool = False,
        cache_sessions: int = 1024,
        table_prefix: str = "rondo_",
        sqlite_synchronous: str = "NORMAL",
        **engine_kwargs: Any,
    ) -> None:
        self._db = Database(
            url if url is not None else default_sqlite_url(),
            sqlite_synchronous=sqlite_synchronous,
            **engine_kwargs,
        )
        self._tables = SessionTables(table_prefix)
        self._migrate = migrate
        self._cache: OrderedDict[_Key, _Cached] = OrderedDict()
        self._cache_sessions = max(cache_sessions, 0)
        self._build_statements()

    @property
    def engine(self) -> AsyncEngine | Engine:
        """The SQLAlchemy engine (async for PostgreSQL; sync, on the store's thread, for SQLite)."""
        return self._db.engine

    async def migrate(self) -> None:
        """Upgrade an older database schema to this version of rondo."""
        await self._tables.schema.ready(self._db, migrate=True)

    async def close(self) -> None:
        self._cache.clear()
        await self._db.close()

    async def _ready(self) -> None:
        await self._tables.schema.ready(self._db, migrate=self._migrate)

    # -- statements, built once (SQLAlchemy caches their compiled form) ---------------------

    def _build_statements(self) -> None:
        t = self._tables
        s, a, u, e = t.sessions, t.app_states, t.user_states, t.events
        app = sa.bindparam("app", type_=sa.String())
        user = sa.bindparam("user", type_=sa.String())
        sid = sa.bindparam("sid", type_=sa.String())
        where_session = sa.and_(s.c.app_name == app, s.c.user_id == user, s.c.id == sid)
        where_events = sa.and_(e.c.app_name == app, e.c.user_id == user, e.c.session_id == sid)
        self._with_scopes = s.outerjoin(a, a.c.app_name == s.c.app_name).outerjoin(
            u, sa.and_(u.c.app_name == s.c.app_name, u.c.user_id == s.c.user_id)
        )
        self._q_session = (
            sa.select(
                s.c.version,
                s.c.create_time,
                s.c.update_time,
                s.c.state,
                s.c.pending,
                a.c.state,
                u.c.state,
            )
            .select_from(self._with_scopes)
            .where(where_session)
        )
        self._q_events = (
            sa.select(e.c.payload)
            .where(where_events, e.c.seq >= sa.bindparam("lo"), e.c.seq < sa.bindparam("hi"))
            .order_by(e.c.seq)
        )
        self._q_first_after = sa.select(sa.func.min(e.c.seq)).where(
            where_events, e.c.timestamp >= sa.bindparam("ts"), e.c.seq < sa.bindparam("hi")
        )
        self._q_version = sa.select(s.c.version).where(where_session)
        self._q_version_state = (
            sa.select(s.c.version, s.c.state).where(where_session).with_for_update()
        )
        self._q_scopes = sa.select(
            sa.select(a.c.state).where(a.c.app_name == app).scalar_subquery(),
            sa.select(u.c.state).where(u.c.app_name == app, u.c.user_id == user).scalar_subquery(),
        )
        self._insert_event = e.insert().values(
            app_name=app,
            user_id=user,
            session_id=sid,
            seq=sa.bindparam("seq"),
            id=sa.bindparam("event_id"),
            invocation_id=sa.bindparam("invocation_id"),
            author=sa.bindparam("author"),
            timestamp=sa.bindparam("ts"),
            payload=sa.bindparam("payload", type_=e.c.payload.type),
        )
        # The guard of SPEC R4: the row changes only if it still has the handle's version.
        guarded = s.update().where(where_session, s.c.version == sa.bindparam("old_version"))
        moved: dict[str, Any] = {
            "version": sa.bindparam("new_version", type_=sa.Integer()),
            "update_time": sa.bindparam("ts", type_=sa.Float()),
        }
        state_delta = sa.bindparam("state", type_=s.c.state.type)
        # PostgreSQL merges the session delta itself (JSONB `||`); SQLite is handed the merged
        # state, computed from the state this process knows at the handle's version.
        state = {
            "state": s.c.state.op("||", return_type=s.c.state.type)(state_delta)
            if self._db.postgres
            else state_delta
        }
        pending = {"pending": sa.bindparam("pending", type_=s.c.pending.type)}
        self._updates = {
            (False, False): guarded.values(moved),
            (True, False): guarded.values({**moved, **state}),
            (False, True): guarded.values({**moved, **pending}),
            (True, True): guarded.values({**moved, **state, **pending}),
        }
        # PostgreSQL, no app/user delta: guard, version bump and event insert in one
        # statement — one round trip, atomic without a transaction. The insert selects
        # from the update, so it inserts nothing when the guard fails.
        self._pg_appends: dict[tuple[bool, bool], sa.Executable] = {}
        if self._db.postgres:
            columns = ["app_name", "user_id", "session_id", "seq", "id"]
            columns += ["invocation_id", "author", "timestamp", "payload"]
            for key, update in self._updates.items():
                bumped = update.returning(s.c.version).cte("bumped")
                row = sa.select(
                    app,
                    user,
                    sid,
                    sa.bindparam("seq", type_=sa.Integer()),
                    sa.bindparam("event_id", type_=sa.String()),
                    sa.bindparam("invocation_id", type_=sa.String()),
                    sa.bindparam("author", type_=sa.String()),
                    sa.bindparam("ts", type_=sa.Float()),
                    sa.bindparam("payload", type_=e.c.payload.type),
                ).select_from(bumped)
                self._pg_appends[key] = e.insert().from_select(columns, row)
        self._delete_events = e.delete().where(where_events)
        self._delete_session = s.delete().where(where_session)
        self._insert_session = s.insert().values(
            app_name=app,
            user_id=user,
            id=sid,
            state=sa.bindparam("state", type_=s.c.state.type),
            pending=sa.bindparam("pending", type_=s.c.pending.type),
            version=sa.bindparam("version", type_=sa.Integer()),
            create_time=sa.bindparam("created", type_=sa.Float()),
            update_time=sa.bindparam("created", type_=sa.Float()),
        )
        self._q_scope = {
            "app": sa.select(a.c.state).where(a.c.app_name == app),
            "user": sa.select(u.c.state).where(u.c.app_name == app, u.c.user_id == user),
        }
        self._upsert_scope = {
            "app": self._upsert(a, app_name=app),
            "user": self._upsert(u, app_name=app, user_id=user),
        }
        self._lists: dict[tuple[bool, bool, bool], sa.Select[*tuple[Any, ...]]] = {}

    def _upsert(self, table: sa.Table, **key: sa.BindParameter[str]) -> sa.Executable:
        """Insert a scope's state row or merge into it: JSONB `||` on PostgreSQL; on SQLite the
        caller passes the merged state, read under the write lock."""
        values = {
            **key,
            "state": sa.bindparam("state", type_=table.c.state.type),
            "update_time": sa.bindparam("ts", type_=sa.Float()),
        }
        if self._db.postgres:
            pg = postgresql.insert(table).values(values)
            merged = table.c.state.op("||")(pg.excluded.state)
            return pg.on_conflict_do_update(
                index_elements=list(key),
                set_={"state": merged, "update_time": pg.excluded.update_time},
            )
        lite = sqlite.insert(table).values(values)
        return lite.on_conflict_do_update(
            index_elements=list(key),
            set_={"state": lite.excluded.state, "update_time": lite.excluded.update_time},
        )

    def _list_statement(
        self, by_user: bool, after: bool, limited: bool
    ) -> sa.Select[*tuple[Any, ...]]:
        """One of eight prebuilt `list_sessions` queries: newest first, keyset-paged."""
        key = (by_user, after, limited)
        stmt = self._lists.get(key)
        if stmt is not None:
            return stmt
        t = self._tables
        s, a, u = t.sessions, t.app_states, t.user_states
        stmt = (
            sa.select(
                s.c.id,
                s.c.user_id,
                s.c.version,
                s.c.update_time,
                s.c.state,
                s.c.pending,
                a.c.state,
                u.c.state,
            )
            .select_from(self._with_scopes)
            .where(s.c.app_name == sa.bindparam("app", type_=sa.String()))
            .order_by(s.c.update_time.desc(), s.c.id, s.c.user_id)
        )
        if by_user:
            stmt = stmt.where(s.c.user_id == sa.bindparam("user", type_=sa.String()))
        if after:
            # Keyset paging: sessions added meanwhile never shift a page.
            t0 = sa.bindparam("after_time", type_=sa.Float())
            id0 = sa.bindparam("after_id", type_=sa.String())
            user0 = sa.bindparam("after_user", type_=sa.String())
            stmt = stmt.where(
                sa.or_(
                    s.c.update_time < t0,
                    sa.and_(
                        s.c.update_time == t0,
                        sa.or_(s.c.id > id0, sa.and_(s.c.id == id0, s.c.user_id > user0)),
                    ),
                )
            )
        if limited:
            stmt = stmt.limit(sa.bindparam("limit", type_=sa.Integer()))
        self._lists[key] = stmt
        return stmt

    # -- transactions (run by Database; no awaits inside) -----------------------------------

    def _merge_scope(
        self, conn: Executor, scope: str, params: _Params, delta: dict[str, Any]
    ) -> None:
        """Merge `delta` into an app or user state row (dict.update semantics), atomically."""
        values = {**params, "state": delta, "ts": now()}
        if not self._db.postgres:
            # SQLite: this transaction holds the write lock (BEGIN IMMEDIATE), so reading and
            # then writing cannot interleave with another writer.
            old = conn.execute(self._q_scope[scope], params).scalar()
            values["state"] = {**(old or {}), **delta}
        conn.execute(self._upsert_scope[scope], values)

    def _merge_scopes(
        self,
        conn: Executor,
        params: _Params,
        app: dict[str, Any],
        user: dict[str, Any],
    ) -> None:
        # Always app before user: every transaction takes these row locks in the same order.
        if app:
            self._merge_scope(conn, "app", params, app)
        if user:
            self._merge_scope(conn, "user", params, user)

    def _create_tx(
        self, conn: Executor, row: _Params, app: dict[str, Any], user: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        try:
            conn.execute(self._insert_session, row)
        except IntegrityError:
            raise SessionExistsError(f"session {row['sid']!r} already exists") from None
        self._merge_scopes(conn, row, app, user)
        app_state, user_state = conn.execute(self._q_scopes, row).one()
        return app_state, user_state

    def _read_tx(
        self,
        conn: Executor,
        params: _Params,
        known: tuple[float, int, int] | None,
        recent: int | None,
        after: float | None,
    ) -> _Read | None:
        row = conn.execute(self._q_session, params).first()
        if row is None:
            return None
        version, created, update_time, state, pending, app_state, user_state = row
        start = 0
        if recent is not None:
            start = max(0, version - max(recent, 0))
        if after is not None:
            found = conn.execute(
                self._q_first_after, {**params, "ts": after, "hi": version}
            ).scalar()
            start = max(start, version if found is None else int(found))
        # Extend what the cache knows when it is this session and reaches back far enough;
        # otherwise start a new entry at `start`.
        usable = (
            known is not None and known[0] == created and known[1] <= version and known[2] <= start
        )
        lo = known[1] if known is not None and usable else start
        events: list[Event] = []
        if lo < version:
            payloads = conn.execute(self._q_events, {**params, "lo": lo, "hi": version}).rows
            if len(payloads) != version - lo:
                raise _Changed
            events = [_decode_event(p) for (p,) in payloads]
        return _Read(
            version,
            created,
            update_time,
            state,
            pending,
            app_state,
            user_state,
            start,
            lo,
            not usable,
            events,
        )

    def _append_tx(
        self,
        conn: Executor,
        params: _Params,
        read_at: int,
        event_row: _Params,
        sess: dict[str, Any],
        base: dict[str, Any] | None,
        pending: list[dict[str, Any]] | None,
        app: dict[str, Any],
        user: dict[str, Any],
    ) -> None:
        values: _Params = {**params, "old_version": read_at, "new_version": read_at + 1}
        values["ts"] = event_row["ts"]
        if sess:
            if self._db.postgres:
                values["state"] = sess  # merged by the statement
            else:
                if base is None:  # this process has not seen the state at `read_at`: read it
                    row = conn.execute(self._q_version_state, params).first()
                    _refuse(params["sid"], None if row is None else row[0], read_at)
                    assert row is not None
                    base = row[1]
                values["state"] = {**(base or {}), **sess}
        if pending is not None:
            values["pending"] = pending
        key = (bool(sess), pending is not None)
        if self._db.postgres and not app and not user:
            values.update(event_row, seq=read_at)
            if conn.execute(self._pg_appends[key], values).rowcount != 1:
                self._refuse_append(conn, params, read_at)
            return
        if conn.execute(self._updates[key], values).rowcount != 1:
            self._refuse_append(conn, params, read_at)
        conn.execute(self._insert_event, {**params, **event_row, "seq": read_at})
        if app or user:
            self._merge_scopes(conn, params, app, user)

    def _refuse_append(self, conn: Executor, params: _Params, read_at: int) -> NoReturn:
        stored = conn.execute(self._q_version, params).scalar()
        _refuse(params["sid"], stored, read_at)
        _raise_stale(params["sid"], read_at, read_at)  # the row vanished and came back

    def _delete_tx(self, conn: Executor, params: _Params) -> None:
        conn.execute(self._delete_events, params)
        conn.execute(self._delete_session, params)

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
        state: Mapping[str, Any] | None = None,
    ) -> Session:
        await self._ready()
        session_id = session_id or uuid.uuid4().hex
        app, user, sess = split_state_delta(state or {})
        created = now()
        row: _Params = {
            "app": app_name,
            "user": user_id,
            "sid": session_id,
            "state": sess,
            "pending": [],
            "version": 0,
            "created": created,
        }
        app_state, user_state = await self._db.write(
            partial(self._create_tx, row=row, app=app, user=user)
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

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        num_recent_events: int | None = None,
        after_timestamp: float | None = None,
    ) -> Session | None:
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
        if entry is None or read.fresh:
            entry = _Cached(read.created, read.loaded_from)
        for seq, event in enumerate(read.events, read.loaded_from):
            entry.add(seq, event)  # skips events another task added meanwhile
        self._remember(key, entry)
        if hit:
            pending = entry.pending  # unchanged since the cache saw this version
        else:
            pending = _decode_pending(read.pending)
            if entry.version == version:
                entry.state = dict(read.state)
                entry.pending = pending
        return Session(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state={**(read.app_state or {}), **(read.user_state or {}), **read.state},
            events=EventsView(entry.log, read.start - entry.first_seq, version - entry.first_seq),
            pending=pending,
            version=version,
            last_update_time=read.update_time,
        )

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        await self._ready()
        key = (session.app_name, session.user_id, session.id)
        entry = self._cache.get(key)
        read_at = session.version
        if entry is not None and entry.version > read_at:
            _raise_stale(session.id, entry.version, read_at)  # known stale: no round trip
        event = strip_temp_state(event)
        delta = event.actions.state_delta
        app, user, sess = split_state_delta(delta) if delta else ({}, {}, {})
        pending = apply_pending(session.pending, event)
        base = entry.state if entry is not None and entry.version == read_at else None
        event_row = {
            "event_id": event.id,
            "invocation_id": event.invocation_id,
            "author": event.author,
            "ts": event.timestamp,
            "payload": _encode_event(event, self._db.postgres),
        }
        await self._db.write(
            partial(
                self._append_tx,
                params={"app": key[0], "user": key[1], "sid": key[2]},
                read_at=read_at,
                event_row=event_row,
                sess=sess,
                base=base,
                pending=None
                if pending is session.pending
                else [p.model_dump(mode="json") for p in pending],
                app=app,
                user=user,
            ),
            single=not app and not user,  # see _pg_appends
        )
        self._after_commit(session, event, self._cache.get(key), pending, sess)
        return event

    def _after_commit(
        self,
        session: Session,
        event: Event,
        entry: _Cached | None,
        pending: list[PendingCall],
        sess: dict[str, Any],
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
        if owner is None:
            if view.start + len(view) != len(log):
                # Events of another handle follow this one's (a re-created session): give
                # this handle a log of its own.
                log = EventLog(list(view))
                session.events = EventsView(log, 0)
            log.append(event)
        for cached in (owner, entry) if entry is not owner else (owner,):
            if cached is not None:
                # Appends unless a concurrent get_session already read the event back.
                cached.advance(read_at, event, sess, pending)
        session._after_append(event, read_at + 1, pending)  # pyright: ignore[reportPrivateUsage]

    async def list_sessions(
        self,
        *,
        app_name: str,
        user_id: str | None = None,
        limit: int | None = None,
        page_token: str | None = None,
    ) -> ListSessionsResponse:
        await self._ready()
        if limit is not None and limit < 1:
            raise ValueError("limit must be at least 1")
        params: _Params = {"app": app_name, "user": user_id}
        if page_token:
            after_time, after_id, after_user = _decode_token(page_token)
            params.update(after_time=after_time, after_id=after_id, after_user=after_user)
        if limit is not None:
            params["limit"] = limit + 1  # one more tells whether a next page exists
        stmt = self._list_statement(user_id is not None, bool(page_token), limit is not None)
        rows = (await self._db.read(lambda conn: conn.execute(stmt, params))).rows
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
                state={**(app_state or {}), **(user_state or {}), **state},
                pending=_decode_pending(pending),
                version=version,
                last_update_time=update_time,
            )
            for sid, uid, version, update_time, state, pending, app_state, user_state in rows
        ]
        return ListSessionsResponse(sessions=sessions, next_page_token=next_token)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await self._ready()
        params = {"app": app_name, "user": user_id, "sid": session_id}
        await self._db.write(partial(self._delete_tx, params=params))
        self._cache.pop((app_name, user_id, session_id), None)
