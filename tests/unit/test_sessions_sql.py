"""SqlSessionService internals: schema versions, URLs and drivers, atomicity, the event-log
cache across instances, round trips, SQLite locking. The behaviour shared with the in-memory
store is in conformance/test_r_sessions.py."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import rondo.sessions._schema as schema_module
import rondo.sessions._sqlengine as engine_module
import rondo.sessions.sql as sql_module
from rondo import Content, Event, EventActions
from rondo.errors import (
    ConfigurationError,
    FrozenRecordError,
    SchemaVersionError,
    StaleSessionError,
)
from rondo.events import NO_ACTIONS
from rondo.sessions.sql import SqlSessionService, default_sqlite_url
from tests._require import require_module
from tests._stores import Backend, postgres_backend, postgres_url, sql_backend

__all__ = ["postgres_backend", "postgres_url", "sql_backend"]


def text(t: str, **kw: Any) -> Event:
    return Event(author="user", content=Content.user(t), **kw)


def sqlite_service(tmp_path: Path, **kw: Any) -> SqlSessionService:
    return SqlSessionService(f"sqlite:///{tmp_path / 'db.sqlite'}", **kw)


def test_importing_rondo_does_not_import_sqlalchemy() -> None:
    code = (
        "import sys, rondo, rondo.sessions; "
        "assert 'sqlalchemy' not in sys.modules, 'sqlalchemy imported'; "
        "rondo.SqlSessionService; assert 'sqlalchemy' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_sqlite_store_imports_only_the_stdlib_driver(tmp_path: Path) -> None:
    """Core dependencies are what the core imports: the default store needs neither aiosqlite,
    asyncpg nor SQLAlchemy's async layer (greenlet)."""
    code = (
        "import asyncio, sys; from rondo.sessions.sql import SqlSessionService; "
        f"s = SqlSessionService({str(tmp_path / 'x.db')!r}); "
        "asyncio.run(s.create_session(app_name='a', user_id='u')); asyncio.run(s.close()); "
        "bad = [m for m in ('aiosqlite', 'asyncpg', 'greenlet', 'sqlalchemy.ext.asyncio') "
        "if m in sys.modules]; assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


async def test_default_url_is_rondo_sessions_db_and_creates_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert default_sqlite_url() == f"sqlite:///{tmp_path / '.rondo' / 'sessions.db'}"
    assert (tmp_path / ".rondo").is_dir()
    service = SqlSessionService()
    try:
        await service.create_session(app_name="a", user_id="u", session_id="s")
    finally:
        await service.close()
    assert (tmp_path / ".rondo" / "sessions.db").is_file()
    with sqlite3.connect(tmp_path / ".rondo" / "sessions.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_urls_that_cannot_work_are_refused(tmp_path: Path) -> None:
    for url in ("sqlite+aiosqlite://", "sqlite+aiosqlite:///:memory:", "sqlite://", ":memory:"):
        with pytest.raises(ConfigurationError, match="in-memory"):
            SqlSessionService(url)
    # A driver rondo does not run is refused, never silently replaced by another.
    for url in ("mysql+aiomysql://x@localhost/db", "postgresql+psycopg://x@localhost/db"):
        with pytest.raises(ConfigurationError, match="unsupported database"):
            SqlSessionService(url)
    with pytest.raises(ConfigurationError, match="synchronous"):
        sqlite_service(tmp_path, sqlite_synchronous="SOMETIMES")


async def test_the_url_names_the_driver_that_runs(tmp_path: Path) -> None:
    aiosqlite = require_module(
        "aiosqlite", what="AIOSQLITE", install="pip install 'rondo-agents[aiosqlite]'"
    )
    db = tmp_path / "one.db"
    plain, aio, path = (
        SqlSessionService(f"sqlite:///{db}"),
        SqlSessionService(f"sqlite+aiosqlite:///{db}"),
        SqlSessionService(db),
    )
    try:
        assert type(plain._db).__name__ == "_StdlibSqlite"  # pyright: ignore[reportPrivateUsage]
        assert type(path._db).__name__ == "_StdlibSqlite"  # pyright: ignore[reportPrivateUsage]
        assert type(aio._db).__name__ == "_AioSqlite"  # pyright: ignore[reportPrivateUsage]
        assert (plain.url, aio.url) == (f"sqlite:///{db}", f"sqlite+aiosqlite:///{db}")
        # aiosqlite really runs: its own thread, and the same file the stdlib driver reads.
        session = await aio.create_session(app_name="a", user_id="u", session_id="s")
        event = text("through aiosqlite", actions=EventActions(state_delta={"k": 1}))
        await aio.append_event(session, event)
        assert isinstance(aio._db._conn, aiosqlite.Connection)  # type: ignore[attr-defined]  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]
        found = await plain.get_session(app_name="a", user_id="u", session_id="s")
        assert found is not None
        assert ([e.text for e in found.events], found.state) == (["through aiosqlite"], {"k": 1})
        await plain.append_event(found, text("through sqlite3"))
        again = await aio.get_session(app_name="a", user_id="u", session_id="s")
        assert again is not None
        assert [e.text for e in again.events] == ["through aiosqlite", "through sqlite3"]
        assert (await path.get_session(app_name="a", user_id="u", session_id="s")) is not None
    finally:
        for service in (plain, aio, path):
            await service.close()


async def test_plain_sqlite_url_and_nested_directory_work(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "s.db"
    service = SqlSessionService(f"sqlite:///{path}")
    try:
        session = await service.create_session(app_name="a", user_id="u")
        await service.append_event(session, text("x"))
    finally:
        await service.close()
    assert path.is_file()


# -- schema versions --------------------------------------------------------------------------


async def _set_version(path: Path, version: int) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE rondo_schema SET version = ?", (version,))
    conn.close()


async def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    service = sqlite_service(tmp_path)
    await service.create_session(app_name="a", user_id="u", session_id="s")
    await service.close()
    await _set_version(tmp_path / "db.sqlite", schema_module.SCHEMA_VERSION + 1)
    newer = sqlite_service(tmp_path)
    with pytest.raises(SchemaVersionError, match="newer"):
        await newer.get_session(app_name="a", user_id="u", session_id="s")
    await newer.close()


async def test_an_older_schema_is_migrated_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = sqlite_service(tmp_path)
    session = await service.create_session(app_name="a", user_id="u", session_id="s")
    await service.append_event(session, text("kept"))
    await service.close()
    await _set_version(tmp_path / "db.sqlite", schema_module.SCHEMA_VERSION - 1)

    applied: list[int] = []

    async def step(ex: engine_module.Executor) -> None:
        applied.append(schema_module.SCHEMA_VERSION - 1)
        await ex.script("CREATE TABLE migrated_marker (x INTEGER)")

    monkeypatch.setitem(schema_module.MIGRATIONS, schema_module.SCHEMA_VERSION - 1, step)

    old = sqlite_service(tmp_path)
    with pytest.raises(SchemaVersionError, match="migrate"):
        await old.get_session(app_name="a", user_id="u", session_id="s")
    assert applied == []
    await old.migrate()
    assert applied == [schema_module.SCHEMA_VERSION - 1]
    found = await old.get_session(app_name="a", user_id="u", session_id="s")
    assert found is not None
    assert [e.text for e in found.events] == ["kept"]
    await old.close()

    # migrate=True does the same at first use; afterwards the version is current.
    again = sqlite_service(tmp_path, migrate=True)
    assert await again.get_session(app_name="a", user_id="u", session_id="s") is not None
    await again.close()


async def test_an_older_schema_without_a_migration_is_refused(tmp_path: Path) -> None:
    service = sqlite_service(tmp_path)
    await service.create_session(app_name="a", user_id="u")
    await service.close()
    await _set_version(tmp_path / "db.sqlite", 0)
    old = sqlite_service(tmp_path, migrate=True)
    with pytest.raises(SchemaVersionError, match="no migration"):
        await old.list_sessions(app_name="a")
    await old.close()


async def test_tables_without_a_recorded_version_are_never_overwritten(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE rondo_sessions (id TEXT)")
    service = sqlite_service(tmp_path)
    with pytest.raises(SchemaVersionError, match="no recorded schema version"):
        await service.create_session(app_name="a", user_id="u")
    await service.close()


async def test_table_prefix_keeps_two_stores_apart(tmp_path: Path) -> None:
    one = sqlite_service(tmp_path)
    two = sqlite_service(tmp_path, table_prefix="other_")
    await one.create_session(app_name="a", user_id="u", session_id="s")
    assert await two.get_session(app_name="a", user_id="u", session_id="s") is None
    await one.close()
    await two.close()


# -- one transaction ---------------------------------------------------------------------------


async def test_r3_a_failure_inside_the_append_transaction_stores_nothing(
    sql_backend: Backend,
) -> None:
    service = sql_backend.make()
    assert isinstance(service, SqlSessionService)
    session = await service.create_session(app_name="a", user_id="u", state={"k": 0})
    # The database itself fails the user-scope merge, the last write of the append (on
    # PostgreSQL inside the one statement, on SQLite after the version bump and the insert).
    await sql_backend.execute_sql(FAIL_USER_STATE_WRITES[sql_backend.name])
    event = Event(author="agent", actions=EventActions(state_delta={"k": 1, "user:x": 1}))
    with pytest.raises(Exception, match="disk on fire"):
        await service.append_event(session, event)
    assert session.version == 0
    assert len(session.events) == 0

    stored = await sql_backend.make().get_session(app_name="a", user_id="u", session_id=session.id)
    assert stored is not None
    assert (stored.version, len(stored.events), stored.state) == (0, 0, {"k": 0})
    # The handle is still current: the next append goes through.
    await service.append_event(session, Event(author="agent"))
    assert session.version == 1


_SQLITE_BOOM = (
    "CREATE TRIGGER boom BEFORE INSERT ON rondo_user_states "
    "BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"
)
FAIL_USER_STATE_WRITES = {
    "sqlite": _SQLITE_BOOM,
    "aiosqlite": _SQLITE_BOOM,
    "postgres": "CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS "
    "$$ BEGIN RAISE EXCEPTION 'disk on fire'; END $$; "
    "CREATE TRIGGER boom BEFORE INSERT ON rondo_user_states "
    "FOR EACH ROW EXECUTE FUNCTION boom()",
}


# -- the event-log cache -----------------------------------------------------------------------


async def test_get_session_decodes_only_the_events_appended_since(sql_backend: Backend) -> None:
    writer = sql_backend.make()
    reader = sql_backend.make()
    session = await writer.create_session(app_name="a", user_id="u", session_id="s")
    for i in range(50):
        await writer.append_event(session, text(f"e{i}"))

    before = sql_module.decoded_records()
    first = await reader.get_session(app_name="a", user_id="u", session_id="s")
    assert first is not None
    # A new entry's history is decoded as it is read (SPEC K3): nothing yet, all once read.
    assert sql_module.decoded_records() - before == 0
    assert len(first.events) == 50
    assert [e.text for e in first.events][-1] == "e49"
    assert sql_module.decoded_records() - before == 50
    again = await reader.get_session(app_name="a", user_id="u", session_id="s")
    assert again is not None
    assert again.events[0].text == "e0"
    assert sql_module.decoded_records() - before == 50  # nothing changed: nothing decoded
    await writer.append_event(session, text("e50"))
    await writer.append_event(session, text("e51"))
    latest = await reader.get_session(app_name="a", user_id="u", session_id="s")
    assert latest is not None
    assert sql_module.decoded_records() - before == 52
    assert latest.events.log is first.events.log
    assert [e.text for e in latest.events][-3:] == ["e49", "e50", "e51"]
    # The writer's own appends are never decoded again.
    mine = await writer.get_session(app_name="a", user_id="u", session_id="s")
    assert mine is not None
    assert sql_module.decoded_records() - before == 52
    assert mine.events[-1] is session.events[-1]


async def test_a_bounded_read_loads_only_the_recent_events(sql_backend: Backend) -> None:
    writer = sql_backend.make()
    session = await writer.create_session(app_name="a", user_id="u", session_id="s")
    for i in range(30):
        await writer.append_event(session, text(f"e{i}"))
    before = sql_module.decoded_records()
    reader = sql_backend.make()
    recent = await reader.get_session(
        app_name="a", user_id="u", session_id="s", num_recent_events=3
    )
    assert recent is not None
    assert [e.text for e in recent.events] == ["e27", "e28", "e29"]
    assert sql_module.decoded_records() - before == 3
    narrower = await reader.get_session(
        app_name="a", user_id="u", session_id="s", num_recent_events=2
    )
    assert narrower is not None
    assert [e.text for e in narrower.events] == ["e28", "e29"]
    assert sql_module.decoded_records() - before == 3  # served from the cached window
    assert narrower.events.log is recent.events.log


async def test_the_cache_is_bounded(tmp_path: Path) -> None:
    service = sqlite_service(tmp_path, cache_sessions=2)
    for i in range(5):
        created = await service.create_session(app_name="a", user_id="u", session_id=f"s{i}")
        await service.append_event(created, text("x"))
    assert len(service._cache) == 2  # pyright: ignore[reportPrivateUsage]
    # An evicted session is read back from the database.
    found = await service.get_session(app_name="a", user_id="u", session_id="s0")
    assert found is not None
    assert [e.text for e in found.events] == ["x"]
    await service.close()


async def test_a_handle_known_stale_is_refused_without_a_round_trip(tmp_path: Path) -> None:
    service = sqlite_service(tmp_path)
    session = await service.create_session(app_name="a", user_id="u", session_id="s")
    old = await service.get_session(app_name="a", user_id="u", session_id="s")
    assert old is not None
    await service.append_event(session, text("x"))

    async def no_db(fn: Any) -> Any:
        raise AssertionError("the database was asked")

    service._db.write = no_db  # type: ignore[method-assign]  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(StaleSessionError):
        await service.append_event(old, text("y"))
    await service.close()


# -- SQLite locking and durability -------------------------------------------------------------


async def test_sqlite_waits_for_another_writer_instead_of_failing(tmp_path: Path) -> None:
    service = sqlite_service(tmp_path)
    session = await service.create_session(app_name="a", user_id="u", session_id="s")
    other = sqlite3.connect(tmp_path / "db.sqlite", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    append = asyncio.ensure_future(service.append_event(session, text("x")))
    await asyncio.sleep(0.3)
    assert not append.done()  # waiting (on the store's thread), the event loop free
    other.execute("COMMIT")
    await asyncio.wait_for(append, 10)
    other.close()
    assert session.version == 1
    await service.close()


async def test_sqlite_checkpoints_the_wal_on_its_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_module, "_CHECKPOINT_EVERY", 5)
    threads: list[str] = []
    stdlib = engine_module._StdlibSqlite  # pyright: ignore[reportPrivateUsage]
    real = stdlib._checkpoint  # pyright: ignore[reportPrivateUsage]

    def checkpoint(self: Any) -> None:
        threads.append(threading.current_thread().name)
        real(self)

    monkeypatch.setattr(stdlib, "_checkpoint", checkpoint)
    service = sqlite_service(tmp_path)
    session = await service.create_session(app_name="a", user_id="u", session_id="s")
    for i in range(14):
        await service.append_event(session, text(f"e{i}"))
    assert len(threads) == 3  # 15 commits
    assert all(name.startswith("rondo-sqlite") for name in threads)
    await service.close()


async def test_sqlite_full_synchronous_mode_runs_on_the_thread(tmp_path: Path) -> None:
    service = sqlite_service(tmp_path, sqlite_synchronous="FULL")
    session = await service.create_session(app_name="a", user_id="u", session_id="s")
    await service.append_event(session, text("x"))
    assert service._db._inline is None  # pyright: ignore[reportPrivateUsage]
    reopened = sqlite_service(tmp_path)
    found = await reopened.get_session(app_name="a", user_id="u", session_id="s")
    assert found is not None
    assert [e.text for e in found.events] == ["x"]
    await service.close()
    await reopened.close()


def test_sync_runner_threads_share_one_service(tmp_path: Path) -> None:
    """A service used from two event loops (threads) keeps working: only the first thread
    runs SQLite inline, the other goes through the store's thread."""
    service = sqlite_service(tmp_path)

    async def work(sid: str) -> int:
        session = await service.create_session(app_name="a", user_id="u", session_id=sid)
        for i in range(5):
            await service.append_event(session, text(f"e{i}"))
        return session.version

    assert asyncio.run(work("one")) == 5
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(asyncio.run, work("two")).result() == 5
    asyncio.run(service.close())


async def test_decoded_records_share_their_empty_parts_and_stay_equal(tmp_path: Path) -> None:
    writer = sqlite_service(tmp_path)
    session = await writer.create_session(app_name="a", user_id="u", session_id="s")
    originals = [text(f"e{i}") for i in range(3)]
    for event in originals:
        await writer.append_event(session, event)
    reader = sqlite_service(tmp_path)
    loaded = await reader.get_session(app_name="a", user_id="u", session_id="s")
    assert loaded is not None
    assert list(loaded.events) == originals
    first, second = loaded.events[0], loaded.events[1]
    assert first.actions is second.actions
    assert first.__pydantic_fields_set__ is second.__pydantic_fields_set__
    assert first.model_dump_json() == originals[0].model_dump_json()
    # A copy with changes is a new record and may be appended like any other.
    copy = first.model_copy(update={"id": "copy", "actions": EventActions(state_delta={"k": 1})})
    await reader.append_event(loaded, copy)
    assert first.actions.is_empty()

    # G1: a stored record cannot be changed in place, so sharing is safe by construction...
    with pytest.raises(ValidationError, match="frozen"):
        first.actions = EventActions(state_delta={"oops": 1})
    # ...the dicts a frozen record holds included: the empty actions many events share refuse
    # changes, so one event's edit can never show up in every other.
    assert first.actions is NO_ACTIONS
    with pytest.raises(FrozenRecordError, match="immutable"):
        first.actions.state_delta["oops"] = 1
    with pytest.raises(FrozenRecordError, match="immutable"):
        first.actions.requested_tool_confirmations.update({"x": None})
    assert first.actions.is_empty()
    for service in (writer, reader):
        await service.close()


async def test_a_cleared_derived_cache_never_duplicates_events(tmp_path: Path) -> None:
    """Views cached on a log may be dropped (e.g. on compaction); appends stay exact."""
    service = sqlite_service(tmp_path)
    session = await service.create_session(app_name="a", user_id="u", session_id="s")
    await service.append_event(session, text("one"))
    session.events.log.derived.clear()
    await service.append_event(session, text("two"))
    again = await service.get_session(app_name="a", user_id="u", session_id="s")
    assert again is not None
    assert [e.text for e in again.events] == ["one", "two"]
    assert [e.text for e in session.events] == ["one", "two"]
    await service.close()


# -- W5: instances of one store on one database (replicas) -------------------------------------


async def test_w5_instances_taking_turns_each_load_only_the_events_the_other_appended(
    sql_backend: Backend,
) -> None:
    from rondo import Agent, Runner
    from rondo.testing import ScriptedModel

    start = sql_module.decoded_records()

    def decoded() -> int:
        return sql_module.decoded_records() - start

    models = [ScriptedModel(["one-1", "one-2"]), ScriptedModel(["two-1", "two-2"])]
    services = [sql_backend.make(), sql_backend.make()]
    runners = [
        Runner(agent=Agent(name="bot", model=m), app_name="a", session_service=s)
        for m, s in zip(models, services, strict=True)
    ]

    async def turn(instance: int, text: str) -> None:
        async for _ in runners[instance].run_async(user_id="u", session_id="s", new_message=text):
            pass

    await turn(0, "hello")  # creates the session: its own events, nothing to decode
    assert decoded() == 0
    await turn(1, "from two")  # never saw the session: loads its 2 events
    assert decoded() == 2
    await turn(0, "again")  # knows 2 events: loads the 2 the other instance appended
    assert decoded() == 4
    await turn(1, "last")
    assert decoded() == 6
    conversation = ["hello", "one-1", "from two", "two-1", "again", "one-2", "last"]
    assert [c.text for c in models[1].requests[-1].contents] == conversation
    assert [c.text for c in models[0].requests[-1].contents] == conversation[:5]
    for service in [*services, sql_backend.make()]:
        found = await service.get_session(app_name="a", user_id="u", session_id="s")
        assert found is not None
        assert [e.text for e in found.events] == [*conversation, "two-2"]
        assert found.version == 8


async def test_w5_an_instance_sees_state_and_pending_another_instance_wrote(
    sql_backend: Backend,
) -> None:
    one, two = sql_backend.make(), sql_backend.make()
    session = await one.create_session(app_name="a", user_id="u", session_id="s", state={"n": 0})
    seen = await two.get_session(app_name="a", user_id="u", session_id="s")
    assert seen is not None
    await one.append_event(session, text("x", actions=EventActions(state_delta={"n": 1})))
    with pytest.raises(StaleSessionError):  # two's handle is older than the store
        await two.append_event(seen, text("late"))
    again = await two.get_session(app_name="a", user_id="u", session_id="s")
    assert again is not None
    assert (again.version, again.state, [e.text for e in again.events]) == (1, {"n": 1}, ["x"])
    assert again.events.log is seen.events.log  # the same cached log, extended
    await two.append_event(again, text("y", actions=EventActions(state_delta={"n": 2})))
    back = await one.get_session(app_name="a", user_id="u", session_id="s")
    assert back is not None
    assert (back.version, back.state, [e.text for e in back.events]) == (2, {"n": 2}, ["x", "y"])


async def test_w5_on_postgres_every_operation_is_one_statement(
    postgres_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One round trip each (asyncpg prepares a statement once per connection, and handing a
    connection back to the pool costs none): an append with session, app and user deltas, a
    create with scoped state, a read that brings the events another instance appended, a
    delete. Counted at asyncpg's connection, so nothing the pool does is missed."""
    import asyncpg  # pyright: ignore[reportMissingTypeStubs]

    statements: list[str] = []
    for name in ("fetch", "execute", "fetchrow", "fetchval", "executemany"):
        real = getattr(asyncpg.Connection, name)

        async def counted(self: Any, query: str, *args: Any, _real: Any = real, **kw: Any) -> Any:
            statements.append(query)
            return await _real(self, query, *args, **kw)

        monkeypatch.setattr(asyncpg.Connection, name, counted)
    one, two = postgres_backend.make(), postgres_backend.make()
    await one.list_sessions(app_name="a")  # the schema check
    await two.list_sessions(app_name="a")

    def ops(before: int) -> int:
        return len(statements) - before

    n = len(statements)
    state = {"k": 1, "app:a": 1, "user:u": 1}
    session = await one.create_session(app_name="a", user_id="u", session_id="s", state=state)
    assert ops(n) == 1
    n = len(statements)
    delta = {"k": 2, "app:a": 2, "user:u": 2, "temp:t": 0}
    await one.append_event(session, Event(author="a", actions=EventActions(state_delta=delta)))
    assert ops(n) == 1
    n = len(statements)
    await one.get_session(app_name="a", user_id="u", session_id="s")
    assert ops(n) == 1
    seen = await two.get_session(app_name="a", user_id="u", session_id="s")
    assert seen is not None
    await one.append_event(session, text("more"))
    n = len(statements)
    latest = await two.get_session(app_name="a", user_id="u", session_id="s")
    assert ops(n) == 1
    assert latest is not None
    assert ([e.text for e in latest.events][-1], latest.state) == ("more", {"k": 2, "app:a": 2, "user:u": 2})  # fmt: skip
    n = len(statements)
    await one.delete_session(app_name="a", user_id="u", session_id="s")
    assert ops(n) == 1
    assert await two.get_session(app_name="a", user_id="u", session_id="s") is None
