"""The SQL of the session store, written out for SQLite and PostgreSQL.

The tables are declared once in `_schema.py`; their names come from there (with the store's
prefix), and every statement the store runs is here, in the dialect it runs on. The two
differ where the databases do:

- **PostgreSQL** does each operation in one statement, so one round trip: an append's
  version guard, version bump, event insert and state merges are data-modifying CTEs of one
  `INSERT` (`WITH bumped AS (UPDATE … WHERE version = :old_version RETURNING …) …`), which
  inserts and merges nothing when the guard fails. States are JSONB and merge in the
  statement (`state || delta`: `dict.update` semantics). Row locks are always taken in one
  order — session, app, user — so two appends cannot deadlock. `get_session` reads the session
  row, its scopes and the events after the version this process knows, in one query.
- **SQLite** runs a few statements inside one `BEGIN IMMEDIATE` transaction (the write lock
  is held from the start, so reading a state and writing it back cannot interleave with
  another writer) and merges states in Python; a statement there costs microseconds, not a
  round trip.
"""

from __future__ import annotations

from rondo.sessions._schema import SessionTables
from rondo.sessions._sqlengine import Dialect, Sql

__all__ = ["SessionStatements"]

_EVENT_COLUMNS = "app_name, user_id, session_id, seq, id, invocation_id, author, timestamp, payload"


class SessionStatements:
    """Every statement of one session store, for one dialect."""

    def __init__(self, tables: SessionTables, dialect: Dialect) -> None:
        self.postgres = dialect == "postgresql"
        s, a, u, e = (
            tables.sessions.name,
            tables.app_states.name,
            tables.user_states.name,
            tables.events.name,
        )
        self._names = (s, a, u, e)
        key = "app_name = :app AND user_id = :user AND id = :sid"
        event_key = "app_name = :app AND user_id = :user AND session_id = :sid"
        scopes = (
            f"FROM {s} AS s LEFT JOIN {a} AS a ON a.app_name = s.app_name "
            f"LEFT JOIN {u} AS u ON u.app_name = s.app_name AND u.user_id = s.user_id"
        )
        row = "s.version, s.create_time, s.update_time, s.state, s.pending, a.state, u.state"
        where = "WHERE s.app_name = :app AND s.user_id = :user AND s.id = :sid"
        self._scopes, self._row = scopes, row

        # -- reads
        self.session = Sql(f"SELECT {row} {scopes} {where}")
        self.events = Sql(
            f"SELECT timestamp, payload FROM {e} WHERE {event_key} AND seq >= :lo AND seq < :hi "
            "ORDER BY seq"
        )
        self.first_after = Sql(
            f"SELECT min(seq) FROM {e} WHERE {event_key} AND timestamp >= :ts AND seq < :hi"
        )
        self.version = Sql(f"SELECT version FROM {s} WHERE {key}")
        self.version_state = Sql(f"SELECT version, state FROM {s} WHERE {key}")
        self.scopes = Sql(
            f"SELECT (SELECT state FROM {a} WHERE app_name = :app), "
            f"(SELECT state FROM {u} WHERE app_name = :app AND user_id = :user)"
        )
        # PostgreSQL: the row and the events after `:known` in one query, when this process
        # knows the session as it was created at `:created`; otherwise every event. Their
        # timestamps come apart from their payloads: a fresh replica decodes only what it reads.
        after_known = (
            f"FROM {e} AS e WHERE e.app_name = s.app_name AND e.user_id = s.user_id "
            "AND e.session_id = s.id AND e.seq >= k.lo AND e.seq < s.version ORDER BY e.seq"
        )
        self.session_and_events = Sql(
            f"SELECT {row}, k.lo, ARRAY(SELECT e.payload::text {after_known}), "
            f"ARRAY(SELECT e.timestamp {after_known}) "
            f"FROM {s} AS s CROSS JOIN LATERAL (SELECT CASE WHEN s.create_time = :created "
            "AND s.version >= :known THEN :known ELSE 0 END AS lo) AS k "
            f"LEFT JOIN {a} AS a ON a.app_name = s.app_name "
            f"LEFT JOIN {u} AS u ON u.app_name = s.app_name AND u.user_id = s.user_id {where}"
        )

        # -- forks (issue 21.5): a new session holding a prefix of another's log, copied
        # inside the database (the created state at seq -1 included)
        self.seq_of = Sql(
            f"SELECT min(seq) FROM {e} WHERE {event_key} AND id = :event_id AND seq >= 0"
        )
        cast_state = "CAST(:state AS jsonb)" if self.postgres else ":state"
        cast_pending = "CAST(:pending AS jsonb)" if self.postgres else ":pending"
        self.insert_fork = Sql(
            f"INSERT INTO {s} (app_name, user_id, id, state, pending, version, create_time, "
            f"update_time) VALUES (:app, :user, :sid, {cast_state}, {cast_pending}, :bound, "
            ":created, :created) ON CONFLICT DO NOTHING"
        )
        self.copy_events = Sql(
            f"INSERT INTO {e} ({_EVENT_COLUMNS}) SELECT app_name, user_id, :sid, seq, id, "
            f"invocation_id, author, timestamp, payload FROM {e} WHERE app_name = :app "
            "AND user_id = :user AND session_id = :source AND seq >= -1 AND seq < :bound"
        )

        # -- SQLite writes (inside BEGIN IMMEDIATE)
        self.insert_session = Sql(
            f"INSERT INTO {s} (app_name, user_id, id, state, pending, version, create_time, "
            "update_time) VALUES (:app, :user, :sid, :state, '[]', 0, :created, :created) "
            "ON CONFLICT DO NOTHING"
        )
        self.insert_event = Sql(
            f"INSERT INTO {e} ({_EVENT_COLUMNS}) VALUES (:app, :user, :sid, :old_version, "
            ":event_id, :invocation_id, :author, :ts, :payload)"
        )
        # Issue 21.5: the state a session was created with, kept at seq -1 (outside every read
        # of the history, deleted with the session's events) for a rewind to restore.
        # (SQLite; PostgreSQL does it inside `create`.)
        self.insert_created = Sql(
            f"INSERT INTO {e} ({_EVENT_COLUMNS}) VALUES (:app, :user, :sid, -1, :event_id, "
            "'', :author, :created, :payload)"
        )
        self.scope = {
            "app": Sql(f"SELECT state FROM {a} WHERE app_name = :app"),
            "user": Sql(f"SELECT state FROM {u} WHERE app_name = :app AND user_id = :user"),
        }
        self.upsert_scope = {
            "app": Sql(
                f"INSERT INTO {a} (app_name, state, update_time) VALUES (:app, :state, :ts) "
                "ON CONFLICT (app_name) DO UPDATE SET state = excluded.state, "
                "update_time = excluded.update_time"
            ),
            "user": Sql(
                f"INSERT INTO {u} (app_name, user_id, state, update_time) "
                "VALUES (:app, :user, :state, :ts) ON CONFLICT (app_name, user_id) "
                "DO UPDATE SET state = excluded.state, update_time = excluded.update_time"
            ),
        }
        self.delete_events = Sql(f"DELETE FROM {e} WHERE {event_key}")
        self.delete_session = Sql(f"DELETE FROM {s} WHERE {key}")
        # PostgreSQL: both in one statement.
        self.delete = Sql(
            f"WITH gone AS (DELETE FROM {e} WHERE {event_key}) DELETE FROM {s} WHERE {key}"
        )
        # …and the lifecycle frames kept of its runs, once their table is known to exist
        # (`_run_frames.py`; created on first use, outside the versioned schema).
        self.delete_with_frames = Sql(
            f"WITH gone AS (DELETE FROM {e} WHERE {event_key}), "
            f"frames AS (DELETE FROM {tables.prefix}run_frames WHERE {event_key}) "
            f"DELETE FROM {s} WHERE {key}"
        )

        # Built on first use: there are up to 16 shapes of append and 8 of list.
        self._updates: dict[tuple[bool, bool], Sql] = {}
        self._appends: dict[tuple[bool, bool, bool, bool, bool], Sql] = {}
        self._creates: dict[tuple[bool, bool, bool], Sql] = {}
        self._lists: dict[tuple[bool, bool, bool], Sql] = {}

    def update(self, state: bool, pending: bool) -> Sql:
        """SQLite: the guarded version bump of SPEC R4 (the row changes only if it still has
        the handle's version), with the merged session state and the new pending calls."""
        shape = (state, pending)
        stmt = self._updates.get(shape)
        if stmt is None:
            sets = "version = :old_version + 1, update_time = :ts"
            sets += ", state = :state" if state else ""
            sets += ", pending = :pending" if pending else ""
            stmt = self._updates[shape] = Sql(
                f"UPDATE {self._names[0]} SET {sets} WHERE app_name = :app AND user_id = :user "
                "AND id = :sid AND version = :old_version"
            )
        return stmt

    def append(self, state: bool, pending: bool, app: bool, user: bool, drop: bool = False) -> Sql:
        """PostgreSQL: a whole append in one statement; it inserts one event row, or none
        when the version guard fails. `drop`: a rewind also removes the keys `:drop`."""
        shape = (state, pending, app, user, drop)
        stmt = self._appends.get(shape)
        if stmt is not None:
            return stmt
        s, _a, _u, e = self._names
        sets = "version = :old_version + 1, update_time = :ts"
        merged = f"{s}.state || :state::jsonb"
        if drop:
            merged = f"({merged}) - CAST(:drop AS text[])"
        sets += f", state = {merged}" if state else ""
        sets += ", pending = :pending::jsonb" if pending else ""
        ctes = [
            f"bumped AS (UPDATE {s} SET {sets} WHERE app_name = :app AND user_id = :user "
            "AND id = :sid AND version = :old_version RETURNING app_name, user_id)"
        ]
        ctes += self._scope_merges("bumped", ":ts", app, user)
        stmt = self._appends[shape] = Sql(
            "WITH " + ", ".join(ctes) + f" INSERT INTO {e} ({_EVENT_COLUMNS}) "
            "SELECT :app, :user, :sid, :old_version, :event_id, :invocation_id, :author, :ts, "
            ":payload::json FROM bumped"
        )
        return stmt

    def create(self, app: bool, user: bool, kept: bool = False) -> Sql:
        """PostgreSQL: a new session and its scope deltas in one statement; returns whether it
        was inserted (0 when the id is taken) and the app and user states after it. `kept`:
        it also stores the created state at seq -1 (`insert_created`)."""
        shape = (app, user, kept)
        stmt = self._creates.get(shape)
        if stmt is not None:
            return stmt
        s, a, u, e = self._names
        ctes = [
            f"ins AS (INSERT INTO {s} (app_name, user_id, id, state, pending, version, "
            "create_time, update_time) VALUES (:app, :user, :sid, :state::jsonb, '[]'::jsonb, "
            "0, :created, :created) ON CONFLICT DO NOTHING RETURNING app_name, user_id)"
        ]
        if kept:
            ctes.append(
                f"kept AS (INSERT INTO {e} ({_EVENT_COLUMNS}) SELECT :app, :user, :sid, -1, "
                ":event_id, '', :author, :created, :payload::json FROM ins)"
            )
        ctes += self._scope_merges("ins", ":created", app, user)
        app_state = f"(SELECT state FROM {a} WHERE app_name = :app)"
        user_state = f"(SELECT state FROM {u} WHERE app_name = :app AND user_id = :user)"
        if app:
            app_state = f"COALESCE((SELECT state FROM app_up), {app_state})"
        if user:
            user_state = f"COALESCE((SELECT state FROM user_up), {user_state})"
        stmt = self._creates[shape] = Sql(
            "WITH " + ", ".join(ctes) + f" SELECT (SELECT count(*) FROM ins), {app_state}, "
            f"{user_state}"
        )
        return stmt

    def _scope_merges(self, source: str, ts: str, app: bool, user: bool) -> list[str]:
        """PostgreSQL: CTEs merging `:app_state` / `:user_state` into their rows for each row of
        `source`, returning the merged states; the user merge reads the app merge's row, so
        the app row is locked first."""
        _s, a, u, _e = self._names
        ctes: list[str] = []
        if app:
            ctes.append(
                f"app_up AS (INSERT INTO {a} (app_name, state, update_time) SELECT app_name, "
                f":app_state::jsonb, {ts} FROM {source} ON CONFLICT (app_name) DO UPDATE SET "
                f"state = {a}.state || excluded.state, update_time = excluded.update_time "
                f"RETURNING {a}.state)"
            )
        if user:
            after = f"{source}, app_up" if app else source
            ctes.append(
                f"user_up AS (INSERT INTO {u} (app_name, user_id, state, update_time) "
                f"SELECT {source}.app_name, {source}.user_id, :user_state::jsonb, {ts} "
                f"FROM {after} ON CONFLICT (app_name, user_id) DO UPDATE SET "
                f"state = {u}.state || excluded.state, update_time = excluded.update_time "
                f"RETURNING {u}.state)"
            )
        return ctes

    def list(self, by_user: bool, after: bool, limited: bool) -> Sql:
        """One page of sessions, newest first, keyset-paged (sessions added meanwhile never
        shift a page)."""
        shape = (by_user, after, limited)
        stmt = self._lists.get(shape)
        if stmt is not None:
            return stmt
        text = (
            "SELECT s.id, s.user_id, s.version, s.update_time, s.state, s.pending, a.state, "
            f"u.state {self._scopes} WHERE s.app_name = :app"
        )
        if by_user:
            text += " AND s.user_id = :user"
        if after:
            text += (
                " AND (s.update_time < :after_time OR (s.update_time = :after_time AND "
                "(s.id > :after_id OR (s.id = :after_id AND s.user_id > :after_user))))"
            )
        text += " ORDER BY s.update_time DESC, s.id, s.user_id"
        if limited:
            text += " LIMIT :limit"
        stmt = self._lists[shape] = Sql(text)
        return stmt
