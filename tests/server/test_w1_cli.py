"""SPEC W1: the `rondo api-server` and `rondo web` commands, run as a user runs them."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.server._live import APPS, free_port

pytestmark = pytest.mark.integration


@contextmanager
def _command(*args: str, cwd: Path) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "rondo.cli", *args, "--port", str(port)],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/health", timeout=1)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    output = process.stdout.read() if process.stdout else ""
                    raise RuntimeError(f"the server did not start: {output}") from None
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()


def test_w1_api_server_serves_the_apps_of_agents_dir(tmp_path: Path) -> None:
    with _command("api-server", str(APPS), cwd=tmp_path) as url:
        assert "chat" in httpx.get(f"{url}/list-apps").json()
        session = httpx.post(f"{url}/apps/chat/users/u/sessions").json()
        run = {
            "appName": "chat",
            "userId": "u",
            "sessionId": session["id"],
            "newMessage": {"role": "user", "parts": [{"text": "tea"}]},
        }
        events = httpx.post(f"{url}/run", json=run, timeout=30).json()
        assert events[-1]["content"]["parts"][0]["text"] == "Stub reply: noted 'tea'"
        assert httpx.get(f"{url}/").status_code == 404  # no UI from api-server
    # The default store is SQLite at .rondo/sessions.db under the current directory.
    assert (tmp_path / ".rondo" / "sessions.db").is_file()
    with _command("api-server", str(APPS), cwd=tmp_path) as url:
        again = httpx.get(f"{url}/apps/chat/users/u/sessions/{session['id']}").json()
        assert len(again["events"]) == 4


def test_w1_web_serves_the_ui_beside_the_api(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text('{"secret-token": "alice"}')
    with _command(
        "web", str(APPS), "--db", "memory", "--auth-tokens", str(tokens), cwd=tmp_path
    ) as url:
        page = httpx.get(f"{url}/")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        # The UI's files need no token; the data does.
        assert httpx.get(f"{url}/list-apps").status_code == 401
        authed = httpx.get(f"{url}/list-apps", headers={"Authorization": "Bearer secret-token"})
        assert authed.status_code == 200
        assert httpx.get(f"{url}/no-such-file.js").status_code == 404


def test_w1_the_command_reports_a_bad_agents_dir(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rondo.cli", "api-server", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "is not a directory" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
