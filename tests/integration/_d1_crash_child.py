"""A process that runs a two-tool-step invocation on a SQL store and blocks at one step
boundary until it is killed (see test_d1_crash.py).

    python _d1_crash_child.py URL SESSION_ID LEDGER_DIR BOUNDARY [SEARCH_PATH]

BOUNDARY: `model` (after the first model event is stored), `tool` (inside the first tool
call), `tool_event` (after the first tool-response event is stored). The child prints
`STOPPED` once it is there.
"""

from __future__ import annotations

import asyncio
import os
import sys
from contextlib import aclosing
from pathlib import Path
from typing import Any

from rondo import Agent, FunctionCall, FunctionTool, Runner, ToolContext
from rondo.models.base import ModelRequest
from rondo.sessions.base import BaseSessionService
from rondo.sessions.sql import SqlSessionService
from rondo.testing import ScriptedModel

STEPS = 2


def next_move(request: ModelRequest) -> FunctionCall | str:
    """A stateless model: the next step follows from the tool results in the request."""
    answered = sum(1 for c in request.contents for p in c.parts if p.function_response)
    return FunctionCall(name="step", args={"n": answered}) if answered < STEPS else "done"


class Ledger:
    """The tool's side effects on disk: every run, and one effect per idempotency key."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "effects").mkdir(parents=True, exist_ok=True)

    def run(self, key: str) -> None:
        with open(self.root / "runs.log", "a") as f:
            f.write(key + "\n")
            f.flush()
            os.fsync(f.fileno())
        try:  # exactly-once: the effect is created only if its key has none yet
            fd = os.open(self.root / "effects" / key, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            os.close(fd)
        except FileExistsError:
            pass

    def runs(self) -> list[str]:
        path = self.root / "runs.log"
        return path.read_text().split() if path.exists() else []

    def effects(self) -> list[str]:
        return sorted(os.listdir(self.root / "effects"))


def build_runner(
    service: BaseSessionService,
    ledger: Ledger,
    *,
    hang_first: bool = False,
    idempotent: bool = True,
    model: ScriptedModel | None = None,
) -> Runner:
    async def step(n: int, tool_context: ToolContext) -> dict[str, Any]:
        """One step with a side effect."""
        ledger.run(tool_context.function_call_id or "")
        if hang_first and n == 0:
            print("STOPPED", flush=True)
            await asyncio.Event().wait()
        return {"n": n}

    return Runner(
        agent=Agent(
            name="agent",
            model=model or ScriptedModel([next_move] * 10),
            tools=[FunctionTool(step, idempotent=idempotent)],
        ),
        app_name="crash",
        session_service=service,
    )


async def main(url: str, session_id: str, ledger_dir: str, boundary: str, path: str) -> None:
    kwargs: dict[str, Any] = {}
    if path:
        kwargs["connect_args"] = {"server_settings": {"search_path": path}}
    service = SqlSessionService(url, **kwargs)
    runner = build_runner(service, Ledger(Path(ledger_dir)), hang_first=boundary == "tool")
    async with aclosing(
        runner.run_async(user_id="u", session_id=session_id, new_message="go")
    ) as events:
        async for event in events:
            print(f"EVENT {event.id}", flush=True)
            if (boundary == "model" and event.get_function_calls()) or (
                boundary == "tool_event" and event.get_function_responses()
            ):
                # Holding the event: nothing else starts (R7) until the kill.
                print("STOPPED", flush=True)
                await asyncio.Event().wait()


if __name__ == "__main__":
    args = sys.argv[1:]
    asyncio.run(main(args[0], args[1], args[2], args[3], args[4] if len(args) > 4 else ""))
