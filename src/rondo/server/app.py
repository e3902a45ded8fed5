"""The FastAPI app: ADK's routes, rondo's routes, and optionally the web UI (SPEC W1-W4)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from rondo._version import __version__
from rondo.errors import ConfigurationError
from rondo.models.pricing import warm_prices
from rondo.server import (
    adk_routes,
    eval_routes,
    eval_runs,
    front_end,
    history_routes,
    live_routes,
    native_routes,
    run_routes,
    traces,
)
from rondo.server.a2a_root import a2a_root_card_routes
from rondo.server.auth import TokenAuth, TokenMiddleware, load_tokens
from rondo.server.claims import CLAIM_TTL
from rondo.server.discovery import AppRegistry
from rondo.server.errors import install_error_handlers
from rondo.server.guard import RequestGuard
from rondo.server.hot_routes import RondoApp, install_hot_routes
from rondo.server.limits import BodyLimit
from rondo.server.state import ServerState
from rondo.server.timeouts import ServerTimeouts
from rondo.server.ui_files import UiFiles

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from rondo.a2a import A2AApps
    from rondo.artifacts.base import BaseArtifactService
    from rondo.server.mcp_server import McpEndpoint
    from rondo.sessions.base import BaseSessionService

__all__ = ["DEFAULT_BODY_TIMEOUT", "DEFAULT_MAX_BODY_BYTES", "UI_DIR", "create_app"]

DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024
DEFAULT_BODY_TIMEOUT = ServerTimeouts().body
UI_DIR = Path(__file__).parent / "ui"


def _stores(
    db: str | None,
    session_service: BaseSessionService | None,
    artifact_service: BaseArtifactService | None,
) -> tuple[BaseSessionService, BaseArtifactService, bool]:
    """The session and artifact stores, and whether the app opened (so closes) the former."""
    from rondo.apps import open_artifact_service, open_session_service

    owned = session_service is None
    store = "memory"
    if session_service is None:
        session_service, store = open_session_service(db)
    if artifact_service is None:
        artifact_service = open_artifact_service(durable=owned and store != "memory")
    return session_service, artifact_service, owned


def create_app(
    agents_dir: str | Path,
    *,
    db: str | None = None,
    session_service: BaseSessionService | None = None,
    artifact_service: BaseArtifactService | None = None,
    allow_origins: Sequence[str] = (),
    auth_tokens: TokenAuth | Mapping[str, str] | str | Path | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    body_timeout: float | None = DEFAULT_BODY_TIMEOUT,
    loopback_only: bool = False,
    web: bool = False,
    a2a: bool = False,
    trace_store: bool | None = None,
    a2a_root: str | None = None,
    public_url: str | None = None,
    mcp: bool = False,
    claim_ttl: float = CLAIM_TTL,
) -> FastAPI:
    """The server for the apps of `agents_dir`.

    `db` is what `rondo run --db` takes (a SQLAlchemy URL, a SQLite path, `memory`; default
    SQLite at `.rondo/sessions.db`), unless `session_service` is given. `auth_tokens` (a
    tokens file, a mapping or a `TokenAuth`) makes every request need a bearer token bound to
    one user. `body_timeout` answers 408 to a request whose body stops arriving for that many
    seconds (None: wait forever; the keep-alive and header timeouts are the HTTP server's:
    `rondo.server.timeouts.uvicorn_options`). `loopback_only` refuses requests whose Host is not the loopback (set it when
    binding 127.0.0.1). `web` serves rondo's web UI at `/`. `a2a` also serves each app over
    A2A at `/a2a/{app}` (the `a2a` extra; see `rondo.a2a`), and the card of the only app, or
    of `a2a_root` (which implies `a2a`), at `/.well-known/agent-card.json`; `public_url` (the
    server's URL as clients reach it) fixes the URLs cards give. `trace_store` keeps the spans of
    recent sessions in memory for the trace routes and the web UI's Trace tab (installing an
    OpenTelemetry SDK tracer provider if none is set); it defaults to `web`. `mcp` also
    serves each app as an MCP tool at `/mcp` (the `mcp` extra; see `rondo.server.mcp_server`).
    `claim_ttl` is how long a run's claim on its session outlives the last renewal of a
    replica that stopped (on PostgreSQL): another replica then resumes the run
    (`rondo.server.takeover`).
    """
    if max_body_bytes <= 0:
        raise ConfigurationError(f"max_body_bytes must be positive, got {max_body_bytes}")
    if body_timeout is not None and not body_timeout > 0:
        raise ConfigurationError(f"body_timeout must be positive, got {body_timeout}")
    if not claim_ttl > 0:
        raise ConfigurationError(f"claim_ttl must be positive, got {claim_ttl}")
    auth = _auth(auth_tokens)
    sessions, artifacts, owned = _stores(db, session_service, artifact_service)
    apps = AppRegistry(agents_dir, session_service=sessions, artifact_service=artifacts)
    state = ServerState(
        apps=apps, sessions=sessions, artifacts=artifacts, auth=auth, claim_ttl=claim_ttl
    )
    if web if trace_store is None else trace_store:
        from rondo.server.span_store import enable_span_store

        state.spans = enable_span_store()
    a2a_apps = _a2a_apps(apps, auth, state, public_url) if a2a or a2a_root else None
    mcp_endpoint = _mcp_endpoint(state) if mcp else None

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncGenerator[None]:
        # Issue 25: the price table loads at startup, not on the first request's model call.
        await asyncio.to_thread(warm_prices)
        # Replicas on one PostgreSQL: renew claims, resume the runs of replicas that died.
        state.claims.start()
        try:
            if mcp_endpoint is None:
                yield
            else:
                async with mcp_endpoint.running():
                    yield
        finally:
            await state.detached.close()
            await state.claims.close()
            if a2a_apps is not None:
                await a2a_apps.aclose()
            await apps.close()
            if owned:
                await sessions.close()

    app = RondoApp(
        title="rondo",
        version=__version__,
        description="google-adk's REST + SSE API, rondo's lifecycle stream and pending calls. "
        "A server started with --auth-tokens needs `Authorization: Bearer <token>` on every "
        "request but /health and this document; a token acts only as its own user.",
        lifespan=lifespan,
    )
    app.state.rondo = state
    install_error_handlers(app)
    # The routes join the app's own list: `include_router` would wrap each router in a
    # matching layer of its own, a hundred-odd Python calls on every request.
    for router in (
        adk_routes.router,
        native_routes.router,
        run_routes.router,
        history_routes.router,
        live_routes.router,
        traces.router,
        eval_routes.router,
        eval_runs.router,
        *front_end.routers(),
    ):
        app.router.routes.extend(router.routes)
    # Starlette tries routes in order: the run routes and the session routes, which every run
    # requests, go first. No other path overlaps theirs, so matching results are unchanged.
    app.router.routes.sort(key=_match_rank)
    # Issue 25.5: the requests every run makes skip FastAPI's per-request machinery when
    # they are plain (rondo.server.hot_routes); anything else still goes to the routes above.
    install_hot_routes(app)
    if mcp_endpoint is not None:
        app.router.routes.extend(mcp_endpoint.routes)
    if a2a_apps is not None:
        app.mount("/a2a", a2a_apps)
        app.router.routes.extend(a2a_root_card_routes(a2a_apps, apps, a2a_root))
    if web:
        _mount_ui(app)
    _add_middleware(app, auth, allow_origins, (max_body_bytes, body_timeout), loopback_only, web)
    return app


def _a2a_apps(
    apps: AppRegistry, auth: TokenAuth | None, state: ServerState, public_url: str | None
) -> A2AApps:
    """Every app over A2A; with tokens, a task and a context belong to the token's user. An
    A2A run takes the run claim of the REST run routes (W5), so the two never interleave.
    Tasks live in the sessions' database when it is a SQL one, so every replica sees them."""
    from rondo.a2a import A2AApps
    from rondo.a2a.task_store import task_stores_for
    from rondo.server.auth import caller

    return A2AApps(
        apps.runner,
        task_stores=task_stores_for(state.sessions),
        user_for=caller,
        bearer_auth=auth is not None,
        claim=state.claims.take,
        public_url=f"{public_url.rstrip('/')}/a2a" if public_url else None,
    )


def _mcp_endpoint(state: ServerState) -> McpEndpoint:
    from rondo.server.mcp_server import McpEndpoint

    return McpEndpoint(state)


def _auth(tokens: TokenAuth | Mapping[str, str] | str | Path | None) -> TokenAuth | None:
    if isinstance(tokens, str | Path):
        return load_tokens(tokens)
    if tokens is not None and not isinstance(tokens, TokenAuth):
        return TokenAuth(tokens)
    return tokens


def _add_middleware(
    app: FastAPI,
    auth: TokenAuth | None,
    allow_origins: Sequence[str],
    body: tuple[int, float | None],
    loopback_only: bool,
    web: bool,
) -> None:
    # Added last = runs first: guard, CORS, tokens, body limit, then the routes. CORS before
    # the tokens, so a browser can read a 401 and preflights need no token.
    app.add_middleware(BodyLimit, max_bytes=body[0], read_timeout=body[1])
    app.add_middleware(TokenMiddleware, auth=auth, web=web)
    if allow_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(allow_origins),
            allow_methods=["*"],
            allow_headers=["*"],
        )
    app.add_middleware(RequestGuard, loopback_only=loopback_only, allowed_origins=allow_origins)


_RUN_PATHS = frozenset({"/run_sse", "/run", "/run_lifecycle"})
_SESSION_PATHS = "/apps/{app_name}/users/{user_id}/sessions"


def _match_rank(route: BaseRoute) -> int:
    """0 for the run routes, 1 for the session routes, 2 for the rest (a stable sort keeps
    each group's own order)."""
    path: str = getattr(route, "path", "")
    if path in _RUN_PATHS:
        return 0
    return 1 if path.startswith(_SESSION_PATHS) else 2


def _mount_ui(app: FastAPI) -> None:
    if not (UI_DIR / "index.html").is_file():
        raise ConfigurationError(f"rondo's web UI is missing from this install ({UI_DIR})")
    # Mounted after every API route, so `/` and unknown paths reach the UI, never an API path.
    app.mount("/", UiFiles(directory=str(UI_DIR), api_routes=app.router.routes), name="ui")
