"""SPEC W1: google-adk's own dev web UI, served from its wheel, works against rondo.

The UI's static files are copied from the installed google-adk wheel and served from a
second origin, with `assets/config/runtime-config.json` pointing at a rondo server started
with `--allow-origin` for that origin. Real headless Chromium opens the UI on the reference
app, sends a message and must show the agent's answer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.server._adk_ui import adk_dev_ui


def test_w1_adks_dev_ui_chats_with_rondo(tmp_path: Path) -> None:
    seen: list[tuple[int, str]] = []
    with adk_dev_ui(tmp_path) as ui:
        page, api = ui.page, ui.api
        page.on(
            "response",
            lambda r: (
                seen.append((r.status, f"{r.request.method} {r.url}"))
                if r.url.startswith(api)
                else None
            ),
        )
        page.goto(f"{ui.ui_origin}/dev-ui/?app=chat")
        box = page.locator("textarea").first
        box.wait_for(timeout=30_000)
        box.fill("milk")
        box.press("Enter")
        page.get_by_text("Stub reply: noted 'milk'").first.wait_for(timeout=30_000)
        assert page.get_by_text('remember("milk")').count() >= 1
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
