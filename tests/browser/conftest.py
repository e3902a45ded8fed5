"""The web UI's end-to-end set-up: a real `rondo web` server and a real headless Chromium.

The server is the `rondo web` command itself, started as a subprocess on a free port over
`agents/` (one app, `assistant`, whose rule-following model streams word by word). The
browser is Debian's Chromium driven by Playwright (never a downloaded browser). Without
Playwright, Chromium or the server extra the tests skip; `RONDO_REQUIRE_BROWSER=1` (CI) makes
them fail instead.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests._garbage import collect_earlier_garbage
from tests._require import require, require_module

AGENTS_DIR = Path(__file__).parent / "agents"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
START_TIMEOUT_S = 30.0


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class WebServer:
    """A running `rondo web`: its base URL and a small JSON client for checks."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path
    token: str | None = None

    def get(self, path: str) -> tuple[int, Any]:
        request = urllib.request.Request(self.url + path)
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, json.loads(exc.read() or b"null")


def _start(
    tmp: Path, *extra: str, token: str | None = None, agents_dir: Path = AGENTS_DIR
) -> WebServer:
    port = _free_port()
    log = tmp / "server.log"
    command = [
        sys.executable, "-m", "rondo.cli", "web", str(agents_dir),
        "--port", str(port), "--db", "memory", "--log-level", "warning", *extra,
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=tmp, stdout=out, stderr=subprocess.STDOUT)
    server = WebServer(f"http://127.0.0.1:{port}", process, log, token)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"`rondo web` exited with {process.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(server.url + "/health", timeout=1):
                return server
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.1)
    _stop(server)
    pytest.fail(f"`rondo web` did not answer within {START_TIMEOUT_S} s:\n{log.read_text()}")


def _stop(server: WebServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


# Module scope, not session: Playwright's sync API keeps an event loop running in this thread
# while it is open, and the asyncio tests that run after this package need the thread free.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = require_module(
        "playwright.sync_api", what="BROWSER", install="pip install 'rondo-agents[dev]'"
    )
    require_module("fastapi", what="BROWSER", install="pip install 'rondo-agents[server]'")
    chromium = _chromium()
    require(chromium, what="BROWSER", reason="Chromium not found (apt-get install chromium)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def web(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    """`rondo web agents/` on a free port, for the tests of one module."""
    server = _start(tmp_path_factory.mktemp("web"))
    try:
        yield server
    finally:
        _stop(server)


@pytest.fixture
def user_id(request: pytest.FixtureRequest) -> str:
    """A user id unique to the test, so each test sees only its own sessions."""
    return "u-" + request.node.name.removeprefix("test_w4_")[:40]


@pytest.fixture
def page(browser: Any, user_id: str) -> Iterator[Any]:
    """A fresh browser context (empty localStorage) that starts as `user_id`."""
    collect_earlier_garbage()
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.add_init_script(
        f"if (!localStorage.getItem('rondo.user')) localStorage.setItem('rondo.user', {json.dumps(user_id)});"
    )
    context.set_default_timeout(15_000)
    errors: list[str] = []
    foreign: list[str] = []
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    # Everything the UI needs comes from the server itself: no CDN, no web fonts.
    context.on(
        "request",
        lambda req: None if _is_local(req.url) else foreign.append(req.url),
    )
    try:
        yield page
    finally:
        context.close()
    assert not errors, f"the page raised: {errors}"
    assert not foreign, f"the page fetched from elsewhere than the server: {foreign}"


def _is_local(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("data", "blob") or parts.hostname == "127.0.0.1"


@pytest.fixture
def two_apps_server(browser: Any, tmp_path: Path) -> Iterator[WebServer]:
    """`rondo web` over two apps, `alpha` and `beta` (both the test assistant)."""
    agents = tmp_path / "agents"
    for name in ("alpha", "beta"):
        shutil.copytree(AGENTS_DIR / "assistant", agents / name)
    server = _start(tmp_path, agents_dir=agents)
    try:
        yield server
    finally:
        _stop(server)


@pytest.fixture
def auth_server(browser: Any, tmp_path: Path) -> Iterator[WebServer]:
    """`rondo web` with `--auth-tokens`: one token, for the user `alice`."""
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"alice-token-1234": "alice"}))
    server = _start(tmp_path, "--auth-tokens", str(tokens), token="alice-token-1234")
    try:
        yield server
    finally:
        _stop(server)
