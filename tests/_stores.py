"""Session-store back ends for tests: in-memory, SQLite (a temp file), PostgreSQL.

PostgreSQL comes from `RONDO_TEST_POSTGRES_URL` (default: the local server CI starts,
`postgresql+asyncpg://postgres@127.0.0.1:5432/test`). Each test gets a schema of its own,
dropped afterwards, so concurrent test runs never collide. When the server is unreachable the
PostgreSQL tests skip with the reason — or fail, when `RONDO_REQUIRE_POSTGRES=1` (CI).

Import the fixtures into a test module: `from tests._stores import backend, postgres_url`.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from rondo.memory.base import BaseMemoryService
from rondo.memory.memory import InMemoryMemoryService
from rondo.sessions.base import BaseSessionService
from rondo.sessions.memory import InMemorySessionService
from tests._require import require_module

DEFAULT_POSTGRES_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
# "aiosqlite": the same SQLite store through `sqlite+aiosqlite://` (the URL names the driver).
BACKENDS = [
    "memory",
    "sqlite",
    "aiosqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
]
SQL_BACKENDS = ["sqlite", "aiosqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def _dsn(url: str) -> str:
    """The SQLAlchemy URL as a plain libpq DSN (for asyncpg)."""
    from sqlalchemy.engine import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _reachable(url: str) -> str | None:
    """None when the server answers, else why not."""
    try:
        import asyncpg  # pyright: ignore[reportMissingTypeStubs]
    except ImportError:
        return "asyncpg is not installed: pip install 'rondo-agents[postgres]'"
    try:
        conn = await asyncpg.connect(_dsn(url), timeout=5)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    await conn.close()
    return None


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """The PostgreSQL test server's URL; skips (or fails in CI) when it is unreachable."""
    url = os.environ.get("RONDO_TEST_POSTGRES_URL") or DEFAULT_POSTGRES_URL
    # On a thread of its own: this may be first requested from inside a running event loop.
    with ThreadPoolExecutor(1) as pool:
        problem = pool.submit(asyncio.run, _reachable(url)).result()
    if problem is not None:
        message = f"PostgreSQL not reachable at {url} ({problem}); set RONDO_TEST_POSTGRES_URL"
        if os.environ.get("RONDO_REQUIRE_POSTGRES") == "1":
            pytest.fail(message + " — RONDO_REQUIRE_POSTGRES=1 requires it", pytrace=False)
        pytest.skip(message)
    return url


async def create_schema(url: str) -> str:
    import asyncpg  # pyright: ignore[reportMissingTypeStubs]

    schema = f"rondo_test_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    conn = await asyncpg.connect(_dsn(url))
    try:
        await conn.execute(f'CREATE SCHEMA "{schema}"')
    finally:
        await conn.close()
    return schema


async def drop_schema(url: str, schema: str) -> None:
    import asyncpg  # pyright: ignore[reportMissingTypeStubs]

    conn = await asyncpg.connect(_dsn(url))
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


def postgres_kwargs(schema: str) -> dict[str, Any]:
    """Engine arguments that put every table of a store in `schema`."""
    return {"connect_args": {"server_settings": {"search_path": schema}}}


@dataclass
class Backend:
    """One storage place; `make()` opens a new service on it (a "restarted process")."""

    name: str
    url: str | None = None
    engine_kwargs: dict[str, Any] = field(default_factory=dict[str, Any])
    _memory: InMemorySessionService | None = None
    _remembered: InMemoryMemoryService | None = None
    _opened: list[Any] = field(default_factory=list[Any])

    @property
    def durable(self) -> bool:
        return self.name != "memory"

    def make(self, **kwargs: Any) -> BaseSessionService:
        if self.name == "memory":
            if self._memory is None:
                self._memory = InMemorySessionService()
            return self._memory
        from rondo.sessions.sql import SqlSessionService

        service = SqlSessionService(self.url, **{**self.engine_kwargs, **kwargs})
        self._opened.append(service)
        return service

    def make_memory(self, **kwargs: Any) -> BaseMemoryService:
        """A memory service on the same storage (in-memory: the one service)."""
        if self.name == "memory":
            if self._remembered is None:
                self._remembered = InMemoryMemoryService()
            return self._remembered
        from rondo.memory.sql import SqlMemoryService

        service = SqlMemoryService(self.url, **{**self.engine_kwargs, **kwargs})
        self._opened.append(service)
        return service

    async def execute_sql(self, sql: str) -> None:
        """Run SQL on the storage directly (not through rondo): set-up, sabotage."""
        if self.name in ("sqlite", "aiosqlite"):
            assert self.url is not None
            conn = sqlite3.connect(self.url.split(":///", 1)[1])
            try:
                conn.executescript(sql)
            finally:
                conn.close()
            return
        import asyncpg  # pyright: ignore[reportMissingTypeStubs]

        assert self.name == "postgres"
        assert self.url is not None
        conn = await asyncpg.connect(_dsn(self.url), **self.engine_kwargs.get("connect_args", {}))
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    async def close(self) -> None:
        for service in self._opened:
            await service.close()
        self._opened.clear()


async def open_backend(
    name: str, tmp_path: Path, postgres: Callable[[], str]
) -> tuple[Backend, Callable[[], Any] | None]:
    """A fresh backend and its clean-up coroutine factory (None when nothing to clean)."""
    if name == "memory":
        return Backend("memory"), None
    if name == "sqlite":
        return Backend("sqlite", f"sqlite:///{tmp_path / 'sessions.db'}"), None
    if name == "aiosqlite":
        require_module(
            "aiosqlite", what="AIOSQLITE", install="pip install 'rondo-agents[aiosqlite]'"
        )
        return Backend("aiosqlite", f"sqlite+aiosqlite:///{tmp_path / 'sessions.db'}"), None
    url = postgres()
    schema = await create_schema(url)
    return Backend("postgres", url, postgres_kwargs(schema)), lambda: drop_schema(url, schema)


async def _opened(
    request: pytest.FixtureRequest, name: str, tmp_path: Path
) -> AsyncIterator[Backend]:
    opened, cleanup = await open_backend(
        name, tmp_path, lambda: request.getfixturevalue("postgres_url")
    )
    try:
        yield opened
    finally:
        await opened.close()
        if cleanup is not None:
            await cleanup()


@pytest.fixture(params=BACKENDS)
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    """Each session-store back end in turn, empty."""
    async for opened in _opened(request, request.param, tmp_path):
        yield opened


@pytest.fixture(params=SQL_BACKENDS)
async def sql_backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    """The durable back ends only (SQLite, PostgreSQL), empty."""
    async for opened in _opened(request, request.param, tmp_path):
        yield opened


@pytest.fixture
async def postgres_backend(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Backend]:
    """PostgreSQL only, in a schema of its own (skips when the server is unreachable)."""
    async for opened in _opened(request, "postgres", tmp_path):
        yield opened
