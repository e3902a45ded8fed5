"""google-adk's `/run_live` as it answers: the client that made `20-run-live.jsonl`.

`drive(base_url)` plays the scenarios below against a server whose app `live_app` is an agent
on `gemini-live-2.5-flash-preview` with an `add(a, b)` tool, its model answered by
`tests.live._gemini_fake.conversation`; it returns one JSON object per scenario: the frames the
server sent (volatile keys left out), how the socket ended, what the session stored. The test
`tests/server/test_20_live_adk_parity.py` drives rondo's server the same way and compares.

To capture afresh (google-adk 2.13.0 in RONDO_ADK_PYTHON's environment):

    .venv/bin/python tests/server/adk_capture/run_live_capture.py
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

import httpx
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

__all__ = ["APP", "CAPTURE", "VOLATILE", "drive"]

APP = "live_app"
CAPTURE = Path(__file__).with_name("20-run-live.jsonl")
# Keys that differ from run to run (or name the model version): left out of the frames.
VOLATILE = ("id", "timestamp", "invocationId")
WAIT = 0.5  # how long a socket must stay quiet to count as "still open"
TURN = 15.0


def _frames_until(ws: ClientConnection, stop: Callable[[dict[str, Any]], bool]) -> list[Any]:
    frames: list[Any] = []
    deadline = time.monotonic() + TURN
    while time.monotonic() < deadline:
        frame = json.loads(ws.recv(timeout=deadline - time.monotonic()))
        frames.append({k: v for k, v in frame.items() if k not in VOLATILE})
        if stop(frame):
            return frames
    raise TimeoutError(f"no end of turn in {TURN} s: {frames}")


def _ending(ws: ClientConnection, wait: float = WAIT) -> str:
    """How the socket ends within `wait` seconds: a close code, or "open"."""
    try:
        frame = ws.recv(timeout=wait)
    except TimeoutError:
        return "open"
    except ConnectionClosed as closed:
        return f"closed {closed.rcvd.code if closed.rcvd else 'abnormally'}"
    return f"frame {frame[:200]}"


def _stored(base: str, session_id: str) -> list[Any]:
    session = httpx.get(f"{base}/apps/{APP}/users/u/sessions/{session_id}").json()
    return [{k: v for k, v in e.items() if k not in VOLATILE} for e in session["events"]]


def _text(text: str) -> str:
    return json.dumps({"content": {"role": "user", "parts": [{"text": text}]}})


def _turn_ends_with(text: str) -> Callable[[dict[str, Any]], bool]:
    seen: list[bool] = []

    def stop(frame: dict[str, Any]) -> bool:
        parts = (frame.get("content") or {}).get("parts") or []
        if not frame.get("partial") and any(p.get("text") == text for p in parts):
            seen.append(True)
        return bool(seen) and bool(frame.get("turnComplete"))

    return stop


def _is_turn_complete(frame: dict[str, Any]) -> bool:
    return bool(frame.get("turnComplete"))


def drive(base: str) -> list[dict[str, Any]]:
    """Play every scenario against the server at `base`; one result per scenario."""
    ws_base = "ws" + base.removeprefix("http") + "/run_live?app_name=" + APP

    def url(session_id: str, modalities: str = "TEXT") -> str:
        return f"{ws_base}&user_id=u&session_id={session_id}&modalities={modalities}"

    def new_session(session_id: str) -> None:
        httpx.post(f"{base}/apps/{APP}/users/u/sessions/{session_id}", json={}).raise_for_status()

    out: list[dict[str, Any]] = []
    with connect(url("nope")) as ws:
        with suppress(ConnectionClosed):  # the server may have closed it already
            ws.send(_text("hi"))
        out.append({"scenario": "unknown session", "end": _ending(ws, TURN)})
    for name, query in (
        ("no user_id", f"{ws_base}&session_id=s"),
        ("bad modality", f"{ws_base}&user_id=u&session_id=s&modalities=SMELL"),
    ):
        try:
            with connect(query) as ws:
                out.append({"scenario": name, "end": _ending(ws, TURN)})
        except InvalidStatus as refused:
            out.append({"scenario": name, "end": f"refused {refused.response.status_code}"})

    new_session("s1")
    with connect(url("s1")) as ws:
        ws.send(_text("hi"))
        out.append({"scenario": "text turn", "frames": _frames_until(ws, _is_turn_complete)})
        ws.send(_text("add"))
        frames = _frames_until(ws, _turn_ends_with("It is 5."))
        out.append({"scenario": "tool call", "frames": frames})
        ws.send(json.dumps({"close": True}))
        out.append({"scenario": "after close", "end": _ending(ws)})
    out.append({"scenario": "stored text and tool", "events": _stored(base, "s1")})

    new_session("s2")
    with connect(url("s2", "AUDIO")) as ws:
        pcm = base64.b64encode(bytes(3200)).decode()
        for _ in range(2):
            ws.send(json.dumps({"blob": {"mimeType": "audio/pcm;rate=16000", "data": pcm}}))
        ws.send(json.dumps({"audio_stream_end": True}))
        out.append({"scenario": "audio turn", "frames": _frames_until(ws, _is_turn_complete)})
        ws.send(json.dumps({"close": True}))
    out.append({"scenario": "stored audio", "events": _stored(base, "s2")})

    new_session("s3")
    with connect(url("s3")) as ws:
        ws.send("this is not json")
        out.append({"scenario": "a frame that is not a LiveRequest", "end": _ending(ws)})

    for session_id, text, scenario in (("s4", "boom", "model fails"), ("s5", "bye", "model ends")):
        new_session(session_id)
        with connect(url(session_id)) as ws:
            ws.send(_text(text))
            out.append({"scenario": scenario, "end": _ending(ws, 1.0)})
    return out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_ADK_AGENT = '''
from google.adk.agents import Agent

def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b

root_agent = Agent(name="bot", model="gemini-live-2.5-flash-preview", instruction="Be brief.",
                   tools=[add])
'''


def main() -> None:
    """Capture google-adk's answers into `20-run-live.jsonl`."""
    sys.path.insert(0, str(Path(__file__).parents[3]))
    from tests.live._gemini_fake import self_signed, serve_conversation

    python = os.environ.get("RONDO_ADK_PYTHON", "bench/.venvs/adk/bin/python")
    adk = str(Path(python).with_name("adk"))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cert, key = self_signed(folder)
        app = folder / "agents" / APP
        app.mkdir(parents=True)
        (app / "__init__.py").write_text("from . import agent\n")
        (app / "agent.py").write_text(_ADK_AGENT)
        with serve_conversation(cert, key) as gemini:
            env = {**os.environ, "SSL_CERT_FILE": str(cert), "GOOGLE_API_KEY": "k"}
            env["GOOGLE_GEMINI_BASE_URL"] = gemini
            env.pop("GOOGLE_GENAI_USE_VERTEXAI", None)
            port = _free_port()
            server = subprocess.Popen(
                [adk, "api_server", "--host", "127.0.0.1", "--port", str(port), app.parent],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                base = f"http://127.0.0.1:{port}"
                for _ in range(120):
                    try:
                        httpx.get(f"{base}/list-apps").raise_for_status()
                        break
                    except httpx.HTTPError:
                        time.sleep(0.5)
                results = drive(base)
            finally:
                server.kill()  # it may wait on live sockets to drain for a long time
                server.wait(10)
    lines = [json.dumps(r, sort_keys=True) for r in results]
    CAPTURE.write_text("\n".join(lines) + "\n")
    print(f"wrote {CAPTURE} ({len(lines)} scenarios)")


if __name__ == "__main__":
    main()
