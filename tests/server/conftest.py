"""Fixtures of the server tests: a live server on the test apps, and a client for it."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest


@pytest.fixture
def base_url() -> Iterator[str]:
    from rondo.server import create_app
    from tests.server._live import APPS, serve

    with serve(create_app(APPS, db="memory", loopback_only=True)) as url:
        yield url


@pytest.fixture
def client(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=10) as http:
        yield http
