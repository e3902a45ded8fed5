"""P7: the history the model sees, from the incremental contents view (SPEC C), shaped by the
agent's context strategies (K3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rondo.flow.contents import NUDGE_TEXT, build_contents, build_tail_contents
from rondo.flow.context_strategies import SlidingWindow, summarizing_config
from rondo.models.base import ModelRequest
from rondo.types import Content, Part

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.flow.views import FlowView


def contents_processor(flow: FlowView, ctx: InvocationContext, request: ModelRequest) -> None:
    agent = flow.agent
    strategies = agent.context_strategies
    compaction = ctx.run_config.compaction is not None or (
        bool(strategies) and summarizing_config(strategies) is not None
    )
    current_turn_only = agent.include_contents == "none"
    window = None
    if strategies and not compaction and not current_turn_only:
        # K3: a sliding window that views first (step 1) needs only the newest records: a
        # fresh replica reads the tail of a long session, not all of it (issue 25.4).
        first = next((s for s in strategies if s.views), None)
        if type(first) is SlidingWindow and first.reads_tail:
            window = first
    if window is not None:
        contents = build_tail_contents(
            ctx.session.events,
            agent_name=agent.name,
            branch=ctx.branch,
            isolation_scope=ctx.isolation_scope,
            invocation_id=ctx.invocation_id,
            covers=lambda contents: window.covers(contents, ctx),
            turns=window.max_turns or 8,
            front=window.front if window.keep_summary else None,
        )
    else:
        contents = build_contents(
            ctx.session.events,
            agent_name=agent.name,
            branch=ctx.branch,
            isolation_scope=ctx.isolation_scope,
            current_turn_only=current_turn_only,
            compaction=compaction,
            invocation_id=ctx.invocation_id,
        )
    for strategy in strategies:
        if strategy.views:
            contents = strategy.view(contents, ctx)
    if ctx.isolation_scope and agent.mode != "chat" and ctx.user_content is not None:
        # C2: a scoped task agent sees none of its parent's events; its task input is
        # synthesized from the delegating call instead.
        if contents and contents[-1].parts and contents[-1].parts[0].text == NUDGE_TEXT:
            contents.pop()
        contents.insert(0, ctx.user_content)
        if contents[-1].role != "user":
            contents.append(Content(role="user", parts=[Part(text=NUDGE_TEXT)]))
    request.contents = contents
