"""Stopping a run from any replica, and finding a run another replica is running (SPEC W7).

A run of this process is stopped directly (`DetachedRun.cancel`). A run of another replica on
a shared store (PostgreSQL) is asked to stop over the store's notification channel (LISTEN /
NOTIFY: the replica holding the session's claim listens and cancels its run); the request
then waits for the claim to be freed, which the stopping replica does after writing the
cancellation to the log. A replica that died cannot answer: its claim lapses within its lease
and a surviving replica resumes the run (`rondo.server.takeover`, SPEC D1).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING

from rondo.server.claims import CANCEL_CHANNEL

if TYPE_CHECKING:
    from rondo.server.session_runs import SessionRuns

__all__ = ["POLL", "cancel_notice", "running_elsewhere", "stop_run"]

logger = logging.getLogger("rondo.server")

POLL = 0.2

Key = tuple[str, str, str]


async def running_elsewhere(state: SessionRuns, key: Key, *, resuming: bool = False) -> bool:
    """Whether another process holds the session's run claim (a run is going on there).
    With `resuming`, also while the claim of a replica that died lapsed less than a lease
    ago: a surviving replica is about to resume its run (`rondo.server.takeover`)."""
    store = state.sessions
    if not store.shared or state.detached.current(*key) is not None:
        return False
    app_name, user_id, session_id = key
    return await store.run_claimed(
        app_name=app_name,
        user_id=user_id,
        session_id=session_id,
        lapsed_within=state.claims.ttl if resuming else 0.0,
    )


async def stop_run(state: SessionRuns, key: Key, run_id: str | None, reason: str) -> bool:
    """Stop the session's running run (only if it is `run_id`, when given) and wait until
    it has stopped; False when no such run was going on."""
    run = state.detached.current(*key)
    if run is not None:
        if run_id is not None and run.run_id != run_id:
            return False
        run.cancel(reason)
        await run.wait()
        return True
    if not await running_elsewhere(state, key):
        return False
    app_name, user_id, session_id = key
    notice = {"app": app_name, "user": user_id, "session": session_id, "run": run_id}
    await state.sessions.notify(CANCEL_CHANNEL, json.dumps({**notice, "reason": reason}))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + state.claims.ttl
    # Polled: the other replica frees the claim, and nothing here is told when.
    while await running_elsewhere(state, key) and loop.time() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(POLL)
    return True


def cancel_notice(state: SessionRuns, payload: str) -> None:
    """Another replica asks to stop a run: cancel it if this process runs it."""
    try:
        notice = json.loads(payload)
        key = (str(notice["app"]), str(notice["user"]), str(notice["session"]))
        run_id = notice.get("run")
        reason = str(notice.get("reason") or "cancelled")
    except (ValueError, KeyError, TypeError):
        logger.warning("ignoring a malformed run-cancel notice")
        return
    run = state.detached.current(*key)
    if run is not None and (run_id is None or run.run_id == run_id):
        run.cancel(reason)
