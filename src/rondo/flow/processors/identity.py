"""P5: tell the model its internal name (skipped in single-turn mode)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rondo.models.base import ModelRequest

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.flow.views import FlowView


def identity_processor(flow: FlowView, ctx: InvocationContext, request: ModelRequest) -> None:
    agent = flow.agent
    if agent.mode == "single_turn":
        return
    text = f'You are an agent. Your internal name is "{agent.name}".'
    if agent.description:
        text += f' The description about you is "{agent.description}".'
    request.append_instruction(text)
