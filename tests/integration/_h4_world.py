"""A main agent whose worker's `delete_file` needs confirmation, wired one of three ways
(an `AgentTool`, a `Harness` task, a `mode="task"` sub-agent), with stateless models: the
next move follows from the request, so a fresh process (or server) continues any run.

    python _h4_world.py URL SESSION_ID LEDGER_DIR WIRING MODE [SEARCH_PATH]

MODE `pause`: run to the nested confirmation, print `PAUSED`, then wait to be killed.
MODE `approve`: approve it; the tool prints `IN_TOOL` and waits to be killed.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from rondo import Agent, FunctionCall, FunctionTool, Runner
from rondo.agents.harness import Harness
from rondo.models.base import ModelRequest
from rondo.sessions.base import BaseSessionService
from rondo.testing import ScriptedModel
from rondo.tools.agent_tool import AgentTool

WIRINGS = ["agent_tool", "harness_task", "task_mode"]


def _responses(request: ModelRequest) -> list[dict[str, Any]]:
    return [
        dict(p.function_response.response)
        for c in request.contents
        for p in c.parts
        if p.function_response is not None
    ]


def main_move(wiring: str) -> Any:
    def move(request: ModelRequest) -> FunctionCall | str:
        answers = _responses(request)
        if answers:
            return f"main: done ({answers[-1].get('result')})"
        if wiring == "harness_task":
            return FunctionCall(
                name="task", args={"agent_name": "worker", "prompt": "delete x"}, id="c1"
            )
        return FunctionCall(name="worker", args={"request": "delete x"}, id="c1")

    return move


def worker_move(request: ModelRequest) -> FunctionCall | str:
    answers = _responses(request)
    if answers:
        return "worker: deleted x" if "deleted" in answers[-1] else "worker: refused"
    return FunctionCall(name="delete_file", args={"path": "x"}, id="w1")


def build_main(wiring: str, ledger: Path, block: bool = False) -> Agent:
    """The main agent; `delete_file` appends to `ledger/runs.log` (and blocks, with `block`)."""

    def record(path: str) -> None:
        with open(ledger / "runs.log", "a") as f:
            f.write(path + "\n")
            f.flush()
            os.fsync(f.fileno())

    async def delete_file(path: str) -> dict[str, Any]:
        """Delete a file."""
        record(path)
        if block:
            print("IN_TOOL", flush=True)
            await asyncio.Event().wait()
        return {"deleted": path}

    worker = Agent(
        name="worker",
        model=ScriptedModel([worker_move] * 10),
        tools=[FunctionTool(delete_file, require_confirmation=True)],
        mode="task" if wiring == "task_mode" else "chat",
    )
    model = ScriptedModel([main_move(wiring)] * 10)
    if wiring == "agent_tool":
        return Agent(name="main", model=model, tools=[AgentTool(worker)])
    if wiring == "harness_task":
        return Harness("main", model, agents=[worker])
    return Agent(name="main", model=model, sub_agents=[worker])


def runs(ledger: Path) -> list[str]:
    path = ledger / "runs.log"
    return path.read_text().split() if path.exists() else []


async def _child(argv: list[str]) -> None:
    from rondo.sessions.sql import SqlSessionService

    url, session_id, ledger, wiring, mode = argv[:5]
    kwargs: dict[str, Any] = {}
    if len(argv) > 5:
        kwargs["connect_args"] = {"server_settings": {"search_path": argv[5]}}
    service: BaseSessionService = SqlSessionService(url, **kwargs)
    main = build_main(wiring, Path(ledger), block=mode == "approve")
    runner = Runner(agent=main, app_name="h4", session_service=service)
    if mode == "pause":
        await runner.run_to_result(user_id="u", session_id=session_id, new_message="go")
        print("PAUSED", flush=True)
        await asyncio.Event().wait()
    session = await service.get_session(app_name="h4", user_id="u", session_id=session_id)
    assert session is not None
    await runner.run_to_result(
        user_id="u", session_id=session_id, new_message=[session.pending[0].approve()]
    )
    print("FINISHED", flush=True)  # never: the tool blocks until the kill


if __name__ == "__main__":
    asyncio.run(_child(sys.argv[1:]))
