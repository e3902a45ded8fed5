"""The live boundary: a persistent two-way model connection (SPEC L1, seed 000 §4.9).

A text model answers one request per step (`Model.generate`); a live model holds one connection
for the whole call. `LiveModel.connect` opens it with the request built once (instructions,
tools, history), then the connection carries `LiveRequest`s in and `LiveResponse`s out until
either side closes it. `LiveRequestQueue` is what the caller of `Runner.run_live` writes to.

Adapters raise `LiveConnectionLost` for the failures the seed lets a live run recover from
(EOF, broken pipe, connection reset, close code 1008, GoAway); any other failure ends the run.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from rondo.errors import ConfigurationError, ModelConnectionError
from rondo.models.base import Model, ModelRequest
from rondo.types import Blob, Content, Usage

__all__ = [
    "LIVE_METADATA",
    "LiveConnectConfig",
    "LiveConnectError",
    "LiveConnection",
    "LiveConnectionLost",
    "LiveModel",
    "LiveRequest",
    "LiveRequestQueue",
    "LiveResponse",
    "LostReason",
    "Transcription",
    "is_live_model",
    "live_only_error",
    "lost_reason",
]

_frozen = ConfigDict(
    frozen=True,
    extra="forbid",
    ser_json_bytes="base64",
    val_json_bytes="base64",
    defer_build=True,
)

# The key of `Event.custom_metadata` a live call's bookkeeping records use (a resumption
# handle, a reconnect).
LIVE_METADATA = "live"

LostReason = Literal["eof", "broken_pipe", "connection_reset", "policy_1008", "go_away"]


class LiveConnectionLost(ModelConnectionError):
    """The live connection dropped in a way the run may recover from by reconnecting
    (seed 000 §4.9): `reason` says which of the recoverable cases it was."""

    def __init__(self, message: str, *, reason: LostReason, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.reason: LostReason = reason


class LiveConnectError(ModelConnectionError):
    """A live connection could not be opened (first connect or reconnect), or kept dropping:
    the live run ends with it."""

    retryable = False


def lost_reason(exc: BaseException) -> LostReason | None:
    """The recoverable case `exc` is, or None when the run must end on it."""
    if isinstance(exc, LiveConnectionLost):
        return exc.reason
    if isinstance(exc, EOFError | asyncio.IncompleteReadError):
        return "eof"
    if isinstance(exc, BrokenPipeError):
        return "broken_pipe"
    if isinstance(exc, ConnectionResetError):
        return "connection_reset"
    return None


class LiveRequest(BaseModel):
    """One thing sent to a live model. Set one of the fields; `close` ends the call."""

    model_config = _frozen

    content: Content | None = None
    blob: Blob | None = None
    activity_start: bool = False
    activity_end: bool = False
    audio_stream_end: bool = False
    close: bool = False


class LiveRequestQueue:
    """What the caller of `Runner.run_live` writes to: text turns, audio/image chunks,
    activity signals (client-side voice detection) and `close()`. Safe to write before the
    run starts; `close()` makes the run end once what was queued before it is sent."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[LiveRequest] = asyncio.Queue()
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def send(self, request: LiveRequest) -> None:
        if request.close:
            self._closed = True
        self._queue.put_nowait(request)

    def send_content(self, content: Content) -> None:
        """A turn of text (or function responses) for the model."""
        self.send(LiveRequest(content=content))

    def send_realtime(self, blob: Blob) -> None:
        """A chunk of audio (e.g. `audio/pcm;rate=16000`) or an image frame."""
        self.send(LiveRequest(blob=blob))

    def send_activity_start(self) -> None:
        """The user started speaking (only when the provider's voice detection is off)."""
        self.send(LiveRequest(activity_start=True))

    def send_activity_end(self) -> None:
        """The user stopped speaking (only when the provider's voice detection is off)."""
        self.send(LiveRequest(activity_end=True))

    def send_audio_stream_end(self) -> None:
        """The microphone paused: the provider flushes the audio it holds."""
        self.send(LiveRequest(audio_stream_end=True))

    def close(self) -> None:
        """End the call: the run closes the connection and returns."""
        self.send(LiveRequest(close=True))

    async def get(self) -> LiveRequest:
        return await self._queue.get()


class Transcription(BaseModel):
    """A piece of the running transcription of the user's or the model's speech."""

    model_config = _frozen

    text: str = ""
    finished: bool = False


class LiveResponse(BaseModel):
    """One message from a live model: content (text, audio, function calls), a
    transcription piece, the end of a turn, an interruption, or a connection signal
    (`resumption_handle`: a new session-resumption handle; `go_away`: the provider will close
    the connection soon)."""

    model_config = _frozen

    content: Content | None = None
    partial: bool = False
    turn_complete: bool = False
    interrupted: bool = False
    input_transcription: Transcription | None = None
    output_transcription: Transcription | None = None
    resumption_handle: str | None = None
    go_away: bool = False
    usage: Usage | None = None
    error_code: str | None = None
    error_message: str | None = None


class LiveConnectConfig(BaseModel):
    """How to open a live connection: the `RunConfig` live fields, plus the resumption handle
    of the provider session to continue (None opens a new one)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    response_modalities: tuple[str, ...] | None = None
    speech_config: Any = None
    input_audio_transcription: bool = True
    output_audio_transcription: bool = True
    session_resumption: bool = False
    resumption_handle: str | None = None
    transparent_resumption: bool | None = None
    realtime_input_config: Any = None


@runtime_checkable
class LiveConnection(Protocol):
    """An open live connection. `receive` yields until the connection ends (then returns) or
    fails (`LiveConnectionLost` for the recoverable cases)."""

    async def send(self, request: LiveRequest) -> None: ...

    def receive(self) -> AsyncIterator[LiveResponse]: ...

    async def close(self) -> None: ...


@runtime_checkable
class LiveModel(Protocol):
    """A model that holds a live connection (`Runner.run_live`). `request` is built once:
    system instruction, tool declarations and the history as the initial context."""

    name: str

    async def connect(self, request: ModelRequest, config: LiveConnectConfig) -> LiveConnection:
        """Open a connection; raise (any error) when it cannot be opened."""
        ...


def is_live_model(model: object) -> bool:
    return callable(getattr(model, "connect", None)) and isinstance(
        getattr(model, "name", None), str
    )


def live_only_error(model: Model | LiveModel) -> ConfigurationError:
    """What `generate` on a live-only model raises: it says what to call instead."""
    return ConfigurationError(
        f"model {model.name!r} is a live model: run it with runner.run_live(...) and a "
        "LiveRequestQueue, or give the agent a text model for run_async"
    )
