"""Request bodies over `--max-body-bytes` are refused with 413, slow ones with 408 (SPEC W3).

A declared `Content-Length` over the limit is refused before a byte is read; a chunked body
(no length) is counted as it arrives and refused the moment it passes the limit, so no body
is ever held in memory beyond it. With a `read_timeout` (`--timeout-body`), each piece of a
body must arrive within that long of the previous one, or the request gets 408 and its
connection is closed (issue 26: a client trickling a body holds no route forever).
"""

from __future__ import annotations

import asyncio

from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BodyLimit", "BodyTimeoutError", "BodyTooLargeError"]


class BodyTooLargeError(HTTPException):
    # An HTTPException, so FastAPI answers it as one even while it parses a body.
    def __init__(self, limit: int) -> None:
        super().__init__(
            413,
            detail=f"request body too large: the limit is {limit} bytes "
            "(the server's --max-body-bytes)",
        )


class BodyTimeoutError(HTTPException):
    def __init__(self, seconds: float) -> None:
        super().__init__(
            408,
            detail=f"request timeout: the request's body stopped arriving for {seconds:g} s "
            "(the server's --timeout-body)",
            headers={"connection": "close"},
        )


class BodyLimit:
    """Pure ASGI middleware: at most `max_bytes` of request body, each piece within
    `read_timeout` seconds of the last (None: no limit)."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, read_timeout: float | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.read_timeout = read_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_bytes
        for key, value in scope["headers"]:
            if key == b"content-length":
                if value.isdigit() and int(value) > limit:
                    await _refusal(BodyTooLargeError(limit))(scope, receive, send)
                    return
                break
        received = 0
        started = False
        timeout = self.read_timeout
        body_done = False

        async def limited() -> Message:
            nonlocal received, body_done
            if timeout is None or body_done:
                message = await receive()  # after the body: waiting for a disconnect is fine
            else:
                message = await _within(timeout, receive)
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLargeError(limit)
                body_done = not message.get("more_body", False)
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited, tracked)
        except (BodyTooLargeError, BodyTimeoutError) as exc:
            if started:
                raise
            await _refusal(exc)(scope, receive, send)


async def _within(seconds: float, receive: Receive) -> Message:
    """`receive()`, or `BodyTimeoutError` after `seconds`: what `asyncio.timeout` does (a
    timer that cancels the task, told apart from any other cancellation), without its
    context manager's ~5 µs, twice a run (issue 25.5)."""
    task = asyncio.current_task()
    assert task is not None
    cancelling = task.cancelling()
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        task.cancel()

    timer = asyncio.get_running_loop().call_later(seconds, expire)
    try:
        return await receive()
    except asyncio.CancelledError:
        if expired and task.uncancel() <= cancelling:
            raise BodyTimeoutError(seconds) from None
        raise
    finally:
        timer.cancel()


def _refusal(exc: HTTPException) -> JSONResponse:
    """The refusal as a starlette response (called as an ASGI app): `{"detail": ...}`, as
    FastAPI answers an HTTPException, and the connection closed — the rest of the body is
    not read."""
    return JSONResponse(
        {"detail": exc.detail}, status_code=exc.status_code, headers={"connection": "close"}
    )
