"""Durable execution on DBOS (SPEC D2; the `rondo[dbos]` extra).

An invocation runs as the DBOS workflow `rondo.invocation`, started from a DBOS queue that any
number of worker processes consume; the DBOS system database lives on the same PostgreSQL as
the sessions. The workflow's body is `run_invocation`: rondo's session log is the only history
(model responses and tool results are stored there, not as DBOS step outputs), and DBOS adds
the queue, the exactly-one dequeue, and recovery — a workflow whose worker died is PENDING;
DBOS re-runs it (on a restart with the same executor id, or `recover` from any process), and
the re-run continues from the log. Pin `application_version` in the DBOS config: recovery
only picks up workflows of the version a process runs.

    DBOS(config={"name": "app", "system_database_url": PG, "application_version": "1",
                 "executor_id": "worker-1"})
    engine = DbosEngine(make_runner)        # before DBOS.launch(), in every worker
    DBOS.launch()
    await engine.start()                    # registers and consumes the queue
    key = engine.submit(user_id="u", session_id="s", message="hi")
    engine.outcome(key).text
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rondo.durable.engine import DurableEngine, InvocationOutcome, run_invocation
from rondo.errors import ConfigurationError

if TYPE_CHECKING:
    from rondo.runner import Runner
    from rondo.types import Content

__all__ = ["WORKFLOW_NAME", "DbosEngine", "recover_with_client", "submit_with_client"]

WORKFLOW_NAME = "rondo.invocation"
DEFAULT_QUEUE = "rondo-invocations"


def _dbos() -> Any:
    try:
        import dbos
    except ImportError as exc:
        raise ConfigurationError(
            "durable execution on DBOS needs dbos: pip install 'rondo-agents[dbos]'"
        ) from exc
    return dbos


def _message_json(message: Content | str) -> dict[str, Any]:
    from rondo.types import Content

    content = Content.user(message) if isinstance(message, str) else message
    return content.model_dump(mode="json")


def _new_key() -> str:
    import uuid

    return uuid.uuid4().hex


class DbosEngine(DurableEngine):
    """Registers the invocation workflow and its queue with DBOS; build it in every worker
    before `DBOS.launch()`. `make_runner` builds this process's Runner (called once per
    event loop: its stores' connections belong to that loop)."""

    def __init__(
        self,
        make_runner: Callable[[], Runner],
        *,
        queue: str = DEFAULT_QUEUE,
        worker_concurrency: int | None = None,
        polling_interval_sec: float = 1.0,
    ) -> None:
        dbos = _dbos()
        self._make_runner = make_runner
        self._runners: dict[int, Runner] = {}
        self.queue_name = queue
        self._queue_options: dict[str, Any] = {
            "worker_concurrency": worker_concurrency,
            "polling_interval_sec": polling_interval_sec,
        }
        self.queue: Any = None

        async def rondo_invocation(
            user_id: str, session_id: str, message: dict[str, Any] | None
        ) -> dict[str, Any]:
            from rondo.types import Content

            key = dbos.DBOS.workflow_id
            outcome = await run_invocation(
                self._runner(),
                user_id=user_id,
                session_id=session_id,
                message=Content.model_validate(message) if message is not None else None,
                key=key,
            )
            return outcome.to_dict()

        self._workflow = dbos.DBOS.workflow(name=WORKFLOW_NAME)(rondo_invocation)

    async def start(self) -> None:
        """Register the queue (after `DBOS.launch()`): from then on this process consumes it."""
        self.queue = await _dbos().DBOS.register_queue_async(self.queue_name, **self._queue_options)

    def _runner(self) -> Runner:
        loop = id(asyncio.get_running_loop())
        runner = self._runners.get(loop)
        if runner is None:
            runner = self._runners[loop] = self._make_runner()
        return runner

    def submit(
        self, *, user_id: str, session_id: str, message: Content | str, key: str | None = None
    ) -> str:
        dbos = _dbos()
        if self.queue is None:
            raise ConfigurationError("DbosEngine.start() registers the queue: call it first")
        key = key or _new_key()
        with dbos.SetWorkflowID(key):
            self.queue.enqueue(self._workflow, user_id, session_id, _message_json(message))
        return key

    def outcome(self, key: str) -> InvocationOutcome:
        dbos = _dbos()
        handle = dbos.DBOS.retrieve_workflow(key)
        result: dict[str, Any] = handle.get_result(polling_interval_sec=0.1)
        return InvocationOutcome(**result)

    def recover(self, executor_ids: list[str]) -> list[str]:
        """Send the PENDING invocations of dead workers back to the queue; any worker then
        continues them from the log. Returns their keys. Only for executors known dead: a
        live worker's runs are PENDING too."""
        return recover_with_client(_dbos().DBOS, executor_ids, queue=self.queue_name)


def recover_with_client(
    client: Any, executor_ids: list[str], *, queue: str = DEFAULT_QUEUE
) -> list[str]:
    """`DbosEngine.recover` through `DBOS` or a `dbos.DBOSClient` (DBOS's resume: the
    workflow goes back to `queue`, ENQUEUED, and exactly one worker dequeues it)."""
    keys: list[str] = []
    for status in client.list_workflows(
        status="PENDING", name=WORKFLOW_NAME, executor_id=executor_ids, load_input=False
    ):
        client.resume_workflow(status.workflow_id, queue_name=queue)
        keys.append(status.workflow_id)
    return keys


def submit_with_client(
    client: Any,
    *,
    user_id: str,
    session_id: str,
    message: Content | str,
    key: str | None = None,
    queue: str = DEFAULT_QUEUE,
    app_version: str | None = None,
) -> str:
    """Queue an invocation from a process that runs no workers (a `dbos.DBOSClient`)."""
    key = key or _new_key()
    options: dict[str, Any] = {
        "queue_name": queue,
        "workflow_name": WORKFLOW_NAME,
        "workflow_id": key,
    }
    if app_version is not None:
        options["app_version"] = app_version
    client.enqueue(options, user_id, session_id, _message_json(message))
    return key
