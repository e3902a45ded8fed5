"""L1/L2 against a fake Gemini Live server on loopback: the real google-genai SDK dials it over
TLS (a self-signed certificate trusted through SSL_CERT_FILE) and speaks the BidiGenerateContent
wire protocol — setup, text turns, a tool call and its response, transcriptions, a 1008 close
after a resumption handle, and the resumed second connection."""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rondo import Agent, Content, Event, LiveRequestQueue, RunConfig, Runner
from rondo.run_config import SessionResumptionConfig
from tests._require import require_module
from tests.live._gemini_fake import field, self_signed

require_module("google.genai", what="GEMINI", install="pip install 'rondo-agents[gemini]'")
websockets_server = require_module(
    "websockets.asyncio.server", what="GEMINI", install="pip install websockets"
)
require_module("cryptography.x509", what="GEMINI", install="pip install cryptography")


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class FakeGeminiLive:
    """What the Gemini Live API does on the wire, for this test's conversation."""

    def __init__(self) -> None:
        self.setups: list[dict[str, Any]] = []
        self.received: list[dict[str, Any]] = []
        self.paths: list[str] = []

    async def handler(self, ws: Any) -> None:
        self.paths.append(ws.request.path)
        setup = json.loads(await ws.recv())
        self.setups.append(setup)
        await ws.send(json.dumps({"setupComplete": {}}))
        async for raw in ws:
            message = json.loads(raw)
            self.received.append(message)
            await self.answer(ws, message)

    async def answer(self, ws: Any, message: dict[str, Any]) -> None:
        async def send(body: dict[str, Any]) -> None:
            await ws.send(json.dumps(body))

        tool = field(message, "toolResponse")
        if tool is not None:
            (response,) = field(tool, "functionResponses")
            await send(
                {
                    "serverContent": {
                        "modelTurn": {
                            "parts": [{"text": f"It is {response['response']['result']}."}]
                        }
                    }
                }
            )
            await send({"serverContent": {"turnComplete": True}})
            return
        content = field(message, "clientContent")
        if content is None or not field(content, "turnComplete"):
            return
        text = content["turns"][-1]["parts"][0]["text"]
        if text == "hi":
            await send({"sessionResumptionUpdate": {"newHandle": "handle-1", "resumable": True}})
            await send({"serverContent": {"inputTranscription": {"text": "hi", "finished": True}}})
            await send({"serverContent": {"modelTurn": {"parts": [{"text": "Hel"}]}}})
            await send({"serverContent": {"modelTurn": {"parts": [{"text": "lo."}]}}})
            await send(
                {"serverContent": {"outputTranscription": {"text": "Hello.", "finished": True}}}
            )
            await send({"serverContent": {"turnComplete": True}})
        elif text == "add":
            await send(
                {
                    "toolCall": {
                        "functionCalls": [{"id": "call-1", "name": "add", "args": {"a": 2, "b": 3}}]
                    }
                }
            )
        elif text == "drop":
            await ws.close(1008, "session expired")
        elif text == "again":
            await send({"serverContent": {"modelTurn": {"parts": [{"text": "Welcome back."}]}}})
            await send({"serverContent": {"turnComplete": True}})


@pytest.fixture
async def gemini_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[FakeGeminiLive, str]]:
    cert, key = self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    fake = FakeGeminiLive()
    async with websockets_server.serve(fake.handler, "127.0.0.1", 0, ssl=context) as server:
        port = server.sockets[0].getsockname()[1]
        yield fake, f"https://127.0.0.1:{port}"


async def test_l1_l2_gemini_live_over_the_real_sdk(
    gemini_server: tuple[FakeGeminiLive, str],
) -> None:
    from rondo.models.gemini_live import GeminiLiveModel

    fake, base_url = gemini_server
    model = GeminiLiveModel("gemini-live-2.5-flash-preview", api_key="test-key", base_url=base_url)
    runner = Runner(agent=Agent("bot", model=model, instruction="Be brief.", tools=[add]))
    queue = LiveRequestQueue()
    script = ["hi", "add", "drop", "again"]
    queue.send_content(Content.user(script.pop(0)))
    events: list[Event] = []
    config = RunConfig(session_resumption=SessionResumptionConfig())
    async for event in runner.run_live(
        user_id="u", session_id="s", live_request_queue=queue, run_config=config
    ):
        events.append(event)
        reconnected = (
            event.custom_metadata is not None and "reconnected" in event.custom_metadata["live"]
        )
        if event.text == "Welcome back." and not event.partial:
            queue.close()
        elif (event.turn_complete or reconnected) and script:
            queue.send_content(Content.user(script.pop(0)))

    # Setup: the model, the instruction, the tool, transcription and resumption asked for.
    first, second = fake.setups
    assert "BidiGenerateContent" in fake.paths[0]
    assert first["setup"]["model"] == "models/gemini-live-2.5-flash-preview"
    assert "Be brief." in json.dumps(first["setup"]["systemInstruction"])
    assert first["setup"]["tools"][0]["functionDeclarations"][0]["name"] == "add"
    assert "inputAudioTranscription" in first["setup"]
    assert first["setup"]["sessionResumption"] == {}
    # L2: the 1008 close after a handle: the second connection resumes with it.
    assert second["setup"]["sessionResumption"]["handle"] == "handle-1"
    (marker,) = [
        e for e in events if e.custom_metadata and "reconnected" in e.custom_metadata["live"]
    ]
    assert marker.custom_metadata is not None
    assert marker.custom_metadata["live"]["resumed"] is True
    assert marker.custom_metadata["live"]["reason"] == "policy_1008"
    # L1: the tool call ran and its response went back as a toolResponse with the call's id.
    (tool_response,) = [field(m, "toolResponse") for m in fake.received if field(m, "toolResponse")]
    (answer,) = field(tool_response, "functionResponses")
    assert answer["id"] == "call-1"
    assert answer["response"] == {"result": 5}
    finals = [e.text for e in events if not e.partial and e.text]
    assert finals == ["hi", "Hello.", "It is 5.", "Welcome back."]
    assert [e.output_transcription for e in events if e.output_transcription and not e.partial] == [
        "Hello."
    ]
    assert [e.text for e in events if e.partial and e.content is not None and e.text] == [
        "Hel",
        "lo.",
        "It is 5.",
        "Welcome back.",
    ]


@pytest.mark.parametrize(
    "spec",
    [
        "gemini-live-2.5-flash-preview",
        "gemini:gemini-live-2.5-flash-preview",
        "gemini:gemini-2.5-flash-native-audio-preview-09-2025",
    ],
)
def test_l1_live_model_strings_resolve_to_gemini_live(
    spec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rondo.models.gemini_live import GeminiLiveModel
    from rondo.models.registry import resolve_model

    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    model = resolve_model(spec)
    assert isinstance(model, GeminiLiveModel)
    assert model.name == spec.partition(":")[2] or model.name == spec


def test_l1_a_text_gemini_string_stays_a_text_model(monkeypatch: pytest.MonkeyPatch) -> None:
    from rondo.models.gemini import GeminiModel
    from rondo.models.registry import resolve_model

    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    assert isinstance(resolve_model("gemini:gemini-2.5-flash"), GeminiModel)


async def test_l1_gemini_live_model_refuses_a_text_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    from rondo.errors import ConfigurationError

    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    runner = Runner(agent=Agent("bot", model="gemini-live-2.5-flash-preview"))
    with pytest.raises(ConfigurationError, match="run_live"):
        await runner.run_to_result(user_id="u", new_message="hi")
