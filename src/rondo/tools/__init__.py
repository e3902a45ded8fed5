"""Tools: function tools, toolsets and the built-in control tools."""

from typing import TYPE_CHECKING, Any

from rondo.tools.base import BaseTool, BaseToolset
from rondo.tools.function import FunctionTool, LongRunningFunctionTool, tool

if TYPE_CHECKING:
    from rondo.tools.loop_control import exit_loop
    from rondo.tools.memory_tool import load_memory
    from rondo.tools.plan import PlanToolset

__all__ = [
    "BaseTool",
    "BaseToolset",
    "FunctionTool",
    "LongRunningFunctionTool",
    "PlanToolset",
    "exit_loop",
    "load_memory",
    "tool",
]


def __getattr__(name: str) -> Any:
    # Built-in tools are built on first use: describing a tool costs import time.
    if name == "exit_loop":
        from rondo.tools.loop_control import exit_loop

        return exit_loop
    if name == "load_memory":
        from rondo.tools.memory_tool import load_memory

        return load_memory
    if name == "PlanToolset":
        from rondo.tools.plan import PlanToolset

        return PlanToolset
    raise AttributeError(f"module 'rondo.tools' has no attribute {name!r}")
