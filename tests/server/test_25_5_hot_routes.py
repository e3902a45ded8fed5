"""Issue 25.5: the three requests of a run (create a session, `/run_sse`, read it back) skip
FastAPI's per-request machinery when they are plain (`rondo.server.hot_routes`), and answer
exactly as FastAPI's routes do — every other case is FastAPI's own answer.

Each case is sent to two live servers on the same apps: the app as built, and the same app
with the hot route taken out (FastAPI's routes alone); the answers must match.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from rondo.server import create_app
from rondo.server.hot_routes import HotRoute
from rondo.server.timeouts import ServerTimeouts, uvicorn_options
from tests.server._live import APPS, serve, sse_events

_VOLATILE = {"id", "lastUpdateTime", "timestamp", "invocationId", "runId"}
_JSON = {"content-type": "application/json"}
_TEXT = {"content-type": "text/plain"}


def _app(hot: bool) -> Any:
    app = create_app(APPS, db="memory", loopback_only=True)
    if not hot:
        app.router.routes[:] = [r for r in app.router.routes if not isinstance(r, HotRoute)]
    return app


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[httpx.Client, httpx.Client]]:
    """(the app as built, the app without its hot route)."""
    options = uvicorn_options(ServerTimeouts())  # the HTTP protocol `rondo api-server` runs
    with (
        serve(_app(True), **options) as hot_url,
        serve(_app(False), **options) as plain_url,
        httpx.Client(base_url=hot_url, timeout=10) as hot,
        httpx.Client(base_url=plain_url, timeout=10) as plain,
    ):
        yield hot, plain


def _stable(value: Any) -> Any:
    """A JSON answer without what differs from one run to the next (ids, times)."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in _VOLATILE}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_stable(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def _same(hot: httpx.Response, plain: httpx.Response) -> None:
    assert hot.status_code == plain.status_code, (hot.text, plain.text)
    for header in ("content-type", "cache-control", "allow"):
        assert hot.headers.get(header) == plain.headers.get(header), header
    if hot.headers.get("content-type", "").startswith("text/event-stream"):
        assert [_stable(e) for e in sse_events(hot.text)] == [
            _stable(e) for e in sse_events(plain.text)
        ]
    else:
        assert _stable(hot.json()) == _stable(plain.json())


def _both(
    servers: tuple[httpx.Client, httpx.Client], method: str, path: str, **options: Any
) -> tuple[httpx.Response, httpx.Response]:
    hot, plain = servers
    return hot.request(method, path, **options), plain.request(method, path, **options)


def _run(session: str, **extra: Any) -> dict[str, Any]:
    message = {"role": "user", "parts": [{"text": "hello"}]}
    return {"appName": "chat", "userId": "u", "sessionId": session, "newMessage": message, **extra}


def test_25_5_a_plain_run_is_answered_as_fastapi_answers_it(
    servers: tuple[httpx.Client, httpx.Client],
) -> None:
    base = "/apps/chat/users/u/sessions"
    _same(*_both(servers, "POST", base, json={"sessionId": "one", "state": {"k": 1}}))
    _same(*_both(servers, "POST", base))  # no body: a random id
    _same(*_both(servers, "POST", base, json={}))
    _same(*_both(servers, "POST", "/run_sse", json=_run("one")))
    _same(*_both(servers, "GET", f"{base}/one"))
    answered = servers[0].get(f"{base}/one").json()
    assert [e["author"] for e in answered["events"]] == ["user", "chat", "chat", "chat"]


@pytest.mark.parametrize(
    ("method", "path", "options"),
    [
        # What FastAPI refuses or decides: handed over, so the answer is its own.
        ("POST", "/apps/chat/users/u/sessions", {"json": {"sessionId": 5}}),
        ("POST", "/apps/chat/users/u/sessions", {"json": {"events": [{}]}}),
        ("POST", "/apps/chat/users/u/sessions", {"content": b"{oops", "headers": _JSON}),
        ("POST", "/apps/chat/users/u/sessions", {"content": b"null", "headers": _JSON}),
        ("POST", "/apps/chat/users/u/sessions", {"content": b"{}", "headers": _TEXT}),
        ("POST", "/apps/chat/users/u/sessions", {"json": {"sessionId": "one"}}),  # 409
        ("POST", "/apps/nope/users/u/sessions", {"json": {}}),  # 404 app
        ("GET", "/apps/chat/users/u/sessions/missing", {}),  # 404 session
        ("GET", "/apps/chat/users/u/sessions/bad%20id", {}),  # 400 id
        ("POST", "/run_sse", {}),  # no body
        ("POST", "/run_sse", {"json": {"appName": "chat"}}),  # fields missing
        ("POST", "/run_sse", {"json": _run("one", newMessage=None)}),  # 422 newMessage
        ("POST", "/run_sse", {"json": _run("missing")}),  # 404
        ("POST", "/run_sse", {"content": json.dumps(_run("one")), "headers": _TEXT}),
        ("PUT", "/apps/chat/users/u/sessions", {}),  # 405 with Allow
        ("DELETE", "/apps/chat/users/u/sessions/one/x", {}),  # no such route
    ],
)
def test_25_5_every_other_case_is_fastapis_own_answer(
    servers: tuple[httpx.Client, httpx.Client], method: str, path: str, options: dict[str, Any]
) -> None:
    for client in servers:
        client.post("/apps/chat/users/u/sessions", json={"sessionId": "one"})
    _same(*_both(servers, method, path, **options))


@pytest.fixture
def no_otel_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenTelemetry's provider globals unset, as in a process without an SDK: one another test
    installed sets them all, which turns FastAPI's telemetry and the spans of both apps on."""
    import importlib

    for module_name, name in (
        ("opentelemetry.trace", "_TRACER_PROVIDER"),
        ("opentelemetry.metrics._internal", "_METER_PROVIDER"),
        ("opentelemetry._logs._internal", "_LOGGER_PROVIDER"),
    ):
        monkeypatch.setattr(importlib.import_module(module_name), name, None)


@pytest.mark.usefixtures("no_otel_sdk")
def test_25_5_a_run_costs_the_server_two_fifths_fewer_python_calls() -> None:
    """Counted in-process (no sockets), as bench/server_profile.py counts: the same run on the
    app as built and on the app without its hot route, in one process, with no OpenTelemetry
    SDK installed (as `rondo api-server` runs by default). Measured alone: 1,865 against 2,945 with the
    hot route inside FastAPI's layers; 1,538 against 2,746 with the short lane (`RondoApp`),
    the event projection in one pass and the body read without a generator."""
    hot = _count_run(_app(True))
    plain = _count_run(_app(False))
    assert hot <= 0.62 * plain, (hot, plain)


def test_25_5_the_hot_path_stays_under_its_call_budget() -> None:
    """The whole run's Python calls, in-process: 1,538 when measured (server and core). A
    change that adds a tenth to the path of every run fails here; lower the bound when the
    path gets cheaper. Counted in a fresh interpreter: an OpenTelemetry SDK another test
    installs turns FastAPI's telemetry on, which sends a run through FastAPI's layers."""
    code = "from tests.server.test_25_5_hot_routes import _app, _count_run\n"
    code += "print(_count_run(_app(True)))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    calls = int(done.stdout.split()[-1])
    assert calls <= 1_700, calls


def _count_run(app: Any) -> int:
    """Python calls of one warmed-up run: create a session, /run_sse, read it back."""
    loop = asyncio.new_event_loop()

    async def one_run() -> None:
        status, body = await _call(app, "POST", "/apps/chat/users/u/sessions", b"{}")
        assert status == 200, body
        session = json.loads(body)["id"]
        status, body = await _call(app, "POST", "/run_sse", json.dumps(_run(session)).encode())
        assert status == 200, body
        assert body.count(b"data: ") == 3, body
        status, body = await _call(app, "GET", f"/apps/chat/users/u/sessions/{session}")
        assert status == 200, body

    try:
        for _ in range(20):  # first-use costs land here
            loop.run_until_complete(one_run())
        calls = 0

        def count(frame: Any, event: str, arg: Any) -> None:
            nonlocal calls
            if event in ("call", "c_call"):
                calls += 1

        sys.setprofile(count)
        try:
            loop.run_until_complete(one_run())
        finally:
            sys.setprofile(None)
    finally:
        loop.close()
    return calls


async def _call(app: Any, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
    """One request straight into the ASGI app (bench/server_profile.py's driver)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    sent = False
    status = 0
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, b"".join(chunks)


@pytest.mark.usefixtures("no_otel_sdk")
def test_25_5_the_short_lane_steps_aside_when_fastapis_telemetry_is_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A hot request skips FastAPI's layers only while its telemetry is off; with a tracer
    provider set (as an OpenTelemetry SDK sets it), FastAPI's own telemetry sees it."""
    import opentelemetry.trace as otel_trace

    from rondo.server.hot_routes import RondoApp

    app = _app(True)
    assert isinstance(app, RondoApp)
    asked: list[bool] = []

    def enabled() -> bool:
        asked.append(True)
        return otel_trace._TRACER_PROVIDER is not None  # pyright: ignore[reportPrivateUsage]

    monkeypatch.setattr(app._native_telemetry, "enabled", enabled)  # pyright: ignore[reportPrivateUsage]
    probe = app._probe()  # pyright: ignore[reportPrivateUsage]
    asked.clear()
    assert not probe.on()
    assert asked == []  # off without asking OpenTelemetry's getters
    monkeypatch.setattr(otel_trace, "_TRACER_PROVIDER", object())
    assert probe.on()
    assert asked == [True]
