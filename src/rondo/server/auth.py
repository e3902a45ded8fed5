"""Who is calling, and what they may touch (SPEC W3).

With `--auth-tokens FILE` (a JSON object `{"<token>": "<user id>", ...}`) every request but
`/health`, the OpenAPI document, the static UI and A2A agent cards needs `Authorization: Bearer <token>`; the token's user is the
only user whose sessions, runs, pending calls and artifacts the request may reach, whatever
the path or body says. Without tokens (allowed on a loopback bind only) the caller may act
as any user, as with google-adk's dev server.

Tokens are kept as SHA-256 digests and looked up by digest, so the time a lookup takes says
nothing about how close a guess was.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qs

from fastapi import HTTPException, Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from rondo.errors import ConfigurationError
from rondo.sessions.base import APP_PREFIX

__all__ = [
    "BEARER_SUBPROTOCOL",
    "SUBPROTOCOL_KEY",
    "TokenAuth",
    "TokenMiddleware",
    "authorize",
    "caller",
    "check_shared_state",
    "load_tokens",
]


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


class TokenAuth:
    """Bearer tokens → user ids."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        if not tokens:
            raise ConfigurationError("the auth tokens file maps no tokens to users")
        self._users = {_digest(token): user for token, user in tokens.items()}

    def user_for(self, token: str) -> str | None:
        return self._users.get(_digest(token))


def load_tokens(path: str | Path) -> TokenAuth:
    """Read a tokens file: a JSON object mapping each bearer token to a user id."""
    file = Path(path).expanduser()
    try:
        raw: Any = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigurationError(f"cannot read the auth tokens file {str(path)!r}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"the auth tokens file {str(path)!r} is not JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigurationError(
            f'the auth tokens file {str(path)!r} must be a JSON object {{"token": "user id"}}'
        )
    tokens = cast(dict[Any, Any], raw)
    bad = [k for k, v in tokens.items() if not isinstance(v, str) or not v or not k]
    if bad:
        raise ConfigurationError(
            f"the auth tokens file {str(path)!r} maps {len(bad)} token(s) to something other "
            "than a non-empty user id string"
        )
    return TokenAuth(cast(dict[str, str], tokens))


# Reachable without a token: the health check, the API's own description, and (under `rondo
# web`) the UI's static files, which hold no data. Everything else needs one.
_PUBLIC = frozenset({"/health", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})
_API_PREFIXES = ("/apps/", "/run", "/list-apps", "/version", "/config/", "/dev/")
USER_KEY = "rondo.user"
# A2A agent cards: a client learns from them that calls need a token (A2A §8.2). An
# extended card, with what only callers should see, is a JSON-RPC call: it needs one.
_PUBLIC_CARD = re.compile(r"(/a2a/[^/]+)?/\.well-known/agent(-card)?\.json")


class TokenMiddleware:
    """Pure ASGI: resolves the bearer token to a user id before any route runs (401 if it
    cannot), and leaves it in the request scope for `caller`.

    A middleware rather than a FastAPI dependency: it answers before the body is even read,
    so no unauthenticated request reaches validation, and it costs a dict lookup where a
    dependency costs a hundred-odd Python calls per request.
    """

    def __init__(self, app: ASGIApp, *, auth: TokenAuth | None, web: bool = False) -> None:
        self.app = app
        self.auth = auth
        self.web = web

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        auth = self.auth
        if auth is None or not self._needs_token(scope):
            scope[USER_KEY] = None
            await self.app(scope, receive, send)
            return
        user, problem = _resolve(auth, scope)
        if user is None:
            await _refuse(scope, receive, send, problem)
            return
        scope[USER_KEY] = user
        await self.app(scope, receive, send)

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket (the live routes) needs the token as every API route does; without
        one the handshake is refused (HTTP 403, as a refused WebSocket is) before any route."""
        scope[USER_KEY] = None
        if self.auth is not None:
            user, problem = _resolve_websocket(self.auth, scope)
            if user is None:
                await send({"type": "websocket.close", "code": 1008, "reason": problem})
                return
            scope[USER_KEY] = user
        await self.app(scope, receive, send)

    def _needs_token(self, scope: Scope) -> bool:
        path: str = scope["path"]
        if path in _PUBLIC:
            return False
        if scope["method"] in ("GET", "HEAD") and _PUBLIC_CARD.fullmatch(path):
            return False
        if self.web and scope["method"] in ("GET", "HEAD"):
            return path.startswith(_API_PREFIXES)
        return True


def _resolve(auth: TokenAuth, scope: Scope) -> tuple[str | None, str]:
    header = next((v for k, v in scope["headers"] if k == b"authorization"), None)
    if not header:
        return None, "authentication required: send 'Authorization: Bearer <token>'"
    scheme, _, token = header.decode("latin-1").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None, "the Authorization header must be 'Bearer <token>'"
    user = auth.user_for(token)
    return (user, "") if user is not None else (None, "invalid token")


# A browser cannot set headers on a WebSocket: it may offer the token as a subprotocol
# `rondo.bearer.<token>` (the server echoes the one it took) or as `?access_token=<token>`.
BEARER_SUBPROTOCOL = "rondo.bearer."
SUBPROTOCOL_KEY = "rondo.subprotocol"


def _resolve_websocket(auth: TokenAuth, scope: Scope) -> tuple[str | None, str]:
    """The WebSocket's user: from the Authorization header when there is one, else from a
    `rondo.bearer.<token>` subprotocol, else from an `access_token` query parameter."""
    if any(k == b"authorization" for k, _ in scope["headers"]):
        return _resolve(auth, scope)
    offered: list[str] = list(scope.get("subprotocols") or [])
    for protocol in offered:
        if protocol.startswith(BEARER_SUBPROTOCOL):
            user = auth.user_for(protocol.removeprefix(BEARER_SUBPROTOCOL))
            if user is None:
                return None, "invalid token"
            scope[SUBPROTOCOL_KEY] = protocol
            return user, ""
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    tokens = query.get("access_token")
    if tokens:
        user = auth.user_for(tokens[0])
        return (user, "") if user is not None else (None, "invalid token")
    return None, (
        "authentication required: send 'Authorization: Bearer <token>', a "
        "'rondo.bearer.<token>' subprotocol or '?access_token=<token>'"
    )


async def _refuse(scope: Scope, receive: Receive, send: Send, problem: str) -> None:
    refusal = JSONResponse({"detail": problem}, 401, headers={"www-authenticate": "Bearer"})
    await refusal(scope, receive, send)


def caller(request: Request) -> str | None:
    """The calling user's id, or None when the server runs without tokens."""
    return request.scope.get(USER_KEY)


def authorize(who: str | None, user_id: str) -> None:
    """Refuse (403) unless the caller may act as `user_id`."""
    if who is not None and who != user_id:
        raise HTTPException(403, detail="this token may not access another user's data")


def check_shared_state(who: str | None, delta: Mapping[str, object] | None) -> None:
    """Refuse (403) a client's write of `app:` state when the server has users.

    `app:` keys are one state shared by every user of the app: with tokens, a user writing
    them would change what every other user's runs see.
    """
    if who is None or not delta:
        return
    shared = sorted(k for k in delta if k.startswith(APP_PREFIX))
    if shared:
        raise HTTPException(
            403,
            detail=f"'app:' state is shared by every user of the app; a client may not write "
            f"it ({', '.join(shared)})",
        )
