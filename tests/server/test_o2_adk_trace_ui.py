"""SPEC O2: google-adk's own dev UI shows rondo's spans in its Traces view.

As `test_w1_adk_ui`: the UI's files from the installed google-adk wheel, served from a second
origin, pointed at a rondo server (here with its span store on). Real headless Chromium sends
a message, opens Traces and must show the invocation's waterfall — the agent, its two model
calls and its tool call — and, on the answer event, the span that produced it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests._otel import sdk
from tests._require import require, require_module
from tests.server._adk import adk_browser_dir
from tests.server._live import APPS, serve
from tests.server.test_w1_adk_ui import CHROMIUM, CHROMIUM_ARGS, _static


def test_o2_adks_traces_view_shows_rondos_spans(tmp_path: Path) -> None:
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
    sdk()  # skips without opentelemetry-sdk
    from rondo.server import create_app

    ui = tmp_path / "dev-ui"
    shutil.copytree(browser, ui)
    with _static(tmp_path) as ui_origin:
        app = create_app(
            APPS, db="memory", allow_origins=[ui_origin], loopback_only=True, trace_store=True
        )
        with serve(app) as api:
            config = ui / "assets" / "config"
            config.mkdir(parents=True, exist_ok=True)
            (config / "runtime-config.json").write_text(json.dumps({"backendUrl": api}))
            traces: list[int] = []
            with playwright.sync_playwright() as p:
                chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                try:
                    page = chromium.new_page(viewport={"width": 1440, "height": 900})
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
                            traces.append(r.status) if "/debug/trace/session/" in r.url else None
                        ),
                    )
                    page.goto(f"{ui_origin}/dev-ui/?app=chat")
                    box = page.locator("textarea").first
                    box.wait_for(timeout=30_000)
                    box.fill("milk")
                    box.press("Enter")
                    page.get_by_text("Stub reply: noted 'milk'").first.wait_for(timeout=30_000)
                    # The selected answer event lists the span that produced it.
                    page.get_by_text("Associated Spans").wait_for(timeout=30_000)
                    page.get_by_text("chat echo").first.wait_for(timeout=30_000)
                    page.get_by_text("Traces", exact=True).click()
                    page.get_by_text("INVOCATION ID").first.wait_for(timeout=30_000)
                    page.get_by_text("Total latency").first.wait_for(timeout=30_000)
                    view = page.locator("body").inner_text()
                    assert view.count("chat echo") >= 2, view
                    assert "remember" in view
                finally:
                    chromium.close()
    assert traces
    assert all(status == 200 for status in traces)


pytestmark = pytest.mark.integration
