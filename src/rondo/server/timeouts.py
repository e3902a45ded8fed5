"""Slow and idle clients are bounded (issue 26, SPEC W3): three timeouts, all configurable.

- keep-alive (`--timeout-keep-alive`, 5 s): an idle connection between two requests is closed
  (uvicorn's own `timeout_keep_alive`);
- header (`--timeout-header`, 10 s): a connection must send a request's whole head within this
  long of connecting, or of the end of its previous request; otherwise it gets `408` and is
  closed. uvicorn has no such limit (a client that opens a connection and sends a byte now
  and then holds it forever), so the server runs uvicorn's own HTTP protocol with a timer
  added: `protocol_with_header_timeout`;
- body (`--timeout-body`, 30 s): once a request's head is in, each piece of its body must
  arrive within this long of the previous one, as nginx's `client_body_timeout`; otherwise
  `408` and the connection is closed (`BodyLimit`, beside the size limit).

Nothing here costs a request that arrives at once: one timer per request head.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from dataclasses import dataclass
from typing import Any

from rondo.errors import ConfigurationError

__all__ = [
    "ServerTimeouts",
    "protocol_with_header_timeout",
    "timeout_response",
    "uvicorn_options",
]


@dataclass(frozen=True)
class ServerTimeouts:
    """How long the server waits for a client, in seconds (each > 0)."""

    keep_alive: float = 5.0
    header: float = 10.0
    body: float = 30.0

    def __post_init__(self) -> None:
        for name in ("keep_alive", "header", "body"):
            value = getattr(self, name)
            if not value > 0:
                raise ConfigurationError(f"the {name} timeout must be positive, got {value}")


def uvicorn_options(timeouts: ServerTimeouts, http: str = "auto") -> dict[str, Any]:
    """The `uvicorn.Config` arguments that apply the keep-alive and header timeouts (the body
    timeout is the app's: `create_app(body_timeout=...)`), and uvicorn's logging with a
    cheaper access-log formatter writing the same lines (`rondo.server.access_log`)."""
    from rondo.server.access_log import log_config as access_log_config  # uvicorn: lazily

    return {
        "timeout_keep_alive": timeouts.keep_alive,
        "http": protocol_with_header_timeout(timeouts.header, http),
        "log_config": access_log_config(),
    }


def timeout_response(what: str, seconds: float) -> bytes:
    """A whole `408 Request Timeout` answer that closes the connection."""
    body = json.dumps(
        {"detail": f"request timeout: the request's {what} did not arrive within {seconds:g} s"}
    ).encode()
    return (
        b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body
    )


def _base_protocol(http: str) -> type[Any]:
    """uvicorn's HTTP protocol class for `http` ("auto": httptools when installed, as uvicorn)."""
    if http == "auto":
        http = "httptools" if importlib.util.find_spec("httptools") is not None else "h11"
    if http == "httptools":
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        return HttpToolsProtocol
    if http == "h11":
        from uvicorn.protocols.http.h11_impl import H11Protocol

        return H11Protocol
    raise ConfigurationError(f"unknown HTTP implementation {http!r}: auto, httptools or h11")


class BatchedWrites:
    """A connection's transport whose writes of one event-loop turn leave as one send.

    uvicorn writes a response's head and its body (and each SSE frame) with a `write` each,
    and uvloop sends each at once: a system call apiece. Held until the loop's next turn, the
    head and body of a plain answer, and the head and first frame of a stream, go out in one.
    Everything else is the transport's; closing sends what is held first."""

    __slots__ = ("_loop", "_pending", "transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self._loop = loop
        self._pending: list[bytes] | None = None

    def write(self, data: bytes) -> None:
        pending = self._pending
        if pending is None:
            self._pending = [data]
            self._loop.call_soon(self.flush)
        else:
            pending.append(data)

    def flush(self) -> None:
        pending = self._pending
        if pending is None:
            return
        self._pending = None
        if not self.transport.is_closing():
            self.transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def abort(self) -> None:
        self._pending = None
        self.transport.abort()

    def get_write_buffer_size(self) -> int:
        pending = self._pending
        held = sum(map(len, pending)) if pending else 0
        return held + self.transport.get_write_buffer_size()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


def protocol_with_header_timeout(seconds: float, http: str = "auto") -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol, closing a connection whose request head is late (`408`)."""
    from rondo.server.access_log import AccessLog  # uvicorn: lazily

    base = _base_protocol(http)

    class HeaderTimeoutProtocol(base):  # type: ignore[misc, valid-type]  # pyright: ignore[reportUntypedBaseClass]
        """A timer runs from the connection (or the end of a request) until the next request's
        head is parsed; uvicorn's parser makes a new request cycle exactly then."""

        _timer: asyncio.TimerHandle | None = None
        _seen: Any = None  # the request cycle whose head stopped the timer
        _partial = False  # bytes of a request head arrived while the timer ran
        _batched: BatchedWrites | None = None

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)  # pyright: ignore[reportUnknownMemberType]
            # The access lines of the server's own logging configuration, written directly.
            # Duck-typed: uvicorn calls only the logger's `info`.
            self.access_logger = AccessLog(self.access_logger)  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportArgumentType]

        def connection_made(self, transport: asyncio.Transport) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
            super().connection_made(transport)  # pyright: ignore[reportUnknownMemberType]
            self._batched = self.transport = BatchedWrites(transport, self.loop)
            self._arm()

        def handle_websocket_upgrade(self, *args: Any) -> None:
            # The WebSocket protocol writes to the socket's own transport.
            batched = self._batched
            if batched is not None:
                batched.flush()
                self.transport = batched.transport
            super().handle_websocket_upgrade(*args)  # pyright: ignore[reportUnknownMemberType]

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)  # pyright: ignore[reportUnknownMemberType]

        def data_received(self, data: bytes) -> None:
            super().data_received(data)  # pyright: ignore[reportUnknownMemberType]
            cycle = self.cycle
            if cycle is not None and cycle is not self._seen:
                self._seen = cycle  # a new request's head is in
                self._disarm()
            elif cycle is None or cycle.response_complete:
                self._partial = True
                if self._timer is None:
                    self._arm()

        def _arm(self) -> None:
            self._timer = self.loop.call_later(seconds, self._expired)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _expired(self) -> None:
            self._timer = None
            transport = self.transport
            if transport.is_closing():
                return
            cycle = self.cycle
            if cycle is not None and not cycle.response_complete:
                return  # a response is being written: this head was not the late one
            if self._partial:
                transport.write(timeout_response("head", seconds))
            transport.close()

    return HeaderTimeoutProtocol
