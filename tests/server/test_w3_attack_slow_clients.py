"""Issue 26 item 6 (SPEC W3): slow and idle clients are bounded by configurable timeouts.

A connection that sends nothing, or a request head a byte at a time, is closed after the
header timeout (408 when part of a head came); a body that stops arriving gets 408 after the
body timeout; an idle keep-alive connection is closed after the keep-alive timeout; and 40
slow connections held open do not keep the server from answering everyone else.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from rondo.server import create_app
from rondo.server.timeouts import ServerTimeouts, uvicorn_options
from tests.server._live import APPS, free_port, serve

# Short, but not so short that a loaded machine sends a test's head after the timer fired.
SHORT = ServerTimeouts(keep_alive=60, header=1.5, body=1.0)
HEAD = b"POST /apps/chat/users/u/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n"


@contextmanager
def _server(timeouts: ServerTimeouts, http: str = "auto") -> Iterator[tuple[str, int]]:
    app = create_app(APPS, db="memory", loopback_only=True, body_timeout=timeouts.body)
    with serve(app, **uvicorn_options(timeouts, http)) as url:
        parts = urlsplit(url)
        yield parts.hostname or "127.0.0.1", parts.port or 80


def _connect(address: tuple[str, int]) -> socket.socket:
    # The generous socket timeout only stops a broken test; the server closes first.
    return socket.create_connection(address, timeout=30)


def _read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    chunks: list[bytes] = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_w3_attack_a_connection_that_sends_nothing_is_closed(http: str) -> None:
    with _server(SHORT, http) as address, _connect(address) as sock:
        assert _read_all(sock) == b""  # closed, without an answer to a request never made


@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_w3_attack_a_request_head_that_never_ends_gets_408(http: str) -> None:
    with _server(SHORT, http) as address, _connect(address) as sock:
        sock.sendall(HEAD)  # no blank line: the head is not finished
        answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert b"connection: close" in answer.lower()
    assert b"--timeout-header" not in answer  # the detail says what, in the API's JSON shape
    assert b'"detail"' in answer


def test_w3_attack_a_body_that_stops_arriving_gets_408() -> None:
    with _server(SHORT) as address, _connect(address) as sock:
        sock.sendall(HEAD + b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert b"--timeout-body" in answer


def test_w3_attack_an_idle_keep_alive_connection_is_closed() -> None:
    with _server(ServerTimeouts(keep_alive=0.3)) as address, _connect(address) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = _read_all(sock)  # the answer, then the close once the connection idles
    assert answer.startswith(b"HTTP/1.1 200 ")


def test_w3_attack_a_second_request_head_is_timed_too() -> None:
    with _server(SHORT) as address, _connect(address) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        first = b""
        while not first.endswith(b'{"status":"ok"}'):
            first += sock.recv(65536)
        sock.sendall(HEAD)  # the next request's head starts, and stops
        answer = _read_all(sock)
    assert first.startswith(b"HTTP/1.1 200 ")
    assert answer.startswith(b"HTTP/1.1 408 ")


def test_w3_attack_forty_slow_connections_do_not_starve_the_server() -> None:
    # Long timeouts: the slow connections stay open all through the normal requests.
    patient = ServerTimeouts(keep_alive=60, header=60, body=60)
    with _server(patient) as (host, port), ExitStack() as stack:
        slow = [stack.enter_context(_connect((host, port))) for _ in range(40)]
        for i, sock in enumerate(slow):
            if i % 2:
                sock.sendall(HEAD)  # half send an unfinished head, half a stalled body
            else:
                sock.sendall(HEAD + b"Content-Length: 1000\r\n\r\n{")
        url = f"http://{host}:{port}"

        def session(n: int) -> int:
            with httpx.Client(base_url=url, timeout=30) as http:
                return http.post(f"/apps/chat/users/u{n}/sessions").status_code

        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(session, range(20))) == [200] * 20
        for sock in slow:  # and they were all still waiting, not refused
            sock.setblocking(False)
            with pytest.raises(BlockingIOError):
                sock.recv(1)


def test_w3_timeouts_must_be_positive() -> None:
    from rondo.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="header timeout"):
        ServerTimeouts(header=0)
    with pytest.raises(ConfigurationError, match="body_timeout"):
        create_app(APPS, db="memory", body_timeout=-1)


def test_w3_attack_the_commands_take_the_timeouts(tmp_path: Path) -> None:
    port = free_port()
    args = ["--timeout-keep-alive", "1", "--timeout-header", "2", "--timeout-body", "2"]
    command = [sys.executable, "-m", "rondo.cli", "api-server", str(APPS), *args]
    with subprocess.Popen(
        [*command, "--port", str(port), "--db", "memory"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ) as process:
        try:
            sock = _wait_for_server(("127.0.0.1", port), process)
            with sock:
                sock.sendall(HEAD)
                assert _read_all(sock).startswith(b"HTTP/1.1 408 ")
        finally:
            process.terminate()
    refused = subprocess.run(
        [*command[:-6], "--timeout-header", "0"], capture_output=True, text=True, cwd=tmp_path
    )
    assert refused.returncode == 2
    assert "header timeout must be positive" in refused.stderr


def _wait_for_server(address: tuple[str, int], process: subprocess.Popen[bytes]) -> socket.socket:
    deadline = time.monotonic() + 60
    while True:
        try:
            return socket.create_connection(address, timeout=30)
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the server did not start") from None
            time.sleep(0.1)
