"""Runs as Server-Sent Events, and one run per session at a time (SPEC W1, W2, W3, W7).

A stream is opened once its run has its first item, before any byte is sent: a request that
cannot run (a session another run is using, a session that is gone) still gets a plain 4xx
answer. After that every frame is an `id:` line and one `data: <json>` line, then a blank
line (google-adk's framing plus the SSE id a client rejoins with; the lifecycle stream names
each frame's event first, as `rondo.lifecycle.to_sse` does); a run that fails later
ends its stream with one error frame, never with a dropped connection. The stream is only a
subscription: a client that goes away leaves the run going (`rondo.server.runs`), unless it
asked to stop it then (`onDisconnect: "cancel"`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Callable, Iterable
from typing import Any

import pydantic_core
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from rondo.errors import InvalidMessageError, SessionNotFoundError, StaleSessionError
from rondo.lifecycle import sse_frame
from rondo.server.discovery import AppNotFoundError
from rondo.server.errors import BadRequestError, NotFoundError, RunInProgressError

__all__ = ["REFUSALS", "ActiveRuns", "Frames", "dumps", "event_stream", "sse"]

logger = logging.getLogger("rondo.server")

Frames = Callable[[Any], Iterable[bytes]]

# Errors that mean "this request cannot run": answered with a status while still possible.
REFUSALS = (
    StaleSessionError,
    RunInProgressError,
    SessionNotFoundError,
    NotFoundError,
    AppNotFoundError,
    BadRequestError,
    InvalidMessageError,  # a message no store can hold: refused before it is stored
)

_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def dumps(value: Any) -> bytes:
    """Compact JSON, as FastAPI writes it; values JSON cannot hold are written as text."""
    return pydantic_core.to_json(value, fallback=str)


# One SSE frame: a single `data:` line and a blank line (`rondo.lifecycle.sse_frame`, the one
# framer; the lifecycle stream names its events and every run route adds ids).
sse = sse_frame


class ActiveRuns:
    """The sessions a run is going on in, in this process.

    A second run on a busy session is refused at once (409) instead of interleaving its
    events with the first; across processes the session store's version check
    (`StaleSessionError`) is what refuses it.
    """

    def __init__(self) -> None:
        self._busy: set[tuple[str, str, str]] = set()

    def claim(self, app_name: str, user_id: str, session_id: str) -> Callable[[], None]:
        key = (app_name, user_id, session_id)
        if key in self._busy:
            raise RunInProgressError(
                f"session {session_id!r} is busy: another run on it has not finished; "
                "send the message again when it has"
            )
        self._busy.add(key)
        return lambda: self._busy.discard(key)

    def __len__(self) -> int:
        return len(self._busy)


class _Subscription(StreamingResponse):
    """An SSE subscription to a run; `on_leave` runs when the response ends, however.

    A client that leaves ends the subscription at once (the run is not its to stop). It is
    watched for with one small task reading `receive`, which cancels the stream's wait and
    is told apart from any other cancellation: Starlette's own disconnect listener (an
    anyio task group of two tasks per response) cost a fifth of a run's Python calls."""

    def __init__(
        self, frames: AsyncGenerator[bytes, None], on_leave: Callable[[], object] | None
    ) -> None:
        super().__init__(frames, media_type="text/event-stream", headers=_HEADERS)
        self._frames = frames
        self._on_leave = on_leave
        self._left = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        task = asyncio.current_task()
        assert task is not None
        watcher = asyncio.get_running_loop().create_task(self._watch(receive, task))
        try:
            await self.stream_response(send)
        except asyncio.CancelledError:
            if not self._left or task.uncancel():
                raise  # cancelled for another reason (the server stops)
        except OSError:
            pass  # the client left (an ASGI 2.4 server says so when a frame is sent)
        finally:
            self._left = True  # from here on a disconnect is the end of the response
            watcher.cancel()
            await self._frames.aclose()
            if self._on_leave is not None:
                self._on_leave()

    async def _watch(self, receive: Receive, task: asyncio.Task[Any]) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        if not self._left:
            self._left = True
            task.cancel()


def event_stream(
    frames: AsyncGenerator[bytes, None], *, on_leave: Callable[[], object] | None = None
) -> Response:
    """Answer with `frames` as an SSE stream; `on_leave` is called when the response ends
    (a client that read to the end, or one that left)."""
    return _Subscription(frames, on_leave)
