"""`GeminiLiveModel`: Gemini Live through google-genai (`client.aio.live.connect`).

`Agent(model="gemini-live-2.5-flash-preview")` or `"gemini:gemini-live-…"` resolves here. The
request built once by the live loop becomes the session's setup (system instruction, tools,
transcription and resumption settings); the history goes out as the first client content
(not when a resumption handle continues a provider session, which already holds it).
"""

from __future__ import annotations

try:
    from google import genai
    from google.genai import errors, types
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "rondo.models.gemini_live needs the google-genai SDK: pip install 'rondo-agents[gemini]'"
    ) from exc

from collections.abc import AsyncGenerator, Mapping
from contextlib import AsyncExitStack
from typing import Any, NoReturn, cast

from rondo.models._gemini_wire import build_config, build_contents
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

__all__ = ["GeminiLiveConnection", "GeminiLiveModel", "from_model_string"]

# Close codes the seed lets a live run recover from: 1008 (policy: the session ran out), and
# 1006 (closed without a close frame: the socket's EOF).
_RECOVERABLE = {1008: "policy_1008", 1006: "eof"}


class GeminiLiveModel:
    """A Gemini Live model, through the Gemini Developer API (or Vertex AI with
    `vertexai=True`). `api_key` defaults to `GOOGLE_API_KEY` / `GEMINI_API_KEY`;
    `base_url` to the SDK's (`GOOGLE_GEMINI_BASE_URL`)."""

    provider = "gemini"

    def __init__(
        self,
        name: str,
        *,
        api_key: str | None = None,
        vertexai: bool | None = None,
        base_url: str | None = None,
        headers: Mapping[str, str] | None = None,
        client: genai.Client | None = None,
    ) -> None:
        self.name = name
        if client is None:
            vertex = bool(vertexai)
            key = api_key or env_value("GOOGLE_API_KEY", "GEMINI_API_KEY")
            if key is None and not vertex:
                raise missing_key_error(f"gemini:{name}", ["GEMINI_API_KEY", "GOOGLE_API_KEY"])
            options = types.HttpOptions(
                base_url=base_url, headers=dict(headers) if headers else None
            )
            client = genai.Client(api_key=key, vertexai=vertex or None, http_options=options)
        self._client = client

    def __repr__(self) -> str:
        return f"GeminiLiveModel({self.name!r})"

    def generate(self, request: ModelRequest, *, stream: bool = False) -> NoReturn:
        raise live_only_error(self)

    async def connect(self, request: ModelRequest, config: LiveConnectConfig) -> LiveConnection:
        stack = AsyncExitStack()
        try:
            session = await stack.enter_async_context(
                self._client.aio.live.connect(model=self.name, config=_setup(request, config))
            )
            if config.resumption_handle is None and request.contents:
                await session.send_client_content(
                    turns=cast(Any, build_contents(request.contents)), turn_complete=False
                )
        except BaseException:
            await stack.aclose()
            raise
        return GeminiLiveConnection(session, stack)


def _setup(request: ModelRequest, config: LiveConnectConfig) -> types.LiveConnectConfig:
    generate = build_config(request.config)
    resumption = None
    if config.session_resumption or config.resumption_handle:
        resumption = types.SessionResumptionConfig(
            handle=config.resumption_handle, transparent=config.transparent_resumption
        )
    modalities = (
        [types.Modality(m.upper()) for m in config.response_modalities]
        if config.response_modalities
        else None
    )
    return types.LiveConnectConfig(
        response_modalities=modalities,
        system_instruction=cast(Any, generate).system_instruction,
        tools=generate.tools,
        temperature=generate.temperature,
        speech_config=_passed(types.SpeechConfig, config.speech_config),
        input_audio_transcription=types.AudioTranscriptionConfig()
        if config.input_audio_transcription
        else None,
        output_audio_transcription=types.AudioTranscriptionConfig()
        if config.output_audio_transcription
        else None,
        session_resumption=resumption,
        realtime_input_config=_passed(types.RealtimeInputConfig, config.realtime_input_config),
    )


def _passed(kind: Any, value: Any) -> Any:
    if value is None or isinstance(value, kind):
        return value
    return kind.model_validate(value)


class GeminiLiveConnection:
    """One open Gemini Live session."""

    def __init__(self, session: Any, stack: AsyncExitStack) -> None:
        self._session = session
        self._stack = stack

    async def send(self, request: LiveRequest) -> None:
        session = self._session
        try:
            if request.activity_start:
                await session.send_realtime_input(activity_start=types.ActivityStart())
            elif request.activity_end:
                await session.send_realtime_input(activity_end=types.ActivityEnd())
            elif request.audio_stream_end:
                await session.send_realtime_input(audio_stream_end=True)
            elif request.blob is not None:
                await _send_blob(session, request.blob)
            elif request.content is not None:
                await _send_content(session, request.content)
        except Exception as exc:
            raise _lost(exc) or exc from exc

    async def receive(self) -> AsyncGenerator[LiveResponse, None]:
        # The SDK's `receive` ends at each turn's end; the connection lasts for many turns.
        while True:
            try:
                async for message in self._session.receive():
                    for response in _read(message):
                        yield response
            except errors.APIError as exc:
                if exc.code == 1000:
                    return  # the provider ended the session normally
                raise _lost(exc) or exc from exc
            except Exception as exc:
                raise _lost(exc) or exc from exc

    async def close(self) -> None:
        await self._stack.aclose()


async def _send_blob(session: Any, blob: Blob) -> None:
    data = types.Blob(data=blob.data, mime_type=blob.mime_type)
    if blob.mime_type.startswith("audio/"):
        await session.send_realtime_input(audio=data)
    elif blob.mime_type.startswith("video/"):
        await session.send_realtime_input(video=data)
    else:
        await session.send_realtime_input(media=data)


async def _send_content(session: Any, content: Content) -> None:
    responses = [p.function_response for p in content.parts if p.function_response is not None]
    if responses:
        await session.send_tool_response(
            function_responses=[
                types.FunctionResponse(id=r.id, name=r.name, response=dict(r.response))
                for r in responses
            ]
        )
        return
    await session.send_client_content(
        turns=cast(Any, build_contents([content])), turn_complete=True
    )


def _lost(exc: BaseException) -> LiveConnectionLost | None:
    code = getattr(exc, "code", None)
    reason = _RECOVERABLE.get(code) if isinstance(code, int) else None
    if reason is None:
        return None
    return LiveConnectionLost(
        f"gemini live connection closed ({code}): {exc}",
        reason=cast(Any, reason),
        provider="gemini",
    )


def _read(message: types.LiveServerMessage) -> list[LiveResponse]:
    """One server message as rondo's live responses (a message may carry several signals)."""
    out: list[LiveResponse] = []
    update = message.session_resumption_update
    if update is not None and update.new_handle and update.resumable is not False:
        out.append(LiveResponse(resumption_handle=update.new_handle))
    calls = message.tool_call.function_calls if message.tool_call is not None else None
    if calls:
        parts = [
            Part(function_call=FunctionCall(name=c.name or "", args=dict(c.args or {}), id=c.id))
            for c in calls
        ]
        out.append(LiveResponse(content=Content(role="model", parts=parts)))
    server = message.server_content
    if server is not None:
        out.extend(_server_content(server))
    if message.go_away is not None:
        out.append(LiveResponse(go_away=True))
    return out


def _server_content(server: types.LiveServerContent) -> list[LiveResponse]:
    out: list[LiveResponse] = []
    turn = server.model_turn
    if turn is not None and turn.parts:
        parts: list[Part] = []
        for part in turn.parts:
            if part.text:
                parts.append(Part(text=part.text, thought=bool(part.thought)))
            elif part.inline_data is not None and part.inline_data.data is not None:
                blob = part.inline_data
                parts.append(
                    Part(inline_data=Blob(mime_type=blob.mime_type or "", data=blob.data or b""))
                )
        if parts:
            out.append(LiveResponse(content=Content(role="model", parts=parts), partial=True))
    heard, said = server.input_transcription, server.output_transcription
    if heard is not None:
        text = Transcription(text=heard.text or "", finished=bool(heard.finished))
        out.append(LiveResponse(input_transcription=text))
    if said is not None:
        text = Transcription(text=said.text or "", finished=bool(said.finished))
        out.append(LiveResponse(output_transcription=text))
    if server.turn_complete or server.interrupted:
        out.append(
            LiveResponse(
                turn_complete=bool(server.turn_complete), interrupted=bool(server.interrupted)
            )
        )
    return out


def from_model_string(name: str) -> GeminiLiveModel:
    """The model for `"gemini:<live name>"` (or a bare `gemini-live-…` name)."""
    return GeminiLiveModel(name)
