"""P4: the root's global instruction, then the agent's instruction, with state injected."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from rondo._callbacks import call_maybe_async
from rondo.context import ReadonlyContext
from rondo.flow.instructions import inject_session_state
from rondo.models.base import ModelRequest

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.flow.views import FlowView


def instructions_processor(
    flow: FlowView, ctx: InvocationContext, request: ModelRequest
) -> Awaitable[None] | None:
    # Any: `type(x) is str` (no call, unlike isinstance) narrows nothing for pyright.
    global_instruction: Any = flow.agent.root_agent.global_instruction
    instruction: Any = flow.agent.instruction
    # Plain text (no state to inject), tested in line: this runs every step.
    if (
        type(global_instruction) is str
        and "{" not in global_instruction
        and type(instruction) is str
        and "{" not in instruction
    ):
        if global_instruction:
            request.append_instruction(global_instruction)
        if instruction:
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
