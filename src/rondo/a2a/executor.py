"""The A2A executor: one A2A task = one rondo run, published as the SDK's task updates.

A new task is SUBMITTED with the caller's message, then WORKING; every stored record with
content becomes a WORKING status message (text as text parts, tool calls and results as data
parts), so the task's history holds the run; the final answer becomes the task's artifact and
the task COMPLETED. A run that pauses on calls it waits for (a confirmation, a long-running
tool) leaves the task INPUT_REQUIRED with those calls in its status message; the caller
answers them in the same task with data parts of kind `function_response`. An error record or
a failed run leaves it FAILED with the error as its status message.

The A2A context id is the rondo session id; the user is the authenticated caller's (with
`--auth-tokens`, the token's user), else one user per context, as in google-adk. The A2A
message id is the run's `temp:a2a_message_id` state (`MESSAGE_ID_KEY`): an agent or tool may
read it during that run (clients such as the conformance kit's 1.0 line steer an agent by
it); like every `temp:` key it is never stored.

Given a `claim` (what `rondo api-server` passes: the run claim of its REST run routes), a run
holds its session from before its first append to its end, so an A2A message and a REST run —
on this server or another replica — never interleave on one session: the later one is refused
before it stores anything (the task FAILED with the reason, the REST run 409).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Task, TaskState, TaskStatus
from a2a.types import Part as A2APart
from a2a.utils.errors import InvalidParamsError

from rondo.a2a._parts import call_part, from_a2a_parts, to_a2a_parts
from rondo.errors import RondoError, SessionExistsError
from rondo.sessions.base import CONFIRMATION_FUNCTION_NAME
from rondo.types import Content, FunctionCall

if TYPE_CHECKING:
    from rondo.events import Event, PendingCall
    from rondo.run_config import RunConfig
    from rondo.runner import Runner, RunReport

__all__ = [
    "MAX_CONTEXT_ID_LENGTH",
    "MESSAGE_ID_KEY",
    "RondoAgentExecutor",
    "RunClaim",
    "RunRelease",
    "user_id_for",
]

logger = logging.getLogger("rondo.a2a")

MAX_CONTEXT_ID_LENGTH = 256
MESSAGE_ID_KEY = "temp:a2a_message_id"
_WAITING = (TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED)
NOT_ANSWERED = (
    "This task waits for answers to its pending calls: send data parts of kind "
    "'function_response' (metadata adk_type), one per call id in the status message."
)


RunRelease = Callable[[], Awaitable[None]]
RunClaim = Callable[[str, str, str], Awaitable[RunRelease]]
"""Claims `(app, user, session)` for one run and returns its release. Raises a `RondoError`
when the session is busy, and `LookupError` when its store checks that the session exists
and it does not."""


def user_id_for(context: RequestContext) -> str:
    """The rondo user an A2A request runs as: the authenticated caller, else its context."""
    user = context.call_context.user
    if user.is_authenticated and user.user_name:
        return user.user_name
    # As google-adk: an unauthenticated caller's name is a claim nobody checked, so the
    # conversation itself is the identity (no `user:` state shared between callers).
    return f"A2A_USER_{context.context_id}"


@dataclass
class _Progress:
    """What the run produced so far, as the task will report it."""

    answer: list[A2APart] = field(default_factory=lambda: [])
    error: str | None = None
    # Calls the run may wait on, held back from the history: they go in the status message.
    waiting: dict[str, A2APart] = field(default_factory=lambda: {})


class _SessionLocks:
    """One lock per session while someone holds or waits for it: two messages sent to one
    context at once run one after the other (the second sees the first's answer) instead
    of racing on the session."""

    def __init__(self) -> None:
        self._locks: dict[tuple[str, str], tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: tuple[str, str]) -> AsyncGenerator[None]:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)


class RondoAgentExecutor(AgentExecutor):
    """Runs a rondo `Runner` for the A2A SDK's request handler."""

    def __init__(
        self,
        runner: Runner | Callable[[], Awaitable[Runner]],
        *,
        run_config: RunConfig | None = None,
        claim: RunClaim | None = None,
    ) -> None:
        self._runner = runner
        self._run_config = run_config
        self._claim = claim
        self._sessions = _SessionLocks()

    async def runner(self) -> Runner:
        from rondo.runner import Runner

        if isinstance(self._runner, Runner):
            return self._runner
        self._runner = await self._runner()
        return self._runner

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Mark the task canceled; the SDK then cancels the running `execute` (and the run)."""
        await _updater(context, event_queue).cancel()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = _checked(context)
        updater = _updater(context, event_queue)
        task = context.current_task
        content = _content(message)
        if not content.parts:
            raise InvalidParamsError(message="the message has no part rondo can read")
        if task is None:
            await event_queue.enqueue_event(
                Task(
                    id=updater.task_id,
                    context_id=updater.context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=[message],
                )
            )
        elif task.status.state in _WAITING and not _answers_only(content):
            # Anything but answers would start a new run beside the paused one.
            await updater.update_status(
                task.status.state, message=updater.new_agent_message([A2APart(text=NOT_ANSWERED)])
            )
            return
        runner = await self.runner()
        user_id = user_id_for(context)
        await updater.start_work()
        progress = _Progress()
        try:
            async with self._sessions.hold((user_id, updater.context_id)):
                release = await self._claim_session(runner, user_id, updater.context_id)
                try:
                    pending = await self._run(
                        runner, user_id, updater, content, progress, message.message_id
                    )
                finally:
                    if release is not None:
                        await release()
        except RondoError as exc:
            progress.error = str(exc)
            pending = []
        except Exception as exc:
            logger.exception("A2A task %s failed", updater.task_id)
            progress.error = f"internal error ({type(exc).__name__})"
            pending = []
        await _finish(updater, progress, pending)

    async def _claim_session(
        self, runner: Runner, user_id: str, session_id: str
    ) -> RunRelease | None:
        """The run's claim on its session (None without a `claim`)."""
        claim = self._claim
        if claim is None:
            return None
        app_name = runner.app_name
        try:
            return await claim(app_name, user_id, session_id)
        except LookupError:
            # A shared store's claim also checks that the session exists: a context's first
            # message creates it first, as the runner would have.
            with contextlib.suppress(SessionExistsError):
                await runner.session_service.create_session(
                    app_name=app_name, user_id=user_id, session_id=session_id
                )
            return await claim(app_name, user_id, session_id)

    async def _run(
        self,
        runner: Runner,
        user_id: str,
        updater: TaskUpdater,
        content: Content,
        progress: _Progress,
        message_id: str,
    ) -> list[PendingCall]:
        from rondo.events import Event

        reports: list[RunReport] = []
        delta = {MESSAGE_ID_KEY: message_id} if message_id else None
        execution = runner.execute(
            user_id, updater.context_id, content, self._run_config, delta, observe=False,
            reports=reports,
        )  # fmt: skip
        async with aclosing(execution) as items:
            async for item in items:
                if isinstance(item, Event) and not item.partial:
                    await _publish(updater, item, progress)
        return reports[-1]["pending"] if reports else []


def _updater(context: RequestContext, event_queue: EventQueue) -> TaskUpdater:
    # The SDK's request context always carries both ids (it generates missing ones).
    return TaskUpdater(event_queue, context.task_id or "", context.context_id or "")


def _checked(context: RequestContext) -> Message:
    message = context.message
    if message is None:
        raise InvalidParamsError(message="the request has no message")
    if len(context.context_id or "") > MAX_CONTEXT_ID_LENGTH:
        raise InvalidParamsError(
            message=f"contextId is longer than {MAX_CONTEXT_ID_LENGTH} characters"
        )
    return message


def _content(message: Message) -> Content:
    return Content(role="user", parts=from_a2a_parts(message.parts))


def _answers_only(content: Content) -> bool:
    parts = content.parts
    return bool(parts) and all(p.function_response is not None for p in parts)


def _event_metadata(event: Event) -> dict[str, object]:
    return {
        "adk_author": event.author,
        "adk_event_id": event.id,
        "adk_invocation_id": event.invocation_id,
    }


async def _publish(updater: TaskUpdater, event: Event, progress: _Progress) -> None:
    """One stored record as a WORKING status message (its history entry)."""
    if event.error_code or event.error_message:
        progress.error = event.error_message or event.error_code
    waiting = event.long_running_tool_ids
    if waiting and event.content is not None:
        for part in event.content.parts:
            call = part.function_call
            if call is not None and call.id in waiting:
                progress.waiting[call.id] = call_part(call, long_running=True)
    parts = to_a2a_parts(event.content, skip=waiting)
    if not parts:
        return
    await updater.update_status(
        TaskState.TASK_STATE_WORKING,
        message=updater.new_agent_message(parts, metadata=_event_metadata(event)),
    )
    if event.is_final_response() and not waiting:
        progress.answer = parts


async def _finish(updater: TaskUpdater, progress: _Progress, pending: list[PendingCall]) -> None:
    """The task's end: FAILED, INPUT_REQUIRED (waiting on calls) or COMPLETED with its answer."""
    waiting_ids = {p.call_id for p in pending}
    # A call held back that does not wait after all (answered in the same run) still
    # belongs in the history.
    answered = [part for call_id, part in progress.waiting.items() if call_id not in waiting_ids]
    if answered:
        await updater.update_status(
            TaskState.TASK_STATE_WORKING, message=updater.new_agent_message(answered)
        )
    if progress.error is not None:
        await updater.failed(updater.new_agent_message([A2APart(text=progress.error)]))
        return
    if pending:
        parts = [progress.waiting.get(p.call_id) or _pending_part(p) for p in pending]
        await updater.requires_input(updater.new_agent_message(parts))
        return
    if progress.answer:
        await updater.add_artifact(progress.answer, name="answer", last_chunk=True)
    await updater.complete()


def _pending_part(pending: PendingCall) -> A2APart:
    """A call this run still waits on from an earlier request of the same task."""
    if pending.kind == "confirmation":
        original = pending.original_call
        call = FunctionCall(
            name=CONFIRMATION_FUNCTION_NAME,
            id=pending.call_id,
            args={
                "originalFunctionCall": original.model_dump(exclude_none=True) if original else {},
                "toolConfirmation": {"hint": pending.hint, "confirmed": False},
            },
        )
    else:
        call = FunctionCall(name=pending.tool_name, id=pending.call_id, args=dict(pending.args))
    return call_part(call, long_running=True)
