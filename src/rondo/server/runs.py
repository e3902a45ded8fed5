"""Starting a run for a request: the checks every run route makes, in one order.

App named (400) → caller may act as the body's user (403) → app exists (404) → session
exists (404; google-adk does not create it on a run either) → no other run on it here (409)
→ no other run on it in any replica sharing the store (409, SPEC W5).

The last two are one claim (`rondo.server.claims`), held from before the run's first append
until it ends and freed before its response ends: a client that read the whole answer can send
its next message to any replica.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from rondo.events import Event
from rondo.run_config import RunConfig
from rondo.runner import Runner
from rondo.server.auth import authorize, check_shared_state
from rondo.server.errors import BadRequestError, NotFoundError
from rondo.server.state import ServerState
from rondo.server.wire import RunAgentRequest
from rondo.types import Content

__all__ = ["RunRequest", "collect", "start_run"]


@dataclass
class RunRequest:
    """A checked run request: its runner, its message, and how to free its session."""

    runner: Runner
    user_id: str
    session_id: str
    message: Content | None
    state_delta: dict[str, Any] | None
    config: RunConfig
    release: Callable[[], Awaitable[None]]

    def records(self) -> AsyncGenerator[Event, None]:
        return self.runner.run_async(
            user_id=self.user_id,
            session_id=self.session_id,
            new_message=self.message,
            run_config=self.config,
            state_delta=self.state_delta,
        )

    def lifecycle(self) -> AsyncGenerator[Any, None]:
        return self.runner.stream_async(
            user_id=self.user_id,
            session_id=self.session_id,
            new_message=self.message,
            run_config=self.config,
            state_delta=self.state_delta,
        )


_STREAMING = RunConfig(streaming_mode="sse")
_PLAIN = RunConfig()


async def start_run(
    state: ServerState,
    who: str | None,
    body: RunAgentRequest,
    *,
    message: Content | None = None,
) -> RunRequest:
    """Check `body` and claim its session; the caller must call `release` when done."""
    if not body.app_name:
        raise BadRequestError("appName is required: the app (folder of AGENTS_DIR) to run")
    authorize(who, body.user_id)
    check_shared_state(who, body.state_delta)
    runner = await state.apps.runner(body.app_name)
    store = state.sessions
    # On a shared store the claim checks that the session exists, in the same statement.
    if not store.shared:
        session = await store.get_session(
            app_name=body.app_name,
            user_id=body.user_id,
            session_id=body.session_id,
            num_recent_events=0,
        )
        if session is None:
            raise NotFoundError(f"Session not found: {body.session_id}")
    release = await state.claims.take(body.app_name, body.user_id, body.session_id)
    if message is None and body.new_message is not None:
        message = body.new_message.to_content()
    return RunRequest(
        runner=runner,
        user_id=body.user_id,
        session_id=body.session_id,
        message=message,
        state_delta=body.state_delta,
        config=_STREAMING if body.streaming else _PLAIN,
        release=release,
    )


async def collect(run: RunRequest) -> list[Event]:
    """Run to the end and return its records (for `/run`)."""
    try:
        async with aclosing(run.records()) as records:
            return [event async for event in records]
    finally:
        await run.release()
