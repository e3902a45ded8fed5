"""Fixtures of the server tests: live servers on the test apps, and clients for them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import pytest

from tests._require import require_module

# Every test here talks HTTP to a live server: without the server extra the directory skips.
httpx = require_module("httpx", what="SERVER", install="pip install 'rondo-agents[server]' httpx")
require_module("fastapi", what="SERVER", install="pip install 'rondo-agents[server]'")
require_module("uvicorn", what="SERVER", install="pip install 'rondo-agents[server]'")

from tests._stores import postgres_url as postgres_url  # noqa: E402  (the PostgreSQL fixture, re-exported)

Launch = Callable[..., AbstractContextManager[httpx.Client]]


@pytest.fixture
def launch() -> Launch:
    """`with launch(**create_app_options) as client:` — a live server and a client on it."""
    from rondo.server import create_app
    from tests.server._live import APPS, serve

    @contextmanager
    def start(headers: dict[str, str] | None = None, **options: Any) -> Iterator[httpx.Client]:
        options.setdefault("db", "memory")
        options.setdefault("loopback_only", True)
        with (
            serve(create_app(options.pop("agents_dir", APPS), **options)) as url,
            httpx.Client(base_url=url, timeout=10, headers=headers) as http,
        ):
            yield http

    return start


@pytest.fixture
def client(launch: Launch) -> Iterator[httpx.Client]:
    with launch() as http:
        yield http
