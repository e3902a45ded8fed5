"""Issue 20 item 5: live calls served over WebSockets — google-adk's `/run_live` (its query
parameters, LiveRequest JSON in, Event JSON out, its close codes) and rondo's
`/run_live_lifecycle` — against a real uvicorn server, with a real WebSocket client and the
`talk` app (a `ScriptedLiveModel`)."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from rondo.server.timeouts import ServerTimeouts, uvicorn_options
from tests._require import require_module
from tests.server._live import APPS, serve

websockets_sync = require_module(
    "websockets.sync.client", what="SERVER", install="pip install 'rondo-agents[server]'"
)
from websockets.exceptions import ConnectionClosed, InvalidStatus  # noqa: E402

pytestmark = pytest.mark.integration

TIMEOUT = 30


@contextmanager
def server(**options: Any) -> Iterator[tuple[str, Any]]:
    from rondo.server import create_app

    options.setdefault("db", "memory")
    options.setdefault("loopback_only", True)
    app = create_app(APPS, **options)
    # The HTTP protocol `rondo api-server` runs (its writes batched; an upgrade leaves them).
    with serve(app, **uvicorn_options(ServerTimeouts())) as url:
        yield url, app


def new_session(url: str, session_id: str, user: str = "u", token: str | None = None) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    answer = httpx.post(
        f"{url}/apps/talk/users/{user}/sessions/{session_id}", json={}, headers=headers
    )
    assert answer.status_code == 200, answer.text


def ws_url(url: str, path: str = "/run_live", **params: Any) -> str:
    query = urlencode(params, doseq=True)
    return "ws" + url.removeprefix("http") + path + "?" + query


def until(ws: Any, done: Any) -> list[dict[str, Any]]:
    """Frames until one satisfies `done` (that one included)."""
    frames: list[dict[str, Any]] = []
    while True:
        frame = json.loads(ws.recv(timeout=TIMEOUT))
        frames.append(frame)
        if done(frame):
            return frames


def final_text(text: str) -> Any:
    def check(frame: dict[str, Any]) -> bool:
        parts = (frame.get("content") or {}).get("parts") or []
        return not frame.get("partial") and any(p.get("text") == text for p in parts)

    return check


def text_turn(text: str) -> str:
    return json.dumps({"content": {"role": "user", "parts": [{"text": text}]}})


def quiet(ws: Any, seconds: float = 0.3) -> bool:
    """Whether the socket stays open and silent for `seconds`."""
    try:
        ws.recv(timeout=seconds)
    except TimeoutError:
        return True
    except ConnectionClosed:
        return False
    return False


def refusal(url: str) -> tuple[int, str]:
    """The status and body of a refused handshake."""
    with pytest.raises(InvalidStatus) as refused:
        websockets_sync.connect(url)
    response = refused.value.response
    return response.status_code, response.body.decode() if response.body else ""


def close_of(ws: Any) -> tuple[int, str]:
    with pytest.raises(ConnectionClosed):  # noqa: PT012 - read up to the close frame
        while True:
            ws.recv(timeout=TIMEOUT)
    assert ws.close_code is not None
    return ws.close_code, ws.close_reason or ""


def test_20_run_live_adk_text_turns_events_and_records() -> None:
    with server() as (url, _):
        new_session(url, "s1")
        target = ws_url(url, app_name="talk", user_id="u", session_id="s1", modalities="TEXT")
        with websockets_sync.connect(target) as ws:
            ws.send(text_turn("hi"))
            frames = until(ws, final_text("you said: hi"))
            ws.send(text_turn("again"))
            frames += until(ws, final_text("you said: again"))
            frames += until(ws, lambda f: bool(f.get("turnComplete")))
            ws.send(json.dumps({"close": True}))
            # As google-adk: the call ends, the socket is left for the client to close ...
            assert quiet(ws)
            # ... and the session is free for the next call at once.
            with websockets_sync.connect(target) as next_call:
                next_call.send(text_turn("next"))
                until(next_call, final_text("you said: next"))
        # ADK's Event JSON: camelCase keys, the agent as author, partials streamed too.
        last = frames[-1]
        assert last["author"] == "talker"
        assert "invocationId" in last
        assert "timestamp" in last
        assert any(f.get("partial") for f in frames)
        session = httpx.get(f"{url}/apps/talk/users/u/sessions/s1").json()
        texts = [
            (e["author"], p["text"])
            for e in session["events"]
            for p in (e.get("content") or {}).get("parts", [])
            if p.get("text")
        ]
        assert texts == [
            ("user", "hi"),
            ("talker", "you said: hi"),
            ("user", "again"),
            ("talker", "you said: again"),
            ("user", "next"),
            ("talker", "you said: next"),
        ]


def test_20_run_live_adk_tool_call_goes_through_the_tool_path() -> None:
    with server() as (url, _):
        new_session(url, "s2")
        target = ws_url(url, app_name="talk", user_id="u", session_id="s2", modalities="TEXT")
        with websockets_sync.connect(target) as ws:
            ws.send(text_turn("what is the weather?"))
            frames = until(ws, final_text("it is clear"))
        parts = [p for f in frames for p in (f.get("content") or {}).get("parts", [])]
        calls = [p["functionCall"] for p in parts if "functionCall" in p]
        answers = [p["functionResponse"] for p in parts if "functionResponse" in p]
        assert calls[0]["name"] == "weather"
        assert calls[0]["args"] == {"city": "Oslo"}
        assert answers[0]["response"] == {"city": "Oslo", "sky": "clear"}


def test_20_run_live_adk_audio_blobs_and_activity_signals() -> None:
    pcm = bytes(3200)  # 100 ms of 16 kHz 16-bit silence
    blob = {"mimeType": "audio/pcm;rate=16000", "data": base64.b64encode(pcm).decode()}
    with server() as (url, _):
        new_session(url, "s3")
        target = ws_url(
            url, app_name="talk", user_id="u", session_id="s3", explicit_vad_signal="true"
        )
        with websockets_sync.connect(target) as ws:
            ws.send(json.dumps({"activity_start": {}}))
            ws.send(json.dumps({"blob": blob}))
            ws.send(json.dumps({"blob": blob}))
            ws.send(json.dumps({"activity_end": {}}))
            frames = until(ws, final_text("It is clear. I heard 6400 bytes."))
            frames += until(ws, lambda f: bool(f.get("turnComplete")))
        heard = [f["inputTranscription"] for f in frames if "inputTranscription" in f]
        assert heard[-1] == {"text": "what is the weather in Oslo", "finished": True}
        said = [p for f in frames for p in (f.get("content") or {}).get("parts", [])]
        assert any("inlineData" in p for p in said)


def test_20_run_live_adk_extra_run_config_options_reach_the_model() -> None:
    with server() as (url, app):
        new_session(url, "s4")
        target = ws_url(
            url,
            app_name="talk",
            user_id="u",
            session_id="s4",
            modalities=["TEXT", "AUDIO"],
            input_audio_transcription="false",
            speech_config=json.dumps(
                {"voice_config": {"prebuilt_voice_config": {"voice_name": "Puck"}}}
            ),
            session_resumption_handle="h-1",
            enable_session_resumption="true",
            explicit_vad_signal="true",
        )
        with websockets_sync.connect(target) as ws:
            ws.send(text_turn("hi"))
            until(ws, final_text("you said: hi"))
        runner = app.state.rondo.apps._runners["talk"]
        config = runner.agent.model.connects[-1][1]
        assert config.response_modalities == ("TEXT", "AUDIO")
        assert config.input_audio_transcription is False
        assert config.output_audio_transcription is True
        assert config.speech_config["voice_config"]["prebuilt_voice_config"]["voice_name"] == "Puck"
        assert config.resumption_handle == "h-1"
        assert config.transparent_resumption is True
        assert config.realtime_input_config == {"automatic_activity_detection": {"disabled": True}}


def test_20_run_live_adk_unknown_session_closes_1002() -> None:
    with server() as (url, _):
        target = ws_url(url, app_name="talk", user_id="u", session_id="nope")
        with websockets_sync.connect(target) as ws:
            assert close_of(ws) == (1002, "Session not found")


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"app_name": "talk", "session_id": "s"}, "user_id"),
        (
            {"app_name": "talk", "user_id": "u", "session_id": "s", "modalities": "SMELL"},
            "modalities",
        ),
        (
            {"app_name": "talk", "user_id": "u", "session_id": "s", "save_live_blob": "maybe"},
            "save_live_blob",
        ),
        (
            {"app_name": "talk", "user_id": "u", "session_id": "s", "speech_config": "{"},
            "speech_config",
        ),
        (
            {"app_name": "talk", "user_id": "u", "session_id": "s", "proactive_audio": "true"},
            "proactive_audio",
        ),
    ],
)
def test_20_run_live_bad_params_refuse_the_handshake_as_google_adk(
    params: dict[str, str], needle: str
) -> None:
    """google-adk's route validates its query before the handshake (HTTP 403); rondo too,
    and says the problem in the body."""
    with server() as (url, _):
        for path in ("/run_live", "/run_live_lifecycle"):
            status, body = refusal(ws_url(url, path, **params))
            assert status == 403
            assert needle in body, body


def test_20_run_live_unknown_app_closes_1008_with_the_problem() -> None:
    with server() as (url, _):
        target = ws_url(url, app_name="no_such_app", user_id="u", session_id="s")
        with websockets_sync.connect(target) as ws:
            code, reason = close_of(ws)
        assert code == 1008
        assert "no_such_app" in reason


def test_20_a_frame_that_is_not_a_live_request_is_dropped_on_run_live_closes_1007_on_ours() -> None:
    with server() as (url, _):
        new_session(url, "s5")
        params = {"app_name": "talk", "user_id": "u", "session_id": "s5", "modalities": "TEXT"}
        with websockets_sync.connect(ws_url(url, **params)) as ws:
            ws.send("{not json")
            assert quiet(ws)  # as google-adk: logged, not answered, the socket kept
            ws.send(text_turn("still there?"))
            until(ws, final_text("you said: still there?"))
        with websockets_sync.connect(ws_url(url, "/run_live_lifecycle", **params)) as ws:
            ws.send("{not json")
            code, reason = close_of(ws)
        assert code == 1007
        assert "LiveRequest" in reason


def test_20_run_live_needs_the_token_of_the_path_user() -> None:
    tokens = {"tok-u": "u", "tok-v": "v"}
    with server(auth_tokens=tokens) as (url, _):
        new_session(url, "s6", token="tok-u")
        target = ws_url(url, app_name="talk", user_id="u", session_id="s6", modalities="TEXT")
        with pytest.raises(InvalidStatus) as refused:
            websockets_sync.connect(target)
        assert refused.value.response.status_code == 403
        with pytest.raises(InvalidStatus) as refused:
            websockets_sync.connect(target, additional_headers={"Authorization": "Bearer tok-v"})
        assert refused.value.response.status_code == 403
        assert b"another user" in refused.value.response.body
        with websockets_sync.connect(
            target, additional_headers={"Authorization": "Bearer tok-u"}
        ) as ws:
            ws.send(text_turn("hi"))
            until(ws, final_text("you said: hi"))


def test_20_run_live_takes_a_browser_token_as_subprotocol_or_query() -> None:
    """Browsers cannot set Authorization on a WebSocket: the token comes as a
    `rondo.bearer.<token>` subprotocol (echoed back) or `?access_token=`, same rules."""
    tokens = {"tok-u": "u", "tok-v": "v"}
    with server(auth_tokens=tokens) as (url, _):
        new_session(url, "s8", token="tok-u")
        params = {"app_name": "talk", "user_id": "u", "session_id": "s8", "modalities": "TEXT"}
        target = ws_url(url, **params)
        # The right token as a subprotocol: accepted, and that subprotocol is the chosen one.
        with websockets_sync.connect(target, subprotocols=["rondo.bearer.tok-u"]) as ws:  # type: ignore[list-item]
            assert ws.subprotocol == "rondo.bearer.tok-u"
            ws.send(text_turn("hi"))
            until(ws, final_text("you said: hi"))
        # A wrong token, either way: the handshake is refused.
        with pytest.raises(InvalidStatus) as refused:
            websockets_sync.connect(target, subprotocols=["rondo.bearer.nope"])  # type: ignore[list-item]
        assert refused.value.response.status_code == 403
        with pytest.raises(InvalidStatus) as refused:
            websockets_sync.connect(ws_url(url, **params, access_token="nope"))
        assert refused.value.response.status_code == 403
        # Another user's token: the handshake is refused too, saying why.
        with pytest.raises(InvalidStatus) as refused:
            websockets_sync.connect(target, subprotocols=["rondo.bearer.tok-v"])  # type: ignore[list-item]
        assert b"another user" in refused.value.response.body
        assert refusal(ws_url(url, **params, access_token="tok-v"))[0] == 403
        # The right token in the query: accepted, and not taken for a live parameter.
        with websockets_sync.connect(ws_url(url, **params, access_token="tok-u")) as ws:
            ws.send(text_turn("yo"))
            until(ws, final_text("you said: yo"))


def test_20_run_live_refuses_a_foreign_origin() -> None:
    with server() as (url, _):
        new_session(url, "s7")
        target = ws_url(url, app_name="talk", user_id="u", session_id="s7")
        with pytest.raises(InvalidStatus):
            websockets_sync.connect(target, origin="http://evil.example")


def test_20_run_live_lifecycle_sends_lifecycle_events_as_json_frames() -> None:
    with server() as (url, _):
        new_session(url, "s8")
        target = ws_url(
            url,
            "/run_live_lifecycle",
            app_name="talk",
            user_id="u",
            session_id="s8",
            modalities="TEXT",
        )
        with websockets_sync.connect(target) as ws:
            ws.send(text_turn("what is the weather?"))
            frames = until(
                ws,
                lambda f: f["type"] == "reason_end" and "it is clear" in json.dumps(f),
            )
            ws.send(json.dumps({"close": True}))
            while frames[-1]["type"] != "run_end":
                frames.append(json.loads(ws.recv(timeout=TIMEOUT)))
            assert close_of(ws)[0] == 1000
        types = [f["type"] for f in frames]
        assert types[0] == "run_start"
        assert types[-1] == "run_end"
        assert "tool_call_start" in types
        assert "tool_call_end" in types
        assert types.index("tool_call_start") < types.index("tool_call_end")
        assert frames[-1]["error"] is None


ADK_CLIENT = """
import json, sys
from google.adk.agents.live_request_queue import LiveRequest
from google.adk.events.event import Event
from google.genai import types
from websockets.sync.client import connect

texts = []
with connect(sys.argv[1]) as ws:
    turn = types.Content(role="user", parts=[types.Part(text="what is the weather?")])
    ws.send(LiveRequest(content=turn).model_dump_json())
    while "it is clear" not in texts:
        event = Event.model_validate_json(ws.recv(timeout=30))
        for part in (event.content.parts if event.content else None) or []:
            if part.function_call:
                texts.append("call:" + part.function_call.name)
            if part.text and not event.partial:
                texts.append(part.text)
    ws.send(LiveRequest(close=True).model_dump_json())
print(json.dumps({"texts": texts}))
"""


def test_20_run_live_a_google_adk_client_works_unchanged(tmp_path: Any) -> None:
    """google-adk's own `LiveRequest` dump in (nulls and all), its `Event` model reads out."""
    import subprocess

    from tests._require import require
    from tests.server._adk import adk_python

    python = adk_python()
    require(python, what="ADK", reason="google-adk not found (set RONDO_ADK_PYTHON)")
    assert python is not None
    with server() as (url, _):
        new_session(url, "s9")
        target = ws_url(url, app_name="talk", user_id="u", session_id="s9", modalities="TEXT")
        done = subprocess.run(
            [python, "-c", ADK_CLIENT, target],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"texts": ["call:weather", "it is clear"]}


def test_20_run_live_takes_the_session_claim_and_frees_it_when_the_client_leaves() -> None:
    with server() as (url, _):
        new_session(url, "s10")
        target = ws_url(url, app_name="talk", user_id="u", session_id="s10", modalities="TEXT")
        with websockets_sync.connect(target) as first:
            first.send(text_turn("hi"))
            until(first, final_text("you said: hi"))
            # A second call on the same session while the first runs: refused, with why.
            with websockets_sync.connect(target) as second:
                code, reason = close_of(second)
            assert code == 1008
            assert "run" in reason.lower(), reason
        # The first client left (no `close` message): its call ends and frees the session
        # (polled: the server notices the disconnect in its own time).
        for _ in range(600):
            with websockets_sync.connect(target) as again:
                again.send(text_turn("back"))
                try:
                    frames = until(again, final_text("you said: back"))
                    break
                except ConnectionClosed:
                    assert again.close_code == 1008
            time.sleep(0.1)
        else:
            pytest.fail("the session stayed claimed after the client left")
        assert frames[-1]["author"] == "talker"


def test_20_a_confirmation_inside_a_live_call_is_pending_and_answered_on_the_pending_route() -> (
    None
):
    """L3: the call waits for the user's decision with its connection open; the pending
    routes list it, and the decision posted there resumes the tool inside the call."""
    with server() as (url, _):
        new_session(url, "s11")
        target = ws_url(url, app_name="talk", user_id="u", session_id="s11", modalities="TEXT")
        pending_url = f"{url}/apps/talk/users/u/sessions/s11/pending"
        with websockets_sync.connect(target) as ws:
            ws.send(text_turn("pay 9"))
            until(ws, lambda f: bool(f.get("longRunningToolIds")))
            (pending,) = httpx.get(pending_url).json()
            assert pending["kind"] == "confirmation"
            assert pending["originalCall"]["name"] == "pay"
            assert pending["originalCall"]["args"] == {"amount": 9}
            answer = httpx.post(f"{pending_url}/{pending['callId']}", json={"decision": "approve"})
            assert answer.status_code == 202, answer.text
            assert answer.json() == {"callId": pending["callId"], "live": True}
            frames = until(ws, final_text("paid: 9 paid"))
            results = [
                p["functionResponse"]
                for f in frames
                for p in (f.get("content") or {}).get("parts", [])
                if "functionResponse" in p and p["functionResponse"]["name"] == "pay"
            ]
            assert results[0]["response"] == {"result": "9 paid"}
            assert httpx.get(pending_url).json() == []


def test_20_a_client_reconnecting_at_once_gets_its_session() -> None:
    """A page reload or a dropped network: the client leaves and connects again at once; the
    call it left is still ending, and the new one waits for it instead of being refused."""
    with server() as (url, _):
        new_session(url, "s11")
        target = ws_url(url, app_name="talk", user_id="u", session_id="s11", modalities="TEXT")
        for n in range(8):
            with websockets_sync.connect(target) as ws:
                ws.send(text_turn(f"turn {n}"))
                until(ws, final_text(f"you said: turn {n}"))


async def test_20_a_live_claim_waits_only_for_a_call_that_is_ending(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio
    from types import SimpleNamespace

    from rondo.models.live import LiveRequestQueue
    from rondo.server import live_routes
    from rondo.server.errors import RunInProgressError

    ids = ("talk", "u", "s")
    held = [True]

    async def take(*_: str) -> Any:
        if held[0]:
            raise RunInProgressError("busy")

        async def release() -> None:
            return None

        return release

    queue = LiveRequestQueue()
    state: Any = SimpleNamespace(claims=SimpleNamespace(take=take), live_calls={ids: queue})
    with pytest.raises(RunInProgressError):  # the call goes on: refused at once
        await asyncio.wait_for(live_routes._claim(state, ids), 0.5)  # pyright: ignore[reportPrivateUsage]
    queue.close()  # its client left: the call is ending
    waiting = asyncio.ensure_future(live_routes._claim(state, ids))  # pyright: ignore[reportPrivateUsage]
    await asyncio.sleep(0.05)
    assert not waiting.done()
    held[0] = False  # it ended
    assert callable(await asyncio.wait_for(waiting, 1))
    held[0] = True  # an ending call that never ends: refused after the grace
    monkeypatch.setattr(live_routes, "_ENDING_GRACE", 0.05)
    with pytest.raises(RunInProgressError):
        await asyncio.wait_for(live_routes._claim(state, ids), 1)  # pyright: ignore[reportPrivateUsage]
