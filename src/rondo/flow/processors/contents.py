"""P7: the history the model sees, from the incremental contents view (SPEC C)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rondo.flow.contents import build_contents
from rondo.models.base import ModelRequest

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.flow.loop import Flow


def contents_processor(flow: Flow, ctx: InvocationContext, request: ModelRequest) -> None:
    agent = flow.agent
    request.contents = build_contents(
        ctx.session.events,
        agent_name=agent.name,
        branch=ctx.branch,
        isolation_scope=ctx.isolation_scope,
        current_turn_only=agent.include_contents == "none",
    )
