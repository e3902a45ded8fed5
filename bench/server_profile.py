"""Where rondo's server spends a run: Python calls and CPU per request, no sockets, no noise.

    .venv/bin/python bench/server_profile.py            # calls and CPU µs per request kind
    .venv/bin/python bench/server_profile.py --cprofile # and the top functions of /run_sse
    .venv/bin/python bench/server_profile.py --asgi-spec 2.3  # as uvicorn declares it

The app is driven in-process through ASGI (the same three requests as bench/server.py's runs:
create a session, `/run_sse`, read the session back), so the figures are the app's own
cost: routing, validation, the run, the JSON projection, the SSE framing. Python call counts
are deterministic (a profile hook counts every call), so they move only when the code does;
the CPU times are medians of many runs. The requests say ASGI spec 2.4 unless told otherwise;
uvicorn says 2.3, for which Starlette streams a response beside a task listening for the
client leaving (`--asgi-spec 2.3` counts that path).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
Message = dict[str, Any]


ASGI_SPEC = "2.4"


async def call(app: Any, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
    """One request straight into the ASGI app; returns the status and the whole body."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": ASGI_SPEC},
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

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # no disconnect while the answer streams
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, b"".join(chunks)


def _steps(app: Any) -> list[tuple[str, Callable[[int, dict[str, str]], Awaitable[None]]]]:
    base = "/apps/chat/users/u/sessions"

    async def create(n: int, ctx: dict[str, str]) -> None:
        status, body = await call(app, "POST", base, b"{}")
        assert status == 200, body
        ctx["sid"] = json.loads(body)["id"]

    async def run_sse(n: int, ctx: dict[str, str]) -> None:
        run = {
            "appName": "chat",
            "userId": "u",
            "sessionId": ctx["sid"],
            "newMessage": {"role": "user", "parts": [{"text": f"note {n}"}]},
        }
        status, body = await call(app, "POST", "/run_sse", json.dumps(run).encode())
        assert status == 200, body
        assert body.count(b"data: ") == 3, body

    async def read_back(n: int, ctx: dict[str, str]) -> None:
        status, body = await call(app, "GET", f"{base}/{ctx['sid']}")
        assert status == 200, body
        assert len(json.loads(body)["events"]) == 4, body

    return [("create session", create), ("/run_sse", run_sse), ("get session", read_back)]


def _count_calls(fn: Callable[[], Any]) -> int:
    calls = 0

    def hook(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--cprofile", action="store_true")
    parser.add_argument("--asgi-spec", default="2.4", choices=["2.3", "2.4"])
    args = parser.parse_args()
    global ASGI_SPEC
    ASGI_SPEC = args.asgi_spec
    from rondo.server import create_app

    app = create_app(HERE / "server_apps" / "rondo", db="memory", loopback_only=True)
    loop = asyncio.new_event_loop()
    steps = _steps(app)
    ctx: dict[str, str] = {}
    for n in range(50):  # warm up: the app loads, every code path runs once
        for _, step in steps:
            loop.run_until_complete(step(n, ctx))
    print("| request | Python calls | CPU µs (median) |")
    print("|---|---:|---:|")
    total_calls, total_us = 0, 0.0
    for index, (name, step) in enumerate(steps):

        def before(n: int, index: int = index) -> None:
            for _, earlier in steps[:index]:  # the steps a request needs, untimed
                loop.run_until_complete(earlier(n, ctx))

        times: list[float] = []
        for n in range(args.runs):
            before(n)
            started = time.process_time()
            loop.run_until_complete(step(n, ctx))
            times.append((time.process_time() - started) * 1e6)
        before(0)
        calls = _count_calls(lambda step=step: loop.run_until_complete(step(10_000, ctx)))
        median = statistics.median(times)
        total_calls += calls
        total_us += median
        print(f"| {name} | {calls:,} | {median:.0f} |")
    print(f"| **one run** | **{total_calls:,}** | **{total_us:.0f}** |")
    if args.cprofile:
        profile = cProfile.Profile()
        profile.enable()
        for n in range(args.runs):
            for _, step in steps:
                loop.run_until_complete(step(n, ctx))
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(30)
    loop.close()


if __name__ == "__main__":
    main()
