"""Requests a browser was tricked into sending are refused before any route runs (SPEC W3).

Two checks, as a plain ASGI middleware:

- On a loopback bind, the `Host` header must name the loopback (`localhost`, `127.0.0.1`,
  `[::1]`, any port). A page on another site whose name an attacker re-points at 127.0.0.1
  (DNS rebinding) would otherwise be same-origin with this server, tokens or not.
- A request that changes something (any method but GET, HEAD, OPTIONS; any WebSocket) and carries an
  `Origin` of another site is refused unless that origin was allowed with `--allow-origin`.
  CORS alone stops the page from *reading* the answer, not the request from running.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["RequestGuard", "is_loopback"]

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def is_loopback(host: str) -> bool:
    """Whether binding `host` only accepts connections from this machine."""
    name = host.strip("[]").lower()
    if name in _LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _host_name(host_header: str) -> str:
    # "[::1]:8000" → "::1"; "localhost:8000" → "localhost"
    if host_header.startswith("["):
        return host_header[1 : host_header.find("]")].lower()
    return host_header.rsplit(":", 1)[0].lower() if host_header.count(":") == 1 else host_header


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


class RequestGuard:
    """Refuses DNS-rebinding hosts (on loopback binds) and foreign-origin writes."""

    def __init__(
        self, app: ASGIApp, *, loopback_only: bool, allowed_origins: Iterable[str] = ()
    ) -> None:
        self.app = app
        self.loopback_only = loopback_only
        self.allowed_origins = frozenset(o.rstrip("/") for o in allowed_origins)
        # Host header → whether it names the loopback (every request sends one of a few).
        self._loopback: dict[str, bool] = {}

    def _is_loopback(self, host: str) -> bool:
        known = self._loopback.get(host)
        if known is None:
            if len(self._loopback) >= 256:
                self._loopback.clear()
            known = self._loopback[host] = is_loopback(_host_name(host))
        return known

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            # A page of any site may open a WebSocket to us (no CORS): checked as a write.
            problem = self._problem(scope)
            if problem is None:
                await self.app(scope, receive, send)
            else:
                await send({"type": "websocket.close", "code": 1008, "reason": problem[:123]})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = self._problem(scope)
        if problem is None:
            await self.app(scope, receive, send)
            return
        await JSONResponse({"detail": problem}, status_code=403)(scope, receive, send)

    def _problem(self, scope: Scope) -> str | None:
        host = _header(scope, b"host") or ""
        if self.loopback_only and not self._is_loopback(host):
            return (
                f"Host {host!r} is not this loopback server's; open it as http://localhost "
                "or http://127.0.0.1"
            )
        if scope.get("method") in _SAFE_METHODS:
            return None
        origin = _header(scope, b"origin")
        if origin is None:
            return None
        origin = origin.rstrip("/")
        if origin in self.allowed_origins or "*" in self.allowed_origins:
            return None
        if origin != "null" and urlsplit(origin).netloc.lower() == host.lower():
            return None  # same origin: the server's own UI
        return (
            f"cross-origin request from {origin!r} refused; start the server with "
            f"--allow-origin {origin} to allow it"
        )
