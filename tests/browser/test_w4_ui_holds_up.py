"""Issue 23 item 5: the web UI holds up — a reload, or a link opened in another tab, shows what
the live view showed, rebuilt from the stored records; decided calls never say "waiting"; the
layout works at 390, 1280 and 1920 px without clipping; keyboard-only use works."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests._require import require_module

sync_api = require_module("playwright.sync_api", what="BROWSER", install="pip install playwright")
expect = sync_api.expect
expect.set_options(timeout=20_000)

APP = "assistant"
_TIME = re.compile(r"\d+(?:\.\d+)?\s*(?:ms|min|s)(?![a-z])")

# What a person sees in the chat, read off the page.
SNAPSHOT = """() => {
  const text = (el) => (el ? el.textContent.replace(/\\s+/g, ' ').trim() : '');
  const chat = document.querySelector('.chat-list');
  return {
    title: text(document.querySelector('.chat-title-text')),
    items: [...chat.children].map((el) => {
      if (el.classList.contains('tool-card')) {
        return {
          tool: el.dataset.tool,
          badge: text(el.querySelector('.badge')),
          decision: text(el.querySelector('.tool-decision')),
          timed: Boolean(text(el.querySelector('.tool-duration'))),
        };
      }
      return { cls: el.className.split(' ')[0], text: text(el) };
    }),
  };
}"""


def _masked(snapshot: dict[str, Any]) -> dict[str, Any]:
    """Durations are measured live and derived from record timestamps after a reload: they
    must be shown in both, not be equal to the millisecond."""
    items = [
        {**item, "text": _TIME.sub("<t>", item["text"])} if "text" in item else item
        for item in snapshot["items"]
    ]
    return {**snapshot, "items": items}


def _shows(page: Any, expected: dict[str, Any]) -> dict[str, Any]:
    """What the page shows once it has rendered `expected` (messages render on the next
    animation frame): polls like `expect` does, and returns the last reading."""
    deadline = time.monotonic() + 20
    while True:
        seen = _masked(page.evaluate(SNAPSHOT))
        if seen == expected or time.monotonic() > deadline:
            return seen
        page.wait_for_timeout(100)


def _open(page: Any, web: Any) -> None:
    page.goto(web.url + "/")
    expect(page).to_have_url(re.compile(rf"#/apps/{APP}$"))
    expect(page.get_by_role("textbox", name="Message")).to_be_visible()


def _send(page: Any, text: str) -> None:
    box = page.get_by_role("textbox", name="Message")
    box.fill(text)
    box.press("Enter")


def _idle(page: Any) -> None:
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()


def _conversation(page: Any, web: Any) -> None:
    """A weather call, a rejected deletion (with a comment) and a skipped one."""
    _open(page, web)
    _send(page, "weather in Oslo")
    expect(page.locator(".msg-agent .msg-text").last).to_contain_text("in Oslo.")
    _idle(page)
    _send(page, "delete /etc/hosts")
    card = page.locator('.tool-card[data-tool="delete_file"]').last
    expect(card.get_by_role("button", name="Reject", exact=True)).to_be_visible()
    _idle(page)
    card.get_by_role("textbox", name="Note").fill("keep that file")
    card.get_by_role("button", name="Reject", exact=True).click()
    expect(card).to_contain_text("Rejected by you — “keep that file”")
    expect(page.locator(".msg-agent .msg-text").last).to_contain_text("I did not delete the file")
    _idle(page)


def test_w4_a_reload_and_a_new_tab_show_what_the_live_view_showed(
    page: Any, web: Any, browser: Any, user_id: str
) -> None:
    _conversation(page, web)
    live = page.evaluate(SNAPSHOT)
    footers = page.locator(".run-footer")
    expect(footers).to_have_count(3)  # one per run: weather, paused, resumed
    # Decided: no footer says it waits any more.
    assert not [t for t in footers.all_text_contents() if "waiting" in t]
    url = page.url

    page.reload()
    expect(page.locator(".run-footer")).to_have_count(3)
    reloaded = _shows(page, _masked(live))
    assert reloaded["items"] == _masked(live)["items"], "\n".join(
        f"{a}\n{b}\n"
        for a, b in zip(reloaded["items"], _masked(live)["items"], strict=False)
        if a != b
    )
    assert reloaded == _masked(live)

    # A link opened in another browser (no local storage, no tab memory): the same, titles
    # in the sidebar too, and a timeline rebuilt from the records.
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.add_init_script(f"localStorage.setItem('rondo.user', '{user_id}')")
    other = context.new_page()
    try:
        other.goto(url)
        expect(other.locator(".run-footer")).to_have_count(3)
        assert _shows(other, _masked(live)) == _masked(live)
        expect(other.locator(".session.is-active .session-title")).to_have_text("weather in Oslo")
        other.get_by_role("tab", name=re.compile("Timeline")).click()
        rows = other.locator(".timeline .row")
        expect(rows.first).to_be_visible()
        types = rows.evaluate_all("(rows) => rows.map((r) => r.dataset.type)")
        assert types.count("run_start") == 3
        assert types.count("run_end") == 3
        assert "hitl_decided" in types
        assert "tool_call_end" in types
    finally:
        context.close()


def test_23_a_failed_runs_error_shows_after_a_reload(page: Any, web: Any) -> None:
    """Issue 23 (5): the server stores a failed run's error record, so the message the live
    view showed is still in the conversation after a reload."""
    _open(page, web)
    _send(page, "fail")
    alert = page.locator(".chat-list").get_by_role("alert")
    expect(alert).to_contain_text("the rule model was asked to fail")
    _idle(page)
    expect(page).to_have_url(re.compile(r"/sessions/"))
    page.reload()
    expect(page.locator(".chat-list .msg-user").first).to_contain_text("fail")
    expect(page.locator(".chat-list").get_by_role("alert")).to_contain_text(
        "the rule model was asked to fail"
    )


# -- layout -------------------------------------------------------------------------------

NO_OVERFLOW = """() => {
  const out = [];
  const root = document.scrollingElement;
  if (root.scrollWidth > root.clientWidth + 1) out.push(`page scrolls sideways: ${root.scrollWidth} > ${root.clientWidth}`);
  const width = window.innerWidth;
  for (const el of document.querySelectorAll('.topbar > *, .tab, .composer, .chat-title')) {
    const box = el.getBoundingClientRect();
    if (box.width === 0) continue; // hidden at this width
    if (box.left < -1 || box.right > width + 1) out.push(`${el.className} leaves the window: ${box.left}..${box.right}`);
  }
  for (const tab of document.querySelectorAll('.tab')) {
    if (tab.getBoundingClientRect().width === 0) continue;
    if (tab.scrollWidth > tab.clientWidth + 1) out.push(`tab "${tab.textContent}" is clipped`);
    const bar = tab.parentElement.getBoundingClientRect();
    const box = tab.getBoundingClientRect();
    if (box.right > bar.right + 1) out.push(`tab "${tab.textContent}" overflows its bar`);
  }
  return out;
}"""


@pytest.mark.parametrize("width", [390, 1280, 1440, 1920])
def test_w4_nothing_overflows_and_every_tab_label_shows(
    browser: Any, web: Any, user_id: str, width: int, tmp_path: Path
) -> None:
    height = 844 if width == 390 else 1000
    context = browser.new_context(viewport={"width": width, "height": height})
    context.add_init_script(f"localStorage.setItem('rondo.user', '{user_id}')")
    page = context.new_page()
    try:
        _conversation(page, web)
        if width <= 1100:  # the inspector is a drawer: open it from the top bar
            page.get_by_role("button", name="Toggle the inspector").click()
        expect(page.get_by_role("tab", name=re.compile("Trace"))).to_be_visible()
        for name in ("State", "Artifacts", "Timeline", "Events", "Trace"):
            tab = page.get_by_role("tab", name=re.compile(name))
            expect(tab).to_be_in_viewport()
            expect(tab).to_contain_text(name)
        problems = page.evaluate(NO_OVERFLOW)
        shot = tmp_path / f"ui-{width}.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        assert problems == []
        if width == 390:  # one column: the chat takes the whole width
            chat = page.locator("main.chat").bounding_box()
            assert chat is not None
            assert chat["width"] >= width - 2
    finally:
        context.close()


# -- keyboard -----------------------------------------------------------------------------


def _tab_to(page: Any, matches: str, limit: int = 60) -> None:
    """Press Tab until the focused element matches the JS predicate `matches`."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(
            f"() => {{ const el = document.activeElement; return Boolean(el && ({matches})); }}"
        ):
            return
    raise AssertionError(f"Tab never reached {matches}")


def test_w4_keyboard_only_use_works(page: Any, web: Any) -> None:
    page.goto(web.url + "/")
    expect(page.get_by_role("textbox", name="Message")).to_be_visible()
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    _tab_to(page, "el.getAttribute('aria-label') === 'Message'")
    page.keyboard.type("delete /tmp/key.txt")
    page.keyboard.press("Enter")
    card = page.locator('.tool-card[data-tool="delete_file"]')
    expect(card.get_by_role("button", name="Approve", exact=True)).to_be_visible()
    _idle(page)
    _tab_to(page, "el.dataset && el.dataset.decision === 'approve'")
    page.keyboard.press("Enter")
    expect(page.locator(".msg-agent .msg-text").last).to_have_text("Done: /tmp/key.txt is deleted.")
    # The inspector's tabs are reachable and switch with the keyboard too.
    _tab_to(page, "el.getAttribute('role') === 'tab' && el.dataset.tab === 'events'")
    page.keyboard.press("Enter")
    expect(page.get_by_role("tab", name=re.compile("Events"))).to_have_attribute(
        "aria-selected", "true"
    )


def test_w4_the_docs_pictures_are_taken_from_the_current_ui(browser: Any, tmp_path: Path) -> None:
    """tests/browser/make_screenshot.py still drives today's UI on the examples (both
    pictures), so docs/images can always be regenerated."""
    from tests.browser.make_screenshot import make

    for trace in (False, True):
        out = make(tmp_path, trace=trace, browser=browser)
        assert out.stat().st_size > 50_000
