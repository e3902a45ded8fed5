"""Issue 20 item 5: the web UI's microphone button — headless Chromium with a fake microphone
(a WAV tone) talks to the `talk` app (a `ScriptedLiveModel`) over `/run_live_lifecycle`, with
`--auth-tokens`: the token goes as the `rondo.bearer.<token>` subprotocol, and the answer to
the audio appears in the conversation."""

from __future__ import annotations

import json
import math
import shutil
import struct
import wave
from pathlib import Path

import httpx

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
                # The model answers the audio it was sent (after Stop's audioStreamEnd).
                sync_api.expect(page.get_by_text("heard ")).to_be_visible(timeout=20_000)
                heard = page.get_by_text("heard ").first.inner_text()
                heard_bytes = int(heard.split()[1])
                # Whole 100 ms chunks of 16 kHz PCM16 (3200 bytes each), at least one.
                assert heard_bytes >= 3200
                assert heard_bytes % 3200 == 0
                assert not errors, errors
            finally:
                launched.close()
    finally:
        _stop(server)
