"""Issue 20 item 5: the web UI's microphone button — headless Chromium with a fake microphone
(a WAV tone) talks to the `talk` app (a `ScriptedLiveModel` that answers speech as a voice
model does) over `/run_live_lifecycle`, with `--auth-tokens`: the token goes as the
`rondo.bearer.<token>` subprotocol. The live transcript — the user's words, then the model's —
and the card of the tool called during the call appear in the conversation."""

from __future__ import annotations

import json
import math
import shutil
import struct
import wave
from pathlib import Path

import httpx

from tests._garbage import collect_earlier_garbage
from tests._require import require, require_module
from tests.browser.conftest import CHROMIUM_ARGS, _chromium, _start, _stop

sync_api = require_module("playwright.sync_api", what="BROWSER", install="pip install playwright")
TALK = Path(__file__).parents[1] / "server" / "apps" / "talk"


def _tone(path: Path, seconds: float = 3.0, rate: int = 48_000) -> None:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        frames = (
            int(8000 * math.sin(2 * math.pi * 440 * i / rate)) for i in range(int(seconds * rate))
        )
        out.writeframes(b"".join(struct.pack("<h", f) for f in frames))


def test_20_live_mic_streams_the_microphone_and_shows_the_answer(tmp_path: Path) -> None:
    # Its own Chromium (not the `browser` fixture): the fake microphone is a launch flag.
    collect_earlier_garbage()
    require_module("fastapi", what="BROWSER", install="pip install 'rondo-agents[server]'")
    chromium = _chromium()
    require(chromium, what="BROWSER", reason="Chromium not found (apt-get install chromium)")
    agents = tmp_path / "agents"
    shutil.copytree(TALK, agents / "talk", ignore=shutil.ignore_patterns("__pycache__"))
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"tok-alice": "alice"}))
    wav = tmp_path / "tone.wav"
    _tone(wav)
    server = _start(tmp_path, "--auth-tokens", str(tokens), agents_dir=agents, token="tok-alice")
    try:
        answer = httpx.post(
            f"{server.url}/apps/talk/users/alice/sessions/m1",
            json={},
            headers={"Authorization": "Bearer tok-alice"},
        )
        assert answer.status_code == 200, answer.text
        with sync_api.sync_playwright() as playwright:
            launched = playwright.chromium.launch(
                executable_path=chromium,
                args=[
                    *CHROMIUM_ARGS,
                    "--use-fake-ui-for-media-stream",
                    "--use-fake-device-for-media-stream",
                    f"--use-file-for-fake-audio-capture={wav}",
                ],
            )
            try:
                context = launched.new_context(permissions=["microphone"])
                context.add_init_script(
                    "localStorage.setItem('rondo.user', 'alice');"
                    "localStorage.setItem('rondo.token', 'tok-alice');"
                )
                page = context.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda exc: errors.append(str(exc)))
                page.goto(server.url + "/#/apps/talk/sessions/m1")
                talk = page.get_by_role("button", name="Talk")
                talk.click()
                stop = page.get_by_role("button", name="Stop talking")
                sync_api.expect(stop).to_be_visible()
                page.wait_for_timeout(1500)  # 1.5 s of the tone reaches the model
                stop.click()
                # The user's words, as the provider transcribed them.
                heard = page.locator(".msg-user", has_text="what is the weather in Oslo")
                sync_api.expect(heard).to_be_visible(timeout=20_000)
                # The tool the model called during the call, as a card with its result.
                card = page.locator(
                    ".tool-card", has=page.locator(".tool-name", has_text="weather")
                )
                sync_api.expect(card).to_be_visible()
                sync_api.expect(card).to_have_attribute("data-status", "done")
                sync_api.expect(card).to_contain_text("clear")
                # The model's spoken answer, as its output transcription.
                answer = page.locator(".msg-agent .msg-text", has_text="It is clear. I heard ")
                sync_api.expect(answer).to_be_visible()
                heard_bytes = int(answer.inner_text().split()[-2])
                # Whole 100 ms chunks of 16 kHz PCM16 (3200 bytes each), at least one.
                assert heard_bytes >= 3200
                assert heard_bytes % 3200 == 0
                # In the conversation's order: the words, the tool, the answer.
                boxes = [heard.bounding_box(), card.bounding_box(), answer.bounding_box()]
                tops = [box["y"] for box in boxes if box is not None]
                assert len(tops) == 3
                assert tops == sorted(tops)
                assert not errors, errors
            finally:
                launched.close()
    finally:
        _stop(server)
