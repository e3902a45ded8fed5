"""google-adk's own dev web UI, from its wheel, in headless Chromium against a rondo server.

The UI's static files are copied from the installed google-adk wheel and served from a second
origin, with `assets/config/runtime-config.json` pointing at a rondo server that allows that
origin (CORS). Nothing leaves the machine: the page's requests anywhere else are aborted.
"""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests._garbage import collect_earlier_garbage
from tests._require import require, require_module
from tests.browser.conftest import CHROMIUM_ARGS
from tests.server._adk import adk_browser_dir
from tests.server._live import APPS, free_port, serve

__all__ = ["AdkUi", "adk_dev_ui"]

CHROMIUM = "/usr/bin/chromium"


@dataclass(frozen=True)
class AdkUi:
    page: Any  # a Playwright Page
    ui_origin: str
    api: str


@contextmanager
def adk_dev_ui(
    tmp_path: Path,
    viewport: dict[str, int] | None = None,
    apps: Path = APPS,
    **app_options: Any,
) -> Iterator[AdkUi]:
    """A Chromium page beside google-adk's dev UI and a rondo server on `apps` (`create_app`
    options)."""
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

    collect_earlier_garbage()
    ui = tmp_path / "dev-ui"
    shutil.copytree(browser, ui)
    with _static(tmp_path) as ui_origin:
        app = create_app(
            apps, db="memory", allow_origins=[ui_origin], loopback_only=True, **app_options
        )
        with serve(app) as api:
            config = ui / "assets" / "config"
            config.mkdir(parents=True, exist_ok=True)
            (config / "runtime-config.json").write_text(json.dumps({"backendUrl": api}))
            with playwright.sync_playwright() as p:
                chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                try:
                    page = chromium.new_page(**({"viewport": viewport} if viewport else {}))
                    # Nothing leaves the machine (the UI asks for web fonts).
                    page.route(
                        "**/*",
                        lambda route: (
                            route.continue_()
                            if route.request.url.startswith("http://127.0.0.1")
                            else route.abort()
                        ),
                    )
                    yield AdkUi(page, ui_origin, api)
                finally:
                    chromium.close()


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
