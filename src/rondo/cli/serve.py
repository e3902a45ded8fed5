"""`rondo api-server AGENTS_DIR` and `rondo web AGENTS_DIR`: serve the apps over HTTP.

The server's packages (the `server` extra) load only when one of these commands runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from rondo.apps import CliError
from rondo.errors import RondoError

__all__ = ["ServeOptions", "check_bind", "register"]

_INSTALL = "./dev web, or pip install -e '.[server]' in a clone of rondo"

AgentsDir = Annotated[
    str, typer.Argument(help="Folder with one sub-folder per app (APP/agent.py with root_agent).")
]
Host = Annotated[str, typer.Option("--host", help="Address to bind.")]
Port = Annotated[int, typer.Option("--port", help="Port to listen on.")]
Db = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Session store: a SQLAlchemy URL, a SQLite file path, or 'memory' "
        "(default: .rondo/sessions.db).",
    ),
]
Origins = Annotated[
    list[str] | None,
    typer.Option("--allow-origin", help="Allow cross-origin requests from ORIGIN (repeatable)."),
]
Tokens = Annotated[
    str | None,
    typer.Option(
        "--auth-tokens",
        help='JSON file {"<bearer token>": "<user id>", ...}; every request then needs a token.',
    ),
]
Unauthenticated = Annotated[
    bool,
    typer.Option(
        "--allow-unauthenticated",
        help="Serve a non-loopback address without --auth-tokens (anyone reaching it is "
        "every user).",
    ),
]
MaxBody = Annotated[
    int, typer.Option("--max-body-bytes", help="Largest request body accepted (413 beyond).")
]
LogLevel = Annotated[str, typer.Option("--log-level", help="uvicorn's log level.")]
KeepAlive = Annotated[
    float,
    typer.Option(
        "--timeout-keep-alive", help="Seconds an idle connection is kept between requests."
    ),
]
HeaderTimeout = Annotated[
    float,
    typer.Option(
        "--timeout-header",
        help="Seconds a client has to send a request's head (from connecting, or from its last "
        "request); 408 and closed after.",
    ),
]
BodyTimeout = Annotated[
    float,
    typer.Option(
        "--timeout-body",
        help="Seconds a request body may stop arriving before the request gets 408 and its "
        "connection is closed.",
    ),
]
A2A = Annotated[
    bool,
    typer.Option(
        "--a2a",
        help="Also serve each app over A2A at /a2a/APP (JSON-RPC; its agent card at "
        "/a2a/APP/.well-known/agent-card.json). Needs the a2a extra.",
    ),
]
A2ARoot = Annotated[
    str | None,
    typer.Option(
        "--a2a-root",
        metavar="APP",
        help="Serve APP's A2A agent card at the host root too (/.well-known/agent-card.json, "
        "where clients look first); implies --a2a. With one app, its card is there anyway.",
    ),
]
PublicUrl = Annotated[
    str | None,
    typer.Option(
        "--public-url",
        metavar="URL",
        help="The server's URL as clients reach it (behind a proxy): A2A agent cards give "
        "URL/a2a/APP. Default: the scheme and Host of each request.",
    ),
]
Mcp = Annotated[
    bool,
    typer.Option(
        "--mcp",
        help="Also serve each app as an MCP tool over streamable HTTP at /mcp (the same "
        "bearer tokens). Needs the mcp extra.",
    ),
]
ClaimTtl = Annotated[
    float,
    typer.Option(
        "--claim-ttl",
        min=1.0,
        help="Seconds a run's hold on its session outlives the replica that stopped renewing "
        "it (PostgreSQL): a replica that dies mid-run has its runs resumed by another one "
        "after this long.",
    ),
]

Traces = Annotated[
    bool,
    typer.Option(
        "--traces",
        help="Keep the spans of recent sessions in memory for /dev/apps/APP/debug/trace/... "
        "(google-adk's Trace tab); installs an OpenTelemetry SDK tracer provider if none is "
        "set. `rondo web` always does.",
    ),
]


@dataclass(frozen=True)
class ServeOptions:
    agents_dir: str
    host: str
    port: int
    db: str | None
    allow_origins: tuple[str, ...]
    auth_tokens: str | None
    allow_unauthenticated: bool
    max_body_bytes: int
    log_level: str
    web: bool
    a2a: bool = False
    traces: bool = False
    timeouts: tuple[float, float, float] = (5.0, 10.0, 30.0)  # keep-alive, header, body
    a2a_root: str | None = None
    public_url: str | None = None
    mcp: bool = False
    claim_ttl: float = 30.0


def check_bind(host: str, auth_tokens: str | None, allow_unauthenticated: bool) -> None:
    """Refuse to serve a non-loopback address without tokens, unless told to (SPEC W3)."""
    from rondo.server.guard import is_loopback

    if is_loopback(host) or auth_tokens is not None or allow_unauthenticated:
        return
    raise CliError(
        f"refusing to serve {host} without authentication: anyone who can reach it could "
        "read and run every user's sessions. Pass --auth-tokens FILE (a JSON object mapping "
        "bearer tokens to user ids), bind 127.0.0.1, or pass --allow-unauthenticated."
    )


def _url_host(host: str) -> str:
    """The host as a browser is told to open it: a wildcard bind is reached on loopback."""
    if host in ("0.0.0.0", "", "::"):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def _serve(options: ServeOptions) -> None:
    errors = Console(stderr=True, soft_wrap=True, highlight=False)
    try:
        check_bind(options.host, options.auth_tokens, options.allow_unauthenticated)
        try:
            import uvicorn

            from rondo.server.app import create_app
            from rondo.server.guard import is_loopback
        except ImportError as exc:
            raise CliError(f"the server needs its extra ({_INSTALL}): {exc}") from exc
        from rondo.server.timeouts import ServerTimeouts, uvicorn_options

        timeouts = ServerTimeouts(*options.timeouts)
        app = create_app(
            options.agents_dir,
            db=options.db,
            allow_origins=options.allow_origins,
            auth_tokens=options.auth_tokens,
            max_body_bytes=options.max_body_bytes,
            body_timeout=timeouts.body,
            loopback_only=is_loopback(options.host) and options.auth_tokens is None,
            web=options.web,
            a2a=options.a2a,
            trace_store=options.traces,
            a2a_root=options.a2a_root,
            public_url=options.public_url,
            mcp=options.mcp,
            claim_ttl=options.claim_ttl,
        )
        names = app.state.rondo.apps.names()
        url = f"http://{_url_host(options.host)}:{options.port}/"
        errors.print(
            f"[dim]rondo {'web' if options.web else 'api-server'}: {len(names)} app(s) "
            f"({escape(', '.join(names)) or 'none'}) at {url}[/]"
        )
        if options.web:
            errors.print(f"[bold]the web UI: open {url}[/]")
    except (CliError, RondoError) as exc:
        errors.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
    from rondo.server.process import tune_gc

    tune_gc()  # fewer, shorter collector pauses for every in-flight request
    uvicorn.run(
        app,
        host=options.host,
        port=options.port,
        log_level=options.log_level,
        **uvicorn_options(timeouts),  # slow and idle clients are bounded (issue 26)
    )


def register(app: typer.Typer) -> None:
    """Add the `api-server` and `web` commands to the `rondo` command."""

    @app.command("api-server")
    def api_server(  # pyright: ignore[reportUnusedFunction]
        agents_dir: AgentsDir,
        host: Host = "127.0.0.1",
        port: Port = 8000,
        db: Db = None,
        allow_origin: Origins = None,
        auth_tokens: Tokens = None,
        allow_unauthenticated: Unauthenticated = False,
        max_body_bytes: MaxBody = 10 * 1024 * 1024,
        log_level: LogLevel = "info",
        a2a: A2A = False,
        traces: Traces = False,
        timeout_keep_alive: KeepAlive = 5.0,
        timeout_header: HeaderTimeout = 10.0,
        timeout_body: BodyTimeout = 30.0,
        a2a_root: A2ARoot = None,
        public_url: PublicUrl = None,
        mcp: Mcp = False,
        claim_ttl: ClaimTtl = 30.0,
    ) -> None:
        """Serve the apps of AGENTS_DIR with google-adk's REST + SSE API (and rondo's)."""
        _serve(
            ServeOptions(
                agents_dir, host, port, db, tuple(allow_origin or ()), auth_tokens,
                allow_unauthenticated, max_body_bytes, log_level, web=False, a2a=a2a,
                traces=traces, timeouts=(timeout_keep_alive, timeout_header, timeout_body),
                a2a_root=a2a_root, public_url=public_url,
                mcp=mcp, claim_ttl=claim_ttl,
            )
        )  # fmt: skip

    @app.command("web")
    def web(  # pyright: ignore[reportUnusedFunction]
        agents_dir: AgentsDir,
        host: Host = "127.0.0.1",
        port: Port = 8000,
        db: Db = None,
        allow_origin: Origins = None,
        auth_tokens: Tokens = None,
        allow_unauthenticated: Unauthenticated = False,
        max_body_bytes: MaxBody = 10 * 1024 * 1024,
        log_level: LogLevel = "info",
        timeout_keep_alive: KeepAlive = 5.0,
        timeout_header: HeaderTimeout = 10.0,
        timeout_body: BodyTimeout = 30.0,
    ) -> None:
        """Serve the API of `api-server` and rondo's web UI at `/`."""
        _serve(
            ServeOptions(
                agents_dir, host, port, db, tuple(allow_origin or ()), auth_tokens,
                allow_unauthenticated, max_body_bytes, log_level, web=True, traces=True,
                timeouts=(timeout_keep_alive, timeout_header, timeout_body),
            )
        )  # fmt: skip
