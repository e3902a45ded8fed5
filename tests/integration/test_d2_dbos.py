"""SPEC D2: invocations as DBOS workflows on the sessions' PostgreSQL, from a queue two worker
processes consume; a SIGKILLed worker's run is completed by DBOS recovery on the other worker,
continuing from rondo's session log (a private PostgreSQL cluster the test starts).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from rondo.sessions.sql import SqlSessionService
from tests._pgcluster import PgCluster, pg_cluster
from tests._require import require_module
from tests.integration._d1_crash_child import Ledger

__all__ = ["pg_cluster"]

pytestmark = pytest.mark.integration

WORKER = Path(__file__).with_name("_dbos_worker.py")
ROOT = Path(__file__).parents[2]


class Worker:
    def __init__(
        self, cluster: PgCluster, executor: str, ledger: Path, block: bool, mode: str = ""
    ) -> None:
        system = f"postgresql://postgres@127.0.0.1:{cluster.port}/rondo_dbos"
        args = [sys.executable, str(WORKER), system, cluster.url, executor, str(ledger)]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(
            [*args, "1" if block else "0", mode], stdout=subprocess.PIPE, text=True, env=env
        )
        self.wait_for("READY")

    def wait_for(self, word: str) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.strip() == word:
                return
        pytest.fail(f"the worker ended before it printed {word}")

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        if self.process.stdout is not None:
            self.process.stdout.close()


def wait_result(client: Any, key: str, seconds: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        status = client.retrieve_workflow(key).get_status()
        if status.status == "SUCCESS":
            return {"output": status.output, "executor": status.executor_id}
        if status.status == "ERROR":
            pytest.fail(f"the workflow failed: {status.error}")
        time.sleep(0.1)
    pytest.fail("the workflow did not finish")


async def stored_events(cluster: PgCluster, session_id: str) -> list[Any]:
    service = SqlSessionService(cluster.url)
    try:
        session = await service.get_session(app_name="crash", user_id="u", session_id=session_id)
    finally:
        await service.close()
    assert session is not None
    return list(session.events)


def kill_and_recover(
    cluster: PgCluster, ledger: Path, *, session_id: str, successor: str, mode: str = ""
) -> tuple[str, dict[str, Any], list[Any]]:
    """Submit a run, SIGKILL worker w1 once it is inside a tool call, start `successor`; a
    successor with another executor id gets the run by `recover_with_client` (the run is
    PENDING until then), one named w1 by DBOS's own recovery at launch. Returns the run's
    key, how it ended and its DBOS steps."""
    dbos = require_module("dbos", what="DBOS", install="pip install 'rondo-agents[dbos]'")
    from rondo.durable.dbos import recover_with_client, submit_with_client

    first = Worker(cluster, "w1", ledger, block=True, mode=mode)
    second: Worker | None = None
    client: Any = None
    try:
        client = dbos.DBOSClient(
            system_database_url=f"postgresql://postgres@127.0.0.1:{cluster.port}/rondo_dbos"
        )
        key = submit_with_client(
            client, user_id="u", session_id=session_id, message="go", app_version="rondo-d2-test-1"
        )
        first.wait_for("STOPPED")  # w1 dequeued the run and is inside a tool call
        first.kill()
        second = Worker(cluster, successor, ledger, block=False, mode=mode)
        if successor != "w1":
            assert client.retrieve_workflow(key).get_status().status == "PENDING"
            assert recover_with_client(client, ["w1"]) == [key]
        return key, wait_result(client, key), client.list_workflow_steps(key)
    finally:
        first.stop()
        if second is not None:
            second.stop()
        if client is not None:
            client.destroy()


async def test_d2_sigkilled_worker_run_is_completed_by_dbos_recovery_on_another_worker(
    pg_cluster: PgCluster, tmp_path: Path
) -> None:
    key, done, steps = kill_and_recover(pg_cluster, tmp_path, session_id="s", successor="w2")

    assert done["executor"] == "w2"
    assert done["output"]["text"] == "done"
    assert done["output"]["run_id"] == f"run-{key}"
    # rondo's log is the history: one invocation, nothing repeated, the in-flight call
    # re-run under its own id so its keyed effect happened once.
    events = await stored_events(pg_cluster, "s")
    assert [e.author for e in events] == ["user", *["agent"] * 5]
    assert {e.invocation_id for e in events} == {f"inv-{key}"}
    calls = [c.id for e in events for c in e.get_function_calls()]
    ledger = Ledger(tmp_path)
    assert ledger.runs() == [calls[0], calls[0], calls[1]]
    assert ledger.effects() == sorted(c or "" for c in calls)
    # Each model call and tool call is a DBOS step, in order: w1 recorded the first model
    # call; w2 replayed it (the model was not called again) and recorded the rest, the call
    # w1 was killed in included. Outputs are markers only (the log holds the history).
    assert [s["function_name"] for s in steps] == [
        "rondo.model:agent",
        "rondo.tool:step",
        "rondo.model:agent",
        "rondo.tool:step",
        "rondo.model:agent",
    ]
    assert [s["function_id"] for s in steps] == list(range(1, 6))
    assert steps[0]["output"] == {"agent": "agent", "model": "scripted", "responses": 1}
    assert steps[1]["output"] == {"tool": "step", "call_id": calls[0]}
    assert steps[3]["output"] == {"tool": "step", "call_id": calls[1]}


async def test_d2_a_worker_restarted_with_its_executor_id_recovers_its_runs(
    pg_cluster: PgCluster, tmp_path: Path
) -> None:
    """DBOS's own recovery: a process that launches with the dead worker's executor id and the
    same application version picks its PENDING runs up; rondo continues them from the log."""
    _, done, _ = kill_and_recover(pg_cluster, tmp_path, session_id="s", successor="w1")
    assert done["output"]["text"] == "done"
    ledger = Ledger(tmp_path)
    assert len(ledger.runs()) == 3  # the in-flight call twice (same id), the next once
    assert len(ledger.effects()) == 2


async def test_d2_parallel_tool_calls_are_steps_in_call_order_and_a_cut_step_is_marked(
    pg_cluster: PgCluster, tmp_path: Path
) -> None:
    """Three parallel calls (slowest first) are steps in call order, whatever order they end
    in. w1 dies while `a` runs after `b` and `c` returned: the recovery records `a`'s step as
    interrupted and runs the three calls again under their ids (their merged record was not
    stored); the model is not called again."""
    from rondo.durable.dbos import INTERRUPTED_STEP

    _, done, steps = kill_and_recover(
        pg_cluster, tmp_path, session_id="p", successor="w2", mode="parallel"
    )
    assert done["output"]["text"] == "done"
    assert [(s["function_id"], s["function_name"]) for s in steps] == [
        (1, "rondo.model:agent"),
        (2, INTERRUPTED_STEP),  # `a`, cut by the kill
        (3, "rondo.tool:b"),
        (4, "rondo.tool:c"),
        (5, "rondo.tool:a"),
        (6, "rondo.tool:b"),
        (7, "rondo.tool:c"),
        (8, "rondo.model:agent"),
    ]
    calls = [c.id for e in await stored_events(pg_cluster, "p") for c in e.get_function_calls()]
    assert [s["output"]["call_id"] for s in steps[4:7]] == calls
    ledger = Ledger(tmp_path)
    runs = ledger.runs()  # concurrent: the step ids fix the order, not the start times
    expected = sorted(f"{n}:{c}" for n, c in zip("abc", calls, strict=True))
    assert sorted(runs[:3]) == expected
    assert sorted(runs[3:]) == expected
    assert len(ledger.effects()) == 3  # keyed by call id: each effect once


async def test_d2_in_a_worker_streamed_model_calls_and_failing_tools_are_steps(
    pg_cluster: PgCluster,
) -> None:
    """In-process: a streamed model call passes its partials through its step; a tool that
    raises is still the error response the model reacts to (T3), its step's marker says so,
    and nothing but markers is recorded."""
    dbos = require_module("dbos", what="DBOS", install="pip install 'rondo-agents[dbos]'")
    from rondo import Agent, FunctionCall, RunConfig, Runner
    from rondo.durable.dbos import DbosEngine
    from rondo.models.base import ModelResponse
    from rondo.testing import ScriptedModel
    from rondo.types import Content

    def boom() -> str:
        """Fails."""
        raise RuntimeError("no luck")

    stream = [
        ModelResponse(content=Content.model("so"), partial=True),
        ModelResponse(content=Content.model("sorry")),
    ]
    model = ScriptedModel([FunctionCall(name="boom", args={}, id="c-1"), stream])
    services: list[SqlSessionService] = []

    def make_runner() -> Runner:
        services.append(SqlSessionService(pg_cluster.url))
        agent = Agent(name="agent", model=model, tools=[boom])
        return Runner(agent=agent, app_name="inproc", session_service=services[-1])

    dbos.DBOS(
        config={
            "name": "rondo-d2-inproc",
            "system_database_url": (
                f"postgresql://postgres@127.0.0.1:{pg_cluster.port}/rondo_dbos_inproc"
            ),
            "application_version": "inproc-1",
            "executor_id": "inproc",
        }
    )
    try:
        engine = DbosEngine(
            make_runner, run_config=RunConfig(streaming_mode="sse"), polling_interval_sec=0.05
        )
        dbos.DBOS.launch()
        await engine.start()
        key = engine.submit(user_id="u", session_id="s", message="go")
        outcome = await engine.outcome_async(key)
        steps = await dbos.DBOS.list_workflow_steps_async(key)
    finally:
        dbos.DBOS.destroy()
        for service in services:
            await service.close()
    assert outcome.text == "sorry"
    assert model.stream_flags == [True, True]
    assert [s["function_name"] for s in steps] == [
        "rondo.model:agent",
        "rondo.tool:boom",
        "rondo.model:agent",
    ]
    assert steps[1]["output"] == {
        "tool": "boom",
        "call_id": "c-1",
        "error": "RuntimeError: no luck",
    }
    assert steps[2]["output"] == {"agent": "agent", "model": "scripted", "responses": 2}
    request = model.requests[1]
    answered = [
        p.function_response for c in request.contents for p in c.parts if p.function_response
    ]
    assert answered[0] is not None
    assert answered[0].response == {"error": "RuntimeError: no luck"}
