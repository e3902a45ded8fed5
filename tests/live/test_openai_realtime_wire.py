"""L1/L2 against a fake OpenAI Realtime server on loopback, the real openai SDK as the client:
session.update, text and audio turns, parallel tool calls answered with function_call_output
items, transcriptions, and a 1008 close that reconnects into a new session primed from the log."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rondo import Agent, Blob, Content, Event, LiveRequestQueue, Runner
from tests._require import require_module

require_module("openai", what="OPENAI", install="pip install 'rondo-agents[openai]'")
websockets_server = require_module(
    "websockets.asyncio.server", what="OPENAI", install="pip install websockets"
)


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class FakeRealtime:
    """What the Realtime API sends back, for this test's conversation."""

    def __init__(self) -> None:
        self.sessions: list[dict[str, Any]] = []
        self.items: list[list[dict[str, Any]]] = []
        self.audio: list[bytes] = []
        self.queries: list[str] = []

    async def handler(self, ws: Any) -> None:
        self.queries.append(ws.request.path)
        items: list[dict[str, Any]] = []
        self.items.append(items)
        await ws.send(json.dumps({"type": "session.created", "session": {}}))
        async for raw in ws:
            event = json.loads(raw)
            kind = event["type"]
            if kind == "session.update":
                self.sessions.append(event["session"])
            elif kind == "conversation.item.create":
                items.append(event["item"])
            elif kind == "input_audio_buffer.append":
                self.audio.append(base64.b64decode(event["audio"]))
            elif kind == "input_audio_buffer.commit":
                items.append({"type": "audio", "bytes": sum(len(a) for a in self.audio)})
            elif kind == "response.create":
                await self.respond(ws, items)

    async def respond(self, ws: Any, items: list[dict[str, Any]]) -> None:
        async def send(body: dict[str, Any]) -> None:
            await ws.send(json.dumps(body))

        last = items[-1]
        if last["type"] == "function_call_output":
            outputs = [
                json.loads(i["output"])["result"]
                for i in items
                if i["type"] == "function_call_output"
            ]
            await send({"type": "response.output_text.delta", "delta": f"Sums: {outputs}."})
            await send({"type": "response.done", "response": {}})
            return
        if last["type"] == "audio":
            await send(
                {
                    "type": "conversation.item.input_audio_transcription.completed",
                    "transcript": "spoken words",
                }
            )
            await send(
                {
                    "type": "response.output_audio.delta",
                    "delta": base64.b64encode(b"\x01\x02").decode(),
                }
            )
            await send({"type": "response.output_audio_transcript.delta", "delta": "I heard "})
            await send({"type": "response.output_audio_transcript.delta", "delta": "you."})
            await send(
                {"type": "response.output_audio_transcript.done", "transcript": "I heard you."}
            )
            await send({"type": "response.done", "response": {}})
            return
        text = last["content"][0]["text"]
        if text == "hi":
            for delta in ("Hel", "lo."):
                await send({"type": "response.output_text.delta", "delta": delta})
            await send({"type": "response.done", "response": {}})
        elif text == "sums":
            for call_id, a in (("c1", 1), ("c2", 10)):
                args = json.dumps({"a": a, "b": 1})
                await send(
                    {
                        "type": "response.function_call_arguments.done",
                        "call_id": call_id,
                        "name": "add",
                        "arguments": args,
                    }
                )
            await send({"type": "response.done", "response": {}})
        elif text == "drop":
            await ws.close(1008, "policy")
        elif text == "again":
            await send({"type": "response.output_text.delta", "delta": "New session."})
            await send({"type": "response.done", "response": {}})


@pytest.fixture
async def realtime_server() -> AsyncIterator[tuple[FakeRealtime, str]]:
    fake = FakeRealtime()
    async with websockets_server.serve(fake.handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        yield fake, f"ws://127.0.0.1:{port}/v1"


async def test_l1_l2_openai_realtime_over_the_real_sdk(
    realtime_server: tuple[FakeRealtime, str],
) -> None:
    from rondo.models.openai_realtime import OpenAIRealtimeModel

    fake, url = realtime_server
    model = OpenAIRealtimeModel("gpt-realtime", api_key="test-key", websocket_base_url=url)
    runner = Runner(agent=Agent("bot", model=model, instruction="Be brief.", tools=[add]))
    queue = LiveRequestQueue()
    steps: list[Any] = ["sums", "audio", "drop", "again"]
    queue.send_content(Content.user("hi"))
    events: list[Event] = []
    async for event in runner.run_live(user_id="u", session_id="s", live_request_queue=queue):
        events.append(event)
        reconnected = (
            event.custom_metadata is not None and "reconnected" in event.custom_metadata["live"]
        )
        if event.text == "New session." and not event.partial:
            queue.close()
        elif (event.turn_complete or reconnected) and steps:
            step = steps.pop(0)
            if step == "audio":
                queue.send_realtime(Blob(mime_type="audio/pcm;rate=24000", data=b"\x00" * 320))
                queue.send_activity_end()
            else:
                queue.send_content(Content.user(step))

    assert "model=gpt-realtime" in fake.queries[0]
    first = fake.sessions[0]
    assert first["instructions"].startswith("Be brief.")
    assert first["tools"][0]["name"] == "add"
    assert first["audio"]["input"]["transcription"]["model"]
    finals = [e.text for e in events if not e.partial and e.text]
    assert finals == ["Hello.", "Sums: [2, 11].", "spoken words", "I heard you.", "New session."]
    # L1: both calls of one response ran through the tool path and were answered together.
    (merged,) = [e for e in events if len(e.get_function_responses()) == 2]
    assert [r.id for r in merged.get_function_responses()] == ["c1", "c2"]
    outputs = [i for i in fake.items[0] if i["type"] == "function_call_output"]
    assert [i["call_id"] for i in outputs] == ["c1", "c2"]
    assert fake.audio == [b"\x00" * 320]
    assert any(e.partial and e.content and e.content.parts[0].inline_data for e in events)
    # L2: 1008 reconnects; Realtime has no resumption handles, so it is a new session primed
    # with the conversation from the log — and the event says it did not resume.
    (marker,) = [
        e for e in events if e.custom_metadata and "reconnected" in e.custom_metadata["live"]
    ]
    assert marker.custom_metadata is not None
    assert marker.custom_metadata["live"]["resumed"] is False
    primed = [i for i in fake.items[1] if i["type"] == "message"]
    assert primed[0]["content"][0]["text"] == "hi"
    assert any(i["content"][0]["text"] == "I heard you." for i in primed)


def test_l1_realtime_model_strings_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    from rondo.models.openai import OpenAIModel
    from rondo.models.openai_realtime import OpenAIRealtimeModel
    from rondo.models.registry import resolve_model

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    assert isinstance(resolve_model("openai:gpt-realtime"), OpenAIRealtimeModel)
    assert isinstance(resolve_model("openai:gpt-4o-realtime-preview"), OpenAIRealtimeModel)
    assert isinstance(resolve_model("openai:gpt-4o-mini"), OpenAIModel)
