"""`OpenAIRealtimeModel`: OpenAI Realtime through the openai SDK's realtime client.

`Agent(model="openai:gpt-realtime")` resolves here. The request built once by the live loop
becomes a `session.update` (instructions, tools, modalities, transcription, voice, turn
detection) and the history becomes conversation items; each turn is a `response.create`.
The SDK's own reconnects are off: the live loop decides (seed 000 §4.9). Realtime has no
session-resumption handles, so a reconnect starts a new session primed from the log.
"""

from __future__ import annotations

try:
    import openai
    from websockets.exceptions import ConnectionClosed, ConnectionClosedOK
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "rondo.models.openai_realtime needs the openai SDK with websockets: "
        "pip install 'rondo-agents[openai]'"
    ) from exc

import base64
import json
from collections.abc import AsyncGenerator, Mapping
from contextlib import AsyncExitStack
from typing import Any, NoReturn, cast

from rondo.models._shared import env_value, missing_key_error
from rondo.models.base import ModelRequest
from rondo.models.live import (
    LiveConnectConfig,
    LiveConnection,
    LiveConnectionLost,
    LiveRequest,
    LiveResponse,
    Transcription,
    live_only_error,
)
from rondo.types import Blob, Content, FunctionCall, Part

__all__ = ["OpenAIRealtimeConnection", "OpenAIRealtimeModel", "from_model_string"]

_AUDIO_MIME = "audio/pcm;rate=24000"
_TRANSCRIBER = "gpt-4o-mini-transcribe"


class OpenAIRealtimeModel:
    """An OpenAI Realtime model. `api_key` defaults to `OPENAI_API_KEY`; `base_url` /
    `websocket_base_url` to the SDK's (`OPENAI_BASE_URL`)."""

    provider = "openai"

    def __init__(
        self,
        name: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        websocket_base_url: str | None = None,
        client: openai.AsyncOpenAI | None = None,
    ) -> None:
        self.name = name
        if client is None:
            key = api_key or env_value("OPENAI_API_KEY")
            if key is None:
                raise missing_key_error(f"openai:{name}", ["OPENAI_API_KEY"])
            client = openai.AsyncOpenAI(
                api_key=key, base_url=base_url, websocket_base_url=websocket_base_url
            )
        self._client = client

    def __repr__(self) -> str:
        return f"OpenAIRealtimeModel({self.name!r})"

    def generate(self, request: ModelRequest, *, stream: bool = False) -> NoReturn:
        raise live_only_error(self)

    async def connect(self, request: ModelRequest, config: LiveConnectConfig) -> LiveConnection:
        stack = AsyncExitStack()
        try:
            manager = self._client.realtime.connect(model=self.name, max_retries=0)
            conn: Any = await stack.enter_async_context(manager)
            await conn.send({"type": "session.update", "session": _session(request, config)})
            for item in _history(request.contents):
                await conn.send({"type": "conversation.item.create", "item": item})
        except BaseException:
            await stack.aclose()
            raise
        return OpenAIRealtimeConnection(conn, stack)


def _session(request: ModelRequest, config: LiveConnectConfig) -> dict[str, object]:
    session: dict[str, object] = {"type": "realtime"}
    if request.config.system_instruction:
        session["instructions"] = request.config.system_instruction
    if request.config.tools:
        session["tools"] = [
            {
                "type": "function",
                "name": d.name,
                "description": d.description,
                "parameters": d.parameters,
            }
            for d in request.config.tools
        ]
    if config.response_modalities:
        session["output_modalities"] = [m.lower() for m in config.response_modalities]
    audio_in: dict[str, object] = {}
    if config.input_audio_transcription:
        audio_in["transcription"] = {"model": _TRANSCRIBER}
    if config.realtime_input_config is not None:
        audio_in["turn_detection"] = config.realtime_input_config
    audio: dict[str, object] = {"input": audio_in} if audio_in else {}
    speech: Any = config.speech_config
    if isinstance(speech, Mapping):
        audio["output"] = dict(cast(Mapping[str, object], speech))
    if audio:
        session["audio"] = audio
    return session


def _history(contents: list[Content]) -> list[dict[str, object]]:
    """The history as Realtime conversation items (text, calls and their outputs)."""
    items: list[dict[str, object]] = []
    for content in contents:
        role = "assistant" if content.role == "model" else "user"
        kind = "output_text" if role == "assistant" else "input_text"
        texts = [{"type": kind, "text": p.text} for p in content.parts if p.text and not p.thought]
        if texts:
            items.append({"type": "message", "role": role, "content": texts})
        for part in content.parts:
            if part.function_call is not None:
                call = part.function_call
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": json.dumps(dict(call.args)),
                    }
                )
            elif part.function_response is not None:
                items.append(_output_item(part))
    return items


def _output_item(part: Part) -> dict[str, object]:
    response = part.function_response
    assert response is not None
    return {
        "type": "function_call_output",
        "call_id": response.id,
        "output": json.dumps(dict(response.response), default=str),
    }


class OpenAIRealtimeConnection:
    """One open Realtime session. Function calls of one response are collected until its
    `response.done`, so parallel calls are answered together with one `response.create`."""

    def __init__(self, conn: Any, stack: AsyncExitStack) -> None:
        self._conn = conn
        self._stack = stack
        self._calls: list[FunctionCall] = []

    async def send(self, request: LiveRequest) -> None:
        try:
            await self._send(request)
        except ConnectionClosed as exc:
            raise _lost(exc) or exc from exc

    async def _send(self, request: LiveRequest) -> None:
        send = self._conn.send
        if request.blob is not None:
            audio = base64.b64encode(request.blob.data).decode()
            await send({"type": "input_audio_buffer.append", "audio": audio})
        elif request.activity_end or request.audio_stream_end:
            await send({"type": "input_audio_buffer.commit"})
            await send({"type": "response.create"})
        elif request.content is not None:
            for item in _history([request.content]):
                await send({"type": "conversation.item.create", "item": item})
            await send({"type": "response.create"})

    async def receive(self) -> AsyncGenerator[LiveResponse, None]:
        while True:
            try:
                event: Any = await self._conn.recv()
            except ConnectionClosedOK:
                return
            except ConnectionClosed as exc:
                raise _lost(exc) or exc from exc
            for response in self._read(event.to_dict() if hasattr(event, "to_dict") else event):
                yield response

    def _read(self, event: dict[str, Any]) -> list[LiveResponse]:
        kind = event.get("type", "")
        if kind in ("response.output_text.delta", "response.text.delta"):
            return [LiveResponse(content=Content.model(event.get("delta", "")), partial=True)]
        if kind in ("response.output_audio.delta", "response.audio.delta"):
            blob = Blob(mime_type=_AUDIO_MIME, data=base64.b64decode(event.get("delta", "")))
            return [LiveResponse(content=Content(role="model", parts=[Part(inline_data=blob)]))]
        if kind in ("response.output_audio_transcript.delta", "response.audio_transcript.delta"):
            return [LiveResponse(output_transcription=Transcription(text=event.get("delta", "")))]
        if kind in ("response.output_audio_transcript.done", "response.audio_transcript.done"):
            return [LiveResponse(output_transcription=Transcription(finished=True))]
        if kind == "conversation.item.input_audio_transcription.completed":
            text = Transcription(text=event.get("transcript", ""), finished=True)
            return [LiveResponse(input_transcription=text)]
        if kind == "response.function_call_arguments.done":
            args = json.loads(event.get("arguments") or "{}")
            self._calls.append(FunctionCall(name=event["name"], args=args, id=event["call_id"]))
            return []
        if kind == "response.done":
            calls, self._calls = self._calls, []
            if calls:
                parts = [Part(function_call=c) for c in calls]
                return [LiveResponse(content=Content(role="model", parts=parts))]
            return [LiveResponse(turn_complete=True)]
        if kind == "error":
            error: dict[str, Any] = event.get("error") or {}
            return [
                LiveResponse(
                    error_code=str(error.get("code") or error.get("type") or "error"),
                    error_message=str(error.get("message") or ""),
                )
            ]
        return []

    async def close(self) -> None:
        await self._stack.aclose()


def _lost(exc: ConnectionClosed) -> LiveConnectionLost | None:
    received = exc.rcvd
    if received is None:
        reason = "eof"  # the socket ended without a close frame
    elif received.code == 1008:
        reason = "policy_1008"
    else:
        return None
    return LiveConnectionLost(
        f"openai realtime connection closed: {exc}", reason=reason, provider="openai"
    )


def from_model_string(name: str) -> OpenAIRealtimeModel:
    """The model for `"openai:gpt-realtime…"`."""
    return OpenAIRealtimeModel(name)
