"""Issue 19: the body limit's 413/408 refusals are starlette `Response`s called as ASGI apps,
not hand-written `http.response.start` messages."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette")

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from rondo.server import limits


async def _echo(request: Request) -> PlainTextResponse:
    return PlainTextResponse(str(len(await request.body())))


def _app(**options: Any) -> limits.BodyLimit:
    return limits.BodyLimit(Starlette(routes=[Route("/", _echo, methods=["POST"])]), **options)


def test_19_limits_refusal_is_a_starlette_response(monkeypatch: pytest.MonkeyPatch) -> None:
    answered: list[int] = []

    class Counted(JSONResponse):
        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            answered.append(self.status_code)
            await super().__call__(scope, receive, send)

    monkeypatch.setattr(limits, "JSONResponse", Counted)

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=_app(max_bytes=10))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.post("/", content=b"x" * 50)

    answer = asyncio.run(go())
    assert answer.status_code == 413
    assert "--max-body-bytes" in answer.json()["detail"]
    assert answer.headers["connection"] == "close"
    assert answered == [413]


def test_19_limits_body_within_the_limit_passes() -> None:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=_app(max_bytes=100))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.post("/", content=b"x" * 50)

    answer = asyncio.run(go())
    assert answer.status_code == 200
    assert answer.text == "50"
