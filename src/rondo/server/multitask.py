"""Double-texting: what a run request does when another run holds its session (SPEC W7).

- `reject` (the default): 409, as before — `SessionClaims.take` alone.
- `enqueue`: wait until the session is free, then run; waiting requests of one session go in
  arrival order (a FIFO lock per session). The queue is this server's memory: a restart drops
  a waiting request (its connection ends, nothing of its message is stored; send it again).
- `interrupt`: stop the current run at its next stop point (what it finished stays stored,
  each call it cut gets an answer naming the stop), then run.

(`rollback` — stop, then rewind the stopped run away — waits for rewind as a log record.)

Waiting for a run of another replica polls the claim (`POLL` seconds apart); a run of this
process is awaited directly.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Literal

from rondo.server.claims import Release
from rondo.server.errors import RunInProgressError
from rondo.server.run_control import stop_run

if TYPE_CHECKING:
    from rondo.server.state import ServerState

__all__ = ["POLL", "Multitask", "take_with"]

Multitask = Literal["reject", "enqueue", "interrupt"]

POLL = 0.2

_queues: dict[tuple[str, str, str], tuple[asyncio.Lock, list[int]]] = {}


async def take_with(state: ServerState, key: tuple[str, str, str], multitask: Multitask) -> Release:
    """Claim the session `key` the way `multitask` says (see the module docstring)."""
    if multitask == "reject":
        return await state.claims.take(*key)
    lock, waiting = _queues.setdefault(key, (asyncio.Lock(), [0]))
    waiting[0] += 1
    try:
        async with lock:
            if multitask == "interrupt":
                await stop_run(state, key, None, "interrupted by a newer message")
            return await _when_free(state, key)
    finally:
        waiting[0] -= 1
        if not waiting[0]:
            _queues.pop(key, None)


async def _when_free(state: ServerState, key: tuple[str, str, str]) -> Release:
    while True:
        try:
            return await state.claims.take(*key)
        except RunInProgressError:
            run = state.detached.current(*key)
            if run is not None:
                await run.wait()
            else:
                await asyncio.sleep(POLL)
