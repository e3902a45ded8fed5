"""P4: the root's global instruction, then the agent's instruction, with state injected."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeGuard

from rondo._callbacks import call_maybe_async
from rondo.context import ReadonlyContext
from rondo.flow.instructions import inject_session_state
from rondo.models.base import ModelRequest

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.flow.views import FlowView


def _is_plain(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and "{" not in value


def instructions_processor(
    flow: FlowView, ctx: InvocationContext, request: ModelRequest
) -> Awaitable[None] | None:
    global_instruction = flow.agent.root_agent.global_instruction
    instruction = flow.agent.instruction
    if _is_plain(global_instruction) and _is_plain(instruction):
        request.append_instruction(global_instruction)
        request.append_instruction(instruction)
        return None
    return _resolve(ctx, request, (global_instruction, instruction))


async def _resolve(
    ctx: InvocationContext, request: ModelRequest, sources: tuple[str | Callable[..., object], ...]
) -> None:
    for source in sources:
        if not source:
            continue
        if isinstance(source, str):
            request.append_instruction(await inject_session_state(source, ctx))
        else:
            # A provider's output is used as written: it is not injected again (P4).
            text = await call_maybe_async(source, ReadonlyContext(ctx))
            request.append_instruction(str(text) if text is not None else "")
