"""Run several agents at once and interleave their events (parallel workflows, teams)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import Any

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
    queue: asyncio.Queue[tuple[int, Any, asyncio.Event | None]] = asyncio.Queue()

    async def drive(index: int, agent: BaseAgent, ctx: InvocationContext) -> None:
        try:
            async with aclosing(agent.run_async(ctx)) as items:
                async for item in items:
                    consumed = asyncio.Event()
                    await queue.put((index, item, consumed))
                    await consumed.wait()
        except BaseException as exc:
            await queue.put((index, exc, None))
            return
        await queue.put((index, DONE, None))

    tasks = [asyncio.ensure_future(drive(i, a, c)) for i, (a, c) in enumerate(runs)]
    remaining = len(tasks)
    stopped: BaseException | None = None
    try:
        while remaining:
            index, item, consumed = await queue.get()
            if item is DONE:
                remaining -= 1
                yield index, DONE
                continue
            if isinstance(item, BaseException):
                if not getattr(item, "ends_run_cleanly", False):
                    raise item
                stopped = stopped or item
                remaining -= 1
                continue
            yield index, item
            if consumed is not None:
                consumed.set()
        if stopped is not None:
            raise stopped
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
