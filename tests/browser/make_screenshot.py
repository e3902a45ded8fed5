"""Regenerate docs/images/web-ui.png, the README's picture of the web UI, from a real session.

    .venv/bin/python -m tests.browser.make_screenshot
    .venv/bin/python -m tests.browser.make_screenshot --trace   # docs/images/trace.png

With `--trace` it has a two-turn conversation and saves the Trace tab's span waterfalls with a
tool span's attributes open (docs/tracing.md).

It starts `rondo web tests/browser/agents` as the tests do, has a short conversation in
headless Chromium (a tool call, then a call that waits for approval) and saves the window.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from playwright.sync_api import expect, sync_playwright

from tests.browser.conftest import CHROMIUM_ARGS, _chromium, _start, _stop

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
OUT = IMAGES / "web-ui.png"
TRACE_OUT = IMAGES / "trace.png"


def _say(page: Any, text: str, done: str) -> None:
    box = page.get_by_role("textbox", name="Message")
    box.fill(text)
    box.press("Enter")
    expect(page.locator(".chat-list").get_by_text(done).last).to_be_visible()
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()


def _trace(page: Any) -> Path:
    _say(page, "What's the weather in Paris?", "sunny in Paris.")
    _say(page, "weather in Tokyo", "in Tokyo.")
    page.get_by_role("tab", name="Trace").click()
    page.locator(".trace-invocation").first.locator(".span-tool").click()
    page.mouse.move(0, 0)
    page.wait_for_timeout(300)
    return TRACE_OUT


def main() -> int:
    trace = "--trace" in sys.argv[1:]
    chromium = _chromium()
    if chromium is None:
        print("Chromium not found (apt-get install chromium)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        server = _start(Path(tmp))
        try:
            browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 900}, device_scale_factor=2)
            page.goto(server.url + "/")
            out = _trace(page) if trace else _conversation(page)
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out))
            browser.close()
        finally:
            _stop(server)
    print(f"wrote {out}")
    return 0


def _conversation(page: Any) -> Path:
    # Two earlier sessions, so the picker looks like a developer's.
    _say(page, "save a note: ship the release notes", "Saved.")
    page.get_by_role("button", name="New session").click()
    _say(page, "weather in Tokyo", "in Tokyo.")
    page.get_by_role("button", name="New session").click()
    _say(page, "What's the weather in Paris?", "sunny in Paris.")
    box = page.get_by_role("textbox", name="Message")
    box.fill("delete /tmp/report.csv")
    box.press("Enter")
    expect(page.get_by_role("button", name="Approve", exact=True)).to_be_visible()
    page.get_by_role("tab", name="Timeline").click()
    page.locator(".row.tl-hitl_pending").click()
    page.mouse.move(0, 0)
    page.wait_for_timeout(300)
    return OUT


if __name__ == "__main__":
    raise SystemExit(main())
