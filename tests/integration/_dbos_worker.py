"""A DBOS worker process for test_d2_dbos.py: consumes the rondo invocation queue.

    python _dbos_worker.py SYSTEM_DB_URL SESSIONS_URL EXECUTOR_ID LEDGER_DIR BLOCK [parallel]

With BLOCK=1 the first call of the first tool step hangs (after printing STOPPED), so the
test can SIGKILL the worker in the middle of a run. `parallel`: the model calls three tools at
once (`a`, `b`, `c`, slowest first), then answers; with BLOCK=1 `a` hangs once `b` and `c`
have returned.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from dbos import DBOS

from rondo import Agent, FunctionCall, FunctionTool, Runner, ToolContext
from rondo.durable.dbos import DbosEngine
from rondo.models.base import ModelRequest
from rondo.sessions.sql import SqlSessionService
from rondo.testing import ScriptedModel
from tests.integration._d1_crash_child import Ledger, build_runner

APP_VERSION = "rondo-d2-test-1"


def build_parallel_runner(service: SqlSessionService, ledger: Ledger, block: bool) -> Runner:
    done: dict[str, asyncio.Event] = {"b": asyncio.Event(), "c": asyncio.Event()}

    def make(name: str, seconds: float) -> FunctionTool:
        async def run(tool_context: ToolContext) -> dict[str, Any]:
            ledger.run(f"{name}:{tool_context.function_call_id}")
            await asyncio.sleep(seconds)
            if name in done:
                done[name].set()
            elif block:
                await done["b"].wait()
                await done["c"].wait()
                print("STOPPED", flush=True)
                await asyncio.Event().wait()
            return {"tool": name}

        run.__name__ = name
        run.__doc__ = f"Tool {name}."
        return FunctionTool(run)

    def move(request: ModelRequest) -> list[FunctionCall] | str:
        if any(p.function_response for c in request.contents for p in c.parts):
            return "done"
        return [FunctionCall(name=n, args={}) for n in "abc"]

    return Runner(
        agent=Agent(
            name="agent",
            model=ScriptedModel([move] * 4),
            tools=[make("a", 0.3), make("b", 0.05), make("c", 0.15)],
        ),
        app_name="crash",
        session_service=service,
    )


async def main(
    system_url: str, sessions_url: str, executor: str, ledger: str, block: bool, mode: str
) -> None:
    DBOS(
        config={
            "name": "rondo-d2",
            "system_database_url": system_url,
            "application_version": APP_VERSION,
            "executor_id": executor,
            "notification_listener_polling_interval_sec": 0.05,
        }
    )

    def make_runner():
        service = SqlSessionService(sessions_url)
        if mode == "parallel":
            return build_parallel_runner(service, Ledger(Path(ledger)), block)
        return build_runner(service, Ledger(Path(ledger)), hang_first=block)

    engine = DbosEngine(make_runner, polling_interval_sec=0.1)
    DBOS.launch()
    await engine.start()
    print("READY", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    a = sys.argv[1:]
    asyncio.run(main(a[0], a[1], a[2], a[3], a[4] == "1", a[5] if len(a) > 5 else ""))
