"""One run per session across every replica on a shared store (SPEC W5).

A run holds its session from before its first append until it ends: first here (`ActiveRuns`,
no I/O), then, when other processes share the store (PostgreSQL), in the store
(`claim_run`, one statement). A second run — on this server or another one — is refused 409
before it stores anything, so a session only ever holds whole invocations. The version check
of `append_event` still refuses any stale write beneath this.

A store claim lapses `CLAIM_TTL` seconds after its last renewal, so a replica that died mid-run
keeps its sessions busy for at most that long. A live replica renews every claim it holds in
one statement every third of that, from one background task (no task per run).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable

from rondo.server.errors import NotFoundError, RunInProgressError
from rondo.server.streams import ActiveRuns
from rondo.sessions.base import BaseSessionService, check_ids

__all__ = ["CLAIM_TTL", "SessionClaims"]

logger = logging.getLogger("rondo.server")

# How long a claim outlives its last renewal: how long a dead replica keeps its sessions busy.
CLAIM_TTL = 30.0

BUSY = (
    "session {sid!r} is busy: another run on it has not finished (perhaps on another server); "
    "send the message again when it has"
)

Release = Callable[[], Awaitable[None]]


class SessionClaims:
    """The sessions this server's runs hold, here and in a shared store."""

    def __init__(self, store: BaseSessionService, runs: ActiveRuns) -> None:
        self._store = store
        self._runs = runs
        self._held: set[str] = set()  # the owner tokens of this server's store claims
        self._renewal: asyncio.Task[None] | None = None

    async def take(self, app_name: str, user_id: str, session_id: str) -> Release:
        """Claim the session; returns its (idempotent) release. `RunInProgressError` if busy;
        `NotFoundError` if a shared store has no such session (a store of one process is not
        asked: check that the session exists first)."""
        check_ids(app_name, user_id, session_id)  # a bad id is a 400 before any claim
        local = self._runs.claim(app_name, user_id, session_id)
        store = self._store
        if not store.shared:

            async def release_here() -> None:
                local()

            return release_here
        ids = {"app_name": app_name, "user_id": user_id, "session_id": session_id}
        owner = uuid.uuid4().hex
        try:
            taken = await store.claim_run(**ids, owner=owner, ttl=CLAIM_TTL)
        except BaseException:
            local()
            raise
        if taken != "claimed":
            local()
            if taken == "missing":
                raise NotFoundError(f"Session not found: {session_id}")
            raise RunInProgressError(BUSY.format(sid=session_id))
        self._held.add(owner)
        if self._renewal is None:
            self._renewal = asyncio.create_task(self._renew())

        async def release() -> None:
            if owner not in self._held:
                return
            self._held.discard(owner)
            local()
            # Shielded: a client that went away must not leave the session claimed.
            await asyncio.shield(store.release_run(**ids, owner=owner))

        return release

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(CLAIM_TTL / 3)
            if not self._held:
                continue
            try:
                await self._store.renew_runs(sorted(self._held), CLAIM_TTL)
            except Exception as exc:  # retried on the next tick, well before the claims lapse
                logger.warning("renewing the session claims failed: %s", exc)

    async def close(self) -> None:
        if self._renewal is not None:
            self._renewal.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewal
            self._renewal = None
