"""Run several agents at once and interleave their events (parallel workflows, teams)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import Any

from rondo._fan_in import Ended, fan_in
from rondo.agents.base import BaseAgent
from rondo.context import InvocationContext

__all__ = ["DONE", "interleave"]

DONE: Any = object()


async def interleave(
    runs: Sequence[tuple[BaseAgent, InvocationContext]],
) -> AsyncGenerator[tuple[int, Any], None]:
    """Yield `(index, item)` from every run as produced, and `(index, DONE)` when a run ends.

    Each run waits until its item was consumed before it continues, so a record is stored
    before its producer moves on (events up). An error in one run cancels the others; a
    clean stop (a tripped guardrail, a used-up budget: SPEC G6) lets them finish first — they
    meet a shared budget at their next check — so no call is cut short, then it is raised.
    """
    queue: asyncio.Queue[tuple[int, Any, asyncio.Event]] = asyncio.Queue()

    async def drive(index: int, agent: BaseAgent, ctx: InvocationContext) -> None:
        async with aclosing(agent.run_async(ctx)) as items:
            async for item in items:
                consumed = asyncio.Event()
                await queue.put((index, item, consumed))
                await consumed.wait()

    tasks = [asyncio.ensure_future(drive(i, a, c)) for i, (a, c) in enumerate(runs)]
    index_of: dict[asyncio.Future[None], int] = {task: i for i, task in enumerate(tasks)}
    stopped: BaseException | None = None
    async with aclosing(fan_in(queue, tasks)) as merged:
        async for got in merged:
            if isinstance(got, Ended):
                index = index_of[got.task]
                failure = got.task.exception()
                if failure is None:
                    yield index, DONE
                elif not getattr(failure, "ends_run_cleanly", False):
                    raise failure
                else:
                    stopped = stopped or failure
                continue
            index, item, consumed = got
            yield index, item
            consumed.set()
    if stopped is not None:
        raise stopped
