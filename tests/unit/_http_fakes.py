"""Recorded HTTP exchanges for the provider adapter tests: no test here touches a network.

`Exchanges` is an httpx2 `MockTransport` handler that answers each request with the next queued
response (or raises the next queued exception) and keeps every request for inspection.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2

Reply = httpx2.Response | Exception | Callable[[httpx2.Request], httpx2.Response]


class Exchanges:
    def __init__(self, *replies: Reply) -> None:
        self.replies: list[Reply] = list(replies)
        self.requests: list[httpx2.Request] = []

    def add(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if not self.replies:
            raise AssertionError(f"unexpected request {request.method} {request.url}")
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, httpx2.Response):
            return reply
        return reply(request)

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self))

    def body(self, index: int = -1) -> dict[str, Any]:
        """The JSON body of a recorded request."""
        return json.loads(self.requests[index].content)


def json_reply(
    body: Any, status: int = 200, headers: dict[str, str] | None = None
) -> httpx2.Response:
    return httpx2.Response(status, json=body, headers=headers)


def sse_reply(*events: Any, status: int = 200) -> httpx2.Response:
    """A server-sent-event body: a dict is `data: <json>`, a (name, dict) pair adds `event:`,
    a str is sent as-is (e.g. `"[DONE]"`)."""
    return httpx2.Response(
        status,
        headers={"content-type": "text/event-stream"},
        content=sse_body(*events).encode(),
    )


def sse_body(*events: Any) -> str:
    lines: list[str] = []
    for event in events:
        if isinstance(event, tuple):
            name, data = event
            lines.append(f"event: {name}\ndata: {json.dumps(data)}\n\n")
        elif isinstance(event, str):
            lines.append(f"data: {event}\n\n")
        else:
            lines.append(f"data: {json.dumps(event)}\n\n")
    return "".join(lines)


class _BrokenStream(httpx2.AsyncByteStream):
    """Sends `head`, then fails like a connection reset."""

    def __init__(self, head: str) -> None:
        self.head = head.encode()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.head
        raise httpx2.ReadError("connection reset by peer")


def broken_sse_reply(*events: Any) -> httpx2.Response:
    """An event stream that sends `events` and then drops the connection."""
    return httpx2.Response(
        200,
        headers={"content-type": "text/event-stream"},
        stream=_BrokenStream(sse_body(*events)),
    )
