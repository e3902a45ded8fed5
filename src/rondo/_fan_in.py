"""Fan-in: what several concurrent producers put on one queue, read by one consumer.

The one loop behind every place where tasks run side by side and a single generator hands
their output on: a parallel workflow's branches (`agents._concurrent`), a step's tool calls
(`flow.functions`), a DBOS step draining a model stream (`durable.dbos`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from typing import Generic, TypeVar

__all__ = ["Ended", "fan_in"]

T = TypeVar("T")
R = TypeVar("R")


class Ended(Generic[R]):
    """A producer finished (returned, raised or was cancelled): `task` holds how."""

    __slots__ = ("task",)

    def __init__(self, task: asyncio.Future[R]) -> None:
        self.task = task


async def fan_in(
    queue: asyncio.Queue[T], tasks: Sequence[asyncio.Future[R]]
) -> AsyncGenerator[T | Ended[R], None]:
    """The items `tasks` put on `queue`, as they arrive, and `Ended(task)` once a task is
    done — after every item it put before it finished; it ends when every task has. Finished
    tasks are reported in the order of `tasks`. A task's failure is not raised here: the
    consumer reads it from `Ended.task`. Closing the generator cancels the tasks still
    running and waits for them."""
    pending = set(tasks)
    getter: asyncio.Future[T] | None = None
    try:
        while pending:
            if queue.empty():
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait({*pending, getter}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    item = getter.result()
                    getter = None
                    yield item
                else:
                    getter.cancel()  # nothing taken: a cancelled get leaves the queue as is
                    getter = None
            finished = [task for task in tasks if task in pending and task.done()]
            while not queue.empty():
                yield queue.get_nowait()
            for task in finished:
                pending.discard(task)
                yield Ended(task)
    finally:
        if getter is not None:
            getter.cancel()
        running = [task for task in tasks if not task.done()]
        for task in running:
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)
