"""Workflow agents: sequential, parallel and loop composition of sub-agents (SPEC X2)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from rondo.agents.base import BaseAgent, Item, RunOrder
from rondo.errors import ConfigurationError

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.events import Event

__all__ = ["LoopAgent", "ParallelAgent", "SequentialAgent"]


def resume_start(agent: BaseAgent, ctx: InvocationContext) -> int:
    """The index of the sub-agent this invocation continues in (0 otherwise): where an
    interrupted invocation stopped (D1) or the agent a paused run waits on (H3). The
    sub-agents before it completed and do not run again."""
    target = ctx.resume_target()
    if target is not None:
        for index, sub in enumerate(agent.sub_agents):
            if sub.find_agent(target) is not None:
                if sub.name == target:
                    if ctx.finished_in(target):
                        return index + 1  # D1: it finished; the ones after it never started
                    ctx.reached(target)
                return index
    return 0


def branches_to_run(agent: BaseAgent, ctx: InvocationContext) -> list[BaseAgent]:
    """The sub-agents a parallel agent (or team) runs: all of them, or — when this invocation
    continues in one of them (D1, H3) — that one alone; the others completed in the run being
    continued. Cut right after a branch finished (D1), the branches that did not finish."""
    subs = agent.sub_agents
    if ctx.resume_target() is None:
        return subs
    done = ctx.finished_branches(agent)
    if done is not None:
        return [sub for sub in subs if sub.name not in done]
    return subs[resume_start(agent, ctx) :][:1]


def completed_rounds(agent: BaseAgent, ctx: InvocationContext) -> int:
    """How many rounds of a loop the run being continued completed — the times its last
    sub-agent finished (`completions`) in this invocation or, when it continues a paused run
    (H3), in that run. A pause (a confirmation request, a long-running call) is not the end
    of a round."""
    invocation_id, run_id = ctx.invocation_id, ctx.run_id
    events: list[Event] = []
    for event in reversed(ctx.session.events):
        if event.invocation_id != invocation_id and (not run_id or event.run_id != run_id):
            break
        events.append(event)
    return completions(agent.sub_agents[-1], events)


def completions(agent: BaseAgent, events: Sequence[Event]) -> int:
    """How many times `agent` finished in `events` (one invocation's): an LLM agent (or any
    agent that picks what runs next) by its final answers, or those of the agents it hands
    over to; a sequence when its last sub-agent did; a parallel agent when every branch did;
    a loop by its escalations, or its rounds over `max_iterations`."""
    kind = agent.run_order
    subs = agent.sub_agents
    if kind is None or not subs:
        names = {a.name for a in agent.walk()}
        return sum(1 for e in events if ends_a_round(e, names))
    if kind == "parallel":
        return min(completions(sub, events) for sub in subs)
    if isinstance(agent, LoopAgent):
        names = {a.name for a in agent.walk()}
        escalations = sum(
            1 for e in events if e.author in names and not e.partial and e.actions.escalate
        )
        limit = agent.max_iterations
        rounds = completions(subs[-1], events) // limit if limit is not None else 0
        return escalations + rounds
    return completions(subs[-1], events)


def ends_a_round(event: Event, names: set[str]) -> bool:
    """Whether `event` is a final answer of one of the agents `names` (a loop's last
    sub-agent) — not a pause, which is not the end of a round."""
    return (
        event.author in names
        and not event.partial
        and not event.long_running_tool_ids
        and not event.actions.requested_tool_confirmations
        and event.is_final_response()
    )


def paused(ctx: InvocationContext) -> bool:
    """H3: a call of this run waits on an answer (a confirmation or a long-running
    tool): the run is paused, and the workflow around the agent stops there — the agents
    after it run once the answer continues the run."""
    run_id, invocation_id = ctx.run_id, ctx.invocation_id
    for call in ctx.session.pending:
        if (call.run_id == run_id) if run_id else (call.invocation_id == invocation_id):
            return True
    return False


def enclosing_workflow(agent: BaseAgent, branch: str) -> tuple[BaseAgent, str]:
    """The outermost sequence, loop, parallel agent or team around `agent`, and its branch: a
    run continued in `agent` re-enters them at its position, so that once `agent` is done the
    agents after it run, as they would have."""
    while (parent := agent.parent_agent) is not None and (kind := parent.run_order) is not None:
        if kind == "parallel":
            # Its children run on `<branch>.<parallel>.<child>`; the parallel itself on
            # `<branch>`.
            own = f"{parent.name}.{agent.name}"
            if branch == own:
                branch = ""
            elif branch.endswith("." + own):
                branch = branch[: -len(own) - 1]
        agent = parent
    return agent, branch


class SequentialAgent(BaseAgent):
    """Runs its sub-agents one after another in the same invocation."""

    run_order: RunOrder | None = "sequence"

    async def _run_impl(self, ctx: InvocationContext) -> AsyncGenerator[Item, None]:
        subs = self.sub_agents
        for sub in subs[resume_start(self, ctx) :]:
            async with aclosing(sub.run_async(ctx)) as items:
                async for item in items:
                    yield item
            if ctx.end_invocation or paused(ctx):
                return


def child_branch(parent: str, *names: str) -> str:
    return ".".join([parent, *names]) if parent else ".".join(names)


class ParallelAgent(BaseAgent):
    """Runs its sub-agents concurrently, each on its own branch `<branch>.<self>.<child>`.

    Branches are isolated (a child does not see its siblings' events); events interleave in the
    order they are produced. Each child waits until its event was stored before it continues.
    """

    run_order: RunOrder | None = "parallel"

    async def _run_impl(self, ctx: InvocationContext) -> AsyncGenerator[Item, None]:
        from rondo.agents._concurrent import DONE, interleave

        runs = [
            (sub, ctx.for_agent(ctx.agent, branch=child_branch(ctx.branch, self.name, sub.name)))
            for sub in branches_to_run(self, ctx)
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

    run_order: RunOrder | None = "sequence"

    def __init__(self, *, max_iterations: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if max_iterations is not None and max_iterations < 1:
            raise ConfigurationError("max_iterations must be at least 1 (or None for no limit)")
        self.max_iterations = max_iterations

    async def _run_impl(self, ctx: InvocationContext) -> AsyncGenerator[Item, None]:
        from rondo.events import Event

        iteration = completed_rounds(self, ctx) if ctx.resume_target() is not None else 0
        start = resume_start(self, ctx)
        if start >= len(self.sub_agents):
            start = 0  # D1: the round finished with its last agent: the next round begins
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
                if escalated or ctx.end_invocation or paused(ctx):
                    return
