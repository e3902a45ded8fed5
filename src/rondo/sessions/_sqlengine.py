"""The database under the SQL stores (sessions, memory): drivers, transactions, schema versions.

**The URL names the driver that runs** — nothing is swapped behind the caller's back:

- `sqlite:///path/to.db`, `sqlite+pysqlite:///…` or a plain file path: Python's own `sqlite3`,
  the embedded default (`.rondo/sessions.db`). A transaction runs right in the event loop when
  it cannot block — WAL with `synchronous=NORMAL`, where a commit is tens of microseconds and
  never fsyncs — and otherwise (`synchronous=FULL`, or a lock another connection holds) on the
  store's own thread, which waits for the lock.
- `sqlite+aiosqlite:///…`: aiosqlite (the `aiosqlite` extra). Every statement is a hop to its
  thread and back: several times the CPU per append of the stdlib path (bench/SESSIONS.md;
  measured again for issue 18: 0.54 ms against 0.14 ms of CPU per append). Every google-adk
  guide writes this URL, so without aiosqlite installed it opens the same file on the stdlib
  driver (logged once) rather than fail: the file, the SQL and the guarantees are the same,
  and a core dependency that only makes appends slower is not worth adding.
- `postgresql://…`, `postgres://…` or `postgresql+asyncpg://…`: asyncpg (the `postgres` extra),
  a pool of up to `pool_size` connections; each statement is prepared once per connection, and
  a one-statement write runs without BEGIN/COMMIT: one round trip.

Any other driver, and in-memory SQLite (which does not outlive its connection), is refused.
`connect_args` go to `sqlite3.connect`, `aiosqlite.connect` or `asyncpg.create_pool` (e.g.
`{"server_settings": {"search_path": "app"}}`, or `{"statement_cache_size": 0}` behind
pgbouncer in transaction mode).

A store writes each transaction as an async function of an `Executor` and hands it to
`Database.read` / `Database.write`. Statements are hand-written SQL (`Sql`) with `:name`
parameters, which sqlite3 binds by name and which become `$1, $2…` for asyncpg. On the stdlib
driver nothing in a transaction suspends — each statement runs synchronously — so the whole
transaction runs to its end without yielding to the event loop (`_run_to_end`). Write
transactions take SQLite's write lock up front (`BEGIN IMMEDIATE`), so a read-modify-write cannot
interleave with another writer.

Tables are declared once, as SQLAlchemy Core `Table`s, and SQLAlchemy writes their DDL for each
dialect (`CreateTable(...).compile(dialect=...)`; nothing else of SQLAlchemy runs). Each component
records its schema version in one small table. A store creates its tables only in a database
that has none of them; an older version is migrated only when asked (`migrate=True` or `await
store.migrate()`), never by a silent create.
"""

from __future__ import annotations

import abc
import asyncio
import importlib.util
import logging
import os
import re
import sqlite3
import threading
import zlib
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url

from rondo.errors import ConfigurationError, RondoError, SchemaVersionError, StoreUnavailableError

logger = logging.getLogger("rondo.sessions")

__all__ = [
    "DEFAULT_SQLITE_PATH",
    "Database",
    "Executor",
    "Migration",
    "Sql",
    "VersionedSchema",
    "default_sqlite_url",
    "open_database",
    "version_table",
]

DEFAULT_SQLITE_PATH = ".rondo/sessions.db"

T = TypeVar("T")
Dialect = Literal["sqlite", "postgresql"]
Transaction = Callable[["Executor"], Coroutine[Any, Any, T]]
# Upgrades one component's schema from version n to n + 1, inside one transaction.
Migration = Callable[["Executor"], Awaitable[None]]

_NO_VALUES: Mapping[str, object] = {}


def default_sqlite_url(path: str | os.PathLike[str] = DEFAULT_SQLITE_PATH) -> str:
    """The URL of the embedded default store (`.rondo/sessions.db`); creates its directory."""
    file = Path(path).expanduser().resolve()
    file.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{file}"


# -- statements ---------------------------------------------------------------------------------

# `:name`, but not the `::` of a PostgreSQL cast.
_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


class Sql:
    """One statement: SQL with `:name` parameters, in the form each driver takes.

    `text` is for sqlite3 (which binds `:name` from a mapping), `pg` the same statement with
    `$1, $2…` for asyncpg and `names` the parameter of each position.
    """

    __slots__ = ("names", "pg", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        names: list[str] = []

        def number(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in names:
                names.append(name)
            return f"${names.index(name) + 1}"

        self.pg = _PARAM.sub(number, text)
        self.names = tuple(names)

    def __repr__(self) -> str:
        return f"Sql({self.text!r})"


class Executor(Protocol):
    """Runs statements inside one transaction (see `Database`)."""

    @property
    def dialect(self) -> Dialect: ...

    async def fetch(
        self, stmt: Sql, values: Mapping[str, object] = _NO_VALUES
    ) -> Sequence[Sequence[Any]]:
        """The rows the statement returns."""
        ...

    async def execute(self, stmt: Sql, values: Mapping[str, object] = _NO_VALUES) -> int:
        """Run the statement; the number of rows it changed."""
        ...

    async def script(self, sql: str) -> None:
        """Run SQL without parameters (DDL)."""
        ...


class _SqliteExecutor:
    """Statements on a stdlib sqlite3 cursor: each runs synchronously, nothing suspends."""

    __slots__ = ("cursor",)
    dialect: Dialect = "sqlite"

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self.cursor = cursor

    async def fetch(
        self, stmt: Sql, values: Mapping[str, object] = _NO_VALUES
    ) -> Sequence[Sequence[Any]]:
        return self.cursor.execute(stmt.text, values).fetchall()

    async def execute(self, stmt: Sql, values: Mapping[str, object] = _NO_VALUES) -> int:
        return self.cursor.execute(stmt.text, values).rowcount

    async def script(self, sql: str) -> None:
        self.cursor.execute(sql)


class _AiosqliteExecutor:
    __slots__ = ("conn",)
    dialect: Dialect = "sqlite"

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def fetch(
        self, stmt: Sql, values: Mapping[str, object] = _NO_VALUES
    ) -> Sequence[Sequence[Any]]:
        return await self.conn.execute_fetchall(stmt.text, values)

    async def execute(self, stmt: Sql, values: Mapping[str, object] = _NO_VALUES) -> int:
        cursor = await self.conn.execute(stmt.text, values)
        changed: int = cursor.rowcount
        await cursor.close()
        return changed

    async def script(self, sql: str) -> None:
        await (await self.conn.execute(sql)).close()


class _PostgresExecutor:
    __slots__ = ("conn",)
    dialect: Dialect = "postgresql"

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def fetch(
        self, stmt: Sql, values: Mapping[str, object] = _NO_VALUES
    ) -> Sequence[Sequence[Any]]:
        return await self.conn.fetch(stmt.pg, *[values[n] for n in stmt.names])

    async def execute(self, stmt: Sql, values: Mapping[str, object] = _NO_VALUES) -> int:
        status: str = await self.conn.execute(stmt.pg, *[values[n] for n in stmt.names])
        count = status.rpartition(" ")[2]  # "INSERT 0 1", "UPDATE 3", "DELETE 0"
        return int(count) if count.isdigit() else 0

    async def script(self, sql: str) -> None:
        await self.conn.execute(sql)


# -- databases ----------------------------------------------------------------------------------


class Database(abc.ABC):
    """Runs a store's transactions on one database (see the module docstring)."""

    dialect: Dialect
    url: str

    @property
    def postgres(self) -> bool:
        return self.dialect == "postgresql"

    @abc.abstractmethod
    async def read(self, fn: Transaction[T]) -> T:
        """Run `fn` for reading (on PostgreSQL each statement stands alone: no snapshot)."""

    @abc.abstractmethod
    async def write(self, fn: Transaction[T], *, single: bool = False) -> T:
        """Run `fn` in one transaction: committed if it returns, rolled back if it raises.

        `single`: `fn` changes the database with one statement (atomic by itself), so on
        PostgreSQL it runs without BEGIN/COMMIT round trips.
        """

    @abc.abstractmethod
    async def close(self) -> None:
        """Release connections and threads (closing twice is fine)."""

    async def listen(
        self, channel: str, callback: Callable[[str], None]
    ) -> Callable[[], Awaitable[None]]:
        """Call `callback(payload)` for each notice on `channel` (PostgreSQL only)."""
        raise ConfigurationError("notices between processes need PostgreSQL")


def open_database(
    url: str | URL | os.PathLike[str],
    *,
    sqlite_synchronous: str = "NORMAL",
    pool_size: int = 10,
    connect_args: Mapping[str, object] | None = None,
) -> Database:
    """The database a URL (or a SQLite file path) names, on the driver it names."""
    args = dict(connect_args or {})
    if isinstance(url, os.PathLike) or (isinstance(url, str) and "://" not in url):
        return _StdlibSqlite(_sqlite_file(str(url)), sqlite_synchronous, args)
    parsed = make_url(url)
    backend, driver = parsed.get_backend_name(), parsed.get_driver_name()
    if backend == "sqlite":
        path = _sqlite_file(parsed.database or "")
        if driver == "pysqlite":
            return _StdlibSqlite(path, sqlite_synchronous, args)
        if driver == "aiosqlite":
            if importlib.util.find_spec("aiosqlite") is None:
                _log_stdlib_fallback()
                return _StdlibSqlite(path, sqlite_synchronous, args)
            return _AioSqlite(path, sqlite_synchronous, args)
    elif backend == "postgresql" and (driver == "asyncpg" or parsed.drivername in _PLAIN_PG):
        dsn = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
        return _Postgres(dsn, pool_size, args)
    raise ConfigurationError(
        f"unsupported database {parsed.drivername!r}: use sqlite:///path (the stdlib driver), "
        "sqlite+aiosqlite:///path or postgresql+asyncpg://user@host/db"
    )


_PLAIN_PG = ("postgresql", "postgres")
_fallback_logged = False


def _log_stdlib_fallback() -> None:
    global _fallback_logged
    if not _fallback_logged:
        _fallback_logged = True
        logger.info(
            "sqlite+aiosqlite:// without aiosqlite installed: using Python's own sqlite3 driver "
            "on the same file (pip install 'rondo-agents[aiosqlite]' to run aiosqlite)"
        )


def _sqlite_file(database: str) -> str:
    if database in ("", ":memory:") or database.startswith("file::memory:"):
        raise ConfigurationError(
            "an in-memory SQLite database does not outlive its connection; use a file "
            "(sqlite:///path/to/sessions.db) or InMemorySessionService"
        )
    file = Path(database).expanduser()
    file.parent.mkdir(parents=True, exist_ok=True)
    return str(file)


def _synchronous(mode: str) -> str:
    mode = mode.upper()
    if mode not in ("OFF", "NORMAL", "FULL", "EXTRA"):
        raise ConfigurationError(f"invalid SQLite synchronous mode {mode!r}")
    return mode


def _run_to_end(coro: Coroutine[Any, Any, T]) -> T:
    """Run a transaction whose awaits never suspend (the stdlib executor's) to its end, here.

    This is what lets one transaction function serve every driver: on asyncpg and aiosqlite it
    is awaited like any coroutine; on sqlite3 it is driven synchronously, in the event loop or
    on the store's thread, so nothing else can run in the middle of it.
    """
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RondoError("a SQLite transaction awaited something that suspends")  # a bug in rondo


class _Busy(Exception):
    """The inline connection would have to wait for a lock: use the store's thread instead."""


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    return getattr(exc, "sqlite_errorcode", 0) & 0xFF in (
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
    )


# After this many commits on the inline connection, a checkpoint copies the WAL into the
# database file on the store's thread (the inline connection never checkpoints itself).
_CHECKPOINT_EVERY = 200


class _StdlibSqlite(Database):
    """SQLite on the stdlib driver: inline in the event loop when that cannot block, else on
    the store's one thread. `NORMAL` sync survives a killed process, as every WAL database
    does; `FULL` also survives power loss, at the price of an fsync per commit."""

    dialect: Dialect = "sqlite"

    def __init__(self, path: str, synchronous: str, connect_args: dict[str, Any]) -> None:
        self.url = f"sqlite:///{path}"
        self._path = path
        self._mode = _synchronous(synchronous)
        connect_args.setdefault("timeout", 30.0)
        # Transactions are begun explicitly; a connection is used by one thread at a time
        # but may be closed from another.
        self._connect_args: dict[str, Any] = {
            **connect_args,
            "isolation_level": None,
            "check_same_thread": False,
        }
        self._thread: ThreadPoolExecutor | None = ThreadPoolExecutor(
            1, thread_name_prefix="rondo-sqlite"
        )
        self._raw: sqlite3.Connection | None = None  # the thread's connection
        self._inline: sqlite3.Connection | None = None  # the event-loop thread's connection
        self._inline_owner: int | None = None
        self._inline_ok = self._mode in ("OFF", "NORMAL")
        self._commits = 0

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, **self._connect_args)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self._mode}")
        return conn

    async def read(self, fn: Transaction[T]) -> T:
        inline = self._inline_connection()
        if inline is not None:
            try:
                return self._run(inline, fn, "BEGIN")
            except _Busy:
                pass
        return await self._in_thread(partial(self._run_in_thread, fn, "BEGIN"))

    async def write(self, fn: Transaction[T], *, single: bool = False) -> T:
        inline = self._inline_connection()
        if inline is not None:
            try:
                result = self._run(inline, fn, "BEGIN IMMEDIATE")
            except _Busy:
                pass
            else:
                self._commits += 1
                if self._commits >= _CHECKPOINT_EVERY:
                    self._commits = 0
                    await self._in_thread(self._checkpoint)
                return result
        return await self._in_thread(partial(self._run_in_thread, fn, "BEGIN IMMEDIATE"))

    async def _in_thread(self, call: Callable[[], T]) -> T:
        if self._thread is None:
            raise RondoError("the SQLite store is closed")
        return await asyncio.get_running_loop().run_in_executor(self._thread, call)

    def _inline_connection(self) -> sqlite3.Connection | None:
        """SQLite, NORMAL sync: the connection transactions run on right in the event loop.

        Without an fsync per commit a transaction is tens of microseconds of work, less than
        the hop to a thread and back. This connection never waits for a lock (`_Busy` sends
        the transaction to the thread, which does) and never checkpoints (the thread does).
        Only the first thread that uses the store gets it.
        """
        if not self._inline_ok:
            return None
        if self._inline_owner is None:
            conn = self._connect()
            conn.execute("PRAGMA busy_timeout=0")
            conn.execute("PRAGMA wal_autocheckpoint=0")
            self._inline, self._inline_owner = conn, threading.get_ident()
        return self._inline if self._inline_owner == threading.get_ident() else None

    def _thread_connection(self) -> sqlite3.Connection:
        if self._raw is None:
            self._raw = self._connect()
        return self._raw

    def _run_in_thread(self, fn: Transaction[T], begin: str) -> T:
        try:
            return self._run(self._thread_connection(), fn, begin, wait=True)
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                waited = self._connect_args.get("timeout")
                raise StoreUnavailableError(
                    f"the SQLite database {self._path} stayed locked by another connection "
                    f"for {waited} s (connect_args timeout): {exc}"
                ) from exc
            raise

    def _run(
        self, conn: sqlite3.Connection, fn: Transaction[T], begin: str, wait: bool = False
    ) -> T:
        cursor = conn.cursor()
        try:
            try:
                cursor.execute(begin)
            except sqlite3.OperationalError as exc:
                if not wait and _is_busy(exc):
                    raise _Busy from exc
                raise
            try:
                result = _run_to_end(fn(_SqliteExecutor(cursor)))
                cursor.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    cursor.execute("ROLLBACK")
                if not wait and isinstance(exc, sqlite3.OperationalError) and _is_busy(exc):
                    raise _Busy from exc
                raise
            return result
        finally:
            cursor.close()

    def _checkpoint(self) -> None:
        self._thread_connection().execute("PRAGMA wal_checkpoint(PASSIVE)")

    async def close(self) -> None:
        if self._inline is not None:
            self._inline.close()
            self._inline = self._inline_owner = None
        if self._thread is not None:
            await self._in_thread(self._close_thread_connection)
            self._thread.shutdown(wait=False)
            self._thread = None

    def _close_thread_connection(self) -> None:
        if self._raw is not None:
            self._raw.close()
            self._raw = None


class _AioSqlite(Database):
    """SQLite through aiosqlite: one connection, one transaction at a time."""

    dialect: Dialect = "sqlite"

    def __init__(self, path: str, synchronous: str, connect_args: dict[str, Any]) -> None:
        try:
            import aiosqlite  # noqa: F401  # pyright: ignore[reportUnusedImport]
        except ImportError as exc:
            raise ConfigurationError(
                "sqlite+aiosqlite:// needs aiosqlite (pip install 'rondo-agents[aiosqlite]'); "
                "sqlite:///path runs on Python's own sqlite3 driver"
            ) from exc
        self.url = f"sqlite+aiosqlite:///{path}"
        self._path = path
        self._mode = _synchronous(synchronous)
        connect_args.setdefault("timeout", 30.0)
        self._connect_args: dict[str, Any] = {**connect_args, "isolation_level": None}
        self._conn: Any = None
        self._lock = asyncio.Lock()

    async def _connection(self) -> Any:
        if self._conn is None:
            import aiosqlite

            conn: Any = await aiosqlite.connect(self._path, **self._connect_args)
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute(f"PRAGMA synchronous={self._mode}")
            self._conn = conn
        return self._conn

    async def _run(self, fn: Transaction[T], begin: str) -> T:
        async with self._lock:
            conn = await self._connection()
            await conn.execute(begin)
            try:
                result = await fn(_AiosqliteExecutor(conn))
                await conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    await conn.execute("ROLLBACK")
                raise
            return result

    async def read(self, fn: Transaction[T]) -> T:
        return await self._run(fn, "BEGIN")

    async def write(self, fn: Transaction[T], *, single: bool = False) -> T:
        return await self._run(fn, "BEGIN IMMEDIATE")

    async def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await conn.close()


async def _keep_session(conn: Any) -> None:
    """What a connection needs before it goes back to the pool: nothing beyond asyncpg's own
    rollback of an open transaction. asyncpg's default reset (`RESET ALL`, `UNLISTEN *`...) is
    a round trip per release, and the stores change no session state (no SET, LISTEN, cursor
    or session-level advisory lock) — so each operation stays one round trip."""


class _Postgres(Database):
    """PostgreSQL through an asyncpg pool (created on first use, in the running loop)."""

    dialect: Dialect = "postgresql"

    def __init__(self, dsn: str, pool_size: int, connect_args: dict[str, Any]) -> None:
        try:
            import asyncpg  # noqa: F401  # pyright: ignore[reportUnusedImport, reportMissingTypeStubs]
        except ImportError as exc:
            raise ConfigurationError(
                "PostgreSQL needs asyncpg: pip install 'rondo-agents[postgres]'"
            ) from exc
        if pool_size < 1:
            raise ConfigurationError("pool_size must be at least 1")
        self.url = dsn
        self._dsn = dsn
        self._pool_size = pool_size
        self._connect_args = connect_args
        self._pool: Any = None
        self._opening = asyncio.Lock()

    async def _open(self) -> Any:
        async with self._opening:
            if self._pool is None:
                import asyncpg  # pyright: ignore[reportMissingTypeStubs]

                args: dict[str, Any] = {"reset": _keep_session, **self._connect_args}
                self._pool = await asyncpg.create_pool(  # pyright: ignore[reportUnknownMemberType]
                    self._dsn, min_size=1, max_size=self._pool_size, **args
                )
            return self._pool

    async def read(self, fn: Transaction[T]) -> T:
        try:
            pool = self._pool if self._pool is not None else await self._open()
            async with pool.acquire() as conn:
                return await fn(_PostgresExecutor(conn))
        except Exception as exc:
            unavailable = self._unavailable(exc, "read")
            if unavailable is None:
                raise
            raise unavailable from exc

    async def write(self, fn: Transaction[T], *, single: bool = False) -> T:
        try:
            pool = self._pool if self._pool is not None else await self._open()
            async with pool.acquire() as conn:
                if single:
                    return await fn(_PostgresExecutor(conn))
                async with conn.transaction():
                    return await fn(_PostgresExecutor(conn))
        except Exception as exc:
            unavailable = self._unavailable(exc, "write")
            if unavailable is None:
                raise
            raise unavailable from exc

    async def listen(
        self, channel: str, callback: Callable[[str], None]
    ) -> Callable[[], Awaitable[None]]:
        """LISTEN on a connection of its own (a pooled one would carry the LISTEN to other
        work); returns how to stop."""
        import asyncpg  # pyright: ignore[reportMissingTypeStubs]

        connect: Any = asyncpg.connect  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        conn: Any = await connect(self._dsn, **self._connect_args)  # pyright: ignore[reportUnknownVariableType]

        def deliver(_conn: Any, _pid: int, _channel: str, payload: str) -> None:
            callback(payload)

        await conn.add_listener(channel, deliver)

        async def stop() -> None:
            await conn.close()

        return stop

    def _unavailable(self, exc: Exception, what: str) -> StoreUnavailableError | None:
        """A lost or refused connection as `StoreUnavailableError` (D3); anything else as is."""
        from asyncpg import exceptions as pg  # pyright: ignore[reportMissingTypeStubs]

        lost = isinstance(exc, OSError | pg.PostgresConnectionError | pg.OperatorInterventionError)
        if not lost and isinstance(exc, pg.InterfaceError):
            lost = "closed" in str(exc)
        if not lost:
            return None
        where = make_url(self._dsn).set(password=None).render_as_string()
        outcome = " (its outcome is unknown: read the session again)" if what == "write" else ""
        return StoreUnavailableError(
            f"PostgreSQL at {where} is unavailable; the {what} failed{outcome}: "
            f"{type(exc).__name__}: {exc}"
        )

    async def close(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()


# -- schema versions ----------------------------------------------------------------------------


def _dialect(name: Dialect) -> sa.Dialect:
    from sqlalchemy.dialects import postgresql, sqlite

    return postgresql.dialect() if name == "postgresql" else sqlite.dialect()


_HAS_TABLE: dict[Dialect, Sql] = {
    "sqlite": Sql("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = :name"),
    "postgresql": Sql(
        "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = :name"
    ),
}


async def has_table(ex: Executor, name: str) -> bool:
    """Whether the database (PostgreSQL: the current schema) has this table."""
    rows = await ex.fetch(_HAS_TABLE[ex.dialect], {"name": name})
    return bool(rows[0][0])


class VersionedSchema:
    """One component's tables, their version and the migrations that lead to it.

    `migrations[n]` upgrades a database from version n to n + 1; `extra_ddl` runs after the
    tables are created (what SQLAlchemy cannot declare: FTS5 tables, triggers...).
    """

    def __init__(
        self,
        component: str,
        metadata: sa.MetaData,
        version: int,
        *,
        version_table: sa.Table,
        migrations: Mapping[int, Migration] | None = None,
        extra_ddl: Migration | None = None,
    ) -> None:
        self.component = component
        self.metadata = metadata
        self.version = version
        self.version_table = version_table
        # Kept by reference: the module-level table of migrations is the source of truth.
        self.migrations: Mapping[int, Migration] = migrations if migrations is not None else {}
        self.extra_ddl = extra_ddl
        self._ready = False
        self._lock = asyncio.Lock()
        name = version_table.name
        self._q_version = Sql(f"SELECT version FROM {name} WHERE component = :component")
        self._insert_version = Sql(
            f"INSERT INTO {name} (component, version) VALUES (:component, :version)"
        )
        self._set_version = Sql(
            f"UPDATE {name} SET version = :version WHERE component = :component"
        )
        self._lock_key = zlib.crc32(f"rondo:{component}".encode()) & 0x7FFFFFFF

    @property
    def tables(self) -> Sequence[sa.Table]:
        return [t for t in self.metadata.sorted_tables if t is not self.version_table]

    async def ready(self, db: Database, *, migrate: bool = False) -> None:
        """Prepare the schema once per store (create, check or migrate it)."""
        if self._ready and not migrate:
            return
        async with self._lock:
            if self._ready and not migrate:
                return
            await db.write(partial(self._prepare, migrate=migrate))
            self._ready = True

    async def _prepare(self, ex: Executor, *, migrate: bool) -> None:
        if ex.dialect == "postgresql":
            # Two processes starting on an empty database must not both create the tables.
            await ex.fetch(Sql("SELECT pg_advisory_xact_lock(:key)"), {"key": self._lock_key})
        stored = await self._stored_version(ex)
        if stored is None:
            await self._create(ex)
        elif stored > self.version:
            raise SchemaVersionError(
                f"the database's {self.component} schema is version {stored}, newer than this "
                f"rondo understands ({self.version}); upgrade rondo"
            )
        elif stored < self.version:
            if not migrate:
                raise SchemaVersionError(
                    f"the database's {self.component} schema is version {stored}; this rondo "
                    f"needs version {self.version}. Back up the database, then pass "
                    "migrate=True or call `await store.migrate()`"
                )
            await self._migrate(ex, stored)

    async def _stored_version(self, ex: Executor) -> int | None:
        if not await has_table(ex, self.version_table.name):
            return None
        rows = await ex.fetch(self._q_version, {"component": self.component})
        return int(rows[0][0]) if rows else None

    async def _create(self, ex: Executor) -> None:
        found = [t.name for t in self.tables if await has_table(ex, t.name)]
        if found:
            raise SchemaVersionError(
                f"the database has rondo {self.component} tables ({', '.join(found)}) but no "
                "recorded schema version; refusing to guess their layout"
            )
        dialect = _dialect(ex.dialect)
        if not await has_table(ex, self.version_table.name):
            await ex.script(str(sa.schema.CreateTable(self.version_table).compile(dialect=dialect)))
        for table in self.tables:
            await ex.script(str(sa.schema.CreateTable(table).compile(dialect=dialect)))
            for index in sorted(table.indexes, key=lambda i: i.name or ""):
                await ex.script(str(sa.schema.CreateIndex(index).compile(dialect=dialect)))
        if self.extra_ddl is not None:
            await self.extra_ddl(ex)
        await ex.execute(
            self._insert_version, {"component": self.component, "version": self.version}
        )

    async def _migrate(self, ex: Executor, stored: int) -> None:
        for version in range(stored, self.version):
            step = self.migrations.get(version)
            if step is None:
                raise SchemaVersionError(
                    f"no migration of the {self.component} schema from version {version}"
                )
            await step(ex)
        await ex.execute(self._set_version, {"component": self.component, "version": self.version})


def version_table(metadata: sa.MetaData, name: str) -> sa.Table:
    return sa.Table(
        name,
        metadata,
        sa.Column("component", sa.String(64), primary_key=True),
        sa.Column("version", sa.Integer, nullable=False),
    )
