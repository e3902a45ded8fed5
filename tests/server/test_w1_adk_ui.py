"""SPEC W1: google-adk's own dev web UI, served from its wheel, works against rondo.

The UI's static files are copied from the installed google-adk wheel and served from a
second origin, with `assets/config/runtime-config.json` pointing at a rondo server started
with `--allow-origin` for that origin. Real headless Chromium opens the UI on the reference
app, sends a message and must show the agent's answer.
"""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests._require import require, require_module
from tests.server._adk import adk_browser_dir
from tests.server._live import APPS, free_port, serve

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextmanager
def _static(root: Path) -> Iterator[str]:
    port = free_port()
    handler = functools.partial(_QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        httpd.shutdown()
        httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return


def test_w1_adks_dev_ui_chats_with_rondo(tmp_path: Path) -> None:
    browser = adk_browser_dir()
    require(
        browser,
        what="ADK_UI",
        reason="google-adk's wheel not found (pip install google-adk, or set "
        "RONDO_ADK_PYTHON to a python that has it)",
    )
    assert browser is not None
    playwright = require_module(
        "playwright.sync_api", what="ADK_UI", install="pip install playwright"
    )
    require(
        Path(CHROMIUM).exists(), what="ADK_UI", reason="needs Chromium (apt-get install chromium)"
    )
    from rondo.server import create_app

    ui = tmp_path / "dev-ui"
    shutil.copytree(browser, ui)
    with _static(tmp_path) as ui_origin:
        app = create_app(APPS, db="memory", allow_origins=[ui_origin], loopback_only=True)
        with serve(app) as api:
            config = ui / "assets" / "config"
            config.mkdir(parents=True, exist_ok=True)
            (config / "runtime-config.json").write_text(json.dumps({"backendUrl": api}))
            seen: list[tuple[int, str]] = []
            with playwright.sync_playwright() as p:
                chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                try:
                    page = chromium.new_page()
                    # Nothing leaves the machine (the UI asks for web fonts).
                    page.route(
                        "**/*",
                        lambda route: (
                            route.continue_()
                            if route.request.url.startswith("http://127.0.0.1")
                            else route.abort()
                        ),
                    )
                    page.on(
                        "response",
                        lambda r: (
                            seen.append((r.status, f"{r.request.method} {r.url}"))
                            if r.url.startswith(api)
                            else None
                        ),
                    )
                    page.goto(f"{ui_origin}/dev-ui/?app=chat")
                    box = page.locator("textarea").first
                    box.wait_for(timeout=30_000)
                    box.fill("milk")
                    box.press("Enter")
                    page.get_by_text("Stub reply: noted 'milk'").first.wait_for(timeout=30_000)
                    assert page.get_by_text('remember("milk")').count() >= 1
                finally:
                    chromium.close()
    calls = [call for status, call in seen if status < 400]
    assert any(c.startswith("GET ") and "/list-apps" in c for c in calls)
    assert any(
        c.startswith("POST ") and c.endswith("/apps/chat/users/user/sessions") for c in calls
    )
    assert any(c == f"POST {api}/run_sse" for c in calls)
    # Only the dev server's own routes (graphs, evals, builder) are missing, by design.
    failed = [call for status, call in seen if status >= 400]
    assert all(f"{api}/dev/" in call for call in failed), failed


pytestmark = pytest.mark.integration
