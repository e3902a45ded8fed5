"""The hook contract: what agent callbacks and plugin hooks receive and may return (SPEC M, T).

Each callback may be sync or async and is called positionally; `None` continues, a value
replaces or short-circuits (SPEC M1-M3, T4). The aliases type `Agent(...)`'s callback
parameters and the plugin manager's dispatch; `HookName` names every plugin hook.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Literal, TypeAlias, get_args

if TYPE_CHECKING:
    from rondo.context import CallbackContext, ToolContext
    from rondo.models.base import ModelRequest, ModelResponse
    from rondo.tools.base import BaseTool
    from rondo.types import Content

__all__ = [
    "HOOK_NAMES",
    "AfterAgentCallback",
    "AfterModelCallback",
    "AfterToolCallback",
    "BeforeAgentCallback",
    "BeforeModelCallback",
    "BeforeToolCallback",
    "CallbackOrList",
    "HookName",
    "OnModelErrorCallback",
    "OnToolErrorCallback",
    "ToolArgs",
    "ToolResult",
]

ToolArgs: TypeAlias = "dict[str, object]"
ToolResult: TypeAlias = "dict[str, object]"
_Answer: TypeAlias = "Content | str | Awaitable[Content | str | None] | None"
_Response: TypeAlias = "ModelResponse | Awaitable[ModelResponse | None] | None"
_Result: TypeAlias = "ToolResult | Awaitable[ToolResult | None] | None"

BeforeAgentCallback: TypeAlias = "Callable[[CallbackContext], _Answer]"
AfterAgentCallback: TypeAlias = "Callable[[CallbackContext], _Answer]"
BeforeModelCallback: TypeAlias = "Callable[[CallbackContext, ModelRequest], _Response]"
AfterModelCallback: TypeAlias = "Callable[[CallbackContext, ModelResponse], _Response]"
OnModelErrorCallback: TypeAlias = "Callable[[CallbackContext, ModelRequest, Exception], _Response]"
BeforeToolCallback: TypeAlias = "Callable[[BaseTool, ToolArgs, ToolContext], _Result]"
AfterToolCallback: TypeAlias = "Callable[[BaseTool, ToolArgs, ToolContext, ToolResult], _Result]"
OnToolErrorCallback: TypeAlias = "Callable[[BaseTool, ToolArgs, ToolContext, Exception], _Result]"

# One callable or a list of them, as every `Agent(..._callback=...)` parameter takes.
CallbackOrList: TypeAlias = "Callable[..., object] | Sequence[Callable[..., object]] | None"

HookName = Literal[
    "on_user_message",
    "before_run",
    "after_run",
    "on_event",
    "before_agent",
    "after_agent",
    "before_model",
    "after_model",
    "on_model_error",
    "before_tool",
    "after_tool",
    "on_tool_error",
]
"""Every plugin hook, in the order a run meets them."""

HOOK_NAMES: tuple[HookName, ...] = get_args(HookName)
