"""Shared set-up of the attack suite (issue 26, SPEC W3): real servers on every store.

`store` is each session store in turn — memory, SQLite (a temp file) and PostgreSQL (a fresh
database of its own, created for the test and dropped after it, so the first request is also
the first on that database). `hostile` starts a live server on it with two users' tokens.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._stores import _dsn  # pyright: ignore[reportPrivateUsage]
from tests.server._live import APPS, serve

TOKENS = {"tok-alice": "alice", "tok-bob": "bob"}
ALICE = {"Authorization": "Bearer tok-alice"}
BOB = {"Authorization": "Bearer tok-bob"}

STORES = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]

Hostile = Callable[..., AbstractContextManager[httpx.Client]]


def _in_thread(coro: Any) -> Any:
    # The fixtures may run inside a test's event loop: the admin work gets a loop of its own.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


async def _admin(url: str, sql: str) -> None:
    import asyncpg  # pyright: ignore[reportMissingTypeStubs]

    conn = await asyncpg.connect(_dsn(url))
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@contextmanager
def fresh_postgres(url: str) -> Iterator[str]:
    """A new, empty PostgreSQL database on the test server; its URL. Dropped afterwards."""
    from sqlalchemy.engine import make_url

    name = f"rondo_attack_{uuid.uuid4().hex[:12]}"
    _in_thread(_admin(url, f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(url).set(database=name).render_as_string(hide_password=False)
    finally:
        _in_thread(_admin(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The `db` of each store in turn: `memory`, a SQLite file, a fresh PostgreSQL database."""
    if request.param == "memory":
        yield "memory"
    elif request.param == "sqlite":
        yield str(tmp_path / "sessions.db")
    else:
        with fresh_postgres(request.getfixturevalue("postgres_url")) as url:
            yield url


@pytest.fixture
def hostile(store: str, tmp_path: Path) -> Hostile:
    """`with hostile(**create_app_options) as http:` — a live server on `store`, with the
    tokens of alice and bob unless told otherwise; artifacts in the test's temp dir."""
    from rondo.artifacts.filesystem import FileArtifactService
    from rondo.server import create_app

    @contextmanager
    def start(**options: Any) -> Iterator[httpx.Client]:
        options.setdefault("db", store)
        options.setdefault("auth_tokens", TOKENS)
        if options["db"] != "memory":
            options.setdefault("artifact_service", FileArtifactService(tmp_path / "artifacts"))
        app = create_app(options.pop("agents_dir", APPS), **options)
        with serve(app) as url, httpx.Client(base_url=url, timeout=30) as http:
            yield http

    return start


def message(app: str, user: str, session: str, text: str, **more: Any) -> dict[str, Any]:
    """A run request body in ADK's camelCase."""
    return {
        "appName": app,
        "userId": user,
        "sessionId": session,
        "newMessage": {"role": "user", "parts": [{"text": text}]},
        **more,
    }
