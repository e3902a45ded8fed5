"""Server tests talk to a real uvicorn server on a loopback port, started by the test.

Importing this module skips the importing test module when the `server` extra is missing
(or fails it when `RONDO_REQUIRE_SERVER=1`).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests._require import require_module

_INSTALL = "pip install 'rondo-agents[server]'"
require_module("fastapi", what="SERVER", install=_INSTALL)
uvicorn = require_module("uvicorn", what="SERVER", install=_INSTALL)

APPS = Path(__file__).parent / "apps"
# Captures of google-adk 2.13 api_server answers (see adk_capture/README.md).
REFERENCE = Path(__file__).parent / "adk_capture"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve(app: Any, host: str = "127.0.0.1", **config_options: Any) -> Iterator[str]:
    """Run `app` on uvicorn in a thread (more `uvicorn.Config` options may be given); yields
    its base URL."""
    port = free_port()
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", lifespan="on", **config_options
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def wait_for_health(url: str, process: Any, output: Any = lambda: "") -> None:
    """Wait until the server `process` (a `subprocess.Popen`) answers `url`/health; raise with
    `output()` if it exits or takes over a minute."""
    import httpx

    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"{url}/health", timeout=1)
            return
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start:\n{output()}") from None
            time.sleep(0.1)


def sse_events(text: str) -> list[dict[str, Any]]:
    """The events of an SSE body, checking ADK's framing: `data: <one-line JSON>`, blank line."""
    assert text.endswith("\n\n"), f"stream does not end with a blank line: {text[-40:]!r}"
    frames = text[:-2].split("\n\n")
    events: list[dict[str, Any]] = []
    for frame in frames:
        if frame.startswith("event: "):  # a lifecycle frame names its type (`to_sse`)
            frame = frame.partition("\n")[2]
        if frame.startswith("id: "):  # the frame's id (SPEC W7), then ADK's one data line
            frame = frame.partition("\n")[2]
        assert "\n" not in frame, f"a frame spans lines: {frame[:80]!r}"
        assert frame.startswith("data: "), f"not a data frame: {frame[:80]!r}"
        events.append(json.loads(frame[len("data: ") :]))
    return events


def reference(name: str) -> tuple[int, dict[str, str], str]:
    """A capture of google-adk's answer: status, headers, body."""
    text = (REFERENCE / name).read_text()
    lines = text.split("\n")
    assert lines[0].startswith("# ")
    status = int(lines[1].split()[1])
    headers: dict[str, str] = {}
    i = 2
    while lines[i].strip():
        key, _, value = lines[i].partition(":")
        headers[key.lower()] = value.strip()
        i += 1
    return status, headers, "\n".join(lines[i + 1 :])


def raw_request(
    base_url: str,
    method: str,
    path: str,
    *,
    body: bytes | Iterator[bytes] | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """One request with the path sent byte for byte (no client-side `..` clean-up), and a
    chunked body (no Content-Length) when `body` is an iterator."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(base_url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
    try:
        chunked = body is not None and not isinstance(body, bytes)
        conn.request(method, path, body=body, headers=headers or {}, encode_chunked=chunked)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()
