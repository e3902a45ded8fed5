"""Runs as Server-Sent Events, and one run per session at a time (SPEC W1, W2, W3).

A stream is opened by taking its first item before any byte is sent: a request that cannot
run (a session another run is using, a session that is gone) still gets a plain 4xx answer.
After that every item is one `data: <json>` line and a blank line, as google-adk frames them;
a run that fails later ends its stream with one error event, never with a dropped
connection. Whatever way the stream ends — finished, failed, or the client went away — the
run's generator is closed and the session is free again.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable
from typing import Any

import pydantic_core
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from rondo.errors import InvalidMessageError, SessionNotFoundError, StaleSessionError
from rondo.server.discovery import AppNotFoundError
from rondo.server.errors import BadRequestError, NotFoundError, RunInProgressError, stream_error

__all__ = ["ActiveRuns", "Frames", "dumps", "open_stream", "sse"]

logger = logging.getLogger("rondo.server")

Frames = Callable[[Any], Iterable[bytes]]

# Errors that mean "this request cannot run": answered with a status while still possible.
_REFUSALS = (
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


def sse(payload: bytes) -> bytes:
    """One SSE frame: a single `data:` line (the JSON has no newline) and a blank line."""
    return b"data: " + payload + b"\n\n"


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


class _RunStream(StreamingResponse):
    """A streaming response that always runs its clean-up, even if never iterated."""

    def __init__(
        self, chunks: AsyncGenerator[bytes, None], cleanup: Callable[[], Awaitable[None]]
    ) -> None:
        super().__init__(chunks, media_type="text/event-stream", headers=_HEADERS)
        self._chunks = chunks
        self._cleanup = cleanup

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self._chunks.aclose()
            await self._cleanup()


async def open_stream(
    items: AsyncGenerator[Any, None],
    frames: Frames,
    *,
    release: Callable[[], Awaitable[None]],
    error_payload: Callable[[BaseException], dict[str, Any]] = stream_error,
) -> Response:
    """Start `items` and answer with their SSE stream (or with the error that stops them)."""
    closed = False

    async def cleanup() -> None:
        nonlocal closed
        if closed:
            return
        closed = True
        try:
            await items.aclose()
        finally:
            await release()

    try:
        first = await anext(items)
    except StopAsyncIteration:
        await cleanup()
        return StreamingResponse(_empty(), media_type="text/event-stream", headers=_HEADERS)
    except _REFUSALS:
        await cleanup()
        raise
    except Exception as exc:
        # Like ADK: the run was accepted, so its failure is the stream's one event.
        await cleanup()
        return Response(
            sse(dumps(error_payload(exc))), media_type="text/event-stream", headers=_HEADERS
        )
    except BaseException:
        await cleanup()
        raise

    async def chunks() -> AsyncGenerator[bytes, None]:
        try:
            for chunk in frames(first):
                yield chunk
            async for item in items:
                for chunk in frames(item):
                    yield chunk
        except Exception as exc:
            last = sse(dumps(error_payload(exc)))
        else:
            last = b""
        # The session is freed before the response ends: a client that read the whole answer
        # may send its next message to any replica at once.
        await cleanup()
        if last:
            yield last

    return _RunStream(chunks(), cleanup)


async def _empty() -> AsyncGenerator[bytes, None]:
    return
    yield b""  # pragma: no cover - makes this an async generator
