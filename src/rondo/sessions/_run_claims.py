"""Run claims: one run at a time on a session, across every process that shares a PostgreSQL.

A run claims its session before its first append and frees it when it ends. The version check
of `append_event` already refuses a stale write, but it does so at the *first* stale append:
a run that lost the race after storing the user's message would leave that message without an
answer. With the claim, a second run on a busy session is refused before it stores anything,
so the session only ever holds whole invocations.

A claim is a row `(app, user, session) → owner, expires_at` in `<prefix>run_claims`, written
with the database's clock (no skew between replicas). Taking one also checks, in the same
statement, that the session exists, so it stands in for the server's existence check. It
lapses `ttl` seconds after its last renewal: a replica that died mid-run blocks its session for
at most that long, and a live replica renews every claim it holds in one statement (`renew`)
well before then. Each operation is one statement, one round trip (a refused claim takes a
second, to tell a busy session from a missing one). The table is outside the
versioned session schema — it holds nothing that outlives a run — and is created, if missing,
the first time a store claims.
"""

from __future__ import annotations

import asyncio
import zlib
from functools import partial
from typing import cast

from rondo.sessions._sqlengine import Database, Executor, Sql
from rondo.sessions.base import ClaimResult

__all__ = ["RunClaims"]

_LOCK = Sql("SELECT pg_advisory_xact_lock(:key)")
_NOTIFY = Sql("SELECT pg_notify(:channel, :payload)")


class RunClaims:
    """The run claims of one store's PostgreSQL database."""

    def __init__(self, db: Database, table_prefix: str) -> None:
        table = f"{table_prefix}run_claims"
        sessions = f"{table_prefix}sessions"
        self._db = db
        # `claimed_version`: the session's version when it was claimed (what the holder
        # appended after it is its own); `resume`: whether a replica resumes the session's
        # interrupted run if the holder dies (a run that asked to stop with its client does
        # not want it). The two came after the table: added to an older one in place.
        self._create = (
            f"CREATE TABLE IF NOT EXISTS {table} ("
            "app_name VARCHAR(128) NOT NULL, user_id VARCHAR(128) NOT NULL, "
            "session_id VARCHAR(128) NOT NULL, owner VARCHAR(64) NOT NULL, "
            "expires_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (app_name, user_id, session_id)); "
            f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS claimed_version INTEGER NOT NULL "
            "DEFAULT 0, ADD COLUMN IF NOT EXISTS resume BOOLEAN NOT NULL DEFAULT FALSE"
        )
        where = "app_name = :app AND user_id = :user AND session_id = :sid AND owner = :owner"
        # Taken when the session exists and the claim is free, lapsed, or already this
        # owner's; no row back means someone else has it — or there is no such session.
        self._claim = Sql(
            f"INSERT INTO {table} AS c (app_name, user_id, session_id, owner, expires_at, "
            "claimed_version, resume) "
            "SELECT :app::varchar, :user::varchar, :sid::varchar, :owner::varchar, "
            "now() + make_interval(secs => :ttl), s.version, :resume "
            f"FROM {sessions} s WHERE s.app_name = :app AND s.user_id = :user AND s.id = :sid "
            "ON CONFLICT (app_name, user_id, session_id) DO UPDATE "
            "SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at, "
            "claimed_version = EXCLUDED.claimed_version, resume = EXCLUDED.resume "
            "WHERE c.expires_at < now() OR c.owner = EXCLUDED.owner RETURNING owner"
        )
        self._exists = Sql(
            f"SELECT 1 FROM {sessions} WHERE app_name = :app AND user_id = :user AND id = :sid"
        )
        self._renew = Sql(
            f"UPDATE {table} SET expires_at = now() + make_interval(secs => :ttl) "
            "WHERE owner = ANY(:owners::varchar[])"
        )
        self._release = Sql(f"DELETE FROM {table} WHERE {where}")
        self._held = Sql(
            f"SELECT 1 FROM {table} WHERE app_name = :app AND user_id = :user "
            "AND session_id = :sid AND (expires_at > now() OR "
            "(resume AND expires_at > now() - make_interval(secs => :grace)))"
        )
        # A claim whose owner stopped renewing it (its process died), taken over by a new
        # owner; SKIP LOCKED: two replicas sweeping at once never take the same one.
        self._take_lapsed = Sql(
            f"UPDATE {table} AS c SET owner = :owner, "
            "expires_at = now() + make_interval(secs => :ttl) "
            "WHERE (c.app_name, c.user_id, c.session_id) = ("
            f"SELECT app_name, user_id, session_id FROM {table} "
            "WHERE expires_at < now() AND resume AND app_name = ANY(:apps::varchar[]) "
            "ORDER BY expires_at LIMIT 1 FOR UPDATE SKIP LOCKED) "
            "AND c.expires_at < now() "
            "RETURNING c.app_name, c.user_id, c.session_id, c.claimed_version"
        )
        self._lock_key = zlib.crc32(table.encode())
        self._ready = False
        self._creating = asyncio.Lock()

    async def _table(self) -> None:
        if self._ready:
            return
        async with self._creating:
            if not self._ready:
                await self._db.write(self._create_table)
                self._ready = True

    async def _create_table(self, ex: Executor) -> None:
        # Two replicas starting at once must not both create it (CREATE … IF NOT EXISTS alone
        # is not safe against a concurrent create in PostgreSQL).
        await ex.fetch(_LOCK, {"key": self._lock_key})
        await ex.script(self._create)

    async def claim(
        self, key: tuple[str, str, str], owner: str, ttl: float, resume: bool = False
    ) -> ClaimResult:
        """Claim the session `key` for `owner` for `ttl` seconds (`resume`: see the table):
        one statement, plus one more only when refused (to tell a busy session from a
        missing one)."""
        await self._table()
        values = _values(key, owner, ttl)
        values["resume"] = resume
        rows = await self._db.write(partial(_fetch, stmt=self._claim, values=values), single=True)
        if rows:
            return "claimed"
        del values["owner"], values["ttl"], values["resume"]
        found = await self._db.read(partial(_fetch, stmt=self._exists, values=values))
        return "busy" if found else "missing"

    async def renew(self, owners: list[str], ttl: float) -> int:
        """Extend the claims of `owners` by `ttl` seconds; how many were still theirs."""
        values: dict[str, object] = {"owners": owners, "ttl": float(ttl)}
        return await self._db.write(partial(_execute, stmt=self._renew, values=values), single=True)

    async def release(self, key: tuple[str, str, str], owner: str) -> None:
        """Free the session (only if `owner` still holds it)."""
        values = _values(key, owner, 0.0)
        del values["ttl"]
        await self._db.write(partial(_execute, stmt=self._release, values=values), single=True)

    async def held(self, key: tuple[str, str, str], lapsed_within: float = 0.0) -> bool:
        """Whether a live claim holds the session, or a claim to be taken over that lapsed
        less than `lapsed_within` seconds ago."""
        await self._table()
        app, user, sid = key
        values: dict[str, object] = {"app": app, "user": user, "sid": sid}
        values["grace"] = float(lapsed_within)
        return bool(await self._db.read(partial(_fetch, stmt=self._held, values=values)))

    async def take_lapsed(
        self, owner: str, ttl: float, apps: list[str]
    ) -> tuple[tuple[str, str, str], int] | None:
        """Take over, for `owner`, one lapsed claim a run asked to be resumed from, on a
        session of `apps`: its key and the session's version when it was claimed."""
        await self._table()
        values: dict[str, object] = {"owner": owner, "ttl": float(ttl), "apps": apps}
        rows = await self._db.write(
            partial(_fetch, stmt=self._take_lapsed, values=values), single=True
        )
        if not rows:
            return None
        # A row of (app, user, session id, version), as the statement selects them.
        app, user, sid, version = cast("tuple[str, str, str, int]", tuple(rows[0]))  # pyright: ignore[reportArgumentType]
        return (str(app), str(user), str(sid)), int(version)

    async def notify(self, channel: str, payload: str) -> None:
        """`pg_notify`: delivered to every connection listening on `channel`, on commit."""
        values: dict[str, object] = {"channel": channel, "payload": payload}
        await self._db.write(partial(_fetch, stmt=_NOTIFY, values=values), single=True)


def _values(key: tuple[str, str, str], owner: str, ttl: float) -> dict[str, object]:
    app, user, sid = key
    return {"app": app, "user": user, "sid": sid, "owner": owner, "ttl": float(ttl)}


async def _fetch(ex: Executor, *, stmt: Sql, values: dict[str, object]) -> list[object]:
    return list(await ex.fetch(stmt, values))


async def _execute(ex: Executor, *, stmt: Sql, values: dict[str, object]) -> int:
    return await ex.execute(stmt, values)
