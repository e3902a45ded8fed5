"""Durable execution on DBOS (SPEC D2; the `rondo[dbos]` extra).

An invocation runs as the DBOS workflow `rondo.invocation`, started from a DBOS queue that any
number of worker processes consume; the DBOS system database lives on the same PostgreSQL as
the sessions. The workflow's body is `run_invocation`, and each model call
(`rondo.model:AGENT`) and each tool call (`rondo.tool:TOOL`) is a DBOS step of it, started in
call order. rondo's session log stays the only history: a step's recorded output is a marker
(which model or tool, the call id), never the response or the result, which are stored in the log.
DBOS adds the queue, the exactly-one dequeue, the steps' record and recovery — a workflow whose
worker died is PENDING; DBOS re-runs it (on a restart with the same executor id, or `recover`
from any process), the re-run first replays the recorded steps (DBOS returns their markers
without running anything; a step cut short by the crash is recorded as `rondo.interrupted`)
and then continues from the log. Pin `application_version` in the DBOS config: recovery only
picks up workflows of the version a process runs.

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
import contextlib
import contextvars
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from rondo._fan_in import Ended, fan_in
from rondo.durable.engine import DurableEngine, InvocationOutcome, run_invocation
from rondo.errors import ConfigurationError, DurableReplayError
from rondo.run_config import RunConfig

if TYPE_CHECKING:
    from types import ModuleType

    from dbos import DBOS, DBOSClient, Queue, WorkflowHandle, WorkflowHandleAsync
    from dbos._client import EnqueueOptions

    from rondo.models.base import ModelResponse
    from rondo.runner import Runner
    from rondo.types import Content

__all__ = [
    "INTERRUPTED_STEP",
    "WORKFLOW_NAME",
    "DbosEngine",
    "DbosSteps",
    "recover_with_client",
    "submit_with_client",
]

WORKFLOW_NAME = "rondo.invocation"
DEFAULT_QUEUE = "rondo-invocations"
# The record of a step whose worker died before it completed (the log says what it did).
INTERRUPTED_STEP = "rondo.interrupted"


def _dbos() -> ModuleType:
    try:
        import dbos
    except ImportError as exc:
        raise ConfigurationError(
            "durable execution on DBOS needs dbos: pip install 'rondo-agents[dbos]'"
        ) from exc
    return dbos


def _dbos_class() -> type[DBOS]:
    dbos_class: type[DBOS] = _dbos().DBOS
    return dbos_class


def _message_json(message: Content | str) -> dict[str, Any]:
    from rondo.types import Content

    content = Content.user(message) if isinstance(message, str) else message
    return content.model_dump(mode="json")


def _new_key() -> str:
    import uuid

    return uuid.uuid4().hex


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def _noop() -> None:
    return None


class DbosSteps:
    """`RunConfig.durable_steps` inside the workflow: each model call and tool call runs as a
    DBOS step whose output is a marker. Outside a workflow DBOS runs the same code as a plain
    call."""

    def __init__(self, dbos: type[DBOS]) -> None:
        self._dbos = dbos

    def model_call(
        self, agent: str, model: str, responses: AsyncIterator[ModelResponse]
    ) -> AsyncIterator[ModelResponse]:
        return self._model_stream(agent, model, responses)

    async def _model_stream(
        self, agent: str, model: str, responses: AsyncIterator[ModelResponse]
    ) -> AsyncGenerator[ModelResponse, None]:
        # The step drains the model in its own task; the loop sees every response (partials
        # too) as it arrives, and the stream ends only once DBOS recorded the step.
        queue: asyncio.Queue[ModelResponse] = asyncio.Queue()
        failure: list[Exception] = []
        ran: list[bool] = []

        async def drain() -> dict[str, Any]:
            ran.append(True)
            marker: dict[str, Any] = {"agent": agent, "model": model, "responses": 0}
            try:
                async for response in responses:
                    queue.put_nowait(response)
                    marker["responses"] += 1
            except Exception as exc:  # raised again in the loop, where on_model_error sees it
                failure.append(exc)
                marker["error"] = _error_text(exc)
            return marker

        step = asyncio.ensure_future(
            self._dbos.run_step_async({"name": f"rondo.model:{agent}"}, drain)
        )
        async with aclosing(fan_in(queue, [step])) as merged:
            async for response in merged:
                if not isinstance(response, Ended):
                    yield response
        step.result()  # a DBOS failure (its database) ends the call
        if not ran:
            raise DurableReplayError(_REPLAYED.format(step=f"rondo.model:{agent}"))
        if failure:
            raise failure[0]
            aclose = getattr(responses, "aclose", None)
            if aclose is not None:
                await aclose()

    async def tool_call(self, tool: str, call_id: str, run: Callable[[], Awaitable[Any]]) -> Any:
        outcome: list[Any] = []

        async def body() -> dict[str, Any]:
            marker: dict[str, Any] = {"tool": tool, "call_id": call_id}
            try:
                outcome.append(await run())
            except Exception as exc:  # raised again outside: the tool hooks decide (T3, T4)
                outcome.append(exc)
                marker["error"] = _error_text(exc)
            return marker

        await self._dbos.run_step_async({"name": f"rondo.tool:{tool}"}, body)
        if not outcome:
            raise DurableReplayError(_REPLAYED.format(step=f"rondo.tool:{tool}"))
        if isinstance(outcome[0], Exception):
            raise outcome[0]
        return outcome[0]

    async def replay_recorded(self, workflow_id: str) -> int:
        """Before a re-run continues from the log: walk the steps an earlier attempt recorded,
        in their order, so DBOS hands back their markers (nothing runs) and the new steps
        follow them. Returns how many there were."""
        steps = await asyncio.to_thread(
            # Outside the workflow's context, or DBOS would record the listing as a step.
            contextvars.Context().run,
            self._dbos.list_workflow_steps,
            workflow_id,
            load_output=False,
        )
        names = {int(s["function_id"]): str(s["function_name"]) for s in steps}
        for function_id in range(1, max(names, default=0) + 1):
            # A recorded failure is raised again: replaying it is all that was wanted.
            with contextlib.suppress(Exception):
                await self._dbos.run_step_async(
                    {"name": names.get(function_id, INTERRUPTED_STEP)}, _noop
                )
        return len(names)


_REPLAYED = (
    "DBOS replayed the step {step} instead of running it: the workflow's recorded steps and "
    "the session log disagree (was the workflow's code changed under a pinned "
    "application_version?)"
)


class DbosEngine(DurableEngine):
    """Registers the invocation workflow and its queue with DBOS; build it in every worker
    before `DBOS.launch()`. `make_runner` builds this process's Runner (called once per
    event loop: its stores' connections belong to that loop). `run_config` is every run's
    settings; `record_steps=False` runs model and tool calls without a DBOS step each (the
    workflow still recovers from the log, but DBOS shows no steps)."""

    def __init__(
        self,
        make_runner: Callable[[], Runner],
        *,
        run_config: RunConfig | None = None,
        record_steps: bool = True,
        queue: str = DEFAULT_QUEUE,
        worker_concurrency: int | None = None,
        polling_interval_sec: float = 1.0,
    ) -> None:
        dbos_class = _dbos_class()
        self._make_runner = make_runner
        self._runners: dict[int, Runner] = {}
        self.queue_name = queue
        self._queue_options: dict[str, Any] = {
            "worker_concurrency": worker_concurrency,
            "polling_interval_sec": polling_interval_sec,
        }
        self.queue: Queue | None = None
        # Each step costs DBOS two statements on its system database (measured in bench/
        # DURABILITY.md); without them the workflow still recovers from the log, unrecorded.
        steps = DbosSteps(dbos_class) if record_steps else None
        config = (run_config or RunConfig()).model_copy(update={"durable_steps": steps})

        async def rondo_invocation(
            user_id: str, session_id: str, message: dict[str, Any] | None
        ) -> dict[str, Any]:
            from rondo.types import Content

            key = dbos_class.workflow_id
            if key is None:  # pragma: no cover - DBOS runs a workflow with its id set
                raise ConfigurationError("rondo's invocation workflow ran outside DBOS")
            if steps is not None:
                await steps.replay_recorded(key)
            outcome = await run_invocation(
                self._runner(),
                user_id=user_id,
                session_id=session_id,
                message=Content.model_validate(message) if message is not None else None,
                key=key,
                run_config=config,
            )
            return outcome.to_dict()

        self._workflow = dbos_class.workflow(name=WORKFLOW_NAME)(rondo_invocation)

    async def start(self) -> None:
        """Register the queue (after `DBOS.launch()`): from then on this process consumes it."""
        self.queue = await _dbos_class().register_queue_async(
            self.queue_name, **self._queue_options
        )

    def _runner(self) -> Runner:
        loop = id(asyncio.get_running_loop())
        runner = self._runners.get(loop)
        if runner is None:
            runner = self._runners[loop] = self._make_runner()
        return runner

    def submit(
        self, *, user_id: str, session_id: str, message: Content | str, key: str | None = None
    ) -> str:
        from dbos import SetWorkflowID

        if self.queue is None:
            raise ConfigurationError("DbosEngine.start() registers the queue: call it first")
        key = key or _new_key()
        with SetWorkflowID(key):
            self.queue.enqueue(self._workflow, user_id, session_id, _message_json(message))
        return key

    def outcome(self, key: str) -> InvocationOutcome:
        dbos_class = _dbos_class()
        handle: WorkflowHandle[dict[str, Any]] = dbos_class.retrieve_workflow(key)
        result: dict[str, Any] = handle.get_result(polling_interval_sec=0.1)
        return InvocationOutcome(**result)

    async def outcome_async(self, key: str) -> InvocationOutcome:
        """`outcome` without blocking the event loop."""
        handle: WorkflowHandleAsync[dict[str, Any]] = await _dbos_class().retrieve_workflow_async(
            key
        )
        result: dict[str, Any] = await handle.get_result(polling_interval_sec=0.05)
        return InvocationOutcome(**result)

    def recover(self, executor_ids: list[str]) -> list[str]:
        """Send the PENDING invocations of dead workers back to the queue; any worker then
        continues them from the log. Returns their keys. Only for executors known dead: a
        live worker's runs are PENDING too."""
        return recover_with_client(_dbos_class(), executor_ids, queue=self.queue_name)


def recover_with_client(
    client: type[DBOS] | DBOSClient, executor_ids: list[str], *, queue: str = DEFAULT_QUEUE
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
    client: DBOSClient,
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
    options: EnqueueOptions = {
        "queue_name": queue,
        "workflow_name": WORKFLOW_NAME,
        "workflow_id": key,
    }
    if app_version is not None:
        options["app_version"] = app_version
    client.enqueue(options, user_id, session_id, _message_json(message))
    return key
