"""Tools: function tools, toolsets and the built-in control tools."""

from typing import TYPE_CHECKING, Any

from rondo.tools.base import BaseTool, BaseToolset
from rondo.tools.function import FunctionTool, LongRunningFunctionTool, tool

if TYPE_CHECKING:
    from rondo.tools.loop_control import exit_loop

__all__ = [
    "BaseTool",
    "BaseToolset",
    "FunctionTool",
    "LongRunningFunctionTool",
    "exit_loop",
    "tool",
]


def __getattr__(name: str) -> Any:
    if name == "exit_loop":  # built on first use: describing a tool costs import time
        from rondo.tools.loop_control import exit_loop

        return exit_loop
    raise AttributeError(f"module 'rondo.tools' has no attribute {name!r}")
