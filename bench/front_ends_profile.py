"""What one run costs on each front-end route beside `/run_lifecycle`, in Python calls and CPU
(issue 22 item 6): deterministic counts where bench/front_ends.py's runs/s are noisy.

    .venv/bin/python bench/front_ends_profile.py                  # calls, chunks, CPU µs per run
    .venv/bin/python bench/front_ends_profile.py --cprofile ai_sdk  # and that route's top functions

The app is driven in-process through ASGI (bench/server_profile.py's `call`), on
bench/server.py's deterministic agent; each run is what bench/front_ends.py's clients send:
`/run_lifecycle` after creating its session, each front-end route on a new session it creates
itself. Python call counts come from a profile hook and move only when the code does; body
chunks are the response's `http.response.body` messages (each one a socket write under
uvicorn, and a read for the client).
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
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_profile import call

HERE = Path(__file__).resolve().parent

ROUTES = ("run_lifecycle", "ag_ui", "ai_sdk", "openai")


async def one_run(app: Any, route: str, n: int) -> None:
    """One run on `route`, checked as bench/front_ends.py checks it."""
    sid = uuid.uuid4().hex
    text = f"note {n}"
    if route == "run_lifecycle":
        status, body = await call(app, "POST", f"/apps/chat/users/user/sessions/{sid}", b"{}")
        assert status == 200, body
        path = "/run_lifecycle"
        request: dict[str, Any] = {
            "appName": "chat",
            "userId": "user",
            "sessionId": sid,
            "newMessage": {"role": "user", "parts": [{"text": text}]},
        }
    elif route == "ag_ui":
        path = "/ag-ui/chat"
        message = {"id": "m", "role": "user", "content": text}
        request = {"threadId": sid, "runId": "r", "messages": [message]}
    elif route == "ai_sdk":
        path = "/ai-sdk/chat"
        message = {"id": "m", "role": "user", "parts": [{"type": "text", "text": text}]}
        request = {"id": sid, "messages": [message]}
    else:
        path = "/v1/chat/completions"
        message = {"role": "user", "content": text}
        request = {"model": "chat", "messages": [message], "stream": True, "user": sid}
    status, body = await call(app, "POST", path, json.dumps(request).encode())
    assert status == 200, body
    assert b"noted" in body, body


class _Chunks:
    """The app, counting the body chunks of its answers."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.count = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def counted(message: Any) -> None:
            if message["type"] == "http.response.body" and message.get("body"):
                self.count += 1
            await send(message)

        await self.app(scope, receive, counted)


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
    parser.add_argument("--cprofile", choices=ROUTES, help="print this route's top functions")
    parser.add_argument("--sort", default="tottime", help="the cProfile sort key")
    args = parser.parse_args()
    from rondo.server import create_app

    app = create_app(HERE / "server_apps" / "rondo", db="memory", loopback_only=True)
    loop = asyncio.new_event_loop()
    for n in range(50):  # warm up: the app loads, every code path runs once
        for route in ROUTES:
            loop.run_until_complete(one_run(app, route, n))
    print("| route | Python calls per run | × /run_lifecycle | body chunks | CPU µs (median) |")
    print("|---|---:|---:|---:|---:|")
    base = 0
    for route in ROUTES:
        times: list[float] = []
        for n in range(args.runs):
            started = time.process_time()
            loop.run_until_complete(one_run(app, route, n))
            times.append((time.process_time() - started) * 1e6)
        calls = _count_calls(lambda route=route: loop.run_until_complete(one_run(app, route, 1)))
        base = base or calls
        chunks = _Chunks(app)
        loop.run_until_complete(one_run(chunks, route, 2))
        median = statistics.median(times)
        print(f"| {route} | {calls:,} | {calls / base:.3f} | {chunks.count} | {median:.0f} |")
    if args.cprofile:
        profile = cProfile.Profile()
        profile.enable()
        for n in range(args.runs):
            loop.run_until_complete(one_run(app, args.cprofile, n))
        profile.disable()
        pstats.Stats(profile).sort_stats(args.sort).print_stats(40)
    loop.close()


if __name__ == "__main__":
    main()
