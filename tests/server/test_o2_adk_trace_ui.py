"""SPEC O2: google-adk's own dev UI shows rondo's spans in its Traces view.

As `test_w1_adk_ui`: the UI's files from the installed google-adk wheel, served from a second
origin, pointed at a rondo server (here with its span store on). Real headless Chromium sends
a message, opens Traces and must show the invocation's waterfall — the agent, its two model
calls and its tool call — and, on the answer event, the span that produced it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._otel import sdk
from tests.server._adk_ui import adk_dev_ui


def test_o2_adks_traces_view_shows_rondos_spans(tmp_path: Path) -> None:
    sdk()  # skips without opentelemetry-sdk; the span store needs its provider first
    traces: list[int] = []
    with adk_dev_ui(tmp_path, viewport={"width": 1440, "height": 900}, trace_store=True) as ui:
        page = ui.page
        page.on(
            "response",
            lambda r: traces.append(r.status) if "/debug/trace/session/" in r.url else None,
        )
        page.goto(f"{ui.ui_origin}/dev-ui/?app=chat")
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
    assert traces
    assert all(status == 200 for status in traces)


pytestmark = pytest.mark.integration
