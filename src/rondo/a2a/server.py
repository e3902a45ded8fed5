"""Serving rondo apps over A2A with the SDK's own server pieces.

`A2AApp(runner)` is the ASGI app of one agent: the SDK's JSON-RPC route at `/` (its request
handler, task store and streaming; A2A 1.0, and 0.3 for clients that send no `A2A-Version`
header, through the SDK's compatibility layer) and its agent card at
`/.well-known/agent-card.json` (and the older `/.well-known/agent.json`), generated from the
agent. `A2AApps(runner_for)` serves many: `/{app}` and `/{app}/.well-known/agent-card.json`,
each app's `A2AApp` built on first use — what `rondo api-server --a2a` mounts at `/a2a`;
`A2AApps.root_card` serves one app's card at the host root, where clients look first.

The card's JSON-RPC URL is the URL the card was fetched from (scheme, Host and mount path of
that request), never the address the server is bound to, unless a fixed `url` is given.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, cast

from a2a.auth.user import UnauthenticatedUser, User
from a2a.server.agent_execution import RequestContext, SimpleRequestContextBuilder
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.server.routes import DefaultServerCallContextBuilder, create_agent_card_routes
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types import AgentCard, TaskState
from a2a.utils.errors import InvalidParamsError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from rondo.a2a.card import build_agent_card, public_card, with_url
from rondo.a2a.executor import RondoAgentExecutor, RunClaim
from rondo.errors import ConfigurationError, RondoError

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from a2a.server.context import ServerCallContext
    from a2a.types import SendMessageRequest, Task

    from rondo.a2a.task_store import SqlTaskStores
    from rondo.run_config import RunConfig
    from rondo.runner import Runner

__all__ = ["CARD_PATHS", "A2AApp", "A2AApps", "RootCard", "UserResolver"]

CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")
"""Where an agent's card is served: the specification's path, and the one 0.2 clients read."""

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


class _TaskContextBuilder(SimpleRequestContextBuilder):
    """The SDK's request context, where a message that names its task but not its context
    continues the task's context (A2A §3.4.3) instead of starting a new one."""

    def __init__(self, task_store: TaskStore) -> None:
        super().__init__(task_store=task_store)
        self._tasks = task_store

    async def build(
        self,
        context: ServerCallContext,
        params: SendMessageRequest | None = None,
        task_id: str | None = None,
        context_id: str | None = None,
        task: Task | None = None,
    ) -> RequestContext:
        if task_id and not context_id:
            # The handler checked the task exists for this caller; read its context.
            found = task or await self._tasks.get(task_id, context)
            if found is not None:
                context_id = found.context_id
        return await super().build(context, params, task_id, context_id, task)


class _Dispatcher(JsonRpcDispatcher):
    """The SDK's JSON-RPC dispatcher, refusing a ListTasks `status` it does not know: the
    SDK's parser reads an unknown enum value as "no filter" and would list every task."""

    async def handle_requests(self, request: Request) -> Response:
        try:
            body: Any = await request.json()  # cached: the SDK's own read gets the same
        except ValueError:
            body = None
        problem = _list_filter_problem(body)
        if problem is not None:
            request_id = body.get("id") if isinstance(body.get("id"), str | int) else None
            error = InvalidParamsError(message=problem)
            return JSONResponse(build_error_response(request_id, error))
        return await super().handle_requests(request)


def _list_filter_problem(body: Any) -> str | None:
    if not isinstance(body, dict):
        return None
    fields = cast(dict[str, object], body)
    params = fields.get("params")
    if fields.get("method") != "ListTasks" or not isinstance(params, dict):
        return None
    status = cast(dict[str, object], params).get("status")
    names = list(TaskState.keys())
    known = (
        status in names
        if isinstance(status, str)
        else isinstance(status, int) and status in TaskState.values()
    )
    if status is None or known:
        return None
    return f"unknown task state {status!r} in 'status' (one of: {', '.join(names)})"


def _url_of(scope: Scope) -> str:
    """scheme://host/mount-path of the app this request reached: the Host the client used
    (a bind address such as 0.0.0.0 is no URL a client can call)."""
    host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), None)
    if host is None:
        name, port = scope.get("server") or ("localhost", 80)
        host = f"{'localhost' if name in _UNSPECIFIED else name}:{port}"
    return f"{scope.get('scheme', 'http')}://{host}{scope.get('root_path', '')}"


_UNSPECIFIED = frozenset({"0.0.0.0", "::", ""})


class A2AApp:
    """One rondo `Runner` served over A2A (an ASGI app; mount it anywhere).

    `user_for` names the authenticated user of a request (None or "" for anonymous): its
    tasks and sessions are its own. `bearer_auth` makes the card say calls need a bearer
    token; the card anyone may read then names the agent only, and its skills (tools,
    sub-agents) are in the extended card, which needs the token. `task_store` defaults to the
    SDK's in-memory store. `claim` takes a run's claim on its session (see
    `rondo.a2a.executor`): `rondo api-server` passes the one its REST run routes take, so the
    two never interleave on a session.
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
        full = build_agent_card(
            runner.agent, url=url or "http://localhost/", version=version, bearer_auth=bearer_auth
        )
        self.card = public_card(full) if bearer_auth else full
        self.extended_card = full if bearer_auth else None
        store = task_store or InMemoryTaskStore()
        self.handler = DefaultRequestHandler(
            agent_executor=RondoAgentExecutor(runner, run_config=run_config, claim=claim),
            task_store=store,
            agent_card=self.card,
            request_context_builder=_TaskContextBuilder(store),
            extended_agent_card=self.extended_card,
            extended_card_modifier=None if url else self._extended_card_for_request,
            interrupted_task_timeout=IDLE_INTERRUPTED_TASK_SECONDS,
        )
        modifier = None if url else self._card_for_request
        dispatcher = _Dispatcher(
            self.handler, context_builder=_CallContextBuilder(user_for), enable_v0_3_compat=True
        )
        routes = [
            *(
                route
                for path in CARD_PATHS
                for route in create_agent_card_routes(
                    self.card, card_modifier=modifier, card_url=path
                )
            ),
            Route("/", endpoint=dispatcher.handle_requests, methods=["POST"]),
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
        return card if url is None else with_url(card, url)

    async def _extended_card_for_request(self, card: AgentCard, _: ServerCallContext) -> AgentCard:
        return await self._card_for_request(card)

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
    `rondo.a2a.task_store`; in memory without it). `public_url` is where clients reach these
    apps (`https://agents.example.com/a2a`: app `x`'s card then says
    `https://agents.example.com/a2a/x`) when the request's Host and scheme would not say it,
    behind a proxy that rewrites them. Other options are those of `A2AApp`.
    """

    def __init__(
        self,
        runner_for: Callable[[str], Awaitable[Runner]],
        *,
        task_stores: SqlTaskStores | None = None,
        public_url: str | None = None,
        **options: Any,
    ) -> None:
        self._runner_for = runner_for
        self._task_stores = task_stores
        if public_url and not public_url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"the public URL must be an http:// or https:// URL, got {public_url!r}"
            )
        self._public_url = public_url.rstrip("/") if public_url else None
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
                if self._public_url is not None:
                    options["url"] = f"{self._public_url}/{name}"
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

    def root_card(self, name_for: Callable[[], str | None], mount_path: str) -> RootCard:
        """An ASGI app serving, at the host root, the card of the app `name_for()` names
        (None: no app is the root's) — these apps being mounted at `mount_path`."""
        return RootCard(self, name_for, mount_path)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return


class RootCard:
    """`/.well-known/agent-card.json` (and `agent.json`) of the host: one app's card, whose
    URL is that app's A2A route (the specification's recommended place, §8.2, where clients
    that know only the host look). Route it for GET at the card paths."""

    def __init__(self, apps: A2AApps, name_for: Callable[[], str | None], mount: str) -> None:
        self._apps = apps
        self._name_for = name_for
        self._mount = mount.rstrip("/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        name = self._name_for()
        if name is None:
            await _json_error(
                send,
                404,
                f"this server has several A2A agents, each with its card at "
                f"{self._mount}/APP/.well-known/agent-card.json; start it with --a2a-root APP "
                "to serve one of them here",
            )
            return
        root: str = scope.get("root_path", "")
        card = scope["path"][len(root) :] if scope["path"].startswith(root) else scope["path"]
        mounted = f"{root}{self._mount}"
        await self._apps(
            {**scope, "root_path": mounted, "path": f"{mounted}/{name}{card}"}, receive, send
        )


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
