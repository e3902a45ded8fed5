"""`rondo run PATH [MESSAGE]`: load an agent and render its lifecycle stream live."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from rondo._version import __version__

app = typer.Typer(add_completion=False, no_args_is_help=True, help="rondo: run LLM agents.")
console = Console()


def _version(value: bool) -> None:
    if value:
        console.print(f"rondo {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """rondo: a runtime for LLM agents."""


def load_agent(path: str) -> Any:
    """`root_agent` from a Python file, a package directory or a module name."""
    target = Path(path)
    if target.is_dir() and (target / "agent.py").exists():
        target = target / "agent.py"
    if target.suffix == ".py" and target.exists():
        sys.path.insert(0, str(target.parent.resolve()))
        spec = importlib.util.spec_from_file_location(f"_rondo_agent_{target.stem}", target)
        if spec is None or spec.loader is None:
            raise typer.BadParameter(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(path)
    agent = getattr(module, "root_agent", None)
    if agent is None:
        raise typer.BadParameter(f"{path} defines no `root_agent`")
    return agent


async def _run_once(agent: Any, message: str) -> None:
    from rondo import Runner
    from rondo.lifecycle import ReasonDelta, RunEnd, ToolCallEnd, ToolCallStart

    runner = Runner(agent=agent, app_name=agent.name)
    async for event in runner.stream_async(user_id="cli", session_id="cli", new_message=message):
        if isinstance(event, ReasonDelta) and event.text:
            console.print(event.text, end="", style="dim" if event.is_thinking else None)
        elif isinstance(event, ToolCallStart):
            console.print(f"\n[cyan]→ {event.tool_name}[/]({event.args})")
        elif isinstance(event, ToolCallEnd):
            shown = event.error or event.result
            console.print(
                f"[cyan]← {event.tool_name}[/] {shown} [dim]({event.duration_ms:.0f} ms)[/]"
            )
        elif isinstance(event, RunEnd):
            console.print(f"\n[bold]{event.text}[/]")


@app.command()
def run(
    path: Annotated[str, typer.Argument(help="Agent file, directory or module (root_agent).")],
    message: Annotated[
        str, typer.Argument(help="The message to send.")
    ] = "What's the weather in Hangzhou?",
) -> None:
    """Run one message through an agent."""
    asyncio.run(_run_once(load_agent(path), message))


def main() -> None:
    app()
