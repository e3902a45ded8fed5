"""Leaner routing for the three requests every run makes (issue 25.5).

A client runs an agent with: create a session (`POST /apps/{app}/users/{user}/sessions`), run
it (`POST /run_sse`), read the session back (`GET …/sessions/{id}`). Through FastAPI each
request pays its routing, dependency solving, content-type parsing (`email.message`), body
validation and built-in telemetry: ~300 Python calls, a third of a run's server work
(bench/SERVER.md). `HotRoute` goes first in the app's routes and answers exactly those
requests when they are plain — no `root_path`, a JSON body (`Content-Type: application/json`)
that parses and validates — by calling the very route functions FastAPI would call with the
very body models it would build. Anything else (a body that fails validation, another
content type, an empty body where one is required) goes to FastAPI's own route, with the
body it already read, so every answer — errors included — is FastAPI's. The routes stay
in the OpenAPI schema as they are.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel, ValidationError
from pydantic_core import from_json
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rondo.server import adk_routes
from rondo.server.errors import answer_safely
from rondo.server.runs import DetachedRunRequest
from rondo.server.wire import CreateSessionRequest

__all__ = ["HotRoute", "RondoApp", "install_hot_routes"]

_SKIP = "rondo.hot_route.skip"  # set on a request handed back to FastAPI's routes
_FOUND = "rondo.hot_route"  # what `matches` found, for `handle`

# What a hot request is: (body model, body required, the route function's call).
_Call = Callable[[Request, list[str], Any], Awaitable[Response]]


async def _create(request: Request, parts: list[str], body: Any) -> Response:
    return await adk_routes.create_session(parts[2], parts[4], request, body)


async def _get(request: Request, parts: list[str], body: Any) -> Response:
    return await adk_routes.get_session(parts[2], parts[4], parts[6], request)


async def _run_sse(request: Request, parts: list[str], body: Any) -> Response:
    return await adk_routes.run_sse(body, request)


_CREATE = (CreateSessionRequest, False, _create)
_GET = (None, False, _get)
_RUN_SSE = (DetachedRunRequest, True, _run_sse)


def _which(scope: Scope) -> tuple[tuple[type[BaseModel] | None, bool, _Call], list[str]] | None:
    """The hot request this is, and its path split on "/"; None for any other."""
    if scope.get("root_path") or _SKIP in scope:
        return None
    path: str = scope["path"]
    method: str = scope["method"]
    if path == "/run_sse":
        return (_RUN_SSE, []) if method == "POST" else None
    if not path.startswith("/apps/"):
        return None
    parts = path.split("/")  # "", "apps", app, "users", user, "sessions"[, id]
    if parts[3:4] != ["users"] or parts[5:6] != ["sessions"] or not all(parts[2:]):
        return None
    if len(parts) == 6 and method == "POST":
        return _CREATE, parts
    if len(parts) == 7 and method == "GET":
        return _GET, parts
    return None


class HotRoute(BaseRoute):
    """The hot requests, answered through the route functions without FastAPI's per-request
    machinery (see the module); `fallback` is the router to hand every other case to."""

    def __init__(self, fallback: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self._fallback = fallback

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        found = _which(scope) if scope["type"] == "http" else None
        if found is None:
            return Match.NONE, {}
        return Match.FULL, {_FOUND: found}

    def url_path_for(self, name: str, /, **path_params: Any) -> Any:
        from starlette.routing import NoMatchFound

        raise NoMatchFound(name, path_params)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        response = await self.respond(request, scope[_FOUND], self._fallback, send)
        if response is not None:
            await response(scope, receive, send)

    async def respond(
        self,
        request: Request,
        found: tuple[tuple[type[BaseModel] | None, bool, _Call], list[str]],
        fallback: Callable[[Scope, Receive, Send], Awaitable[None]],
        send: Send,
    ) -> Response | None:
        """The answer to a hot request, or None once `fallback` (FastAPI) has answered it."""
        (model, required, call), parts = found
        body: Any = None
        if model is not None:
            raw = await _body(request.receive)
            body = _parse(model, required, raw, request.headers.get("content-type"))
            if body is _FASTAPI:
                await _hand_over(request.scope, raw, request.receive, send, fallback)
                return None
        return await answer_safely(request, lambda: call(request, parts, body))


async def _body(receive: Receive) -> bytes:
    """The whole request body, as `Request.body` reads it, without its async generator (an
    async generator's first step and close cost a dozen Python calls)."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.request":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)
        elif message["type"] == "http.disconnect":
            raise ClientDisconnect


async def _hand_over(
    scope: Scope,
    raw: bytes,
    receive: Receive,
    send: Send,
    fallback: Callable[[Scope, Receive, Send], Awaitable[None]],
) -> None:
    """FastAPI's own route answers, with the body as it arrived."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": raw, "more_body": False}

    scope[_SKIP] = True
    await fallback(scope, replay, send)


_FASTAPI: Any = object()  # "let FastAPI answer this one"


def _parse(model: type[BaseModel], required: bool, raw: bytes, content_type: str | None) -> Any:
    """The body as FastAPI would hand it to the route function, or `_FASTAPI` when FastAPI
    should answer (it would refuse the body, or decide something this does not)."""
    if not raw:
        return _FASTAPI if required else None
    if content_type != "application/json":
        return _FASTAPI
    try:
        data = from_json(raw)  # one C call (json.loads is four); what it refuses goes to FastAPI
        if data is None:
            return _FASTAPI
        return model.model_validate(data)
    except (ValueError, ValidationError):  # (a JSONDecodeError is a ValueError)
        return _FASTAPI


def install_hot_routes(app: FastAPI) -> None:
    """Put `HotRoute` first in the app's routes."""
    app.router.routes.insert(0, HotRoute(app.router))


class RondoApp(FastAPI):
    """FastAPI, with a short lane for the hot requests (issue 25.5).

    FastAPI wraps every request in its own layers before the routes: the server-error
    handler, its telemetry check, its body limit, the exception handlers, an exit stack, the
    router's matching — with their wrappers around every `send`, ~200 Python calls a run. A
    hot request (`HotRoute` first in the routes, no `root_path`, FastAPI's telemetry off)
    goes through the app's own middleware — the very list `add_middleware` built: host and
    origin guard, tokens, body limit, CORS — straight to the hot route; an error it raises
    before answering gets the handler FastAPI's layers would pick. Anything else, and any
    request the hot route hands over, takes FastAPI's whole stack."""

    _lane: ASGIApp | None = None
    _telemetry_probe: _TelemetryProbe | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.root_path:
            hot = self.router.routes[0] if self.router.routes else None
            found = _which(scope) if isinstance(hot, HotRoute) else None
            if found is not None and not (self._telemetry_probe or self._probe()).on():
                scope["app"] = self
                scope["router"] = self.router
                scope[_FOUND] = found
                await (self._lane or self._build_lane())(scope, receive, send)
                return
        await super().__call__(scope, receive, send)

    def _probe(self) -> _TelemetryProbe:
        config = self._telemetry
        explicit = any(config[k] is not None for k in _EXPLICIT_PROVIDERS)  # pyright: ignore[reportTypedDictNotRequiredAccess]
        self._telemetry_probe = probe = _TelemetryProbe(self._native_telemetry.enabled, explicit)
        return probe

    def _build_lane(self) -> ASGIApp:
        lane: ASGIApp = self._hot_endpoint
        for cls, args, kwargs in reversed(self.user_middleware):
            lane = cls(lane, *args, **kwargs)
        self._lane = lane
        return lane

    async def _hot_endpoint(self, scope: Scope, receive: Receive, send: Send) -> None:
        hot = self.router.routes[0]
        assert isinstance(hot, HotRoute)
        request = Request(scope, receive)
        try:
            response = await hot.respond(request, scope[_FOUND], super().__call__, send)
        except Exception as exc:  # what FastAPI's exception layers would answer
            handler = _handler_for(self.exception_handlers, exc)
            if handler is None:
                raise
            response = await handler(request, exc)
        if response is not None:
            await response(scope, receive, send)


_EXPLICIT_PROVIDERS = ("tracer_provider", "meter_provider", "logger_provider")
# Where OpenTelemetry's API keeps the global providers, None until one is set.
_PROVIDER_GLOBALS = (
    ("opentelemetry.trace", "_TRACER_PROVIDER"),
    ("opentelemetry.metrics._internal", "_METER_PROVIDER"),
    ("opentelemetry._logs._internal", "_LOGGER_PROVIDER"),
)


class _TelemetryProbe:
    """Whether FastAPI's telemetry is on for a request, as `NativeTelemetry.enabled` says.

    `enabled` asks OpenTelemetry for its three global providers on every request, and each
    getter looks its environment variable up while none is set (~20 Python calls a request).
    Once `enabled` has run (a provider named by the environment is then loaded and set), it
    can only turn on by a provider being set, which fills that global: while all three are
    None, it is off. The globals are read by name; an OpenTelemetry without them, or an app
    configured with providers of its own, asks `enabled` every time."""

    def __init__(self, enabled: Callable[[], bool], explicit: bool) -> None:
        self._enabled = enabled
        enabled()  # loads the providers the environment names, as FastAPI's first call would
        self._globals: list[tuple[dict[str, Any], str]] | None = []
        for module_name, name in _PROVIDER_GLOBALS:
            module = sys.modules.get(module_name)
            if explicit or module is None or name not in vars(module):
                self._globals = None
                break
            self._globals.append((vars(module), name))

    def on(self) -> bool:
        found = self._globals
        if found is not None:
            for space, name in found:  # (a loop: a generator costs a call per item)
                if space[name] is not None:
                    return self._enabled()
            return False
        return self._enabled()


def _handler_for(handlers: Mapping[Any, Callable[..., Any]], exc: Exception) -> Any:
    """The exception handler Starlette picks for `exc`: by status code for an HTTP
    error, else by the nearest class."""
    if isinstance(exc, HTTPException) and exc.status_code in handlers:
        return handlers[exc.status_code]
    for kind in type(exc).__mro__:
        if kind in handlers:
            return handlers[kind]
    return None
