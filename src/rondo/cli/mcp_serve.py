"""`rondo mcp AGENT_PATH`: serve one agent as an MCP tool over stdio, for desktop clients and
IDEs that start MCP servers as subprocesses (SPEC W8). Needs the `mcp` extra.

stdout carries the protocol: everything rondo reports goes to stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from rondo.apps import CliError, load_agent, open_session_service
from rondo.cli.serve import Db
from rondo.errors import RondoError

__all__ = ["register"]

_INSTALL = "pip install 'rondo-agents[mcp]'"


def _app_name(path: str) -> str:
    file = Path(path)
    folder = file.parent if file.suffix == ".py" else file
    return folder.resolve().name or "rondo"


def register(app: typer.Typer) -> None:
    """Add the `mcp` command to the `rondo` command."""

    @app.command("mcp")
    def mcp(  # pyright: ignore[reportUnusedFunction]
        path: Annotated[
            str, typer.Argument(help="Agent: a .py file, a directory with agent.py, or a module.")
        ],
        db: Db = None,
        user: Annotated[str, typer.Option("--user", help="The user the sessions belong to.")] = (
            "user"
        ),
    ) -> None:
        """Serve the agent (`root_agent`) as one MCP tool over stdio."""
        errors = Console(stderr=True, soft_wrap=True, highlight=False)
        try:
            try:
                from rondo.server.mcp_server import stdio_server
            except ImportError as exc:
                raise CliError(f"`rondo mcp` needs the mcp extra ({_INSTALL}): {exc}") from exc
            from rondo.runner import Runner

            agent = load_agent(path)
            sessions, _ = open_session_service(db)
            runner = Runner(agent=agent, app_name=_app_name(path), session_service=sessions)
            server = stdio_server(runner, user_id=user)
        except (CliError, RondoError) as exc:
            errors.print(f"[red]error:[/] {escape(str(exc))}")
            raise typer.Exit(2) from None
        server.run("stdio")
