"""A process that runs a long agent invocation on a SQL store and reports every event it
receives on stdout, until it is killed (see test_sessions_crash.py).

    python _crash_child.py URL SESSION_ID [SEARCH_PATH]
"""

from __future__ import annotations

import asyncio
import sys
from contextlib import aclosing
from typing import Any

from rondo import Agent, FunctionCall, Runner
from rondo.sessions.sql import SqlSessionService
from rondo.testing import ScriptedModel


async def step(n: int) -> dict[str, Any]:
    """One slow step."""
    await asyncio.sleep(0.005)
    return {"n": n}


async def main(url: str, session_id: str, search_path: str | None) -> None:
    kwargs: dict[str, Any] = {}
    if search_path:
        kwargs["connect_args"] = {"server_settings": {"search_path": search_path}}
    service = SqlSessionService(url, **kwargs)
    calls = [FunctionCall(name="step", args={"n": i}) for i in range(1000)]
    runner = Runner(
        agent=Agent(name="agent", model=ScriptedModel([*calls, "done"]), tools=[step]),
        app_name="crash",
        session_service=service,
    )
    out = sys.stdout
    out.write("READY\n")
    out.flush()
    async with aclosing(
        runner.run_async(user_id="u", session_id=session_id, new_message="go")
    ) as events:
        async for event in events:
            out.write(f"EVENT {event.id}\n")
            out.flush()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))
