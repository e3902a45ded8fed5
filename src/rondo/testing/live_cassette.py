"""Cassettes for live models (SPEC L1, O4): every connection recorded frame by frame, both ways,
and replayed offline with the same frames.

A live connection is one cassette exchange: the request it was opened with (instructions,
tools, history — compared as a model call's request is) and its `LiveConnectConfig`, then its
frames in order — each request sent (compared on replay: inline audio by digest, call ids
renumbered in order of appearance), each response received, and a failure (the recoverable
ones keep their reason, so a replayed drop reconnects as the recorded one did). A failed
connect is an exchange with its error.

On replay the frames the model sent before the first request are sent at once, and those
after each request once that request has been sent and matched, so the run sees the same
frames in the same order relative to what it sends. A request the recording does not hold is a
`CassetteMismatchError`, raised from `send`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any, NoReturn, cast

from rondo.models.live import (
    LiveConnectConfig,
    LiveConnection,
    LiveConnectionLost,
    LiveModel,
    LiveRequest,
    LiveResponse,
    live_only_error,
    lost_reason,
)
from rondo.testing.cassette import (
    CassetteMismatchError,
    Exchange,
    LiveCall,
    LiveFrame,
    RecordedError,
    RecordingModel,
    ReplayModel,
    _blob_digest,  # pyright: ignore[reportPrivateUsage]
    _CallIds,  # pyright: ignore[reportPrivateUsage]
    _difference,  # pyright: ignore[reportPrivateUsage]
    _raise_recorded,  # pyright: ignore[reportPrivateUsage]
    content_record,
    request_record,
)

if TYPE_CHECKING:
    from rondo.models.base import ModelRequest
    from rondo.testing.cassette import CassettePlayer, CassetteRecorder

__all__ = ["RecordingLiveModel", "ReplayLiveModel", "live_request_record"]


def live_request_record(request: LiveRequest, ids: _CallIds) -> dict[str, Any]:
    """A request sent on a live connection, as a cassette stores and compares it."""
    out: dict[str, Any] = request.model_dump(
        mode="json", exclude_defaults=True, exclude={"content", "blob"}
    )
    if request.content is not None:
        out["content"] = content_record(request.content, ids)
    if request.blob is not None:
        out["blob"] = _blob_digest(request.blob.model_dump(mode="json"))
    return out


def _config_record(config: LiveConnectConfig) -> dict[str, Any]:
    return json.loads(config.model_dump_json(exclude_defaults=True))


# -- recording ---------------------------------------------------------------------------------


class RecordingLiveModel(RecordingModel):
    """A live model that connects like the one it wraps and records every connection."""

    async def connect(self, request: ModelRequest, config: LiveConnectConfig) -> LiveConnection:
        live = cast(LiveModel, self.model)
        recorder = self.recorder
        index = recorder.count
        recorder.count += 1
        call = LiveCall(config=_config_record(config))
        exchange = Exchange(exchange=index, model=self.name, request=request_record(request))
        try:
            connection = await live.connect(request, config)
        except Exception as exc:
            exchange.live, exchange.error = call, RecordedError.of(exc)
            recorder.write(exchange)
            raise
        return _RecordingConnection(connection, recorder, exchange, call)


class _RecordingConnection:
    """A connection whose frames are written to the cassette: at each end of a turn, on a
    failure and on close (more lines of the same exchange after the first)."""

    def __init__(
        self,
        connection: LiveConnection,
        recorder: CassetteRecorder,
        exchange: Exchange,
        call: LiveCall,
    ) -> None:
        self.connection = connection
        self.recorder = recorder
        self.exchange = exchange
        self.call = call
        self.written = False
        self.ids = _CallIds()

    def _flush(self) -> None:
        frames, self.call.frames = self.call.frames, []
        if self.written and not frames:
            return
        line = self.exchange.model_copy(
            update={
                "live": self.call.model_copy(update={"frames": frames}),
                "continued": self.written,
                "request": {} if self.written else self.exchange.request,
            }
        )
        self.recorder.write(line)
        self.written = True

    async def send(self, request: LiveRequest) -> None:
        await self.connection.send(request)
        self.call.frames.append(LiveFrame(sent=live_request_record(request, self.ids)))

    async def receive(self) -> AsyncGenerator[LiveResponse, None]:
        responses = cast(AsyncGenerator[LiveResponse, None], self.connection.receive())
        try:
            async for response in responses:
                self.call.frames.append(LiveFrame(received=response.model_copy(deep=True)))
                if response.turn_complete or response.go_away:
                    self._flush()
                yield response
        except Exception as exc:
            error = RecordedError.of(exc)
            self.call.frames.append(LiveFrame(error=error, lost=lost_reason(exc)))
            self._flush()
            raise
        finally:
            await responses.aclose()

    async def close(self) -> None:
        try:
            await self.connection.close()
        finally:
            self._flush()


# -- replaying ---------------------------------------------------------------------------------


class ReplayLiveModel(ReplayModel):
    """A live model answering from a cassette, offline: each connect takes the recorded
    connection opened with the same request and settings."""

    def __repr__(self) -> str:
        return f"ReplayLiveModel({self.name!r}, {str(self.player.path)!r})"

    async def connect(self, request: ModelRequest, config: LiveConnectConfig) -> LiveConnection:
        exchange = self.player.answer(request, live=_config_record(config))
        if exchange.error is not None:  # the recorded connect failed
            _raise_recorded(exchange.error)
        assert exchange.live is not None
        return _ReplayConnection(self.player, exchange.exchange, exchange.live.frames)

    def generate(  # pyright: ignore[reportIncompatibleMethodOverride]
        self, request: ModelRequest, *, stream: bool = False
    ) -> NoReturn:
        raise live_only_error(self)


class _ReplayConnection:
    def __init__(self, player: CassettePlayer, exchange: int, frames: list[LiveFrame]) -> None:
        self.player = player
        self.exchange = exchange
        self.frames = list(frames)
        self.at = 0
        self.sent = 0
        self.ids = _CallIds()  # the recording renumbered its call ids the same way
        self.outbox: asyncio.Queue[LiveFrame | None] = asyncio.Queue()
        self.closed = False
        self._deliver()

    def _deliver(self) -> None:
        """Queue the recorded frames up to the next request the run must send."""
        while self.at < len(self.frames) and self.frames[self.at].sent is None:
            self.outbox.put_nowait(self.frames[self.at])
            self.at += 1

    async def send(self, request: LiveRequest) -> None:
        if self.closed:
            raise BrokenPipeError("the replayed live connection is closed")
        self.sent += 1
        got = live_request_record(request, self.ids)
        if self.at >= len(self.frames):
            raise CassetteMismatchError(
                f"{self.player.path}: live exchange {self.exchange + 1} sends request "
                f"{self.sent} past the recording: {got}"
            )
        frame = self.frames[self.at]
        assert frame.sent is not None
        found = _difference("sent", frame.sent, got)
        if found is not None:
            raise CassetteMismatchError(
                f"{self.player.path}: live exchange {self.exchange + 1}, request {self.sent} "
                f"differs at {found}"
            )
        self.at += 1
        self._deliver()

    async def receive(self) -> AsyncGenerator[LiveResponse, None]:
        while True:
            frame = await self.outbox.get()
            if frame is None:
                return
            if frame.received is not None:
                yield frame.received.model_copy(deep=True)
            elif frame.error is not None:
                self.closed = True
                if frame.lost is not None:
                    raise LiveConnectionLost(frame.error.message, reason=frame.lost)
                _raise_recorded(frame.error)

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        left = sum(1 for f in self.frames[self.at :] if f.sent is not None)
        if left:
            self.player.live_leftovers.append(
                f"live exchange {self.exchange + 1} closed with {left} recorded request"
                f"{'' if left == 1 else 's'} never sent"
            )
        self.outbox.put_nowait(None)
