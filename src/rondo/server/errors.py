"""The one place that turns errors into HTTP answers (SPEC W3).

Every answer is FastAPI's `{"detail": ...}` shape. rondo's own errors carry messages written
for users and are passed on — but for the store's own failures (a database that is down or
locked, a schema of another version), whose messages name the database, its path or its SQL:
those reach the client as a fixed sentence saying what to do, and the server log has the rest
(issue 26). Anything else is logged with its traceback on the server and reaches the client as
one generic line, so no traceback, path or secret ever leaves it. A run
that fails after its stream started ends with one error event instead (`stream_error`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.responses import Response

from rondo.errors import (
    ConfigurationError,
    InvalidArtifactNameError,
    InvalidIdError,
    InvalidMessageError,
    InvalidPageError,
    InvalidStateValueError,
    InvocationNotFoundError,
    ModelError,
    RondoError,
    SchemaVersionError,
    SessionExistsError,
    SessionNotFoundError,
    StaleSessionError,
    StoreUnavailableError,
)
from rondo.server.discovery import AppLoadError, AppNotFoundError

__all__ = [
    "BadRequestError",
    "InvalidValueError",
    "NotFoundError",
    "RunInProgressError",
    "SafeRoute",
    "VersionConflictError",
    "answer_safely",
    "describe",
    "install_error_handlers",
    "status_for",
    "stream_error",
]

logger = logging.getLogger("rondo.server")

INTERNAL = "internal server error; the server log has the details"


def _internal(exc: BaseException) -> str:
    # The type only: a message may hold paths, hosts or secrets.
    return f"{type(exc).__name__}: {INTERNAL}"


class BadRequestError(RondoError, ValueError):
    """A request that is well-formed JSON but asks for something that cannot be done."""


class NotFoundError(RondoError, LookupError):
    """A session, artifact or pending call that does not exist (for this user)."""


class InvalidValueError(RondoError, ValueError):
    """A request value FastAPI's own validation cannot check (answered 422, as ADK does)."""


class RunInProgressError(RondoError):
    """Another run of this session is still going on in this server."""


class VersionConflictError(RondoError):
    """A rewind computed from a session version that is no longer the stored one (409)."""


# Most specific first: the first matching class decides.
_STATUS: tuple[tuple[type[BaseException], int], ...] = (
    (AppNotFoundError, 404),
    (SessionNotFoundError, 404),
    (InvocationNotFoundError, 404),
    (NotFoundError, 404),
    (SessionExistsError, 409),
    (StaleSessionError, 409),
    (RunInProgressError, 409),
    (VersionConflictError, 409),
    (InvalidArtifactNameError, 400),
    (InvalidIdError, 400),
    (InvalidPageError, 400),
    (BadRequestError, 400),
    (InvalidValueError, 422),
    (InvalidStateValueError, 422),
    (InvalidMessageError, 422),
    (ModelError, 502),
    (StoreUnavailableError, 503),
    (AppLoadError, 500),
    (ConfigurationError, 500),
)


def status_for(exc: BaseException) -> int:
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            return status
    return 500


# What a client reads about a store failure: the message itself names the database.
STORE_UNAVAILABLE = (
    "StoreUnavailableError: the session store is unavailable (its database is down, "
    "restarting, or locked by another process); read the session to see what was stored, "
    "then send the request again shortly (the server log has the details)"
)
SCHEMA_MISMATCH = (
    "SchemaVersionError: the session store's database schema does not match this server's "
    "version of rondo; its operator must migrate it (the server log has the details)"
)


def describe(exc: BaseException) -> str:
    """What a client may read about `exc`: rondo's message, or a generic line."""
    if isinstance(exc, _PLAIN):
        return str(exc)
    if isinstance(exc, StoreUnavailableError):
        return STORE_UNAVAILABLE
    if isinstance(exc, SchemaVersionError):
        return SCHEMA_MISMATCH
    if isinstance(exc, StaleSessionError):
        # The store's message speaks to library users (re-read the handle); this one to clients.
        return (
            "StaleSessionError: the session changed while this run was writing to it "
            "(another run, perhaps on another server); the run stopped there, so send the "
            "message again"
        )
    if isinstance(exc, RondoError):
        return f"{type(exc).__name__}: {exc}"
    return _internal(exc)


# Errors whose message is the whole answer (ADK's "Session not found" has no type prefix).
_PLAIN = (
    AppNotFoundError,
    NotFoundError,
    BadRequestError,
    InvalidValueError,
    SessionNotFoundError,
    SessionExistsError,
    RunInProgressError,
)


def stream_error(exc: BaseException) -> dict[str, object]:
    """The final SSE event of a run that failed mid-stream, in ADK's shape."""
    message = describe(exc)
    if not isinstance(exc, RondoError) or status_for(exc) >= 500:
        logger.error("a run failed mid-stream", exc_info=exc)
    return {
        "error": message,
        "error_details": {
            "error_type": type(exc).__name__,
            "error_message": message,
            "timestamp": time.time(),
        },
    }


async def _rondo_error(request: Request, exc: Exception) -> JSONResponse:
    status = status_for(exc)
    if status >= 500:
        logger.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    # A store that is down or locked is worth asking again: say when, as HTTP does.
    headers = {"Retry-After": "2"} if status == 503 else None
    return JSONResponse({"detail": describe(exc)}, status_code=status, headers=headers)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    logger.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return JSONResponse({"detail": _internal(exc)}, status_code=500)


async def answer_safely(request: Request, handle: Callable[[], Awaitable[Response]]) -> Response:
    """`handle()`'s answer; an unexpected error becomes the 500 answer right here (the
    expected ones are raised on to their handlers). See `SafeRoute`."""
    try:
        return await handle()
    except (HTTPException, RequestValidationError, RondoError):
        raise  # answered by their handlers
    except Exception as exc:
        return await _unexpected(request, exc)


class SafeRoute(APIRoute):
    """A route whose unexpected errors become a 500 answer right here.

    Left to Starlette, an error that no handler claims is answered and then raised again
    (for the server's log), and the server drops the connection: the client's next request on
    it fails. Caught here, it is logged once and the connection lives on.
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def safe(request: Request) -> Response:
            return await answer_safely(request, lambda: handler(request))

        return safe


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RondoError, _rondo_error)
    app.add_exception_handler(Exception, _unexpected)
