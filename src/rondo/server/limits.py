"""Request bodies over `--max-body-bytes` are refused with 413 (SPEC W3).

A declared `Content-Length` over the limit is refused before a byte is read; a chunked body
(no length) is counted as it arrives and refused the moment it passes the limit, so no body
is ever held in memory beyond it.
"""

from __future__ import annotations

import json

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BodyLimit", "BodyTooLargeError"]


class BodyTooLargeError(HTTPException):
    # An HTTPException, so FastAPI answers it as one even while it parses a body.
    def __init__(self, limit: int) -> None:
        super().__init__(
            413,
            detail=f"request body too large: the limit is {limit} bytes "
            "(the server's --max-body-bytes)",
        )


class BodyLimit:
    """Pure ASGI middleware: at most `max_bytes` of request body."""

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_bytes
        for key, value in scope["headers"]:
            if key == b"content-length":
                if value.isdigit() and int(value) > limit:
                    await _refuse(send, limit)
                    return
                break
        received = 0
        started = False

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLargeError(limit)
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited, tracked)
        except BodyTooLargeError:
            if started:
                raise
            await _refuse(send, limit)


async def _refuse(send: Send, limit: int) -> None:
    body = json.dumps({"detail": BodyTooLargeError(limit).detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
