"""Answering the calls a run waits on (SPEC H3) from the command line.

In a terminal, `rondo run` asks for each decision when the run pauses. Without one (a script,
CI), it prints the waiting calls and the commands that answer them, and exits with
`EXIT_WAITING`; `rondo run PATH --session ID --approve CALL_ID` (or `--reject`, `--skip`)
then resumes the run with that decision.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from rondo.apps import CliError
from rondo.events import PendingCall
from rondo.types import Content, Part

__all__ = [
    "EXIT_WAITING",
    "DecisionFlags",
    "ask_decisions",
    "call_text",
    "show_how_to_answer",
]

# The exit status of a run that ended waiting for a decision nobody could give here.
EXIT_WAITING = 3

Approve = Annotated[
    list[str] | None,
    typer.Option(
        "--approve",
        metavar="CALL_ID",
        help="Approve a waiting call (repeatable; needs --session). For a long-running "
        "call, --result is its result.",
    ),
]
Reject = Annotated[
    list[str] | None,
    typer.Option(
        "--reject", metavar="CALL_ID", help="Reject a waiting call (repeatable; see --comment)."
    ),
]
Skip = Annotated[
    list[str] | None,
    typer.Option(
        "--skip",
        metavar="CALL_ID",
        help="Skip a waiting call without running it; --comment is recorded as its result.",
    ),
]
Comment = Annotated[
    str | None,
    typer.Option("--comment", help="Why a call is rejected, or what a skipped call records."),
]
Result = Annotated[
    str | None,
    typer.Option("--result", help="JSON result delivered to an approved long-running call."),
]


class DecisionFlags:
    """`--approve`, `--reject`, `--skip` (with `--comment`, `--result`) as one answer."""

    def __init__(
        self,
        approve: Sequence[str] | None,
        reject: Sequence[str] | None,
        skip: Sequence[str] | None,
        comment: str | None,
        result: str | None,
    ) -> None:
        self.chosen: dict[str, str] = {}
        for decision, ids in (("approve", approve), ("reject", reject), ("skip", skip)):
            for call_id in ids or ():
                if call_id in self.chosen:
                    raise CliError(f"call {call_id} has two decisions")
                self.chosen[call_id] = decision
        self.comment = comment
        self.result = result

    def __bool__(self) -> bool:
        return bool(self.chosen)

    def answer(self, pending: Sequence[PendingCall]) -> Content:
        """The message that carries these decisions on the session's waiting calls."""
        by_id = {call.call_id: call for call in pending}
        unknown = [call_id for call_id in self.chosen if call_id not in by_id]
        if unknown:
            waiting = ", ".join(by_id) or "none"
            raise CliError(
                f"no waiting call {', '.join(unknown)} in this session (waiting: {waiting})"
            )
        parts = [self._part(by_id[i], decision) for i, decision in self.chosen.items()]
        return Content(role="user", parts=parts)

    def _part(self, call: PendingCall, decision: str) -> Part:
        if call.kind == "confirmation":
            if decision == "approve":
                return call.approve(_json_or_text(self.result) if self.result else None)
            if decision == "reject":
                return call.reject(self.comment)
            return call.skip(self.comment)
        if decision == "approve":
            if self.result is None:
                raise CliError(
                    f"{call.call_id} is a long-running {call.tool_name} call: approving it "
                    "needs --result JSON (its result)"
                )
            return call.respond(as_result(self.result))
        if decision == "reject":
            refusal = "rejected by the user" + (f": {self.comment}" if self.comment else "")
            return call.respond({"error": refusal})
        return call.respond(as_result(self.comment or ""))


def call_text(call: PendingCall) -> str:
    """`tool(arg=value, ...)`: the call as it reads in a prompt."""
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.args.items())
    return f"{call.tool_name}({args})"


def _json_or_text(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def as_result(raw: str) -> dict[str, object]:
    """A typed result: a JSON object as it is, anything else under "result"."""
    value = _json_or_text(raw)
    return value if isinstance(value, dict) else {"result": value}  # pyright: ignore[reportUnknownVariableType]


def ask_decisions(ask: Callable[[str], str], pending: Sequence[PendingCall]) -> Content | None:
    """Ask for a decision on each waiting call (`ask` shows a prompt and reads a line);
    None when every call is left waiting (an empty answer)."""
    parts: list[Part] = []
    for call in pending:
        shown = escape(call_text(call))
        if call.kind == "confirmation":
            prompt = f"[yellow]{shown}[/] — [bold]a[/]pprove, [bold]r[/]eject or [bold]s[/]kip? "
            choice = ask(prompt).strip().lower()[:1]
            if choice == "a":
                parts.append(call.approve())
            elif choice == "r":
                comment = ask("[dim]why (optional)?[/] ").strip()
                parts.append(call.reject(comment or None))
            elif choice == "s":
                note = ask("[dim]what to record as its result?[/] ").strip()
                parts.append(call.skip(note or None))
        else:
            raw = ask(f"[yellow]{shown}[/] — its result (JSON, empty: wait)? ").strip()
            if raw:
                parts.append(call.respond(as_result(raw)))
    return Content(role="user", parts=parts) if parts else None


def show_how_to_answer(
    out: Console, pending: Sequence[PendingCall], command: Sequence[str], durable: bool
) -> None:
    """Print the waiting calls and the commands that answer each (`command` is the
    `rondo run PATH --session ID ...` that continues this session)."""
    base = shlex.join(command)
    count = len(pending)
    out.print(f"[yellow]waiting for a decision on {count} call{'s' * (count != 1)}:[/]")
    for call in pending:
        flag = call.call_id if call.kind == "confirmation" else f"{call.call_id} --result JSON"
        out.print(f"  {escape(call_text(call))}  [dim]call id {escape(call.call_id)}[/]")
        if not durable:
            continue
        for line in (
            f"--approve {flag}",
            f"--reject {call.call_id} [--comment TEXT]",
            f"--skip {call.call_id} [--comment TEXT]",
        ):
            out.print(f"    {base} {line}", markup=False)
    if not durable:
        out.print("[dim]--db memory keeps nothing: run it with a --db to answer it later[/]")
