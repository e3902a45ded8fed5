"""Issue 23 item 5, in the web UI: what a run showed live is what its stored records show
after a reload or in a new tab — a model error's message, exact durations, the timeline — and
the State tab edits the session's state through the PATCH session route."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._require import require_module
from tests.browser.conftest import WebServer, _start, _stop  # pyright: ignore[reportPrivateUsage]

sync_api = require_module("playwright.sync_api", what="BROWSER", install="pip install playwright")
expect = sync_api.expect
expect.set_options(timeout=20_000)

FAILING_AGENTS = Path(__file__).parent / "failing_agents"


def _send(page: Any, text: str) -> None:
    box = page.get_by_role("textbox", name="Message")
    box.fill(text)
    box.press("Enter")


def _idle(page: Any) -> None:
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()


@pytest.fixture
def flaky_server(browser: Any, tmp_path: Path) -> Iterator[WebServer]:
    """`rondo web` over one app, `flaky`, whose model provider always fails."""
    server = _start(tmp_path, agents_dir=FAILING_AGENTS)
    try:
        yield server
    finally:
        _stop(server)


def test_23_a_model_error_shows_its_message_live_and_after_a_reload(
    page: Any, flaky_server: WebServer
) -> None:
    page.goto(flaky_server.url + "/")
    expect(page).to_have_url(re.compile(r"#/apps/flaky$"))
    _send(page, "hello")
    error = page.locator(".chat-list .msg-error")
    expect(error).to_have_count(1)
    expect(error).to_contain_text("provider said 503")
    _idle(page)
    live = page.locator(".chat-list").text_content() or ""
    # The run ended on its error: no footer claims it ended with a model call.
    expect(page.locator(".chat-list .run-footer")).to_have_count(0)

    page.reload()
    expect(page.locator(".chat-list .msg-user")).to_contain_text("hello")
    expect(error).to_have_count(1)
    expect(error).to_contain_text("ModelServerError: provider said 503")
    expect(page.locator(".chat-list")).to_have_text(live)
    expect(page.locator(".chat-list .run-footer")).to_have_count(0)


DURATIONS = """() => [...document.querySelectorAll(
  '.chat-list .tool-duration, .chat-list .run-footer, .chat-list .msg-time')].map(
  (el) => `${el.className}: ${el.textContent.trim()}`)"""


def test_23_durations_after_a_reload_are_the_ones_the_live_view_showed(
    page: Any, web: WebServer
) -> None:
    page.goto(web.url + "/")
    expect(page).to_have_url(re.compile(r"#/apps/assistant$"))
    _send(page, "count to 3")  # a tool that takes about 750 ms
    expect(page.locator(".msg-agent .msg-text").last).to_contain_text("Counted.")
    _idle(page)
    _send(page, "weather in Oslo")
    expect(page.locator(".msg-agent .msg-text").last).to_contain_text("in Oslo.")
    _idle(page)
    expect(page.locator(".chat-list .run-footer")).to_have_count(2)
    page.wait_for_load_state("networkidle")  # the records the live view reads once a run ends
    live = page.evaluate(DURATIONS)
    assert len([d for d in live if d.startswith("tool-duration") and d.endswith("s")]) == 2, live
    assert len([d for d in live if d.startswith("run-footer")]) == 2, live

    page.reload()
    expect(page.locator(".chat-list .run-footer")).to_have_count(2)
    expect(page.locator(".chat-list .tool-duration")).to_have_count(2)
    assert page.evaluate(DURATIONS) == live


TIMELINE = """() => [...document.querySelectorAll('.timeline .row')].map(
  (row) => row.textContent.replace(/\\s+/g, ' ').trim())"""


def _timeline(page: Any) -> list[str]:
    page.get_by_role("tab", name=re.compile("Timeline")).click()
    expect(page.locator(".timeline .row").first).to_be_visible()
    return page.evaluate(TIMELINE)


def test_23_the_timeline_is_rebuilt_from_the_records_in_this_tab_and_a_new_one(
    page: Any, web: WebServer, browser: Any, user_id: str
) -> None:
    page.goto(web.url + "/")
    expect(page).to_have_url(re.compile(r"#/apps/assistant$"))
    _send(page, "weather in Oslo")
    expect(page.locator(".msg-agent .msg-text").last).to_contain_text("in Oslo.")
    _idle(page)
    _send(page, "delete /tmp/x")
    card = page.locator('.tool-card[data-tool="delete_file"]').last
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator(".msg-agent .msg-text").last).to_contain_text("is deleted")
    _idle(page)
    page.wait_for_load_state("networkidle")
    live = _timeline(page)
    assert [r for r in live if "hitl_decided" in r], live
    assert len([r for r in live if "run_end" in r]) == 3, live

    # A link opened in a new tab: no sessionStorage of this tab, the same timeline.
    other = page.context.new_page()
    other.goto(page.url)
    expect(other.locator(".chat-list .run-footer")).to_have_count(3)
    assert _timeline(other) == live
    other.close()

    page.reload()
    expect(page.locator(".chat-list .run-footer")).to_have_count(3)
    assert _timeline(page) == live


def test_23_the_state_tab_edits_the_state_through_the_patch_session_route(
    page: Any, web: WebServer, user_id: str
) -> None:
    page.goto(web.url + "/")
    expect(page).to_have_url(re.compile(r"#/apps/assistant$"))
    _send(page, "save a note: buy milk")
    expect(page.locator(".msg-agent .msg-text").last).to_contain_text("Saved.")
    _idle(page)
    session = page.url.rsplit("/", 1)[-1]
    path = f"/apps/assistant/users/{user_id}/sessions/{session}"
    page.get_by_role("tab", name=re.compile("State")).click()
    page.get_by_text("Edit as JSON").click()
    editor = page.get_by_role("textbox", name="State JSON")
    save = page.get_by_role("button", name="Save state")
    problem = page.locator(".state-editor [role=alert]")

    editor.fill('{"notes": ["buy milk"], "mood":')
    expect(problem).to_contain_text("Not valid JSON")
    expect(save).to_be_disabled()
    editor.fill('["not", "an", "object"]')
    expect(problem).to_contain_text("must be a JSON object")

    editor.fill('{"notes": ["buy milk", "and bread"], "mood": "calm"}')
    save.click()
    expect(page.locator(".facts + *")).to_contain_text("calm")
    status, stored = web.get(path)
    assert status == 200
    assert stored["state"]["mood"] == "calm"
    assert stored["state"]["notes"] == ["buy milk", "and bread"]

    # A 4xx from the server (the session was deleted meanwhile) is shown, not swallowed.
    request = urllib.request.Request(web.url + path, method="DELETE")
    with urllib.request.urlopen(request, timeout=10):
        pass
    page.get_by_text("Edit as JSON").click()  # the saved state re-rendered the tab
    editor.fill('{"mood": "tired"}')
    save.click()
    expect(problem).to_contain_text("Not saved")
