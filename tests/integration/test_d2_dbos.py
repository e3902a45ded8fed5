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
    def __init__(self, cluster: PgCluster, executor: str, ledger: Path, block: bool) -> None:
        system = f"postgresql://postgres@127.0.0.1:{cluster.port}/rondo_dbos"
        args = [sys.executable, str(WORKER), system, cluster.url, executor, str(ledger)]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(
            [*args, "1" if block else "0"], stdout=subprocess.PIPE, text=True, env=env
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


async def test_d2_sigkilled_worker_run_is_completed_by_dbos_recovery_on_another_worker(
    pg_cluster: PgCluster, tmp_path: Path
) -> None:
    dbos = require_module("dbos", what="DBOS", install="pip install 'rondo-agents[dbos]'")
    from rondo.durable.dbos import recover_with_client, submit_with_client

    first = Worker(pg_cluster, "w1", tmp_path, block=True)
    second: Worker | None = None
    client: Any = None
    try:
        client = dbos.DBOSClient(
            system_database_url=f"postgresql://postgres@127.0.0.1:{pg_cluster.port}/rondo_dbos"
        )
        key = submit_with_client(
            client, user_id="u", session_id="s", message="go", app_version="rondo-d2-test-1"
        )
        first.wait_for("STOPPED")  # w1 dequeued the run and is inside its first tool call
        first.kill()
        second = Worker(pg_cluster, "w2", tmp_path, block=False)
        assert client.retrieve_workflow(key).get_status().status == "PENDING"
        assert recover_with_client(client, ["w1"]) == [key]
        done = wait_result(client, key)
    finally:
        first.stop()
        if second is not None:
            second.stop()
        if client is not None:
            client.destroy()

    assert done["executor"] == "w2"
    assert done["output"]["text"] == "done"
    assert done["output"]["run_id"] == f"run-{key}"
    # rondo's log is the history: one invocation, nothing repeated, the in-flight call
    # re-run under its own id so its keyed effect happened once.
    service = SqlSessionService(pg_cluster.url)
    try:
        session = await service.get_session(app_name="crash", user_id="u", session_id="s")
    finally:
        await service.close()
    assert session is not None
    events = list(session.events)
    assert [e.author for e in events] == ["user", *["agent"] * 5]
    assert {e.invocation_id for e in events} == {f"inv-{key}"}
    calls = [c.id for e in events for c in e.get_function_calls()]
    ledger = Ledger(tmp_path)
    assert ledger.runs() == [calls[0], calls[0], calls[1]]
    assert ledger.effects() == sorted(c or "" for c in calls)


async def test_d2_a_worker_restarted_with_its_executor_id_recovers_its_runs(
    pg_cluster: PgCluster, tmp_path: Path
) -> None:
    """DBOS's own recovery: a process that launches with the dead worker's executor id and the
    same application version picks its PENDING runs up; rondo continues them from the log."""
    dbos = require_module("dbos", what="DBOS", install="pip install 'rondo-agents[dbos]'")
    from rondo.durable.dbos import submit_with_client

    first = Worker(pg_cluster, "w1", tmp_path, block=True)
    again: Worker | None = None
    client: Any = None
    try:
        client = dbos.DBOSClient(
            system_database_url=f"postgresql://postgres@127.0.0.1:{pg_cluster.port}/rondo_dbos"
        )
        key = submit_with_client(
            client, user_id="u", session_id="s", message="go", app_version="rondo-d2-test-1"
        )
        first.wait_for("STOPPED")
        first.kill()
        again = Worker(pg_cluster, "w1", tmp_path, block=False)
        done = wait_result(client, key)
    finally:
        first.stop()
        if again is not None:
            again.stop()
        if client is not None:
            client.destroy()
    assert done["output"]["text"] == "done"
    ledger = Ledger(tmp_path)
    assert len(ledger.runs()) == 3  # the in-flight call twice (same id), the next once
    assert len(ledger.effects()) == 2
