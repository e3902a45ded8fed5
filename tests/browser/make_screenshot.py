"""Regenerate docs/images/web-ui.png, the README's picture of the web UI, from a real session.

    .venv/bin/python -m tests.browser.make_screenshot
    .venv/bin/python -m tests.browser.make_screenshot --trace   # docs/images/trace.png
    .venv/bin/python -m tests.browser.make_screenshot --out DIR # elsewhere (the test does)

It starts `rondo web examples` as the tests start their server, has a short conversation with
the `guarded` example in headless Chromium (a tool call, then a deletion that waits for
approval) and saves the window. With `--trace` it has a two-turn conversation and saves the
Trace tab's span waterfalls with a tool span's attributes open (docs/tracing.md).
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from playwright.sync_api import expect, sync_playwright

from tests.browser.conftest import CHROMIUM_ARGS, _chromium, _start, _stop

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
IMAGES = ROOT / "docs" / "images"
WEB_UI = "web-ui.png"
TRACE = "trace.png"


def _say(page: Any, text: str, done: str) -> None:
    box = page.get_by_role("textbox", name="Message")
    box.fill(text)
    box.press("Enter")
    expect(page.locator(".chat-list").get_by_text(done).last).to_be_visible()
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()


def _trace(page: Any) -> str:
    _say(page, "What files are there?", "The workspace has:")
    _say(page, "delete budget.xlsx", "Approve")
    page.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator(".chat-list").get_by_text("Deleted budget.xlsx.")).to_be_visible()
    page.get_by_role("tab", name=re.compile("Trace")).click()
    page.locator(".trace-invocation").first.locator(".span-tool").click()
    page.mouse.move(0, 0)
    page.wait_for_timeout(300)
    return TRACE


def _conversation(page: Any) -> str:
    # An earlier session, so the picker looks like a developer's.
    _say(page, "delete notes.md", "Approve")
    page.get_by_role("button", name="Reject", exact=True).click()
    expect(page.locator(".chat-list").get_by_text("I did not delete it")).to_be_visible()
    page.get_by_role("button", name="New session").click()
    _say(page, "What files are there?", "The workspace has:")
    box = page.get_by_role("textbox", name="Message")
    box.fill("delete report.txt")
    box.press("Enter")
    expect(page.get_by_role("button", name="Approve", exact=True)).to_be_visible()
    page.get_by_role("tab", name=re.compile("Timeline")).click()
    page.locator(".row.tl-hitl_pending").click()
    page.mouse.move(0, 0)
    page.wait_for_timeout(300)
    return WEB_UI


def make(out_dir: Path, *, trace: bool, browser: Any = None) -> Path:
    """Take the picture into `out_dir` (with `browser`, a launched Chromium, or a new one)."""
    if browser is not None:
        return _take(browser, out_dir, trace)
    chromium = _chromium()
    if chromium is None:
        raise RuntimeError("Chromium not found (apt-get install chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            return _take(launched, out_dir, trace)
        finally:
            launched.close()


def _take(browser: Any, out_dir: Path, trace: bool) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        server = _start(Path(tmp), agents_dir=EXAMPLES)
        page = browser.new_page(viewport={"width": 1440, "height": 900}, device_scale_factor=2)
        try:
            page.goto(server.url + "/#/apps/guarded")
            out = out_dir / (_trace(page) if trace else _conversation(page))
            out_dir.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out))
        finally:
            page.close()
            _stop(server)
    return out


def main() -> int:
    args = sys.argv[1:]
    out_dir = Path(args[args.index("--out") + 1]) if "--out" in args else IMAGES
    try:
        out = make(out_dir, trace="--trace" in args)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
