"""One run per session across every replica on a shared store (SPEC W5).

A run holds its session from before its first append until it ends: first here (`ActiveRuns`,
no I/O), then, when other processes share the store (PostgreSQL), in the store
(`claim_run`, one statement). A second run — on this server or another one — is refused 409
before it stores anything, so a session only ever holds whole invocations. The version check
of `append_event` still refuses any stale write beneath this.

A store claim lapses `CLAIM_TTL` seconds (the lease; `create_app(claim_ttl=...)`, `rondo
api-server --claim-ttl`) after its last renewal. A live replica renews every claim it holds in
one statement every third of that, from one background task (no task per run), which also
looks for the claims of replicas that died mid-run: a run's claim (taken `resume=True`) that
lapsed is taken over by one surviving replica (one statement, `SKIP LOCKED`), which resumes
the run (`rondo.server.takeover`, SPEC D1). So a replica's death holds its runs up for a lease
and a third at most, and they go on elsewhere; any other claim (a rewind, a run that asked to
stop with its client) is simply free once it lapses.

Releasing never fails the run: when the store is down at that moment (the run itself most
likely failed for it), the claim is freed here at once and its row is deleted in the
background as soon as the store answers again, so the session is not busy for the rest of
the lease once the store is back, and the stream still ends with its error event (issue 26).

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
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from rondo.errors import ConfigurationError
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

# How often a replica deletes the kept run frames older than their time (`run_frames.KEEP`).
_PRUNE_EVERY = 600.0
# How many dead replicas' claims one replica takes over per tick, at most.
_TAKEOVERS_PER_TICK = 16

# Where replicas ask each other to stop a run (SPEC W7).
CANCEL_CHANNEL = "rondo_run_cancel"

BUSY = (
    "session {sid!r} is busy: another run on it has not finished (perhaps on another server); "
    "send the message again when it has"
)

Release = Callable[[], Awaitable[None]]
Key = tuple[str, str, str]


class SessionClaims:
    """The sessions this server's runs hold, here and in a shared store."""

    def __init__(self, store: BaseSessionService, runs: ActiveRuns, ttl: float = CLAIM_TTL) -> None:
        if not ttl > 0:
            raise ConfigurationError(f"a claim's lease must be positive, got {ttl}")
        self._store = store
        self._runs = runs
        self.ttl = ttl  # how long a claim outlives its last renewal
        self._held: set[str] = set()  # the owner tokens of this server's store claims
        self._tending: asyncio.Task[None] | None = None
        self._retries: set[asyncio.Task[None]] = set()  # releases waiting for the store
        self._takeovers: set[asyncio.Task[None]] = set()  # runs of dead replicas resuming
        # Called with the payload of each notice on CANCEL_CHANNEL (set by the server state).
        self.on_cancel_notice: Callable[[str], None] | None = None
        # Called with a claim taken over from a dead replica: the session, its version when
        # the dead replica claimed it, and the release of the claim now held here (set by
        # the server state: `rondo.server.takeover`). `app_names`: the apps this server runs.
        self.on_lapsed: Callable[[Key, int, Release], Coroutine[Any, Any, None]] | None = None
        self.app_names: Callable[[], list[str]] = list
        self._listening: Callable[[], Awaitable[None]] | None = None
        self._listen_lock = asyncio.Lock()

    def start(self) -> None:
        """From now on (the server's start), on a shared store: renew this server's claims
        and take over the lapsed claims of dead replicas, every third of the lease."""
        if self._store.shared and self._tending is None:
            self._tending = asyncio.create_task(self._tend())

    async def take(
        self, app_name: str, user_id: str, session_id: str, *, resume: bool = False
    ) -> Release:
        """Claim the session; returns its (idempotent) release. `RunInProgressError` if busy;
        `NotFoundError` if a shared store has no such session (a store of one process is not
        asked: check that the session exists first). `resume`: should this server die while
        it holds the claim, another replica resumes the session's interrupted run."""
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
            taken = await store.claim_run(**ids, owner=owner, ttl=self.ttl, resume=resume)
        except BaseException:
            local()
            raise
        if taken != "claimed":
            local()
            if taken == "missing":
                raise NotFoundError(f"Session not found: {session_id}")
            raise RunInProgressError(BUSY.format(sid=session_id))
        return self._holding(ids, owner, local)

    def _holding(self, ids: dict[str, str], owner: str, local: Callable[[], None]) -> Release:
        """The store claim `owner` holds on `ids` is renewed until its release."""
        self._held.add(owner)
        self.start()

        async def release() -> None:
            if owner not in self._held:
                return
            self._held.discard(owner)
            local()
            # Shielded: a client that went away must not leave the session claimed.
            try:
                await asyncio.shield(self._store.release_run(**ids, owner=owner))
            except Exception as exc:
                logger.warning(
                    "releasing the claim on session %r failed: %s", ids["session_id"], exc
                )
                self._retry_later(ids, owner)

        return release

    def _retry_later(self, ids: dict[str, str], owner: str) -> None:
        task = asyncio.create_task(self._release_when_back(ids, owner))
        self._retries.add(task)
        task.add_done_callback(self._retries.discard)

    async def _release_when_back(self, ids: dict[str, str], owner: str) -> None:
        # The claim was last renewed at most a third of the lease ago: past it, it has lapsed.
        deadline = time.monotonic() + self.ttl
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

    async def _tend(self) -> None:
        pruned = time.monotonic()
        while True:
            await asyncio.sleep(self.ttl / 3)
            if self._held:
                try:
                    await self._store.renew_runs(sorted(self._held), self.ttl)
                except Exception as exc:  # retried on the next tick, well before they lapse
                    logger.warning("renewing the session claims failed: %s", exc)
            if self.on_lapsed is not None:
                await self._take_over(self.on_lapsed)
            kept = self._store.run_frames
            if kept is not None and time.monotonic() - pruned > _PRUNE_EVERY:
                pruned = time.monotonic()
                try:
                    await kept.prune()
                except Exception as exc:
                    logger.warning("pruning the kept run frames failed: %s", exc)

    async def _take_over(
        self, on_lapsed: Callable[[Key, int, Release], Coroutine[Any, Any, None]]
    ) -> None:
        """Take over the lapsed claims of dead replicas (a few per tick) and hand each to
        `on_lapsed`, which resumes its run."""
        names = self.app_names()
        for _ in range(_TAKEOVERS_PER_TICK):
            owner = uuid.uuid4().hex
            try:
                taken = await self._store.take_lapsed_run(
                    owner=owner, ttl=self.ttl, app_names=names
                )
            except Exception as exc:
                logger.warning("looking for the runs of dead replicas failed: %s", exc)
                return
            if taken is None:
                return
            key, version = taken
            ids = {"app_name": key[0], "user_id": key[1], "session_id": key[2]}
            try:
                local = self._runs.claim(*key)
            except RunInProgressError:
                # A run of this server whose claim lapsed (the store was away longer than
                # the lease) is still going on: it keeps the session, nothing to resume.
                with contextlib.suppress(Exception):
                    await self._store.release_run(**ids, owner=owner)
                continue
            logger.info("took over session %r from a replica that stopped", key[2])
            task = asyncio.create_task(on_lapsed(key, version, self._holding(ids, owner, local)))
            self._takeovers.add(task)
            task.add_done_callback(self._takeovers.discard)

    async def close(self) -> None:
        for task in list(self._retries):
            task.cancel()
        if self._listening is not None:
            stop, self._listening = self._listening, None
            with contextlib.suppress(Exception):
                await stop()
        for task in list(self._takeovers):
            task.cancel()
        if self._tending is not None:
            self._tending.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._tending
            self._tending = None
