"""Workflow agents: sequential, parallel and loop composition of sub-agents (SPEC X2)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from rondo.agents.base import BaseAgent, Item
from rondo.errors import ConfigurationError

if TYPE_CHECKING:
    from rondo.context import InvocationContext

__all__ = ["LoopAgent", "ParallelAgent", "SequentialAgent"]


def resume_start(agent: BaseAgent, ctx: InvocationContext) -> int:
    """D1: the index of the sub-agent an interrupted invocation continues in (0 otherwise):
    the sub-agents before it completed in this invocation and do not run again."""
    target = ctx.resume_target()
    if target is not None:
        for index, sub in enumerate(agent.sub_agents):
            if sub.find_agent(target) is not None:
                return index
    return 0


def completed_rounds(agent: BaseAgent, ctx: InvocationContext) -> int:
    """D1: how many rounds of a loop an interrupted invocation completed — the final
    responses its last agent stored in this invocation (the last sub-agent, or inside a
    sequence there, its last agent)."""
    last = agent.sub_agents[-1]
    while isinstance(last, SequentialAgent) and last.sub_agents:
        last = last.sub_agents[-1]
    names = {a.name for a in last.walk()}
    invocation_id = ctx.invocation_id
    rounds = 0
    for event in reversed(ctx.session.events):
        if event.invocation_id != invocation_id:
            break
        if event.author in names and not event.partial and event.is_final_response():
            rounds += 1
    return rounds


class SequentialAgent(BaseAgent):
    """Runs its sub-agents one after another in the same invocation."""

    async def _run_impl(self, ctx: InvocationContext) -> AsyncGenerator[Item, None]:
        subs = self.sub_agents
        for sub in subs[resume_start(self, ctx) :]:
            async with aclosing(sub.run_async(ctx)) as items:
                async for item in items:
                    yield item
            if ctx.end_invocation:
                return


def child_branch(parent: str, *names: str) -> str:
    return ".".join([parent, *names]) if parent else ".".join(names)


class ParallelAgent(BaseAgent):
    """Runs its sub-agents concurrently, each on its own branch `<branch>.<self>.<child>`.

    Branches are isolated (a child does not see its siblings' events); events interleave in the
    order they are produced. Each child waits until its event was stored before it continues.
    """

    async def _run_impl(self, ctx: InvocationContext) -> AsyncGenerator[Item, None]:
        from rondo.agents._concurrent import DONE, interleave

        runs = [
            (sub, ctx.for_agent(ctx.agent, branch=child_branch(ctx.branch, self.name, sub.name)))
            for sub in self.sub_agents
        ]
        async with aclosing(interleave(runs)) as items:
            async for _, item in items:
                if item is not DONE:
                    yield item


class LoopAgent(BaseAgent):
    """Runs its sub-agents in order, repeatedly, until an event escalates or `max_iterations`.

    The sub-agent whose event escalated finishes its run (as in ADK) — with `exit_loop`, which
    also sets `skip_summarization`, that is right after the tool step, so its lifecycle stream
    closes normally — and no later sub-agent or iteration starts."""

    def __init__(self, *, max_iterations: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if max_iterations is not None and max_iterations < 1:
            raise ConfigurationError("max_iterations must be at least 1 (or None for no limit)")
        self.max_iterations = max_iterations

    async def _run_impl(self, ctx: InvocationContext) -> AsyncGenerator[Item, None]:
        from rondo.events import Event

        start = resume_start(self, ctx)
        iteration = completed_rounds(self, ctx) if ctx.resume_target() is not None else 0
        while self.max_iterations is None or iteration < self.max_iterations:
            iteration += 1
            subs, start = self.sub_agents[start:], 0
            for sub in subs:
                escalated = False
                async with aclosing(sub.run_async(ctx)) as items:
                    async for item in items:
                        yield item
                        if isinstance(item, Event) and item.actions.escalate:
                            escalated = True
                if escalated or ctx.end_invocation:
                    return
