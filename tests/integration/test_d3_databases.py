"""SPEC D3: the database fails under a run — PostgreSQL restarted or down mid-run (a private
cluster the test starts, never the shared server), SQLite locked by another process. The run
goes on or fails with `StoreUnavailableError`; nothing acknowledged is lost; a resume
completes it, and a tool keyed by its call id has its effect once.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rondo import Agent, Event, FunctionCall, Runner, ToolContext
from rondo.errors import StoreUnavailableError
from rondo.sessions.base import BaseSessionService
from rondo.sessions.sql import SqlSessionService
from rondo.testing import ScriptedModel
from tests._pgcluster import PgCluster, pg_cluster

__all__ = ["pg_cluster"]

pytestmark = pytest.mark.integration

SCRIPT: list[Any] = [
    FunctionCall(name="fault", args={}, id="c-1"),
    FunctionCall(name="fault", args={}, id="c-2"),
    "done",
]


class Fault:
    """A tool that injects `inject` on its first call (per call id: exactly once)."""

    def __init__(self, inject: Any) -> None:
        self.inject = inject
        self.runs: list[str] = []
        self.effects: set[str] = set()

    def runner(self, service: BaseSessionService, script: list[Any]) -> Runner:
        async def fault(tool_context: ToolContext) -> str:
            """Do a step."""
            key = tool_context.function_call_id or ""
            self.runs.append(key)
            if key == "c-1" and key not in self.effects:
                self.effects.add(key)
                await asyncio.to_thread(self.inject)
            self.effects.add(key)
            return "ok"

        return Runner(
            agent=Agent(name="agent", model=ScriptedModel(script), tools=[fault]),
            app_name="app",
            session_service=service,
        )


async def run(runner: Runner, message: str | None, received: list[Event]) -> None:
    async for event in runner.run_async(user_id="u", session_id="s", new_message=message):
        received.append(event)


async def stored_ids(service: BaseSessionService) -> list[str]:
    session = await service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    return [e.id for e in session.events]


async def test_d3_postgres_restarted_mid_run_the_run_goes_on(pg_cluster: PgCluster) -> None:
    service = SqlSessionService(pg_cluster.url)
    fault = Fault(pg_cluster.restart)  # an immediate stop: a crash of the server
    received: list[Event] = []
    try:
        await run(fault.runner(service, SCRIPT), "go", received)
    finally:
        await service.close()
    assert received[-1].text == "done"
    fresh = SqlSessionService(pg_cluster.url)
    try:
        assert (await stored_ids(fresh))[1:] == [e.id for e in received]
    finally:
        await fresh.close()


async def test_d3_postgres_down_mid_run_fails_clearly_then_resume_completes(
    pg_cluster: PgCluster,
) -> None:
    service = SqlSessionService(pg_cluster.url)
    fault = Fault(pg_cluster.stop)
    received: list[Event] = []
    try:
        with pytest.raises(StoreUnavailableError, match=r"PostgreSQL at .* is unavailable"):
            await run(fault.runner(service, SCRIPT), "go", received)
        assert len(received) == 1  # the model event; the tool event was never acknowledged
        pg_cluster.start()
        assert (await stored_ids(service))[1:] == [e.id for e in received]  # nothing lost
        resumed: list[Event] = []
        await run(fault.runner(service, SCRIPT[1:]), None, resumed)
    finally:
        await service.close()
    assert resumed[-1].text == "done"
    # The call in flight ran again under its id; its keyed effect happened once.
    assert fault.runs == ["c-1", "c-1", "c-2"]
    assert fault.effects == {"c-1", "c-2"}


LOCKER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("LOCKED", flush=True)
sys.stdin.readline()
conn.execute("COMMIT")
"""


class Locker:
    """Another process holding SQLite's exclusive lock until told to let go."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.process: subprocess.Popen[str] | None = None

    def lock(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", LOCKER, str(self.path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "LOCKED"

    def release(self) -> None:
        process = self.process
        if process is None or process.stdin is None or process.stdin.closed:
            return
        process.stdin.write("\n")
        process.stdin.close()
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()


async def test_d3_sqlite_locked_by_another_process_the_run_waits_without_blocking(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    locker = Locker(path)
    service = SqlSessionService(f"sqlite:///{path}")
    fault = Fault(locker.lock)
    received: list[Event] = []
    ticks = 0
    waiting: list[int] = []

    async def release_later() -> None:
        nonlocal ticks
        for _ in range(3000):  # until the tool took the lock
            if locker.process is not None:
                break
            await asyncio.sleep(0.01)
        for _ in range(20):  # the loop keeps turning while the append waits
            await asyncio.sleep(0.01)
            ticks += 1
        waiting.append(len(received))
        await asyncio.to_thread(locker.release)

    try:
        await asyncio.gather(run(fault.runner(service, SCRIPT), "go", received), release_later())
        assert received[-1].text == "done"
        assert ticks == 20
        assert waiting == [1]  # the tool event waited for the lock, the loop did not
        assert (await stored_ids(service))[1:] == [e.id for e in received]
    finally:
        locker.release()
        await service.close()


async def test_d3_sqlite_locked_past_the_timeout_fails_clearly_then_resume_completes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    locker = Locker(path)
    service = SqlSessionService(f"sqlite:///{path}", connect_args={"timeout": 0.2})
    fault = Fault(locker.lock)
    received: list[Event] = []
    try:
        with pytest.raises(StoreUnavailableError, match="stayed locked"):
            await run(fault.runner(service, SCRIPT), "go", received)
        locker.release()
        assert (await stored_ids(service))[1:] == [e.id for e in received]
        resumed: list[Event] = []
        await run(fault.runner(service, SCRIPT[1:]), None, resumed)
    finally:
        locker.release()
        await service.close()
    assert resumed[-1].text == "done"
    assert fault.runs == ["c-1", "c-1", "c-2"]
