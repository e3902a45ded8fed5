"""`ScriptedLiveModel`: a live model for tests — each turn of the caller gets the next turn of
the script, over an in-process connection (no network)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any, NoReturn

from rondo.errors import ConfigurationError, ScriptExhaustedError
from rondo.models.base import ModelRequest
from rondo.models.live import (
    LiveConnectConfig,
    LiveConnection,
    LiveRequest,
    LiveResponse,
    live_only_error,
)
from rondo.types import Content, FunctionCall, Part

__all__ = ["ScriptedLiveConnection", "ScriptedLiveModel"]

LiveScriptItem = Any


def _responses(item: LiveScriptItem) -> list[LiveResponse | BaseException]:
    """One script item as what the connection sends, in order."""
    if isinstance(item, LiveResponse | BaseException):
        return [item]
    if isinstance(item, str):
        return [LiveResponse(content=Content.model(item), partial=True)]
    if isinstance(item, FunctionCall):
        item = [item]
    if isinstance(item, list) and item and all(isinstance(c, FunctionCall) for c in item):  # pyright: ignore[reportUnknownVariableType]
        calls: list[FunctionCall] = item  # pyright: ignore[reportUnknownVariableType]
        parts = [Part(function_call=c.model_copy(deep=True)) for c in calls]
        return [LiveResponse(content=Content(role="model", parts=parts))]
    raise ConfigurationError(f"ScriptedLiveModel cannot send {item!r}")


def _turn(items: LiveScriptItem) -> list[LiveResponse | BaseException]:
    """A script turn: one item or a list of them. A turn ends with `turn_complete` unless it
    ends on function calls (the model waits for their responses) or an exception."""
    if not isinstance(items, tuple | list) or (
        items and all(isinstance(c, FunctionCall) for c in items)  # pyright: ignore[reportUnknownVariableType]
    ):
        items = [items]
    out: list[LiveResponse | BaseException] = []
    for item in items:  # pyright: ignore[reportUnknownVariableType]
        out.extend(_responses(item))
    last = out[-1] if out else None
    ends_on_calls = (
        isinstance(last, LiveResponse)
        and last.content is not None
        and any(p.function_call for p in last.content.parts)
    )
    closes = isinstance(last, LiveResponse) and (last.turn_complete or last.go_away)
    if not isinstance(last, BaseException) and not ends_on_calls and not closes:
        out.append(LiveResponse(turn_complete=True))
    return out


class ScriptedLiveConnection:
    """One connection of a `ScriptedLiveModel`."""

    def __init__(self, model: ScriptedLiveModel) -> None:
        self._model = model
        self._outbox: asyncio.Queue[LiveResponse | BaseException | None] = asyncio.Queue()
        self.closed = False

    def push(self, responses: Sequence[LiveResponse | BaseException]) -> None:
        for response in responses:
            self._outbox.put_nowait(response)

    async def send(self, request: LiveRequest) -> None:
        if self.closed:
            raise BrokenPipeError("the scripted live connection is closed")
        self._model.received.append(request)
        if request.content is not None or request.activity_end or request.audio_stream_end:
            if request.content is not None and self._model.pushes_only(request.content):
                return
            self.push(await self._model.next_turn(request))

    async def receive(self) -> AsyncGenerator[LiveResponse, None]:
        while True:
            item = await self._outbox.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                self.closed = True
                raise item
            yield item

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._outbox.put_nowait(None)


class ScriptedLiveModel:
    """A live model that answers from a script of turns.

    A turn is one item or a list of items: a `str` (text), a `FunctionCall` or a list of them
    (a tool call; the next turn answers its response), a `LiveResponse` (sent as is: a
    transcription piece, a resumption handle, `go_away=True`), an exception (the connection
    fails with it, e.g. `ConnectionResetError()`), or a callable `(LiveRequest) -> turn`. Each
    content the caller sends (text, function responses) and each `send_activity_end()` takes
    the next turn; `greeting` is sent on every connect. Text sent as a streaming tool's chunk
    (`"Function … returned: …"`) takes no turn. `connect_errors[i]` fails connect number i.
    `.connects` records `(request, config)` per connect, `.received` every request.
    """

    def __init__(
        self,
        turns: Sequence[LiveScriptItem] = (),
        *,
        name: str = "scripted-live",
        greeting: LiveScriptItem = None,
        connect_errors: Sequence[BaseException | None] = (),
    ) -> None:
        self.name = name
        self.turns: list[LiveScriptItem] = list(turns)
        self.greeting = greeting
        self.connect_errors = list(connect_errors)
        self.connects: list[tuple[ModelRequest, LiveConnectConfig]] = []
        self.received: list[LiveRequest] = []
        self.connections: list[ScriptedLiveConnection] = []
        self._next = 0

    async def connect(self, request: ModelRequest, config: LiveConnectConfig) -> LiveConnection:
        index = len(self.connects)
        self.connects.append((request, config))
        if index < len(self.connect_errors) and self.connect_errors[index] is not None:
            raise self.connect_errors[index]  # pyright: ignore[reportGeneralTypeIssues]
        connection = ScriptedLiveConnection(self)
        self.connections.append(connection)
        if self.greeting is not None:
            connection.push(_turn(self.greeting))
        return connection

    def generate(self, request: ModelRequest, *, stream: bool = False) -> NoReturn:
        raise live_only_error(self)

    def pushes_only(self, content: Content) -> bool:
        text = content.text
        return text.startswith("Function ") and (" returned: " in text or " failed: " in text)

    async def next_turn(self, request: LiveRequest) -> list[LiveResponse | BaseException]:
        if self._next >= len(self.turns):
            return [
                ScriptExhaustedError(
                    f"ScriptedLiveModel {self.name!r} has {len(self.turns)} turns; the caller "
                    f"sent a turn past them: {request!r}"
                )
            ]
        item = self.turns[self._next]
        self._next += 1
        if callable(item) and not isinstance(item, type):
            produce: Callable[[LiveRequest], Any] = item
            item = produce(request)
            if inspect.isawaitable(item):
                item = await item
        return _turn(item)
