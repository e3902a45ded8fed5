"""Double-texting: what a run request does when another run holds its session (SPEC W7).

- `reject` (the default): 409, as before — `SessionClaims.take` alone.
- `enqueue`: wait until the session is free, then run; waiting requests of one session go in
  arrival order (a FIFO lock per session). The queue is this server's memory: a restart drops
  a waiting request (its connection ends, nothing of its message is stored; send it again).
- `interrupt`: stop the current run at its next stop point (what it finished stays stored,
  each call it cut gets an answer naming the stop), then run.
- `rollback`: stop the current run as `interrupt` does, then rewind it away (issue 21.5: one
  rewind record before the run's first invocation — its records, the stop included, stay
  stored and listed under `…/rewound`), then run: the new message reads the session as it
  was before the stopped run's message.

Waiting for a run of another replica polls the claim (`POLL` seconds apart); a run of this
process is awaited directly.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Literal

from rondo.server.claims import Release
from rondo.server.errors import RunInProgressError
from rondo.server.run_control import running_elsewhere, stop_run
from rondo.sessions.rewind import rewind_session
from rondo.sessions.run_log import runs_of

if TYPE_CHECKING:
    from rondo.server.session_runs import SessionRuns

__all__ = ["MULTITASKS", "POLL", "Multitask", "take_with"]

Multitask = Literal["reject", "enqueue", "interrupt", "rollback"]
MULTITASKS: tuple[Multitask, ...] = ("reject", "enqueue", "interrupt", "rollback")

POLL = 0.2

_queues: dict[tuple[str, str, str], tuple[asyncio.Lock, list[int]]] = {}


async def take_with(
    state: SessionRuns, key: tuple[str, str, str], multitask: Multitask, *, resume: bool = False
) -> Release:
    """Claim the session `key` the way `multitask` says (see the module docstring);
    `resume` as `SessionClaims.take`."""
    if multitask == "reject":
        return await state.claims.take(*key, resume=resume)
    lock, waiting = _queues.setdefault(key, (asyncio.Lock(), [0]))
    waiting[0] += 1
    try:
        async with lock:
            stopped: str | None = None
            if multitask in ("interrupt", "rollback"):
                stopped = await _current_run_id(state, key)
                reason = "interrupted" if multitask == "interrupt" else "rolled back"
                if not await stop_run(state, key, None, f"{reason} by a newer message"):
                    stopped = None
            release = await _when_free(state, key, resume)
            if multitask == "rollback" and stopped:
                try:
                    await _rewind_run(state, key, stopped)
                except BaseException:
                    await release()
                    raise
            return release
    finally:
        waiting[0] -= 1
        if not waiting[0]:
            _queues.pop(key, None)


async def _current_run_id(state: SessionRuns, key: tuple[str, str, str]) -> str | None:
    """The id of the run going on in the session: this process's, or (another replica's)
    the newest run of the log."""
    run = state.detached.current(*key)
    if run is not None:
        await run.started()
        return run.run_id or None
    if not await running_elsewhere(state, key):
        return None
    session = await state.sessions.get_session(app_name=key[0], user_id=key[1], session_id=key[2])
    if session is None:
        return None
    runs = runs_of(session.events, session.pending)
    return runs[0].run_id if runs else None


async def _rewind_run(state: SessionRuns, key: tuple[str, str, str], run_id: str) -> None:
    """Rewind the session to before the stopped run's first record (the claim is held)."""
    app_name, user_id, session_id = key
    session = await state.sessions.get_session(
        app_name=app_name, user_id=user_id, session_id=session_id
    )
    if session is None:
        return
    first = next((e for e in session.events if e.run_id == run_id), None)
    if first is None:
        return  # it stored nothing
    await rewind_session(
        state.sessions,
        app_name=app_name,
        user_id=user_id,
        session_id=session_id,
        rewind_before_invocation_id=first.invocation_id,
    )


async def _when_free(state: SessionRuns, key: tuple[str, str, str], resume: bool) -> Release:
    while True:
        try:
            return await state.claims.take(*key, resume=resume)
        except RunInProgressError:
            run = state.detached.current(*key)
            if run is not None:
                await run.wait()
            else:
                await asyncio.sleep(POLL)
