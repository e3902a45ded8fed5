"""SPEC D1 under SIGKILL: a process killed at each step boundary of a multi-step run is
resumed from the log by another process (here: the test) with no new message — no model call
is repeated, no stored tool result is re-run, the run keeps its ids, and the call in flight is
re-dispatched under its call id — on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from rondo.flow.functions import INTERRUPTED_HOLD_ERROR
from rondo.sessions.sql import SqlSessionService
from rondo.testing import ScriptedModel
from tests._stores import Backend, postgres_url, sql_backend
from tests.integration._d1_crash_child import Ledger, build_runner, next_move
from tests.integration._kill import kill_when

__all__ = ["postgres_url", "sql_backend"]

pytestmark = pytest.mark.integration

CHILD = Path(__file__).with_name("_d1_crash_child.py")


def kill_at(
    backend: Backend, session_id: str, ledger: Path, boundary: str, step: int = 0
) -> list[str]:
    """Run the child to `boundary` of `step`, SIGKILL it there; the event ids it received."""
    server = backend.engine_kwargs.get("connect_args", {}).get("server_settings", {})
    args = [sys.executable, str(CHILD), str(backend.url), session_id, str(ledger), boundary]
    args.append(str(step))
    if server:
        args.append(server["search_path"])
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    return kill_when(args, lambda line, _: line.startswith("STOPPED"), env)


# (boundary, step): every step boundary of the run — two tool steps, then the answer.
CASES = [
    ("model_call", 0),
    ("model", 0),
    ("tool", 0),
    ("tool_event", 0),
    ("model_call", 1),
    ("model", 1),
    ("tool", 1),
    ("tool_event", 1),
    ("model_call", 2),
]


def expected_before(boundary: str, step: int) -> tuple[int, int, int]:
    """(events the child had stored, model calls it completed, tool runs it started)."""
    if boundary == "model_call":
        return 2 * step, step, step
    if boundary == "model":
        return 2 * step + 1, step + 1, step
    if boundary == "tool":
        return 2 * step + 1, step + 1, step + 1
    return 2 * step + 2, step + 1, step + 1


@pytest.mark.parametrize(("boundary", "step"), CASES)
async def test_d1_sigkill_at_each_step_boundary_then_resume(
    sql_backend: Backend, tmp_path: Path, boundary: str, step: int
) -> None:
    stored_before, model_calls_before, runs_before = expected_before(boundary, step)
    received = kill_at(sql_backend, "s", tmp_path, boundary, step)
    assert len(received) == stored_before
    ledger = Ledger(tmp_path)
    assert len(ledger.runs()) == runs_before

    service = sql_backend.make()
    assert isinstance(service, SqlSessionService)
    before = await service.get_session(app_name="crash", user_id="u", session_id="s")
    assert before is not None
    assert [e.id for e in before.events][1:] == received  # the log is what was acknowledged
    model = ScriptedModel([next_move] * 10)
    runner = build_runner(service, ledger, model=model)
    resumed = [e async for e in runner.run_async(user_id="u", session_id="s")]

    assert resumed[-1].text == "done"
    # No completed model call is made again: 2 tool steps + the answer = 3 calls in all.
    assert model_calls_before + model.calls == 3
    session = await service.get_session(app_name="crash", user_id="u", session_id="s")
    assert session is not None
    events = list(session.events)
    assert [e.author for e in events] == ["user", *["agent"] * 5]
    assert {e.run_id for e in events} == {events[0].run_id}
    assert {e.invocation_id for e in events} == {events[0].invocation_id}
    calls = [c.id or "" for e in events for c in e.get_function_calls()]
    answers = [r.id for e in events for r in e.get_function_responses()]
    assert answers == calls
    assert len(calls) == 2
    # A stored result is never re-run; the call in flight runs again under its own id, so
    # the effect keyed by that id happens once.
    expected_runs = list(calls)
    if boundary == "tool":
        expected_runs.insert(step, calls[step])
    assert ledger.runs() == expected_runs
    assert ledger.effects() == sorted(calls)


async def test_d1_sigkill_during_a_non_idempotent_tool_pauses_the_resume(
    sql_backend: Backend, tmp_path: Path
) -> None:
    kill_at(sql_backend, "s", tmp_path, "tool")
    ledger = Ledger(tmp_path)
    service = sql_backend.make()
    assert isinstance(service, SqlSessionService)
    model = ScriptedModel([next_move] * 10)
    runner = build_runner(service, ledger, idempotent=False, model=model)
    paused = [e async for e in runner.run_async(user_id="u", session_id="s")]
    assert model.calls == 0
    assert len(ledger.runs()) == 1  # not run again
    assert paused[0].get_function_responses()[0].response == {"error": INTERRUPTED_HOLD_ERROR}
    # The pause is stored: a fresh process sees it pending and approves it.
    fresh = sql_backend.make()
    session = await fresh.get_session(app_name="crash", user_id="u", session_id="s")
    assert session is not None
    [pending] = session.pending
    runner = build_runner(fresh, ledger, idempotent=False, model=model)
    done = [
        e
        async for e in runner.run_async(
            user_id="u", session_id="s", new_message=[pending.approve()]
        )
    ]
    assert done[-1].text == "done"
    assert ledger.runs() == [pending.original_call_id] * 2 + [ledger.runs()[-1]]
    assert len(ledger.effects()) == 2
