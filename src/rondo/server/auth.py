"""Who is calling, and what they may touch (SPEC W3).

With `--auth-tokens FILE` (a JSON object `{"<token>": "<user id>", ...}`) every request but
`/health` and the static UI needs `Authorization: Bearer <token>`; the token's user is the
only user whose sessions, runs, pending calls and artifacts the request may reach, whatever
the path or body says. Without tokens (allowed on a loopback bind only) the caller may act
as any user, as with google-adk's dev server.

Tokens are kept as SHA-256 digests and looked up by digest, so the time a lookup takes says
nothing about how close a guess was.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, cast

from fastapi import Depends, HTTPException, Request

from rondo.errors import ConfigurationError

__all__ = [
    "Caller",
    "TokenAuth",
    "authorize",
    "caller",
    "load_tokens",
    "path_user",
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


def _unauthorized(message: str) -> HTTPException:
    return HTTPException(401, detail=message, headers={"WWW-Authenticate": "Bearer"})


async def caller(request: Request) -> str | None:
    """The calling user's id, or None when the server runs without tokens."""
    auth: TokenAuth | None = request.app.state.rondo.auth
    if auth is None:
        return None
    header = request.headers.get("authorization")
    if not header:
        raise _unauthorized("authentication required: send 'Authorization: Bearer <token>'")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _unauthorized("the Authorization header must be 'Bearer <token>'")
    user = auth.user_for(token.strip())
    if user is None:
        raise _unauthorized("invalid token")
    return user


Caller = Annotated[str | None, Depends(caller)]


def authorize(who: str | None, user_id: str) -> None:
    """Refuse (403) unless the caller may act as `user_id`."""
    if who is not None and who != user_id:
        raise HTTPException(403, detail="this token may not access another user's data")


async def path_user(user_id: str, who: Caller) -> str:
    """The `{user_id}` of the path, once the caller is allowed to act as that user."""
    authorize(who, user_id)
    return user_id
