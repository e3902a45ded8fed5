"""Issue 22 item 5 in rondo's web UI: files in the composer — a real `rondo web`, headless
Chromium.

A file comes in by the file picker, by a drop on the chat or by a paste into the message box;
it waits in a tray as a thumbnail (an image) or a chip (another file), each with a remove
button. Sent, the message carries the files as inline data through `/run_lifecycle` with
`saveInputBlobsAsArtifacts`: the model receives them (the test assistant names each file it
got), they become the session's artifacts (the inspector's Artifacts tab lists them), and the
conversation shows them, again after a reload (the image read back from its artifact). A file
too large (413) or of a type the model cannot take (415) is not sent, and the page says so in
the server's words.
"""

from __future__ import annotations

import base64
import re
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from rondo.server.files import MAX_FILE_BYTES
from tests._require import require_module
from tests.browser.test_w4_web_ui import (
    APP,
    message_box,
    open_app,
    session_id,
    stored_session,
    wait_idle,
)

sync_api = require_module("playwright.sync_api", what="BROWSER", install="pip install playwright")
expect = sync_api.expect
expect.set_options(timeout=20_000)


def _png(width: int, height: int) -> bytes:
    """A small RGB gradient as a PNG: a real image the browser draws as a thumbnail."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(
        b"\x00" + b"".join(bytes((x * 255 // width, y * 255 // height, 160)) for x in range(width))
        for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


DOT = _png(96, 64)
NOTES = b"milk, eggs, bread\n"

# Builds a DataTransfer holding one file, in the page.
_TRANSFER = """([name, type, text, size]) => {
  const transfer = new DataTransfer();
  const body = size ? new Uint8Array(size) : text;
  transfer.items.add(new File([body], name, { type }));
  return transfer;
}"""


def _user(page: Any) -> str:
    return page.evaluate("localStorage.getItem('rondo.user')")


def _tray(page: Any) -> Any:
    return page.locator(".composer-files")


def _pick(page: Any, name: str, mime: str, data: bytes) -> None:
    """Choose a file with the composer's picker (the paperclip opens the file chooser)."""
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Attach files").click()
    chooser.value.set_files([{"name": name, "mimeType": mime, "buffer": data}])


def _drop(page: Any, name: str, mime: str, text: str = "", size: int = 0) -> None:
    """Drag a file over the chat and drop it there."""
    transfer = page.evaluate_handle(_TRANSFER, [name, mime, text, size])
    chat = page.locator("main.chat")
    for kind in ("dragenter", "dragover"):
        chat.dispatch_event(kind, {"dataTransfer": transfer})
    expect(chat).to_have_class(re.compile("is-dropping"))  # the drop target is shown
    chat.dispatch_event("drop", {"dataTransfer": transfer})


def _paste(page: Any, name: str, mime: str, text: str) -> None:
    transfer = page.evaluate_handle(_TRANSFER, [name, mime, text, 0])
    message_box(page).evaluate(
        "(box, transfer) => box.dispatchEvent(new ClipboardEvent('paste', "
        "{clipboardData: transfer, bubbles: true, cancelable: true}))",
        transfer,
    )


def _drawn(img: Any) -> None:
    """The browser decoded the image (a bad data URL leaves it 0 wide)."""
    expect(img).to_have_js_property("complete", True)
    assert img.evaluate("(el) => el.naturalWidth") == 96


def _shot(page: Any, path: Path) -> None:
    page.screenshot(path=str(path))
    assert path.stat().st_size > 10_000


def test_22_web_ui_files_by_picker_drop_and_paste_reach_the_model_and_the_artifacts(
    page: Any, web: Any
) -> None:
    open_app(page, web)
    _pick(page, "dot.png", "image/png", DOT)
    _drop(page, "notes.txt", "text/plain", NOTES.decode())
    _paste(page, "pasted.txt", "text/plain", "a pasted file")
    tray = _tray(page)
    expect(tray.locator(".file-thumb img")).to_have_attribute("src", re.compile("^blob:"))
    _drawn(tray.locator(".file-thumb img"))
    expect(tray.locator(".file-chip .file-chip-name")).to_have_text(["notes.txt", "pasted.txt"])
    expect(page.locator("main.chat")).not_to_have_class(re.compile("is-dropping"))
    # Removed before sending: it never leaves the page.
    tray.get_by_role("button", name="Remove pasted.txt").click()
    expect(tray.locator("[data-file]")).to_have_count(2)

    message_box(page).fill("look")
    message_box(page).press("Enter")

    answer = page.locator(".msg-agent .msg-text").last
    expect(answer).to_have_text(
        f"You said: look and sent dot.png (image/png, {len(DOT)} bytes), "
        f"notes.txt (text/plain, {len(NOTES)} bytes)"
    )
    wait_idle(page)
    expect(tray).to_be_hidden()  # the tray went with the message
    bubble = page.locator(".msg-user").last
    expect(bubble.locator(".file-thumb img")).to_have_attribute("alt", "dot.png")
    expect(bubble.locator(".file-chip-name")).to_have_text("notes.txt")
    expect(bubble.locator(".msg-text")).to_have_text("look")

    # The files are the session's artifacts, and the stored message refers to them.
    user, sid = _user(page), session_id(page)
    status, names = web.get(f"/apps/{APP}/users/{user}/sessions/{sid}/artifacts")
    assert status == 200
    assert sorted(names) == ["dot.png", "notes.txt"]
    status, stored = stored_session(web, user, sid)
    assert status == 200
    said = next(e for e in stored["events"] if e["author"] == "user")
    refs = [p["fileData"]["fileUri"] for p in said["content"]["parts"] if "fileData" in p]
    assert refs == ["artifact://dot.png?version=0", "artifact://notes.txt?version=0"]
    assert not any("inlineData" in p for p in said["content"]["parts"])
    page.get_by_role("tab", name=re.compile("Artifacts")).click()
    artifacts = page.locator(".inspector .artifact")
    expect(artifacts).to_have_text(["dot.png", "notes.txt"])
    artifacts.first.click()
    expect(page.locator(".inspector .artifact-image")).to_have_attribute("alt", "dot.png")
    _drawn(page.locator(".inspector .artifact-image"))

    # After a reload the conversation shows the files again, the image read from its artifact.
    page.reload()
    bubble = page.locator(".msg-user").last
    thumb = bubble.locator(".file-thumb img")
    expect(thumb).to_have_attribute(
        "src", "data:image/png;base64," + base64.b64encode(DOT).decode()
    )
    _drawn(thumb)
    expect(bubble.locator(".file-chip-name")).to_have_text("notes.txt")
    expect(page.locator(".msg-agent .msg-text").last).to_contain_text("and sent dot.png")


def test_22_web_ui_a_message_of_files_only_is_sent_and_retried_with_its_files(
    page: Any, web: Any
) -> None:
    open_app(page, web)
    _pick(page, "dot.png", "image/png", DOT)
    page.get_by_role("button", name="Send", exact=True).click()
    answered = f"You sent dot.png (image/png, {len(DOT)} bytes)"
    expect(page.locator(".msg-agent .msg-text").last).to_have_text(answered)
    expect(page.locator(".msg-user .msg-text").last).to_be_hidden()  # no empty text line
    expect(page.locator(".chat-title-text")).to_have_text("dot.png")
    wait_idle(page)
    # Retry after a reload: the file is read back from its artifact and sent again.
    page.reload()
    page.locator(".msg-box-agent").last.get_by_role("button", name="Retry").click()
    expect(page.locator(".msg-agent .msg-text")).to_have_text([answered])
    wait_idle(page)
    expect(page.locator(".msg-user")).to_have_count(1)
    _drawn(page.locator(".msg-user .file-thumb img"))
    user, sid = _user(page), session_id(page)
    status, stored = stored_session(web, user, sid)
    assert status == 200
    (said,) = [e for e in stored["events"] if e["author"] == "user"]
    (ref,) = [p["fileData"]["fileUri"] for p in said["content"]["parts"]]
    assert ref.startswith("artifact://dot.png?version=")


def test_22_web_ui_files_still_reach_the_model_after_an_approval(page: Any, web: Any) -> None:
    """A confirmation's decision resumes the run on the pending route: the model still gets
    the conversation's files (read from their artifacts), not bare references."""
    open_app(page, web)
    _pick(page, "dot.png", "image/png", DOT)
    message_box(page).fill("delete /tmp/old.png")
    message_box(page).press("Enter")
    card = page.locator('.tool-card[data-tool="delete_file"]')
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator(".msg-agent .msg-text").last).to_have_text(
        "Done: /tmp/old.png is deleted. I still see dot.png."
    )


def test_22_web_ui_refused_files_say_why_and_are_not_sent(page: Any, web: Any) -> None:
    open_app(page, web)
    _drop(page, "huge.png", "image/png", size=MAX_FILE_BYTES + 1)
    message_box(page).fill("too big")
    message_box(page).press("Enter")
    alert = page.locator(".chat-list").get_by_role("alert").last
    expect(alert).to_contain_text("Not sent: huge.png is")
    expect(alert).to_contain_text(f"a file may have at most {MAX_FILE_BYTES} bytes")
    wait_idle(page)

    _pick(page, "setup.exe", "application/x-msdownload", b"MZ")
    message_box(page).fill("run this")
    message_box(page).press("Enter")
    alert = page.locator(".chat-list").get_by_role("alert").last
    expect(alert).to_contain_text(
        "Not sent: the app's model does not take application/x-msdownload files"
    )
    wait_idle(page)
    # Nothing of either reached the session; the next message runs as usual.
    user, sid = _user(page), session_id(page)
    status, stored = stored_session(web, user, sid)
    assert status == 200
    assert stored["events"] == []
    status, names = web.get(f"/apps/{APP}/users/{user}/sessions/{sid}/artifacts")
    assert (status, names) == (200, [])
    message_box(page).fill("hello")
    message_box(page).press("Enter")
    expect(page.locator(".msg-agent .msg-text").last).to_have_text("You said: hello")


@pytest.mark.parametrize("width", [390, 1280])
def test_22_web_ui_files_fit_the_layout(
    browser: Any, web: Any, user_id: str, width: int, tmp_path: Path
) -> None:
    """The tray and a message's files stay inside the window on a phone and a laptop
    (the screenshots are kept in the test's tmp_path to look at)."""
    context = browser.new_context(viewport={"width": width, "height": 844 if width == 390 else 900})
    context.add_init_script(f"localStorage.setItem('rondo.user', '{user_id}-{width}')")
    page = context.new_page()
    try:
        open_app(page, web)
        _pick(page, "dot.png", "image/png", DOT)
        _drop(
            page,
            "a-rather-long-file-name-for-the-quarterly-report.pdf",
            "application/pdf",
            size=1200,
        )
        expect(_tray(page).locator("[data-file]")).to_have_count(2)
        message_box(page).fill("What is in these?")
        _shot(page, tmp_path / f"files-tray-{width}.png")
        inside = """() => [...document.querySelectorAll('.composer-files [data-file], .composer-box > *, .msg-files [data-file]')]
          .filter((el) => el.getBoundingClientRect().width > 0)
          .filter((el) => { const b = el.getBoundingClientRect(); return b.left < -1 || b.right > innerWidth + 1; })
          .map((el) => el.className)"""
        assert page.evaluate(inside) == []
        message_box(page).press("Enter")
        expect(page.locator(".msg-agent .msg-text").last).to_contain_text("and sent dot.png")
        wait_idle(page)
        _shot(page, tmp_path / f"files-sent-{width}.png")
        assert page.evaluate(inside) == []
        root = "document.scrollingElement.scrollWidth <= document.scrollingElement.clientWidth + 1"
        assert page.evaluate(root)
    finally:
        context.close()
