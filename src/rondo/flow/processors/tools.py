"""P2: tools and toolsets → the local execution table and the model's declarations."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from rondo.models.base import ModelRequest

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.flow.views import FlowView


def tools_processor(
    flow: FlowView, ctx: InvocationContext, request: ModelRequest
) -> Awaitable[None] | None:
    tools = flow.tools
    if tools is None or flow.relist_tools:
        return _expand_then_pack(flow, ctx, request)
    for tool in tools:
        tool.process_request(ctx, request)
    return None


async def _expand_then_pack(flow: FlowView, ctx: InvocationContext, request: ModelRequest) -> None:
    for tool in await flow.expand_tools(ctx):
        tool.process_request(ctx, request)
