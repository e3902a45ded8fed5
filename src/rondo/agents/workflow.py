"""Workflow agents: sequential, parallel and loop composition of sub-agents (SPEC X2)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from rondo.agents.base import BaseAgent, Item
from rondo.context import InvocationContext
from rondo.errors import ConfigurationError
from rondo.events import Event

__all__ = ["LoopAgent", "ParallelAgent", "SequentialAgent"]


class SequentialAgent(BaseAgent):
    """Runs its sub-agents one after another in the same invocation."""

    async def _run_impl(self, ctx: InvocationContext) -> AsyncGenerator[Item, None]:
        for sub in self.sub_agents:
            async with aclosing(sub.run_async(ctx)) as items:
                async for item in items:
                    yield item
            if ctx.end_invocation:
                return


def _child_branch(parent: str, *names: str) -> str:
    return ".".join([parent, *names]) if parent else ".".join(names)


class ParallelAgent(BaseAgent):
    """Runs its sub-agents concurrently, each on its own branch `<branch>.<self>.<child>`.

    Branches are isolated (a child does not see its siblings' events); events interleave in the
    order they are produced. Each child waits until its event was stored before it continues.
    """

    async def _run_impl(self, ctx: InvocationContext) -> AsyncGenerator[Item, None]:
        if not self.sub_agents:
            return
        queue: asyncio.Queue[tuple[int, Any, asyncio.Event | None]] = asyncio.Queue()
        done_marker = object()

        async def drive(index: int, sub: BaseAgent) -> None:
            child_ctx = ctx.for_agent(
                ctx.agent, branch=_child_branch(ctx.branch, self.name, sub.name)
            )
            try:
                async with aclosing(sub.run_async(child_ctx)) as items:
                    async for item in items:
                        processed = asyncio.Event()
                        await queue.put((index, item, processed))
                        await processed.wait()  # events up: resume only after it is stored
            except BaseException as exc:
                await queue.put((index, exc, None))
                return
            await queue.put((index, done_marker, None))

        tasks = [asyncio.ensure_future(drive(i, sub)) for i, sub in enumerate(self.sub_agents)]
        remaining = len(tasks)
        try:
            while remaining:
                _, item, processed = await queue.get()
                if item is done_marker:
                    remaining -= 1
                    continue
                if isinstance(item, BaseException):
                    raise item
                yield item
                if processed is not None:
                    processed.set()
        finally:
            for task in tasks:
                if not task.done():
                    task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


class LoopAgent(BaseAgent):
    """Runs its sub-agents in order, repeatedly, until an event escalates or `max_iterations`."""

    def __init__(self, *, max_iterations: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if max_iterations is not None and max_iterations < 1:
            raise ConfigurationError("max_iterations must be at least 1 (or None for no limit)")
        self.max_iterations = max_iterations

    async def _run_impl(self, ctx: InvocationContext) -> AsyncGenerator[Item, None]:
        iteration = 0
        while self.max_iterations is None or iteration < self.max_iterations:
            iteration += 1
            for sub in self.sub_agents:
                escalated = False
                async with aclosing(sub.run_async(ctx)) as items:
                    async for item in items:
                        yield item
                        if isinstance(item, Event) and item.actions.escalate:
                            escalated = True
                            break
                if escalated or ctx.end_invocation:
                    return
