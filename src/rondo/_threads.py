"""Worker threads for sync tools and callbacks, so they never block the event loop.

A small pool of its own rather than `loop.run_in_executor`: the stdlib path costs the event
loop ~45 Python calls per hop (a `concurrent.futures.Future` with its condition variable,
`wrap_future`, the state copied back under that condition), which was the largest single
item of a tool loop with a sync tool (issue 25.5). Here a call is a job on a `SimpleQueue`
(C) taken by a worker that has nothing else to do, and its result comes back through one
`call_soon_threadsafe` onto a plain asyncio future.

Every job gets a worker of its own (a new one is started while fewer than `_MAX_WORKERS`
exist), so parallel sync tools run in parallel; past that, jobs wait for the next free one.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
from collections.abc import Callable
from contextlib import suppress
from queue import SimpleQueue
from typing import Any, TypeVar

__all__ = ["run_sync_in_thread"]

T = TypeVar("T")

# asyncio's default executor has min(32, cpus + 4) workers: 6 on a 2-core machine, which would
# serialize a batch of 8 parallel sync tools. Tool calls mostly wait on I/O, so allow many.
_MAX_WORKERS = 64

_Job = tuple[
    asyncio.AbstractEventLoop,
    "asyncio.Future[Any]",
    contextvars.Context,
    Callable[..., Any],
    tuple[Any, ...],
    dict[str, Any],
]


def _deliver(future: asyncio.Future[Any], failed: bool, value: Any) -> None:
    """On the loop: hand the job's outcome to whoever awaits it (unless they gave up)."""
    if future.cancelled():
        return
    if failed:
        future.set_exception(value)
    else:
        future.set_result(value)


class _Workers:
    """Threads taking jobs from one queue; `idle` workers wait for one, `backlog` jobs wait
    for a worker (only once `_MAX_WORKERS` are busy)."""

    def __init__(self) -> None:
        self._jobs: SimpleQueue[_Job] = SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0
        self._backlog = 0

    def submit(self, job: _Job) -> None:
        start = False
        with self._lock:
            if self._idle:
                self._idle -= 1  # that worker takes this job
            elif self._threads < _MAX_WORKERS:
                self._threads += 1
                start = True
            else:
                self._backlog += 1
        if start:
            threading.Thread(target=self._work, name="rondo-tool", daemon=True).start()
        self._jobs.put(job)

    def _work(self) -> None:
        jobs, lock = self._jobs, self._lock
        while True:
            loop, future, context, func, args, kwargs = jobs.get()
            try:
                outcome: tuple[bool, Any] = (False, context.run(func, *args, **kwargs))
            except BaseException as exc:  # handed to the awaiting task, as run_in_executor does
                outcome = (True, exc)
            with suppress(RuntimeError):  # a closed loop: nobody waits any more
                loop.call_soon_threadsafe(_deliver, future, *outcome)
            del loop, future, context, func, args, kwargs, outcome
            with lock:
                if self._backlog:
                    self._backlog -= 1  # a queued job is this worker's next
                else:
                    self._idle += 1


_workers = _Workers()


def _reset_after_fork() -> None:
    # A forked child has none of its parent's threads.
    global _workers
    _workers = _Workers()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


async def run_sync_in_thread(func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run `func` in a worker thread with the caller's context variables (tracing, etc.)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    _workers.submit((loop, future, contextvars.copy_context(), func, args, kwargs))
    return await future
