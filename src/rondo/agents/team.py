"""`Team`: member agents working on one request (Solon's TeamAgent, SPEC V5).

- `"sequential"`: members answer one after another; each sees what the others said (C3).
- `"parallel"`: members work at once on isolated branches; their events interleave.
- `"supervisor"`: an LLM supervisor decides which member works next (members are its tools)
  and writes the final answer.

In the lifecycle view each member's work is framed by `NodeStart`/`NodeEnd` (carrying the
team's run id and name). Inside, as Solon's members do (seed 002 §4.E), a member emits its own
`RunStart` (its name) and its process events, but no end event of its own: the team's
`NodeEnd` closes it. Every event a member produces carries its `node` — parallel members are
attributable without guessing (V2, beyond). The supervisor's own events carry the node
`"supervisor"`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Literal

from rondo.agents._concurrent import DONE, interleave
from rondo.agents.base import BaseAgent, Item, RunOrder
from rondo.agents.llm import Agent
from rondo.agents.workflow import branches_to_run, child_branch, paused, resume_start
from rondo.context import InvocationContext
from rondo.errors import ConfigurationError, ToolArgumentsError
from rondo.events import Event
from rondo.lifecycle import NodeEnd, NodeStart, RunStart
from rondo.models.base import FunctionDeclaration, Model
from rondo.tools.base import BaseTool
from rondo.types import Content

if TYPE_CHECKING:
    from rondo.context import ToolContext
    from rondo.hooks import AfterAgentCallback, BeforeAgentCallback
    from rondo.lifecycle import Correlation

__all__ = ["Team"]

TeamMode = Literal["sequential", "parallel", "supervisor"]
_ORDERS: dict[TeamMode, RunOrder | None] = {
    "sequential": "sequence",
    "parallel": "parallel",
    "supervisor": None,
}
SUPERVISOR_NODE = "supervisor"


# The ids come from the context (`InvocationContext.correlation`, the one place a lifecycle
# event gets them); only who and which node are the team's own.
def _ids(ctx: InvocationContext, agent: str, node: str) -> Correlation:
    ids = ctx.correlation()
    ids["agent_name"], ids["node"] = agent, node
    return ids


def _node_start(ctx: InvocationContext, team: str, node: str) -> NodeStart:
    return NodeStart(**_ids(ctx, team, node))


def _member_start(ctx: InvocationContext, member: str) -> RunStart:
    return RunStart(**_ids(ctx, member, member), session_id=ctx.session.id, user_id=ctx.user_id)


def _node_end(ctx: InvocationContext, team: str, node: str, text: str) -> NodeEnd:
    return NodeEnd(**_ids(ctx, team, node), text=text)


class _FinalText:
    """The latest final text a member produced."""

    __slots__ = ("text",)

    def __init__(self) -> None:
        self.text = ""

    def see(self, item: Any, author: str) -> None:
        if (
            isinstance(item, Event)
            and item.author == author
            and item.is_final_response()
            and item.text
        ):
            self.text = item.text


class _MemberTool(BaseTool):
    """The supervisor's handle on one member: run it on a request, inside this session."""

    yields_events = True

    def __init__(self, team: str, member: BaseAgent) -> None:
        super().__init__(
            name=member.name,
            description=member.description or f"Ask team member {member.name}.",
        )
        self._team = team
        self.member = member
        self._declaration = FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters={
                "type": "object",
                "properties": {"request": {"type": "string", "description": "What to do."}},
                "required": ["request"],
            },
        )

    def declaration(self) -> FunctionDeclaration:
        return self._declaration

    async def run(self, args: dict[str, object], tool_context: ToolContext) -> Any:
        request = args.get("request")
        if not isinstance(request, str) or not request.strip():
            raise ToolArgumentsError("Invalid arguments: argument 'request' must be non-empty text")
        parent = tool_context.invocation_context
        ctx = parent.for_agent(parent.agent, node=self.member.name)
        ctx.sink = None
        ctx.user_content = Content.user(request)
        tool_context.emit(_node_start(parent, self._team, self.member.name))
        tool_context.emit(_member_start(parent, self.member.name))
        final = _FinalText()
        async with aclosing(self.member.run_async(ctx)) as items:
            async for item in items:
                final.see(item, self.member.name)
                if isinstance(item, Event):
                    await tool_context.send_event(item)
                else:
                    tool_context.emit(item)
        tool_context.emit(_node_end(parent, self._team, self.member.name, final.text))
        return {"result": final.text}


class Team(BaseAgent):
    """Members working on one request, sequentially, in parallel or under a supervisor."""

    def __init__(
        self,
        *,
        name: str,
        members: Sequence[BaseAgent],
        mode: TeamMode = "sequential",
        model: Model | str | None = None,
        instruction: str = "",
        description: str = "",
        before_agent_callback: BeforeAgentCallback | Sequence[BeforeAgentCallback] | None = None,
        after_agent_callback: AfterAgentCallback | Sequence[AfterAgentCallback] | None = None,
    ) -> None:
        if not members:
            raise ConfigurationError("a Team needs at least one member")
        if mode not in ("sequential", "parallel", "supervisor"):
            raise ConfigurationError("Team mode must be 'sequential', 'parallel' or 'supervisor'")
        self.mode: TeamMode = mode
        # A sequential or parallel team runs its members as a workflow does; a supervised
        # one lets its supervisor pick.
        self.run_order: RunOrder | None = _ORDERS[mode]
        self.members = list(members)
        self.supervisor: Agent | None = None
        sub_agents: list[BaseAgent] = list(members)
        if mode == "supervisor":
            self.supervisor = Agent(
                name=f"{name}_supervisor",
                model=model,
                instruction=instruction
                or "You lead a team. Give members focused requests, then write the final answer.",
                tools=[_MemberTool(name, m) for m in members],
            )
            sub_agents.append(self.supervisor)
        elif model is not None:
            raise ConfigurationError("only a supervisor team takes a model")
        super().__init__(
            name=name,
            description=description,
            sub_agents=sub_agents,
            before_agent_callback=before_agent_callback,
            after_agent_callback=after_agent_callback,
        )

    def _run_impl(self, ctx: InvocationContext) -> AsyncGenerator[Item, None]:
        if self.mode == "parallel":
            return self._parallel(ctx)
        if self.mode == "supervisor":
            assert self.supervisor is not None
            return self.supervisor.run_async(ctx.for_agent(ctx.agent, node=SUPERVISOR_NODE))
        return self._sequential(ctx)

    async def _sequential(self, ctx: InvocationContext) -> AsyncGenerator[Item, None]:
        # A continued run (D1, H3) starts at the member it continues in.
        for member in self.members[resume_start(self, ctx) :]:
            if ctx.observe:
                yield _node_start(ctx, self.name, member.name)
                yield _member_start(ctx, member.name)
            final = _FinalText()
            async with aclosing(
                member.run_async(ctx.for_agent(ctx.agent, node=member.name))
            ) as items:
                async for item in items:
                    final.see(item, member.name)
                    yield item
            if ctx.observe:
                yield _node_end(ctx, self.name, member.name, final.text)
            if ctx.end_invocation or paused(ctx):
                return

    async def _parallel(self, ctx: InvocationContext) -> AsyncGenerator[Item, None]:
        members = branches_to_run(self, ctx)  # a parallel team's sub-agents are its members
        runs = [
            (
                m,
                ctx.for_agent(
                    ctx.agent, branch=child_branch(ctx.branch, self.name, m.name), node=m.name
                ),
            )
            for m in members
        ]
        finals = [_FinalText() for _ in members]
        if ctx.observe:
            for member in members:
                yield _node_start(ctx, self.name, member.name)
                yield _member_start(ctx, member.name)
        async with aclosing(interleave(runs)) as items:
            async for index, item in items:
                member = members[index]
                if item is DONE:
                    if ctx.observe:
                        yield _node_end(ctx, self.name, member.name, finals[index].text)
                    continue
                finals[index].see(item, member.name)
                yield item
