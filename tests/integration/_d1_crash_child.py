"""A process that runs a two-tool-step invocation on a SQL store and blocks at one step
boundary until it is killed (see test_d1_crash.py).

    python _d1_crash_child.py URL SESSION_ID LEDGER_DIR BOUNDARY STEP [SEARCH_PATH]

BOUNDARY, in step STEP (0-based): `model_call` (inside the model call), `model` (after the
model event is stored), `tool` (inside the tool call), `tool_event` (after the tool-response
event is stored). The child prints `STOPPED` once it is there.
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
    hang_tool_at: int | None = None,
) -> Runner:
    if hang_first:
        hang_tool_at = 0

    async def step(n: int, tool_context: ToolContext) -> dict[str, Any]:
        """One step with a side effect."""
        ledger.run(tool_context.function_call_id or "")
        if n == hang_tool_at:
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


async def main(
    url: str, session_id: str, ledger_dir: str, boundary: str, at: int, path: str
) -> None:
    kwargs: dict[str, Any] = {}
    if path:
        kwargs["connect_args"] = {"server_settings": {"search_path": path}}
    service = SqlSessionService(url, **kwargs)

    async def move(request: ModelRequest) -> FunctionCall | str:
        answered = sum(1 for c in request.contents for p in c.parts if p.function_response)
        if boundary == "model_call" and answered == at:
            print("STOPPED", flush=True)
            await asyncio.Event().wait()
        return next_move(request)

    runner = build_runner(
        service,
        Ledger(Path(ledger_dir)),
        hang_tool_at=at if boundary == "tool" else None,
        model=ScriptedModel([move] * 10),
    )
    steps = 0
    async with aclosing(
        runner.run_async(user_id="u", session_id=session_id, new_message="go")
    ) as events:
        async for event in events:
            print(f"EVENT {event.id}", flush=True)
            mark = (boundary == "model" and event.get_function_calls()) or (
                boundary == "tool_event" and event.get_function_responses()
            )
            if mark:
                if steps == at:
                    # Holding the event: nothing else starts (R7) until the kill.
                    print("STOPPED", flush=True)
                    await asyncio.Event().wait()
                steps += 1


if __name__ == "__main__":
    a = sys.argv[1:]
    asyncio.run(main(a[0], a[1], a[2], a[3], int(a[4]), a[5] if len(a) > 5 else ""))
