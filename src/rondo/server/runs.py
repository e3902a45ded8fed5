"""Starting a run for a request: the checks every run route makes, in one order.

App named (400) → caller may act as the body's user (403) → app exists (404) → session
exists (404; google-adk does not create it on a run either) → no other run on it here (409)
→ no other run on it in any replica sharing the store (409, SPEC W5).

The last check is the store's run claim (`claim_run`): a run holds its session from before its
first append until it ends, renewing the claim while it lasts, so a second run — on this server
or another one — is refused before it stores anything, and a session only ever holds whole
invocations. The claim is freed before the response ends: a client that read the whole answer
can send its next message to any replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from rondo.events import Event
from rondo.run_config import RunConfig
from rondo.runner import Runner
from rondo.server.auth import authorize, check_shared_state
from rondo.server.errors import BadRequestError, NotFoundError, RunInProgressError
from rondo.server.state import ServerState
from rondo.server.wire import RunAgentRequest
from rondo.types import Content

__all__ = ["CLAIM_TTL", "RunRequest", "SessionClaim", "collect", "start_run"]

# How long a run's claim outlives its last renewal: how long a replica that died mid-run keeps
# its session busy. A live run renews it every third of this.
CLAIM_TTL = 30.0

BUSY = (
    "session {sid!r} is busy: another run on it has not finished (perhaps on another server); "
    "send the message again when it has"
)


class SessionClaim:
    """A run's hold on its session: in this process, and in the store when replicas share it."""

    def __init__(self, state: ServerState, key: tuple[str, str, str], local: Callable[[], None]):
        self._state = state
        self._key = key
        self._local = local
        self._owner = uuid.uuid4().hex
        self._renewal: asyncio.Task[None] | None = None
        self._held = True

    @classmethod
    async def take(
        cls, state: ServerState, app_name: str, user_id: str, session_id: str
    ) -> SessionClaim:
        """Claim the session here, then in the store; `RunInProgressError` when busy."""
        key = (app_name, user_id, session_id)
        claim = cls(state, key, state.runs.claim(*key))
        store = state.sessions
        if not store.shared:
            return claim
        try:
            taken = await store.claim_run(**claim._ids(), owner=claim._owner, ttl=CLAIM_TTL)
        except BaseException:
            claim._local()
            raise
        if not taken:
            claim._local()
            raise RunInProgressError(BUSY.format(sid=session_id))
        claim._renewal = asyncio.create_task(claim._renew())
        return claim

    def _ids(self) -> dict[str, str]:
        app_name, user_id, session_id = self._key
        return {"app_name": app_name, "user_id": user_id, "session_id": session_id}

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(CLAIM_TTL / 3)
            with contextlib.suppress(Exception):  # a missed renewal is retried next time
                await self._state.sessions.renew_run(
                    **self._ids(), owner=self._owner, ttl=CLAIM_TTL
                )

    async def release(self) -> None:
        """Free the session (idempotent)."""
        if not self._held:
            return
        self._held = False
        self._local()
        if self._renewal is None:
            return
        self._renewal.cancel()
        # Shielded: a client that went away must not leave the session claimed for CLAIM_TTL.
        await asyncio.shield(self._state.sessions.release_run(**self._ids(), owner=self._owner))


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
    session = await state.sessions.get_session(
        app_name=body.app_name,
        user_id=body.user_id,
        session_id=body.session_id,
        num_recent_events=0,
    )
    if session is None:
        raise NotFoundError(f"Session not found: {body.session_id}")
    claim = await SessionClaim.take(state, body.app_name, body.user_id, body.session_id)
    if message is None and body.new_message is not None:
        message = body.new_message.to_content()
    return RunRequest(
        runner=runner,
        user_id=body.user_id,
        session_id=body.session_id,
        message=message,
        state_delta=body.state_delta,
        config=_STREAMING if body.streaming else _PLAIN,
        release=claim.release,
    )


async def collect(run: RunRequest) -> list[Event]:
    """Run to the end and return its records (for `/run`)."""
    try:
        async with aclosing(run.records()) as records:
            return [event async for event in records]
    finally:
        await run.release()
