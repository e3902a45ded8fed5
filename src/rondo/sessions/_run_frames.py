"""A run's stream frames, kept in PostgreSQL for the other replicas (`rondo.sessions.run_frames`).

A row is `(app, user, session, run_id, n, k) → format, frame, created_at`. The frames of one
write are one statement (`unnest` of three arrays). Like the run claims, the table is outside
the versioned session schema and is created, if missing, on first use: older databases need
no migration. Rows go with their session (in the statement that deletes it, or at the next
`prune`) and after `KEEP` in any case: they only serve rejoins, the log holds the run's
records for good.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Sequence
from functools import partial
from typing import Any

from rondo.sessions._sqlengine import Database, Executor, Sql
from rondo.sessions.run_frames import KEEP, Frame, RunFrames, RunKey

__all__ = ["PostgresRunFrames"]

_LOCK = Sql("SELECT pg_advisory_xact_lock(:key)")


class PostgresRunFrames(RunFrames):
    """The kept frames of one store's PostgreSQL database."""

    def __init__(self, db: Database, table_prefix: str) -> None:
        table = f"{table_prefix}run_frames"
        self._db = db
        self._create = (
            f"CREATE TABLE IF NOT EXISTS {table} ("
            "app_name VARCHAR(128) NOT NULL, user_id VARCHAR(128) NOT NULL, "
            "session_id VARCHAR(128) NOT NULL, run_id VARCHAR(128) NOT NULL, "
            "n INTEGER NOT NULL, k INTEGER NOT NULL, format VARCHAR(16) NOT NULL, "
            "frame TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now(), "
            "PRIMARY KEY (app_name, user_id, session_id, run_id, n, k))"
        )
        run = "app_name = :app AND user_id = :user AND session_id = :sid AND run_id = :run"
        # ON CONFLICT: a write retried after an answer was lost stores nothing twice.
        self._insert = Sql(
            f"INSERT INTO {table} (app_name, user_id, session_id, run_id, n, k, format, frame) "
            "SELECT :app, :user, :sid, :run, f.n, f.k, :fmt, f.frame "
            "FROM unnest(:ns::int[], :ks::int[], :frames::text[]) AS f(n, k, frame) "
            "ON CONFLICT DO NOTHING"
        )
        self._after = Sql(
            f"SELECT n, k, frame FROM {table} WHERE {run} AND (n, k) > (:n, :k) ORDER BY n, k"
        )
        self._format = Sql(f"SELECT format FROM {table} WHERE {run} LIMIT 1")
        self._last = Sql(f"SELECT n, k FROM {table} WHERE {run} ORDER BY n DESC, k DESC LIMIT 1")
        self._of_session = Sql(
            f"SELECT DISTINCT ON (run_id) run_id, format, n, k FROM {table} "
            "WHERE app_name = :app AND user_id = :user AND session_id = :sid "
            "ORDER BY run_id, n DESC, k DESC"
        )
        # Old frames, and those of sessions deleted by a process that had not used the table.
        self._prune = Sql(
            f"DELETE FROM {table} AS f WHERE f.created_at < now() - make_interval(secs => :keep) "
            f"OR NOT EXISTS (SELECT 1 FROM {table_prefix}sessions AS s WHERE "
            "s.app_name = f.app_name AND s.user_id = f.user_id AND s.id = f.session_id)"
        )
        self._lock_key = zlib.crc32(table.encode())
        self._ready = False
        self._creating = asyncio.Lock()

    @property
    def ready(self) -> bool:
        """Whether this process knows the table exists (a session's delete then takes its
        frames in the same statement; otherwise `prune` does, within ten minutes)."""
        return self._ready

    async def _table(self) -> None:
        if self._ready:
            return
        async with self._creating:
            if not self._ready:
                await self._db.write(self._create_table)
                self._ready = True

    async def _create_table(self, ex: Executor) -> None:
        # As the claims table: two replicas starting at once must not both create it.
        await ex.fetch(_LOCK, {"key": self._lock_key})
        await ex.script(self._create)

    async def keep(self, run: RunKey, fmt: str, frames: Sequence[Frame]) -> None:
        """One statement, whatever the number of frames."""
        await self._table()
        values = _run_values(run)
        values.update(
            fmt=fmt,
            ns=[f[0] for f in frames],
            ks=[f[1] for f in frames],
            frames=[f[2] for f in frames],
        )
        await self._db.write(partial(_execute, stmt=self._insert, values=values), single=True)

    async def after(self, run: RunKey, after: tuple[int, int]) -> list[Frame]:
        await self._table()
        values = {**_run_values(run), "n": after[0], "k": after[1]}
        rows = await self._db.read(partial(_fetch, stmt=self._after, values=values))
        return [(int(n), int(k), str(frame)) for n, k, frame in rows]

    async def format(self, run: RunKey) -> str | None:
        await self._table()
        rows = await self._db.read(partial(_fetch, stmt=self._format, values=_run_values(run)))
        return str(rows[0][0]) if rows else None

    async def last(self, run: RunKey) -> tuple[int, int] | None:
        await self._table()
        rows = await self._db.read(partial(_fetch, stmt=self._last, values=_run_values(run)))
        return (int(rows[0][0]), int(rows[0][1])) if rows else None

    async def of_session(self, key: tuple[str, str, str]) -> dict[str, tuple[str, tuple[int, int]]]:
        await self._table()
        app, user, sid = key
        values: dict[str, Any] = {"app": app, "user": user, "sid": sid}
        rows = await self._db.read(partial(_fetch, stmt=self._of_session, values=values))
        return {str(r): (str(f), (int(n), int(k))) for r, f, n, k in rows}

    async def prune(self, keep: float = KEEP) -> int:
        await self._table()
        values: dict[str, Any] = {"keep": float(keep)}
        return await self._db.write(partial(_execute, stmt=self._prune, values=values), single=True)


def _run_values(run: RunKey) -> dict[str, Any]:
    app, user, sid, run_id = run
    return {"app": app, "user": user, "sid": sid, "run": run_id}


async def _fetch(ex: Executor, *, stmt: Sql, values: dict[str, Any]) -> list[Any]:
    return list(await ex.fetch(stmt, values))


async def _execute(ex: Executor, *, stmt: Sql, values: dict[str, Any]) -> int:
    return await ex.execute(stmt, values)
