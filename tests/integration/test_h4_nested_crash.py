"""SPEC H4 + D1 under SIGKILL: a process killed while a nested confirmation waits, or while
the approved nested tool runs, is continued by another process from the store — the nested
run lives in the runner's store, not in memory — on SQLite and on PostgreSQL, for each
wiring (AgentTool, Harness task, task-mode sub-agent)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from rondo import Runner
from tests._stores import Backend, postgres_url, sql_backend
from tests.integration._h4_world import WIRINGS, build_main, runs
from tests.integration._kill import kill_when

__all__ = ["postgres_url", "sql_backend"]

pytestmark = pytest.mark.integration

CHILD = Path(__file__).with_name("_h4_world.py")


def _kill_child(backend: Backend, ledger: Path, wiring: str, mode: str, marker: str) -> None:
    server = backend.engine_kwargs.get("connect_args", {}).get("server_settings", {})
    args = [sys.executable, str(CHILD), str(backend.url), "s", str(ledger), wiring, mode]
    if server:
        args.append(server["search_path"])
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    kill_when(args, lambda line, _: line.startswith(marker), env)


@pytest.mark.parametrize("wiring", WIRINGS)
async def test_h4_a_kill_while_a_nested_confirmation_waits_then_approved_elsewhere(
    sql_backend: Backend, tmp_path: Path, wiring: str
) -> None:
    _kill_child(sql_backend, tmp_path, wiring, "pause", "PAUSED")
    service = sql_backend.make()
    session = await service.get_session(app_name="h4", user_id="u", session_id="s")
    assert session is not None
    [pending] = session.pending
    assert pending.path == ("main", "worker@c1")
    runner = Runner(agent=build_main(wiring, tmp_path), app_name="h4", session_service=service)
    done = await runner.run_to_result(user_id="u", session_id="s", new_message=[pending.approve()])
    assert runs(tmp_path) == ["x"]
    assert done.text == "main: done (worker: deleted x)"
    assert done.run_id == pending.run_id


@pytest.mark.parametrize("wiring", WIRINGS)
async def test_h4_a_kill_inside_the_approved_nested_tool_resumes_from_the_log(
    sql_backend: Backend, tmp_path: Path, wiring: str
) -> None:
    # The pause, stored by one process; the approval, by another killed inside the tool.
    _kill_child(sql_backend, tmp_path, wiring, "pause", "PAUSED")
    _kill_child(sql_backend, tmp_path, wiring, "approve", "IN_TOOL")
    assert runs(tmp_path) == ["x"]
    service = sql_backend.make()
    before = await service.get_session(app_name="h4", user_id="u", session_id="s")
    assert before is not None
    assert before.pending == []  # answered: nothing waits on a human any more
    runner = Runner(agent=build_main(wiring, tmp_path), app_name="h4", session_service=service)
    done = await runner.run_to_result(user_id="u", session_id="s")  # D1: no new message
    # The call in flight ran again (same call id); the nested run finished; main went on.
    assert runs(tmp_path) == ["x", "x"]
    assert done.text == "main: done (worker: deleted x)"
    assert done.run_id == before.events[0].run_id
    session = await service.get_session(app_name="h4", user_id="u", session_id="s")
    assert session is not None
    assert session.pending == []
