"""Issue 21.6: the web UI on runs that outlive the page — a real `rondo web`, headless Chromium.

A reload mid-answer rejoins the run (`…/runs/{id}/stream` after the last frame id read) and
shows every progress step once; Stop cancels the run on the server; "Edit" on a message
rewinds and resends, "Retry" on an answer asks again, "Fork from here" opens a new session
holding the conversation up to that answer.
"""

from __future__ import annotations

import re
import time
from typing import Any

from tests._require import require_module
from tests.browser.test_w4_web_ui import (
    APP,
    open_app,
    send,
    session_id,
    stored_session,
    tool_card,
    wait_idle,
)

sync_api = require_module("playwright.sync_api", what="BROWSER", install="pip install playwright")
expect = sync_api.expect
expect.set_options(timeout=30_000)


def _user(page: Any) -> str:
    return page.evaluate("localStorage.getItem('rondo.user')")


def _texts(stored: dict[str, Any]) -> list[str]:
    return [
        p["text"]
        for e in stored["events"]
        for p in (e.get("content") or {}).get("parts", [])
        if p.get("text")
    ]


def _runs(web: Any, user: str, sid: str) -> list[dict[str, Any]]:
    status, runs = web.get(f"/apps/{APP}/users/{user}/sessions/{sid}/runs")
    assert status == 200
    return runs


def test_21_a_reload_mid_answer_rejoins_and_loses_nothing(page: Any, web: Any) -> None:
    open_app(page, web)
    send(page, "count to 12")  # three seconds of counting, a number at a time
    card = tool_card(page, "count_to")
    expect(card.locator(".tool-progress li").nth(2)).to_have_text("3")
    sid = session_id(page)

    page.reload()

    card = tool_card(page, "count_to")
    expect(card.locator(".badge")).to_have_text("Done")
    numbers = [str(n) for n in range(1, 13)]
    expect(card.locator(".tool-progress li")).to_have_text(numbers)  # each once, none lost
    answer = page.locator(".msg-agent .msg-text").last
    expect(answer).to_have_text("Counted. That took a while.")
    wait_idle(page)
    expect(page.locator(".msg-user")).to_have_count(1)
    expect(page.locator(".msg-error")).to_have_count(0)
    runs = _runs(web, _user(page), sid)
    assert [r["status"] for r in runs] == ["completed"]  # the reload did not stop it
    # Once the run is over, a reload rebuilds the same answer from the log (no rejoin).
    page.reload()
    expect(page.locator(".msg-agent .msg-text").last).to_have_text("Counted. That took a while.")
    expect(tool_card(page, "count_to").locator(".badge")).to_have_text("Done")
    expect(page.locator(".msg-user")).to_have_count(1)


def test_21_stop_cancels_the_run_on_the_server(page: Any, web: Any) -> None:
    open_app(page, web)
    send(page, "count to 40")
    expect(tool_card(page, "count_to").locator(".badge")).to_have_text("Running")
    sid = session_id(page)
    page.get_by_role("button", name="Stop the run").click()
    expect(page.locator(".msg-error")).to_contain_text("Stopped")
    wait_idle(page)
    deadline = time.monotonic() + 30
    while _runs(web, _user(page), sid)[0]["status"] != "cancelled":
        assert time.monotonic() < deadline, _runs(web, _user(page), sid)
        time.sleep(0.2)
    send(page, "still there?")
    expect(page.locator(".msg-agent .msg-text").last).to_have_text("You said: still there?")


def test_21_edit_rewinds_and_resends(page: Any, web: Any) -> None:
    open_app(page, web)
    send(page, "first")
    expect(page.locator(".msg-agent .msg-text").last).to_have_text("You said: first")
    wait_idle(page)
    send(page, "second")
    expect(page.locator(".msg-agent .msg-text").last).to_have_text("You said: second")
    wait_idle(page)
    sid = session_id(page)

    page.once("dialog", lambda dialog: dialog.accept("edited"))
    page.locator(".msg-box-user").nth(1).get_by_role("button", name="Edit").click()

    expect(page.locator(".msg-agent .msg-text").last).to_have_text("You said: edited")
    wait_idle(page)
    expect(page.locator(".msg-user .msg-text")).to_have_text(["first", "edited"])
    status, stored = stored_session(web, _user(page), sid)
    assert status == 200
    assert _texts(stored) == ["first", "You said: first", "edited", "You said: edited"]
    _, rewound = web.get(f"/apps/{APP}/users/{_user(page)}/sessions/{sid}/rewound")
    assert "second" in [
        p.get("text") for e in rewound for p in (e.get("content") or {}).get("parts", [])
    ]


def test_21_retry_asks_again_and_fork_opens_a_new_session(page: Any, web: Any) -> None:
    open_app(page, web)
    for text in ("alpha", "beta"):
        send(page, text)
        expect(page.locator(".msg-agent .msg-text").last).to_have_text(f"You said: {text}")
        wait_idle(page)
    sid = session_id(page)

    page.locator(".msg-box-agent").last.get_by_role("button", name="Retry").click()
    # The same answer again: wait for the server's record of the retried run.
    want = ["alpha", "You said: alpha", "beta", "You said: beta"]
    deadline = time.monotonic() + 30
    while True:
        _, stored = stored_session(web, _user(page), sid)
        _, rewound = web.get(f"/apps/{APP}/users/{_user(page)}/sessions/{sid}/rewound")
        if (_texts(stored) == want and rewound) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert _texts(stored) == want
    hidden = [p.get("text") for e in rewound for p in (e.get("content") or {}).get("parts", [])]
    assert hidden[:2] == ["beta", "You said: beta"]  # the first answer stays stored, hidden
    expect(page.locator(".msg-agent .msg-text")).to_have_text(want[1::2])
    wait_idle(page)

    page.locator(".msg-box-agent").first.get_by_role("button", name="Fork from here").click()
    expect(page).not_to_have_url(re.compile(re.escape(sid) + "$"))
    expect(page.locator(".msg-user .msg-text")).to_have_text(["alpha"])
    fork = session_id(page)
    _, forked = stored_session(web, _user(page), fork)
    assert _texts(forked) == ["alpha", "You said: alpha"]
    _, original = stored_session(web, _user(page), sid)
    assert _texts(original) == _texts(stored)
