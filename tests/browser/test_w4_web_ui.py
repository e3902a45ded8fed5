"""SPEC W4: rondo's web UI, end to end — a real `rondo web` server, a real headless Chromium.

Each test acts as a person would: it reads what is on screen (labels, buttons, text) and
checks the server's own record (`GET .../sessions/{id}`) where the screen could mislead.
"""

from __future__ import annotations

import re
from typing import Any

from tests._require import require_module

sync_api = require_module("playwright.sync_api", what="BROWSER", install="pip install playwright")
expect = sync_api.expect
# Generous: the machines that run this are often busy; a passing check returns at once.
expect.set_options(timeout=20_000)

APP = "assistant"
SESSION_URL = re.compile(rf"#/apps/{APP}/sessions/([^/]+)$")

# Records the text of the newest agent message each time the chat changes, to see it grow.
RECORD_AGENT_TEXT = """() => {
  window.__agentTexts = [];
  const list = document.querySelector('.chat-list');
  new MutationObserver(() => {
    const all = list.querySelectorAll('.msg-agent .msg-text');
    const text = all.length ? all[all.length - 1].textContent : '';
    const seen = window.__agentTexts;
    if (text && seen[seen.length - 1] !== text) seen.push(text);
  }).observe(list, { subtree: true, childList: true, characterData: true });
}"""


def open_app(page: Any, web: Any) -> None:
    page.goto(web.url + "/")
    expect(page).to_have_url(re.compile(rf"#/apps/{APP}$"))  # the only app opens by itself
    expect(message_box(page)).to_be_visible()


def message_box(page: Any) -> Any:
    return page.get_by_role("textbox", name="Message")


def send(page: Any, text: str) -> None:
    box = message_box(page)
    box.fill(text)
    box.press("Enter")


def wait_idle(page: Any) -> None:
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()


def tool_card(page: Any, tool: str) -> Any:
    return page.locator(f'.tool-card[data-tool="{tool}"]')


def session_id(page: Any) -> str:
    match = SESSION_URL.search(page.url)
    assert match, f"no session in the URL {page.url}"
    return match.group(1)


def stored_session(web: Any, user: str, sid: str) -> tuple[int, Any]:
    return web.get(f"/apps/{APP}/users/{user}/sessions/{sid}")


def test_w4_a_chat_turn_streams_the_answer_and_shows_the_tool_card(page: Any, web: Any) -> None:
    open_app(page, web)
    page.evaluate(RECORD_AGENT_TEXT)

    send(page, "What's the weather in Paris?")

    card = tool_card(page, "get_weather")
    expect(card.locator(".tool-name")).to_have_text("get_weather")
    expect(card).to_contain_text('"city": "Paris"')  # its arguments
    expect(card).to_contain_text('"temperature_c": 18')  # its result
    expect(card.locator(".badge")).to_have_text("Done")
    answer = "It is 18°C and sunny in Paris."
    expect(page.locator(".msg-agent .msg-text").last).to_have_text(answer)
    wait_idle(page)
    # The answer grew word by word before it was complete.
    texts: list[str] = page.evaluate("window.__agentTexts")
    growing = [t for t in texts if t != answer]
    assert len(set(growing)) >= 3, texts
    assert all(answer.startswith(t.rstrip()) for t in growing), texts
    # The URL names the new session, and the timeline lists the run's events with their ids.
    sid = session_id(page)
    page.get_by_role("tab", name=re.compile("^Timeline")).click()
    row = page.locator(".row.tl-tool_call_end")
    expect(row).to_contain_text("get_weather")
    row.click()
    expect(page.locator(".detail-title")).to_contain_text("tool_call_end · ")
    expect(page.locator(".detail-body")).to_contain_text('"duration_ms"')
    status, stored = stored_session(web, page.evaluate("localStorage.getItem('rondo.user')"), sid)
    assert status == 200
    assert stored["events"][0]["content"]["parts"][0]["text"] == "What's the weather in Paris?"


def test_w4_an_approved_confirmation_runs_the_tool(page: Any, web: Any) -> None:
    open_app(page, web)
    send(page, "delete /tmp/draft.txt")

    card = tool_card(page, "delete_file")
    expect(card.locator(".badge")).to_have_text("Needs approval")
    for label in ("Approve", "Reject", "Skip"):
        expect(card.get_by_role("button", name=label, exact=True)).to_be_visible()
    wait_idle(page)
    card.get_by_role("button", name="Approve", exact=True).click()

    expect(page.locator(".msg-agent .msg-text").last).to_have_text(
        "Done: /tmp/draft.txt is deleted."
    )
    expect(card).to_contain_text('"deleted": "/tmp/draft.txt"')
    expect(card.locator(".badge")).to_have_text("Done")
    expect(card.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
    expect(card).to_contain_text("Approved by you")


def test_w4_a_rejected_confirmation_does_not_run_the_tool(
    page: Any, web: Any, user_id: str
) -> None:
    open_app(page, web)
    send(page, "delete /etc/hosts")
    card = tool_card(page, "delete_file")
    card.get_by_role("textbox", name="Note").fill("keep that file")
    card.get_by_role("button", name="Reject", exact=True).click()

    expect(page.locator(".msg-agent .msg-text").last).to_contain_text("I did not delete the file")
    expect(card.locator(".badge")).to_have_text("Rejected")
    expect(card).to_contain_text("Rejected by you — “keep that file”")
    wait_idle(page)
    # The server's record: the tool's answer is the refusal, and nothing was deleted.
    _, stored = stored_session(web, user_id, session_id(page))
    responses = [
        part["functionResponse"]
        for event in stored["events"]
        for part in event["content"]["parts"]
        if "functionResponse" in part and part["functionResponse"]["name"] == "delete_file"
    ]
    assert responses
    assert "deleted" not in responses[-1]["response"]
    assert "keep that file" in responses[-1]["response"]["error"]


def test_w4_a_skipped_confirmation_records_the_note_as_the_result(page: Any, web: Any) -> None:
    open_app(page, web)
    send(page, "delete /tmp/cache")
    card = tool_card(page, "delete_file")
    card.get_by_role("textbox", name="Note").fill("already gone")
    card.get_by_role("button", name="Skip", exact=True).click()

    expect(card.locator(".badge")).to_have_text("Skipped")
    expect(card).to_contain_text('"already gone"')
    expect(page.locator(".msg-agent .msg-text").last).to_have_text(
        "Skipped: the file was not touched."
    )


def test_w4_switching_sessions_shows_each_conversation(page: Any, web: Any) -> None:
    open_app(page, web)
    send(page, "save a note: alpha")
    expect(page.locator(".msg-agent .msg-text").last).to_have_text("Saved. You have 1 note(s).")
    wait_idle(page)
    first = session_id(page)

    page.get_by_role("button", name="New session").click()
    expect(page).not_to_have_url(re.compile(first))
    expect(page).to_have_url(SESSION_URL)
    second = session_id(page)
    expect(page.locator(".msg")).to_have_count(0)
    send(page, "weather in Rome")
    expect(page.locator(".msg-agent .msg-text").last).to_contain_text("in Rome.")
    wait_idle(page)

    sessions = page.get_by_role("navigation", name="Sessions")
    expect(sessions.locator(".session")).to_have_count(2)
    sessions.get_by_role("link", name=re.compile("save a note: alpha")).click()
    expect(page).to_have_url(re.compile(f"/sessions/{first}$"))
    expect(page.locator(".chat-list")).to_contain_text("Saved. You have 1 note(s).")
    expect(page.locator(".chat-list")).not_to_contain_text("Rome")
    page.get_by_role("tab", name=re.compile("^State")).click()
    expect(page.locator(".inspector")).to_contain_text('"alpha"')
    page.get_by_role("tab", name=re.compile("^Artifacts")).click()
    page.get_by_role("button", name="notes.txt").click()
    expect(page.locator(".artifact-text")).to_have_text("alpha")

    sessions.get_by_role("link", name=re.compile("weather in Rome")).click()
    expect(page).to_have_url(re.compile(f"/sessions/{second}$"))
    expect(tool_card(page, "get_weather")).to_contain_text('"city": "Rome"')
    expect(page.locator(".chat-list")).not_to_contain_text("alpha")


def test_w4_a_reload_keeps_the_session_and_its_history(page: Any, web: Any) -> None:
    open_app(page, web)
    send(page, "weather in Oslo")
    expect(page.locator(".msg-agent .msg-text").last).to_contain_text("in Oslo.")
    wait_idle(page)
    send(page, "delete /tmp/old.log")
    expect(tool_card(page, "delete_file").get_by_role("button", name="Approve")).to_be_visible()
    wait_idle(page)
    url = page.url

    page.reload()

    assert page.url == url
    chat = page.locator(".chat-list")
    expect(chat.locator(".msg-user")).to_have_text(["weather in Oslo", "delete /tmp/old.log"])
    expect(tool_card(page, "get_weather")).to_contain_text('"temperature_c": 18')
    expect(chat).to_contain_text("It is 18°C and sunny in Oslo.")
    # The pending call survived the reload, and deciding it still works.
    card = tool_card(page, "delete_file")
    expect(card.locator(".badge")).to_have_text("Needs approval")
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator(".msg-agent .msg-text").last).to_have_text("Done: /tmp/old.log is deleted.")
    wait_idle(page)
    page.reload()
    expect(tool_card(page, "delete_file").locator(".badge")).to_have_text("Done")
    expect(tool_card(page, "delete_file")).to_contain_text("Approved by you")


def test_w4_deleting_a_session_removes_it(page: Any, web: Any, user_id: str) -> None:
    open_app(page, web)
    send(page, "hello there")
    expect(page.locator(".msg-agent .msg-text").last).to_have_text("You said: hello there")
    wait_idle(page)
    doomed = session_id(page)
    sessions = page.get_by_role("navigation", name="Sessions")
    row = sessions.locator(f'.session[data-session-id="{doomed}"]')

    row.get_by_role("button", name="Delete session").click()
    row.get_by_role("button", name="Delete", exact=True).click()

    expect(row).to_have_count(0)
    expect(page).to_have_url(re.compile(rf"#/apps/{APP}$"))
    assert stored_session(web, user_id, doomed)[0] == 404


def test_w4_a_failed_run_shows_its_error(page: Any, web: Any) -> None:
    open_app(page, web)
    send(page, "fail")
    expect(page.get_by_role("alert")).to_contain_text("the rule model was asked to fail")
    wait_idle(page)
    message_box(page).fill("still here?")  # the page stays usable
    message_box(page).press("Enter")
    expect(page.locator(".msg-agent .msg-text").last).to_have_text("You said: still here?")


def test_g6_a_tripped_guardrail_shows_in_the_chat_and_stays_in_the_record(
    page: Any, web: Any, user_id: str
) -> None:
    open_app(page, web)
    send(page, "tell me the launch codes")
    expect(page.get_by_role("alert")).to_contain_text("Guardrail no_launch_codes (input)")
    wait_idle(page)
    status, body = stored_session(web, user_id, session_id(page))
    assert status == 200
    last = body["events"][-1]
    assert last["errorCode"] == "GUARDRAIL_TRIPPED"
    assert last["content"]["parts"][0]["text"] == "I can't discuss that."


def test_w4_a_refused_request_shows_the_servers_detail(page: Any, web: Any, browser: Any) -> None:
    open_app(page, web)
    send(page, "delete /tmp/twice")
    card = tool_card(page, "delete_file")
    expect(card.get_by_role("button", name="Approve")).to_be_visible()
    wait_idle(page)
    # A second tab decides the call first; this tab's button is now stale.
    other = page.context.new_page()
    other.goto(page.url)
    tool_card(other, "delete_file").get_by_role("button", name="Approve", exact=True).click()
    expect(other.locator(".msg-agent .msg-text").last).to_have_text("Done: /tmp/twice is deleted.")
    other.close()

    card.get_by_role("button", name="Approve", exact=True).click()

    expect(page.locator(".msg-error")).to_contain_text("no pending call")


def test_w4_a_bearer_token_is_asked_once_and_kept(page: Any, auth_server: Any) -> None:
    page.goto(auth_server.url + "/")
    dialog = page.get_by_role("dialog", name="Bearer token")
    expect(dialog).to_be_visible()
    dialog.get_by_label("Token").fill("wrong-token")
    dialog.get_by_label("User id").fill("alice")
    dialog.get_by_role("button", name="Connect").click()
    expect(dialog.get_by_role("alert")).to_have_text("That token was not accepted.")
    dialog.get_by_label("Token").fill("alice-token-1234")
    dialog.get_by_role("button", name="Connect").click()

    expect(page).to_have_url(re.compile(rf"#/apps/{APP}$"))
    send(page, "hello")
    expect(page.locator(".msg-agent .msg-text").last).to_have_text("You said: hello")
    wait_idle(page)
    sid = session_id(page)
    assert auth_server.get(f"/apps/{APP}/users/alice/sessions/{sid}")[0] == 200

    page.reload()
    expect(page.locator(".msg-agent .msg-text").last).to_have_text("You said: hello")
    expect(page.get_by_role("dialog")).to_have_count(0)
    expect(page.get_by_role("textbox", name="User id")).to_have_value("alice")


def test_w4_with_several_apps_a_picker_lists_them(page: Any, two_apps_server: Any) -> None:
    page.goto(two_apps_server.url + "/")
    expect(page.get_by_role("heading", name="Which agent?")).to_be_visible()
    # No app on screen, nowhere for a message to go: the box takes none (it would be lost).
    expect(message_box(page)).to_be_disabled()
    page.get_by_role("link", name=re.compile("^beta")).click()
    expect(page).to_have_url(re.compile("#/apps/beta$"))
    expect(message_box(page)).to_be_enabled()
    send(page, "hello beta")
    expect(page.locator(".msg-agent .msg-text").last).to_have_text("You said: hello beta")
    expect(page).to_have_url(re.compile("#/apps/beta/sessions/"))

    page.get_by_role("combobox", name="App").select_option("alpha")

    expect(page).to_have_url(re.compile("#/apps/alpha$"))
    expect(page.get_by_role("navigation", name="Sessions").locator(".session")).to_have_count(0)


def test_w4_the_user_id_is_changeable(page: Any, web: Any, user_id: str) -> None:
    open_app(page, web)
    expect(page.get_by_role("textbox", name="User id")).to_have_value(user_id)
    send(page, "hello from the first user")
    expect(page.locator(".msg-agent .msg-text").last).to_contain_text("first user")
    wait_idle(page)
    sessions = page.get_by_role("navigation", name="Sessions").locator(".session")
    expect(sessions).to_have_count(1)

    user = page.get_by_role("textbox", name="User id")
    user.fill(user_id + "-other")
    user.press("Enter")

    expect(page).to_have_url(re.compile(rf"#/apps/{APP}$"))
    expect(sessions).to_have_count(0)
    page.reload()  # the choice is kept
    expect(page.get_by_role("textbox", name="User id")).to_have_value(user_id + "-other")
    user = page.get_by_role("textbox", name="User id")
    user.fill(user_id)
    user.press("Enter")
    expect(sessions).to_have_count(1)


def test_w4_a_streaming_tools_progress_shows_while_it_runs(page: Any, web: Any) -> None:
    open_app(page, web)
    send(page, "count to 3")
    card = tool_card(page, "count_to")
    # Progress appears while the call still runs, before its end.
    expect(page.locator('.tool-card[data-status="running"] .tool-progress li').first).to_have_text(
        "1"
    )
    expect(card.locator(".badge")).to_have_text("Done")
    expect(card.locator(".tool-progress li")).to_have_text(["1", "2", "3"])
    expect(card).to_contain_text("Progress · 3")


def test_w4_stop_cancels_the_run_and_frees_the_session(page: Any, web: Any) -> None:
    open_app(page, web)
    send(page, "count to 40")  # ten seconds of counting
    expect(tool_card(page, "count_to").locator(".badge")).to_have_text("Running")

    page.get_by_role("button", name="Stop the run").click()

    expect(page.locator(".msg-error")).to_contain_text("Stopped")
    expect(tool_card(page, "count_to").locator(".badge")).to_have_text("Interrupted")
    wait_idle(page)
    send(page, "are you there?")
    expect(page.locator(".msg-agent .msg-text").last).to_have_text("You said: are you there?")


def test_w4_a_failing_tool_shows_its_error_on_the_card(page: Any, web: Any) -> None:
    open_app(page, web)
    send(page, "weather in Atlantis")
    card = tool_card(page, "get_weather")
    expect(card.locator(".badge")).to_have_text("Error")
    expect(card.locator(".tool-error")).to_contain_text("no weather station in Atlantis")
    expect(page.locator(".msg-agent .msg-text").last).to_contain_text("I could not get the weather")
    wait_idle(page)
    page.reload()  # rebuilt from the records, the call is still an error
    expect(card.locator(".badge")).to_have_text("Error")
    expect(card.locator(".tool-error")).to_contain_text("no weather station in Atlantis")


def test_w4_a_long_running_calls_result_is_delivered_from_its_card(page: Any, web: Any) -> None:
    open_app(page, web)
    send(page, "refund order 1234")
    card = tool_card(page, "request_refund")
    expect(card.locator(".badge")).to_have_text("Needs approval")
    wait_idle(page)
    card.get_by_role("button", name="Approve", exact=True).click()  # no result typed yet
    expect(page.get_by_role("alert").filter(has_text="type it as JSON")).to_be_visible()

    card.get_by_role("textbox", name="Result").fill('{"status": "refunded"}')
    card.get_by_role("button", name="Approve", exact=True).click()

    expect(page.locator(".msg-agent .msg-text").last).to_have_text("The shop answered: refunded.")
    expect(card).to_contain_text('"status": "refunded"')
    expect(card.locator(".badge")).to_have_text("Done")
    wait_idle(page)
    page.reload()
    expect(card.locator(".badge")).to_have_text("Done")
    expect(card).to_contain_text('"status": "refunded"')


def test_w4_a_message_sent_while_a_session_opens_shows_its_answer(
    page: Any, web: Any, user_id: str
) -> None:
    """A slow server: "New session", then a message at once. The message waits for the new
    session to be on screen, goes to it, and its answer shows (it used to stream into the
    previous session's conversation object, off screen)."""
    open_app(page, web)
    send(page, "first")
    expect(page.locator(".msg-agent .msg-text").last).to_have_text("You said: first")
    wait_idle(page)
    before = session_id(page)
    page.evaluate(SLOW_SESSION_READS)

    page.get_by_role("button", name="New session").click()
    send(page, "second")

    expect(page.locator(".msg-agent .msg-text").last).to_have_text("You said: second")
    page.wait_for_function("() => window.__slowReads === 0")  # the new session has opened
    expect(page.locator(".msg-agent .msg-text")).to_have_text(["You said: second"])
    after = session_id(page)
    assert after != before
    status, stored = stored_session(web, user_id, after)
    assert status == 200
    said = [p["text"] for e in stored["events"] for p in e["content"]["parts"] if p.get("text")]
    assert said == ["second", "You said: second"]


# Every read of one session (GET .../sessions/{id}) answers 0.8 s late, as on a slow link.
SLOW_SESSION_READS = r"""() => {
  const real = window.fetch;
  window.__slowReads = 0;
  window.fetch = async (input, init) => {
    const url = String(input instanceof Request ? input.url : input);
    const read = !init || !init.method || init.method === 'GET';
    if (!read || !/\/sessions\/[^/?]+(\?|$)/.test(url)) return real(input, init);
    window.__slowReads += 1;
    try {
      const response = await real(input, init);  // read now, answer late
      await new Promise((r) => setTimeout(r, 800));
      return response;
    } finally {
      window.__slowReads -= 1;
    }
  };
}"""
