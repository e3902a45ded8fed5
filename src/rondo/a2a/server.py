"""Serving rondo apps over A2A with the SDK's own server pieces.

`A2AApp(runner)` is the ASGI app of one agent: the SDK's JSON-RPC route at `/` (its request
handler, task store and streaming) and its agent-card route at
`/.well-known/agent-card.json`, the card generated from the agent. `A2AApps(runner_for)`
serves many: `/{app}` and `/{app}/.well-known/agent-card.json`, each app's `A2AApp` built on
first use — what `rondo api-server --a2a` mounts at `/a2a`.

The card's JSON-RPC URL is the URL the card was fetched from (scheme, Host and mount path of
that request) unless a fixed `url` is given.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from a2a.auth.user import UnauthenticatedUser, User
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    DefaultServerCallContextBuilder,
    create_agent_card_routes,
    create_jsonrpc_routes,
)
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types import AgentCard
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from rondo.a2a.card import build_agent_card
from rondo.a2a.executor import RondoAgentExecutor, RunClaim
from rondo.errors import RondoError

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from rondo.a2a.task_store import SqlTaskStores
    from rondo.run_config import RunConfig
    from rondo.runner import Runner

__all__ = ["A2AApp", "A2AApps", "UserResolver"]

UserResolver = Callable[[Request], str | None]
"""The authenticated user of a request (None: anonymous)."""

# The URL the current request reached the app at, for the card it is served.
_request_url: contextvars.ContextVar[str] = contextvars.ContextVar("rondo_a2a_url")

# Interrupted (input-required) tasks are released after this long idle; a later answer
# reloads them from the task store.
IDLE_INTERRUPTED_TASK_SECONDS = 900.0


class _Caller(User):
    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self._name


class _CallContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's call context, with the user the server authenticated (tasks are owned by
    it in the task store, sessions belong to it)."""

    def __init__(self, user_for: UserResolver | None) -> None:
        self._user_for = user_for

    def build_user(self, request: Request) -> User:
        name = self._user_for(request) if self._user_for is not None else None
        return _Caller(name) if name else UnauthenticatedUser()


def _url_of(scope: Scope) -> str:
    """scheme://host/mount-path of the app this request reached."""
    host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), None)
    if host is None:
        server = scope.get("server") or ("localhost", 80)
        host = f"{server[0]}:{server[1]}"
    return f"{scope.get('scheme', 'http')}://{host}{scope.get('root_path', '')}"


class A2AApp:
    """One rondo `Runner` served over A2A (an ASGI app; mount it anywhere).

    `user_for` names the authenticated user of a request (None or "" for anonymous): its
    tasks and sessions are its own. `bearer_auth` makes the card say calls need a bearer
    token. `task_store` defaults to the SDK's in-memory store. `claim` takes a run's claim on
    its session (see `rondo.a2a.executor`): `rondo api-server` passes the one its REST run
    routes take, so the two never interleave on a session.
    """

    def __init__(
        self,
        runner: Runner,
        *,
        url: str | None = None,
        version: str | None = None,
        user_for: UserResolver | None = None,
        bearer_auth: bool = False,
        task_store: TaskStore | None = None,
        run_config: RunConfig | None = None,
        claim: RunClaim | None = None,
    ) -> None:
        self.runner = runner
        self.card = build_agent_card(
            runner.agent, url=url or "http://localhost/", version=version, bearer_auth=bearer_auth
        )
        self.handler = DefaultRequestHandler(
            agent_executor=RondoAgentExecutor(runner, run_config=run_config, claim=claim),
            task_store=task_store or InMemoryTaskStore(),
            agent_card=self.card,
            interrupted_task_timeout=IDLE_INTERRUPTED_TASK_SECONDS,
        )
        routes = [
            *create_agent_card_routes(
                self.card, card_modifier=None if url else self._card_for_request
            ),
            *create_jsonrpc_routes(
                self.handler, rpc_url="/", context_builder=_CallContextBuilder(user_for)
            ),
        ]
        self._app = Starlette(routes=routes, lifespan=self._lifespan)

    @asynccontextmanager
    async def _lifespan(self, _: Starlette) -> AsyncGenerator[None]:
        try:
            yield
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Stop the tasks still running or parked (the SDK's request handler drains them)."""
        await self.handler.aclose()

    async def _card_for_request(self, card: AgentCard) -> AgentCard:
        url = _request_url.get(None)
        if url is None:
            return card
        served = AgentCard()
        served.CopyFrom(card)
        served.supported_interfaces[0].url = url
        return served

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            if path == scope.get("root_path", ""):
                # `POST /a2a/app` is the JSON-RPC URL itself: route it as `/`, no redirect.
                scope = {**scope, "path": path + "/", "raw_path": path.encode() + b"/"}
            token = _request_url.set(_url_of(scope))
            try:
                await self._app(scope, receive, send)
            finally:
                _request_url.reset(token)
            return
        await self._app(scope, receive, send)


class A2AApps:
    """Many apps over A2A: `/{name}` is the app `runner_for(name)` returns (built once).

    `runner_for` raises `LookupError` for an unknown app (404) and a `RondoError` for one
    that cannot load (503). `task_stores` keeps every app's tasks in a database (see
    `rondo.a2a.task_store`; in memory without it). Other options are those of `A2AApp`.
    """

    def __init__(
        self,
        runner_for: Callable[[str], Awaitable[Runner]],
        *,
        task_stores: SqlTaskStores | None = None,
        **options: Any,
    ) -> None:
        self._runner_for = runner_for
        self._task_stores = task_stores
        self._options = options
        self._apps: dict[str, A2AApp] = {}
        self._lock = asyncio.Lock()

    async def app(self, name: str) -> A2AApp:
        found = self._apps.get(name)
        if found is not None:
            return found
        runner = await self._runner_for(name)
        async with self._lock:
            found = self._apps.get(name)
            if found is None:
                options = dict(self._options)
                if self._task_stores is not None:
                    options["task_store"] = self._task_stores.for_app(name)
                found = self._apps[name] = A2AApp(runner, **options)
        return found

    async def aclose(self) -> None:
        apps = list(self._apps.values())
        self._apps.clear()
        for app in apps:
            await app.aclose()
        if self._task_stores is not None:
            await self._task_stores.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        root: str = scope.get("root_path", "")
        path: str = scope["path"]
        rest = path[len(root) :] if path.startswith(root) else path
        name = rest.lstrip("/").split("/", 1)[0]
        try:
            app = await self.app(name)
        except LookupError as exc:
            await _json_error(send, 404, str(exc) or f"no app named {name!r}")
            return
        except RondoError as exc:
            await _json_error(send, 503, str(exc))
            return
        await app({**scope, "root_path": f"{root}/{name}"}, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _json_error(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
