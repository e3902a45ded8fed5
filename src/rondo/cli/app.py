"""`rondo run PATH [MESSAGE]`: load an agent and render its lifecycle stream live."""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from rondo._version import __version__
from rondo.apps import CliError, app_name_for, open_artifact_service, open_session_service
from rondo.cli.cassettes import CliCassette, RecordOption, ReplayOption
from rondo.cli.decisions import (
    EXIT_WAITING,
    Approve,
    Comment,
    DecisionFlags,
    Reject,
    Result,
    Skip,
    ask_decisions,
    show_how_to_answer,
)
from rondo.cli.eval import eval_command
from rondo.cli.mcp_serve import register as register_mcp
from rondo.cli.prompt import read_line
from rondo.cli.render import JsonLinesRenderer, LiveRenderer
from rondo.cli.serve import register as register_serve
from rondo.errors import RondoError
from rondo.events import PendingCall
from rondo.lifecycle import HITLPending, ReasonEnd, ReasonStart, RunEnd, ToolCallEnd
from rondo.types import Content

if TYPE_CHECKING:
    from rondo.agents.base import BaseAgent
    from rondo.lifecycle import LifecycleEvent
    from rondo.sessions.base import BaseSessionService

T = TypeVar("T")

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
    """One agent, one store, one session: what every message of a `rondo run` goes through.

    Runs are async, on one event loop (`loop`); prompts are read on the main thread between
    runs, so Ctrl-C during an answer cancels that run (SPEC R7) and Ctrl-C at a prompt leaves.
    """

    def __init__(
        self,
        loop: asyncio.Runner,
        agent: BaseAgent,
        app_name: str,
        stores: tuple[BaseSessionService, str],
        session_id: str,
        jsonl: bool,
    ) -> None:
        from rondo.runner import Runner

        self.loop = loop
        self.agent = agent
        self.service, self.store = stores
        self.app_name = app_name
        self.session_id = session_id
        self.jsonl = jsonl
        self.out = Console(soft_wrap=True, highlight=False)
        self.live = _is_live(agent)
        self.runner = Runner(
            agent=agent,
            app_name=app_name,
            session_service=self.service,
            artifact_service=open_artifact_service(durable=self.store != "memory"),
        )

    def send(self, message: str | Content) -> list[PendingCall]:
        """Run `message`; in a terminal, a run that pauses on calls waiting for a human asks
        for each decision and resumes with it (H3). Returns the calls left waiting."""
        answer: str | Content | None = message
        pending: list[PendingCall] = []
        while answer is not None:
            pending = self.loop.run(self._run(answer))
            answer = None
            if pending and not self.jsonl and _stdin_is_tty():
                answer = ask_decisions(self._ask, pending)
                if answer is None:
                    self.out.print(
                        f"[dim]still waiting; --session {self.session_id} continues it[/]"
                    )
        return pending

    async def _run(self, message: str | Content) -> list[PendingCall]:
        """Render one run; returns the calls it left waiting."""
        renderer = (
            JsonLinesRenderer(self.out) if self.jsonl else LiveRenderer(self.out, self.agent.name)
        )
        if self.live:
            stream = self._live_call(message)
        else:
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

    async def _live_call(self, message: str | Content) -> AsyncGenerator[LifecycleEvent, None]:
        """An agent on a live model (SPEC L1): the message is one turn of a live call, which
        ends once the model has answered it — after the tools it called, when it calls any —
        or when a call waits for a decision."""
        from rondo.models.live import LiveRequestQueue

        queue = LiveRequestQueue()
        queue.send_content(Content.user(message) if isinstance(message, str) else message)
        started: dict[str, int] = {}  # reason id -> position in the stream
        last_tool = -1
        stream = self.runner.stream_live(
            user_id=_USER_ID, session_id=self.session_id, live_request_queue=queue
        )
        async with aclosing(stream):
            async for position, event in _aenumerate(stream):
                if isinstance(event, ReasonStart):
                    started[event.reason_id] = position
                elif isinstance(event, ToolCallEnd):
                    last_tool = position
                answered = (
                    isinstance(event, ReasonEnd) and started.get(event.reason_id, -1) > last_tool
                )
                if answered or isinstance(event, HITLPending):
                    queue.close()
                yield event

    async def waiting(self) -> list[PendingCall]:
        """The calls the session waits on (none for a new session)."""
        session = await self.service.get_session(
            app_name=self.app_name, user_id=_USER_ID, session_id=self.session_id
        )
        return session.pending if session is not None else []

    def _ask(self, prompt: str) -> str:
        try:
            return read_line(self.out, prompt)
        except EOFError:
            return ""

    def close(self) -> None:
        self.loop.run(self.service.close())


def _one_message(session: _Session, message: str | Content, command: list[str]) -> None:
    """Run one message; a run left waiting exits with `EXIT_WAITING`, saying how to answer."""
    try:
        pending = session.send(message)
    finally:
        session.close()
    durable = session.store != "memory"
    if pending:
        show_how_to_answer(Console(stderr=True, soft_wrap=True), pending, command, durable)
        raise typer.Exit(EXIT_WAITING)
    if not session.jsonl and durable:
        session.out.print(
            f"[dim]session {session.session_id} in {escape(session.store)} "
            f"(--session {session.session_id} continues it)[/]"
        )


def _chat(session: _Session, errors: Console) -> None:
    """Read a message, run it, repeat, until Ctrl-D, Ctrl-C at the prompt, or `exit`.
    Ctrl-C during an answer cancels that run and comes back to the prompt."""
    out = session.out
    out.print(
        f"[dim]chatting with {escape(session.agent.name)} — session {session.session_id}; "
        "Ctrl-C stops an answer; Ctrl-D, Ctrl-C or 'exit' at the prompt leaves[/]"
    )
    try:
        while True:
            try:
                message = read_line(out, "[bold green]you ›[/] ")
            except (EOFError, KeyboardInterrupt):
                out.print()
                return
            if message.strip().lower() in _EXIT_WORDS:
                return
            if not message.strip():
                continue
            try:
                session.send(message)
            except KeyboardInterrupt:
                out.print("[yellow]cancelled[/] [dim](Ctrl-C again or Ctrl-D leaves)[/]")
            except RondoError as exc:  # the chat goes on: the next message may work
                errors.print(f"[red]error:[/] {escape(_describe(exc))}")
    finally:
        session.close()


def _is_live(agent: BaseAgent) -> bool:
    """Whether the agent runs on a live model (a connection per call, `Runner.run_live`)."""
    from rondo.agents.llm import Agent
    from rondo.models.live import is_live_model

    return isinstance(agent, Agent) and is_live_model(agent.canonical_model)


async def _aenumerate(items: AsyncIterator[T]) -> AsyncGenerator[tuple[int, T], None]:
    position = 0
    async for item in items:
        yield position, item
        position += 1


def _stdin_is_tty() -> bool:
    return sys.stdin.isatty()


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _continue_command(path: str, session_id: str, db: str | None) -> list[str]:
    """The `rondo run` command that continues this session."""
    command = ["rondo", "run", path, "--session", session_id]
    return [*command, "--db", db] if db is not None else command


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
    approve: Approve = None,
    reject: Reject = None,
    skip: Skip = None,
    comment: Comment = None,
    result: Result = None,
) -> None:
    """Run a message through an agent (`root_agent`), or chat with it.

    A run left waiting for a decision without a terminal prints how to answer it, exits 3.
    """
    errors = Console(stderr=True, soft_wrap=True, highlight=False)
    try:
        decisions = DecisionFlags(approve, reject, skip, comment, result)
        if decisions and (session is None or message is not None):
            raise CliError("--approve, --reject and --skip need --session ID and no MESSAGE")
        cassette = CliCassette(record=record, replay=replay)
        agent = cassette.load_agent(path, model)
        interactive = message is None and not decisions and _stdin_is_tty() and not jsonl
        if message is None and not interactive and not decisions:
            message = sys.stdin.read().strip()
            if not message:
                raise CliError("no message: pass MESSAGE, pipe one on stdin, or run in a terminal")
        session_id = session or uuid.uuid4().hex[:12]
        with asyncio.Runner() as loop:
            chat = _Session(
                loop, agent, app_name_for(path), open_session_service(db), session_id, jsonl
            )
            if interactive:
                _chat(chat, errors)
            else:
                answer = decisions.answer(loop.run(chat.waiting())) if decisions else message
                assert answer is not None
                _one_message(chat, answer, _continue_command(path, session_id, db))
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
