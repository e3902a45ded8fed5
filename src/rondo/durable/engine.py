"""The seam between rondo and a durable-execution engine (SPEC D2).

An engine schedules invocations (a queue several worker processes consume) and restarts the
ones whose worker died. It keeps no history of its own: every engine calls
`run_invocation`, which stores the user's message under the run's key and then runs or
continues the invocation from the session log (D1). Run it twice, or once more after a
crash at any point, and the log ends the same: the message is stored once, completed model
calls and stored tool results are not repeated, the call in flight runs again under its call
id. So an engine's recovery is "call `run_invocation` again with the same key".
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rondo.events import Event
from rondo.resume import find_resume_point

if TYPE_CHECKING:
    from rondo.run_config import RunConfig
    from rondo.runner import Runner
    from rondo.types import Content

__all__ = ["DurableEngine", "InvocationOutcome", "run_invocation"]


@dataclass(frozen=True)
class InvocationOutcome:
    """What one durable invocation came to, read from the session log."""

    key: str
    run_id: str
    invocation_id: str
    text: str
    # Calls the run waits on (a confirmation, a held non-idempotent call, a long-running tool).
    pending: list[str] = field(default_factory=list[str])

    def to_dict(self) -> dict[str, object]:
        return {
            "key": self.key,
            "run_id": self.run_id,
            "invocation_id": self.invocation_id,
            "text": self.text,
            "pending": list(self.pending),
        }


def _ids(key: str) -> tuple[str, str, str]:
    """The user event's id, the invocation id and the run id of the run `key`."""
    return f"msg-{key}", f"inv-{key}", f"run-{key}"


async def run_invocation(
    runner: Runner,
    *,
    user_id: str,
    session_id: str,
    message: Content | None,
    key: str,
    run_config: RunConfig | None = None,
) -> InvocationOutcome:
    """Run the invocation `key` to its end (or its pause) — or continue it, if an earlier
    attempt stored part of it. Idempotent: safe to call again after any crash."""
    event_id, invocation_id, run_id = _ids(key)
    service = runner.session_service
    session = await service.get_or_create_session(
        app_name=runner.app_name, user_id=user_id, session_id=session_id
    )
    stored = any(e.id == event_id for e in reversed(session.events))
    if not stored and message is not None:
        # The message carries the run's ids, so this run is found again by its key.
        await service.append_event(
            session,
            Event(
                author="user",
                id=event_id,
                invocation_id=invocation_id,
                run_id=run_id,
                content=message,
            ),
        )
    point = find_resume_point(session.events, session.pending, runner.agent)
    if point is not None and point.invocation_id == invocation_id:
        async for _ in runner.run_async(
            user_id=user_id, session_id=session_id, run_config=run_config
        ):
            pass
        session = await service.get_session(
            app_name=runner.app_name, user_id=user_id, session_id=session_id
        )
        assert session is not None
    text = ""
    for event in reversed(session.events):
        if event.invocation_id != invocation_id:
            continue
        if event.author != "user" and event.is_final_response() and event.text:
            text = event.text
            break
    pending = [p.call_id for p in session.pending if p.run_id == run_id]
    return InvocationOutcome(key, run_id, invocation_id, text, pending)


class DurableEngine(abc.ABC):
    """An engine that runs invocations durably: submit one, wait for what it came to."""

    @abc.abstractmethod
    def submit(
        self, *, user_id: str, session_id: str, message: Content | str, key: str | None = None
    ) -> str:
        """Queue an invocation; returns its key (the same key submits it only once)."""

    @abc.abstractmethod
    def outcome(self, key: str) -> InvocationOutcome:
        """Wait for the invocation `key` to end (or pause) and return what it came to."""
