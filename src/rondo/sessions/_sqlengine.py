"""The database under the SQL stores (sessions, memory): engines, transactions, schema versions.

A store writes each transaction as a plain function of an `Executor` that runs prebuilt
SQLAlchemy Core statements, and hands it to `Database.read` / `Database.write`:

- **PostgreSQL** (`postgresql+asyncpg`): on the async engine, via `AsyncConnection.run_sync`.
- **SQLite** (`sqlite+aiosqlite`, the embedded default): the statements, compiled once by
  SQLAlchemy, run straight on the stdlib driver — in the event loop itself when that cannot
  block (WAL, `synchronous=NORMAL`: a commit is tens of microseconds, no fsync, and a lock
  held by another process sends the transaction to the thread), otherwise on the store's own
  thread. aiosqlite would hop between threads once per driver call (~11 hops and ~4 ms of CPU
  per append, measured here) where this costs none or one.

Write transactions take SQLite's write lock up front (`BEGIN IMMEDIATE`), so a read-modify-write
cannot interleave with another writer.

Each component records its schema version in one small table. A store creates its tables only
in a database that has none of them; an older version is migrated only when asked
(`migrate=True` or `await store.migrate()`), never by a silent `create_all`.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import zlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.sql.compiler import SQLCompiler

from rondo.errors import ConfigurationError, SchemaVersionError

__all__ = [
    "DEFAULT_SQLITE_PATH",
    "Database",
    "Executor",
    "Migration",
    "Rows",
    "VersionedSchema",
    "default_sqlite_url",
    "version_table",
]

DEFAULT_SQLITE_PATH = ".rondo/sessions.db"

T = TypeVar("T")
Migration = Callable[[Connection], None]


def default_sqlite_url(path: str | os.PathLike[str] = DEFAULT_SQLITE_PATH) -> str:
    """The URL of the embedded default store (`.rondo/sessions.db`); creates its directory."""
    file = Path(path).expanduser().resolve()
    file.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite+aiosqlite:///{file}"


def _parse(url: str | URL) -> URL:
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        database = parsed.database or ""
        if database in ("", ":memory:") or database.startswith("file::memory:"):
            raise ConfigurationError(
                "an in-memory SQLite database does not outlive its connection; use a file "
                "(sqlite+aiosqlite:///path/to/sessions.db) or InMemorySessionService"
            )
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        # The stdlib driver on the store's own thread (see the module docstring).
        return parsed.set(drivername="sqlite+pysqlite")
    if backend == "postgresql":
        if parsed.drivername in ("postgresql", "postgres"):
            parsed = parsed.set(drivername="postgresql+asyncpg")
        return parsed
    raise ConfigurationError(
        f"unsupported database {backend!r}: use sqlite+aiosqlite:// or postgresql+asyncpg://"
    )


def _setup_sqlite(engine: Engine, synchronous: str) -> None:
    mode = synchronous.upper()
    if mode not in ("OFF", "NORMAL", "FULL", "EXTRA"):
        raise ConfigurationError(f"invalid SQLite synchronous mode {synchronous!r}")

    @sa_event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:  # pyright: ignore[reportUnusedFunction]
        # Transactions are begun explicitly (below, and by `_RawExecutor`), never implicitly.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={mode}")
        cursor.close()

    @sa_event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:  # pyright: ignore[reportUnusedFunction]
        conn.exec_driver_sql("BEGIN IMMEDIATE")


class Rows:
    """The rows (tuples) a statement returned and the number of rows it changed."""

    __slots__ = ("rowcount", "rows")

    def __init__(self, rows: list[tuple[Any, ...]], rowcount: int) -> None:
        self.rows = rows
        self.rowcount = rowcount

    def first(self) -> tuple[Any, ...] | None:
        return self.rows[0] if self.rows else None

    def one(self) -> tuple[Any, ...]:
        if len(self.rows) != 1:
            raise LookupError(f"expected one row, got {len(self.rows)}")
        return self.rows[0]

    def scalar(self) -> Any:
        """The first column of the first row, or None when there is no row."""
        return self.rows[0][0] if self.rows else None


class Executor(Protocol):
    """Runs Core statements inside one transaction (see `Database`)."""

    def execute(self, stmt: sa.Executable, params: Mapping[str, Any] | None = None) -> Rows: ...


class _SaExecutor:
    """Statements through a SQLAlchemy connection (PostgreSQL; SQLite schema work)."""

    __slots__ = ("conn",)

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def execute(self, stmt: sa.Executable, params: Mapping[str, Any] | None = None) -> Rows:
        result = self.conn.execute(stmt, dict(params or {}))
        rows = [tuple(r) for r in result.all()] if result.returns_rows else []
        return Rows(rows, result.rowcount)


class _Compiled:
    """A Core statement compiled once for SQLite, with its type processors."""

    __slots__ = ("binds", "results", "sql")

    def __init__(self, stmt: sa.Executable, dialect: sa.Dialect) -> None:
        compiled = cast(SQLCompiler, cast(sa.ClauseElement, stmt).compile(dialect=dialect))
        self.sql = str(compiled)
        if "POSTCOMPILE" in self.sql:  # pragma: no cover - a statement-building mistake
            raise ConfigurationError(f"statement needs per-call compilation: {self.sql}")
        names: Sequence[str] = compiled.positiontup or ()
        binds = compiled.binds
        self.binds: list[tuple[str, Any, Callable[[Any], Any] | None]] = [
            (name, binds[name].effective_value, binds[name].type.bind_processor(dialect))
            for name in names
        ]
        self.results: list[Callable[[Any], Any] | None] = []
        if isinstance(stmt, sa.Select | sa.CompoundSelect):
            self.results = [
                c.type.result_processor(dialect, None)
                for c in stmt.selected_columns  # pyright: ignore[reportUnknownVariableType]
            ]


class _RawExecutor:
    """Prebuilt Core statements straight on the driver: no per-statement SQLAlchemy overhead.

    Statements are compiled once and cached by identity, so only long-lived (prebuilt)
    statements may be passed in.
    """

    __slots__ = ("_cache", "_dialect", "cursor")

    def __init__(self, cursor: Any, dialect: sa.Dialect, cache: dict[int, tuple[Any, _Compiled]]):
        self.cursor = cursor
        self._dialect = dialect
        self._cache = cache

    def execute(self, stmt: sa.Executable, params: Mapping[str, Any] | None = None) -> Rows:
        hit = self._cache.get(id(stmt))
        if hit is None or hit[0] is not stmt:
            hit = self._cache[id(stmt)] = (stmt, _Compiled(stmt, self._dialect))
        compiled = hit[1]
        values = params or {}
        args = [
            (process(v) if process is not None and v is not None else v)
            for name, default, process in compiled.binds
            for v in (values.get(name, default),)
        ]
        cursor = self.cursor
        try:
            cursor.execute(compiled.sql, args)
        except sqlite3.IntegrityError as exc:
            raise IntegrityError(compiled.sql, args, exc) from exc
        if cursor.description is None:
            return Rows([], cursor.rowcount)
        rows: list[tuple[Any, ...]] = cursor.fetchall()
        processors = compiled.results
        if any(p is not None for p in processors):
            rows = [
                tuple((p(v) if p is not None else v) for p, v in zip(processors, row, strict=True))
                for row in rows
            ]
        return Rows(rows, cursor.rowcount)


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


class Database:
    """Runs a store's transactions on SQLite or PostgreSQL (see the module docstring).

    `sqlite_synchronous`: `NORMAL` (default) survives a killed process, as every WAL
    database does; `FULL` also survives power loss, at the price of an fsync per commit.
    """

    def __init__(
        self, url: str | URL, *, sqlite_synchronous: str = "NORMAL", **engine_kwargs: Any
    ) -> None:
        parsed = _parse(url)
        self.url = parsed
        self.postgres = parsed.get_backend_name() == "postgresql"
        self._async: AsyncEngine | None = None
        self._sync: Engine | None = None
        self._thread: ThreadPoolExecutor | None = None
        self._raw: Any = None  # the thread's DBAPI connection
        self._inline: Any = None  # the event-loop thread's DBAPI connection
        self._inline_owner: int | None = None
        self._inline_ok = sqlite_synchronous.upper() in ("OFF", "NORMAL")
        self._commits = 0
        self._compiled: dict[int, tuple[Any, _Compiled]] = {}
        if self.postgres:
            self._async = create_async_engine(parsed, **engine_kwargs)
            # Single statements need no BEGIN/COMMIT round trips.
            self._autocommit = self._async.execution_options(isolation_level="AUTOCOMMIT")
        else:
            connect_args = dict(engine_kwargs.pop("connect_args", None) or {})
            connect_args.setdefault("timeout", 30.0)
            # Each connection is used by one thread at a time, but closed from any thread.
            connect_args.setdefault("check_same_thread", False)
            self._sync = sa.create_engine(parsed, connect_args=connect_args, **engine_kwargs)
            _setup_sqlite(self._sync, sqlite_synchronous)
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="rondo-sqlite")

    @property
    def engine(self) -> AsyncEngine | Engine:
        """The SQLAlchemy engine: async for PostgreSQL, sync for SQLite."""
        engine = self._async if self._async is not None else self._sync
        assert engine is not None
        return engine

    async def read(self, fn: Callable[[Executor], T]) -> T:
        """Run `fn` for reading. On PostgreSQL each statement stands alone (no snapshot)."""
        if self._async is not None:
            async with self._autocommit.connect() as conn:
                return await conn.run_sync(lambda c: fn(_SaExecutor(c)))
        inline = self._inline_connection()
        if inline is not None:
            try:
                return self._run_raw(inline, fn, "BEGIN")
            except _Busy:
                pass
        return await self._in_thread(partial(self._run_raw_thread, fn, "BEGIN"))

    async def write(self, fn: Callable[[Executor], T], *, single: bool = False) -> T:
        """Run `fn` in one transaction: committed if it returns, rolled back if it raises.

        `single`: `fn` changes the database with one statement (atomic by itself), so on
        PostgreSQL it runs without BEGIN/COMMIT round trips.
        """
        if self._async is not None:
            if single:
                async with self._autocommit.connect() as conn:
                    return await conn.run_sync(lambda c: fn(_SaExecutor(c)))
            async with self._async.begin() as conn:
                return await conn.run_sync(lambda c: fn(_SaExecutor(c)))
        inline = self._inline_connection()
        if inline is not None:
            try:
                result = self._run_raw(inline, fn, "BEGIN IMMEDIATE")
            except _Busy:
                pass
            else:
                self._commits += 1
                if self._commits >= _CHECKPOINT_EVERY:
                    self._commits = 0
                    await self._in_thread(self._checkpoint)
                return result
        return await self._in_thread(partial(self._run_raw_thread, fn, "BEGIN IMMEDIATE"))

    async def admin(self, fn: Callable[[Connection], T]) -> T:
        """Run `fn` with a SQLAlchemy connection in one write transaction (schema work)."""
        if self._async is not None:
            async with self._async.begin() as conn:
                return await conn.run_sync(fn)
        return await self._in_thread(partial(self._run_admin, fn))

    async def _in_thread(self, call: Callable[[], T]) -> T:
        assert self._thread is not None
        return await asyncio.get_running_loop().run_in_executor(self._thread, call)

    def _inline_connection(self) -> Any:
        """SQLite, NORMAL sync: the connection transactions run on right in the event loop.

        Without an fsync per commit a transaction is tens of microseconds of work, less than
        the hop to a thread and back. This connection never waits for a lock (`_Busy` sends
        the transaction to the thread, which does) and never checkpoints (the thread does).
        Only the first thread that uses the store gets it.
        """
        if not self._inline_ok:
            return None
        ident = threading.get_ident()
        if self._inline_owner is None:
            assert self._sync is not None
            conn = self._sync.raw_connection()
            cursor = conn.cursor()
            cursor.execute("PRAGMA busy_timeout=0")
            cursor.execute("PRAGMA wal_autocheckpoint=0")
            cursor.close()
            self._inline, self._inline_owner = conn, ident
        return self._inline if self._inline_owner == ident else None

    def _thread_connection(self) -> Any:
        if self._raw is None:
            assert self._sync is not None
            self._raw = self._sync.raw_connection()
        return self._raw

    def _run_raw_thread(self, fn: Callable[[Executor], T], begin: str) -> T:
        return self._run_raw(self._thread_connection(), fn, begin, wait=True)

    def _run_raw(self, raw: Any, fn: Callable[[Executor], T], begin: str, wait: bool = False) -> T:
        assert self._sync is not None
        cursor = raw.cursor()
        try:
            try:
                cursor.execute(begin)
            except sqlite3.OperationalError as exc:
                if not wait and _is_busy(exc):
                    raise _Busy from exc
                raise
            try:
                result = fn(_RawExecutor(cursor, self._sync.dialect, self._compiled))
                cursor.execute("COMMIT")
            except BaseException as exc:
                cursor.execute("ROLLBACK")
                if not wait and isinstance(exc, sqlite3.OperationalError) and _is_busy(exc):
                    raise _Busy from exc
                raise
            return result
        finally:
            cursor.close()

    def _checkpoint(self) -> None:
        cursor = self._thread_connection().cursor()
        try:
            cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            cursor.close()

    def _run_admin(self, fn: Callable[[Connection], T]) -> T:
        assert self._sync is not None
        with self._sync.connect() as conn, conn.begin():
            return fn(conn)

    async def close(self) -> None:
        if self._async is not None:
            await self._async.dispose()
            return
        if self._inline is not None:
            self._inline.close()
            self._inline = self._inline_owner = None
        if self._thread is not None:
            await self._in_thread(self._close_sqlite)
            self._thread.shutdown(wait=False)
            self._thread = None  # closing twice is fine

    def _close_sqlite(self) -> None:
        if self._raw is not None:
            self._raw.close()
            self._raw = None
        assert self._sync is not None
        self._sync.dispose()


class VersionedSchema:
    """One component's tables, their version and the migrations that lead to it.

    `migrations[n]` upgrades a database from version n to n + 1.
    """

    def __init__(
        self,
        component: str,
        metadata: sa.MetaData,
        version: int,
        *,
        version_table: sa.Table,
        migrations: Mapping[int, Migration] | None = None,
        extra_ddl: Callable[[Connection], None] | None = None,
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
            await db.admin(partial(self._prepare, postgres=db.postgres, migrate=migrate))
            self._ready = True

    def _stored_version(self, conn: Connection) -> int | None:
        if not sa.inspect(conn).has_table(self.version_table.name):
            return None
        table = self.version_table
        return conn.execute(
            sa.select(table.c.version).where(table.c.component == self.component)
        ).scalar_one_or_none()

    def _prepare(self, conn: Connection, *, postgres: bool, migrate: bool) -> None:
        if postgres:
            # Two processes starting on an empty database must not both create the tables.
            key = zlib.crc32(f"rondo:{self.component}".encode()) & 0x7FFFFFFF
            conn.execute(sa.select(sa.func.pg_advisory_xact_lock(key)))
        stored = self._stored_version(conn)
        if stored is None:
            self._create(conn)
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
            self._migrate(conn, stored)

    def _create(self, conn: Connection) -> None:
        inspector = sa.inspect(conn)
        found = [t.name for t in self.tables if inspector.has_table(t.name)]
        if found:
            raise SchemaVersionError(
                f"the database has rondo {self.component} tables ({', '.join(found)}) but no "
                "recorded schema version; refusing to guess their layout"
            )
        self.version_table.create(conn, checkfirst=True)
        self.metadata.create_all(conn, tables=self.tables)
        if self.extra_ddl is not None:
            self.extra_ddl(conn)
        conn.execute(
            self.version_table.insert().values(component=self.component, version=self.version)
        )

    def _migrate(self, conn: Connection, stored: int) -> None:
        for version in range(stored, self.version):
            step = self.migrations.get(version)
            if step is None:
                raise SchemaVersionError(
                    f"no migration of the {self.component} schema from version {version}"
                )
            step(conn)
        table = self.version_table
        conn.execute(
            table.update().where(table.c.component == self.component).values(version=self.version)
        )


def version_table(metadata: sa.MetaData, name: str) -> sa.Table:
    return sa.Table(
        name,
        metadata,
        sa.Column("component", sa.String(64), primary_key=True),
        sa.Column("version", sa.Integer, nullable=False),
    )
