"""One run per session across every replica on a shared store (SPEC W5).

A run holds its session from before its first append until it ends: first here (`ActiveRuns`,
no I/O), then, when other processes share the store (PostgreSQL), in the store
(`claim_run`, one statement). A second run — on this server or another one — is refused 409
before it stores anything, so a session only ever holds whole invocations. The version check
of `append_event` still refuses any stale write beneath this.

A store claim lapses `CLAIM_TTL` seconds after its last renewal, so a replica that died mid-run
keeps its sessions busy for at most that long. A live replica renews every claim it holds in
one statement every third of that, from one background task (no task per run).

Releasing never fails the run: when the store is down at that moment (the run itself most
likely failed for it), the claim is freed here at once and its row is deleted in the
background as soon as the store answers again, so the session is not busy for the rest of
`CLAIM_TTL` once the store is back, and the stream still ends with its error event (issue 26).

While it holds claims on a shared store, a server also listens on `CANCEL_CHANNEL` (one
connection of its own, LISTEN/NOTIFY): another replica asks there to stop a run this one runs
(`rondo.server.run_control`). Only the holder of a session's claim can be running its run, so
a notice reaches the right process without any address.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable

from rondo.server.errors import NotFoundError, RunInProgressError
from rondo.server.streams import ActiveRuns
from rondo.sessions.base import BaseSessionService, check_ids

__all__ = ["CANCEL_CHANNEL", "CLAIM_TTL", "SessionClaims"]

logger = logging.getLogger("rondo.server")

# How long a claim outlives its last renewal: how long a dead replica keeps its sessions busy.
CLAIM_TTL = 30.0
# A release the store refused is tried again after these waits (the last one repeats), until
# it succeeds or the claim has lapsed anyway.
_RETRY_WAITS = (0.2, 0.5, 1.0, 2.0)

# Where replicas ask each other to stop a run (SPEC W7).
CANCEL_CHANNEL = "rondo_run_cancel"

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
        self._retries: set[asyncio.Task[None]] = set()  # releases waiting for the store
        # Called with the payload of each notice on CANCEL_CHANNEL (set by the server state).
        self.on_cancel_notice: Callable[[str], None] | None = None
        self._listening: Callable[[], Awaitable[None]] | None = None
        self._listen_lock = asyncio.Lock()

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
        if self._listening is None and self.on_cancel_notice is not None:
            try:
                await self._listen()
            except BaseException:
                local()
                raise
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
            try:
                await asyncio.shield(store.release_run(**ids, owner=owner))
            except Exception as exc:
                logger.warning("releasing the claim on session %r failed: %s", session_id, exc)
                self._retry_later(ids, owner)

        return release

    def _retry_later(self, ids: dict[str, str], owner: str) -> None:
        task = asyncio.create_task(self._release_when_back(ids, owner))
        self._retries.add(task)
        task.add_done_callback(self._retries.discard)

    async def _release_when_back(self, ids: dict[str, str], owner: str) -> None:
        # The claim was last renewed at most CLAIM_TTL / 3 ago: past the TTL it has lapsed.
        deadline = time.monotonic() + CLAIM_TTL
        attempt = 0
        while time.monotonic() < deadline:
            await asyncio.sleep(_RETRY_WAITS[min(attempt, len(_RETRY_WAITS) - 1)])
            attempt += 1
            try:
                await self._store.release_run(**ids, owner=owner)
            except Exception:
                continue
            logger.info("released the claim on session %r", ids["session_id"])
            return

    async def _listen(self) -> None:
        async with self._listen_lock:
            if self._listening is None and self.on_cancel_notice is not None:
                self._listening = await self._store.listen(CANCEL_CHANNEL, self._notice)

    def _notice(self, payload: str) -> None:
        if self.on_cancel_notice is not None:
            self.on_cancel_notice(payload)

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
        for task in list(self._retries):
            task.cancel()
        if self._listening is not None:
            stop, self._listening = self._listening, None
            with contextlib.suppress(Exception):
                await stop()
        if self._renewal is not None:
            self._renewal.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewal
            self._renewal = None
