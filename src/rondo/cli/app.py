"""`rondo run PATH [MESSAGE]`: load an agent and render its lifecycle stream live."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from rondo._version import __version__
from rondo.cli.cassettes import CliCassette, RecordOption, ReplayOption
from rondo.cli.eval import eval_command
from rondo.cli.loading import CliError, open_session_service
from rondo.cli.mcp_serve import register as register_mcp
from rondo.cli.render import JsonLinesRenderer, LiveRenderer
from rondo.cli.serve import register as register_serve
from rondo.errors import RondoError
from rondo.events import PendingCall
from rondo.lifecycle import RunEnd
from rondo.types import Content, Part

if TYPE_CHECKING:
    from rondo.agents.base import BaseAgent
    from rondo.sessions.base import BaseSessionService

__all__ = ["app", "main"]

# No locals in tracebacks: they may hold API keys.
app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="rondo: run LLM agents.",
    pretty_exceptions_show_locals=False,
)

_USER_ID = "user"
_EXIT_WORDS = {"exit", "quit", ":q"}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"rondo {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """rondo: a runtime for LLM agents."""


class _Session:
    """One agent, one store, one session: what every message of a `rondo run` goes through."""

    def __init__(
        self,
        agent: BaseAgent,
        service: BaseSessionService,
        store: str,
        session_id: str,
        jsonl: bool,
    ) -> None:
        from rondo.runner import Runner

        self.agent = agent
        self.service = service
        self.store = store
        self.session_id = session_id
        self.jsonl = jsonl
        self.out = Console(soft_wrap=True, highlight=False)
        self.runner = Runner(agent=agent, app_name=agent.name, session_service=service)

    async def send(self, message: str) -> None:
        """Run `message`; in a terminal, a run that pauses on calls waiting for a human asks
        for each decision and resumes with it (H3), until the run ends."""
        answer: str | Content | None = message
        while answer is not None:
            pending = await self._run(answer)
            answer = None
            if pending and not self.jsonl and _stdin_is_tty():
                answer = await self._decide(pending)

    async def _run(self, message: str | Content) -> list[PendingCall]:
        """Render one run; returns the calls it left waiting."""
        renderer = (
            JsonLinesRenderer(self.out) if self.jsonl else LiveRenderer(self.out, self.agent.name)
        )
        stream = self.runner.stream_async(
            user_id=_USER_ID, session_id=self.session_id, new_message=message
        )
        pending: list[PendingCall] = []
        try:
            async for event in stream:
                renderer.show(event)
                if isinstance(event, RunEnd):
                    pending = event.pending
        finally:
            await stream.aclose()
            renderer.close()
        return pending

    async def _decide(self, pending: list[PendingCall]) -> Content | None:
        """Ask for a decision on each waiting call; None leaves them waiting."""
        parts: list[Part] = []
        for call in pending:
            shown = escape(_call_text(call))
            if call.kind == "confirmation":
                prompt = (
                    f"[yellow]{shown}[/] — [bold]a[/]pprove, [bold]r[/]eject or [bold]s[/]kip? "
                )
                choice = (await self._ask(prompt)).strip().lower()[:1]
                if choice == "a":
                    parts.append(call.approve())
                elif choice == "r":
                    comment = (await self._ask("[dim]why (optional)?[/] ")).strip()
                    parts.append(call.reject(comment or None))
                elif choice == "s":
                    note = (await self._ask("[dim]what to record as its result?[/] ")).strip()
                    parts.append(call.skip(note or None))
            else:
                raw = (
                    await self._ask(f"[yellow]{shown}[/] — its result (JSON, empty: wait)? ")
                ).strip()
                if raw:
                    parts.append(call.respond(_as_result(raw)))
        if not parts:
            self.out.print(f"[dim]still waiting; --session {self.session_id} continues it[/]")
            return None
        return Content(role="user", parts=parts)

    async def _ask(self, prompt: str) -> str:
        try:
            return await asyncio.to_thread(self.out.input, prompt)
        except EOFError:
            return ""

    async def close(self) -> None:
        await self.service.close()


async def _one_message(session: _Session, message: str) -> None:
    try:
        await session.send(message)
    finally:
        await session.close()
    if not session.jsonl and session.store != "memory":
        session.out.print(
            f"[dim]session {session.session_id} in {escape(session.store)} "
            f"(--session {session.session_id} continues it)[/]"
        )


async def _chat(session: _Session, errors: Console) -> None:
    """Read a message, run it, repeat, until EOF or `exit`."""
    out = session.out
    out.print(
        f"[dim]chatting with {escape(session.agent.name)} — session {session.session_id}; "
        "Ctrl-D or 'exit' to leave[/]"
    )
    try:
        while True:
            try:
                message = await asyncio.to_thread(out.input, "[bold green]you ›[/] ")
            except EOFError:
                out.print()
                return
            if message.strip().lower() in _EXIT_WORDS:
                return
            if not message.strip():
                continue
            try:
                await session.send(message)
            except RondoError as exc:  # the chat goes on: the next message may work
                errors.print(f"[red]error:[/] {escape(_describe(exc))}")
    finally:
        await session.close()


def _stdin_is_tty() -> bool:
    return sys.stdin.isatty()


def _call_text(call: PendingCall) -> str:
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.args.items())
    return f"{call.tool_name}({args})"


def _as_result(raw: str) -> dict[str, Any]:
    """A typed result: a JSON object as it is, anything else under "result"."""
    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = raw
    return value if isinstance(value, dict) else {"result": value}  # pyright: ignore[reportUnknownVariableType]


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


@app.command()
def run(
    path: Annotated[
        str, typer.Argument(help="Agent: a .py file, a directory with agent.py, or a module.")
    ],
    message: Annotated[
        str | None,
        typer.Argument(help="The message to send; omit it to chat (or to read it from stdin)."),
    ] = None,
    session: Annotated[
        str | None, typer.Option("--session", help="Session id to use or continue.")
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="Session store: a SQLAlchemy URL, a SQLite file path, or 'memory' "
            "(default: .rondo/sessions.db).",
        ),
    ] = None,
    jsonl: Annotated[
        bool, typer.Option("--jsonl", help="Print the lifecycle events as JSON lines only.")
    ] = False,
    model: Annotated[
        str | None,
        typer.Option("--model", help="Model string overriding the agent's, e.g. local:smollm2."),
    ] = None,
    record: RecordOption = None,
    replay: ReplayOption = None,
) -> None:
    """Run a message through an agent (`root_agent`), or chat with it."""
    errors = Console(stderr=True, soft_wrap=True, highlight=False)
    try:
        cassette = CliCassette(record=record, replay=replay)
        agent = cassette.load_agent(path, model)
        interactive = message is None and _stdin_is_tty() and not jsonl
        if message is None and not interactive:
            message = sys.stdin.read().strip()
            if not message:
                raise CliError("no message: pass MESSAGE, pipe one on stdin, or run in a terminal")
        service, store = open_session_service(db)
        chat = _Session(agent, service, store, session or uuid.uuid4().hex[:12], jsonl)
        if message is None:
            asyncio.run(_chat(chat, errors))
        else:
            asyncio.run(_one_message(chat, message))
        cassette.finish()
    except (CliError, RondoError) as exc:
        shown = str(exc) if isinstance(exc, CliError) else _describe(exc)
        errors.print(f"[red]error:[/] {escape(shown)}")
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        errors.print("[yellow]interrupted[/]")
        raise typer.Exit(130) from None


app.command("eval")(eval_command)


def main() -> None:
    """The `rondo` console script."""
    app()


register_serve(app)  # `rondo api-server` and `rondo web`
register_mcp(app)  # `rondo mcp AGENT_PATH`
