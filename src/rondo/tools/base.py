"""The tool contract: a declaration for the model and an implementation for the loop (SPEC P2)."""

from __future__ import annotations

import abc
import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from rondo.errors import ToolDefinitionError
from rondo.models.base import FunctionDeclaration, ModelRequest

if TYPE_CHECKING:
    from rondo.context import InvocationContext, ReadonlyContext, ToolContext

__all__ = ["BaseTool", "BaseToolset", "check_tool_name"]

_TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$")


def check_tool_name(name: str) -> str:
    if not _TOOL_NAME.match(name):
        raise ToolDefinitionError(
            f"invalid tool name {name!r}: use letters, digits, '_', '.', ':' or '-', starting "
            "with a letter or '_' (a lambda needs an explicit name=)"
        )
    return name


class BaseTool(abc.ABC):
    """A tool an agent can call.

    `declaration()` is what the model sees; `run()` executes a call. Long-running tools may
    return None ("no response yet", SPEC T5).
    """

    name: str
    description: str
    is_long_running: bool = False
    # Set by tools that hand records up while they run (task agents in this session).
    yields_events: bool = False
    # Streaming tools yield chunks from `stream()` instead of returning from `run()` (T5).
    is_streaming: bool = False
    # D1: whether a call that was in flight when its run was interrupted may run again on
    # resume (keyed by `ToolContext.function_call_id`); False pauses it for a human instead.
    idempotent: bool = True

    def stream(self, args: dict[str, object], tool_context: ToolContext) -> AsyncIterator[Any]:
        """The chunks of a streaming tool; only called when `is_streaming` is set."""
        raise ToolDefinitionError(f"{type(self).__name__} is not a streaming tool")

    def __init__(self, *, name: str, description: str = "", is_long_running: bool = False):
        self.name = check_tool_name(name)
        self.description = description
        self.is_long_running = is_long_running

    def declaration(self) -> FunctionDeclaration | None:
        """The declaration sent to the model, or None for a tool that adds none."""
        return None

    def process_request(self, ctx: InvocationContext, request: ModelRequest) -> None:
        """Add this tool to a request: its declaration for the model, itself for execution."""
        decl = self.declaration()
        if decl is not None:
            request.config.tools.append(decl)
        request.tools[self.name] = self

    async def confirmation_gate(
        self, args: dict[str, object], tool_context: ToolContext
    ) -> dict[str, object] | None:
        """H1/H2: the response when this call needs a human's confirmation first — asked
        for (the call waits, not started) or refused (the tool is not run); None to run it.
        Checked after the `before_tool` hooks, before `run`."""
        return None

    @abc.abstractmethod
    async def run(self, args: dict[str, object], tool_context: ToolContext) -> Any:
        """Execute one call. Raise `ToolArgumentsError` for arguments that do not fit."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class BaseToolset(abc.ABC):
    """A dynamic list of tools, expanded when a flow starts (SPEC T7).

    Set `relist_each_step` to have the list re-read before every model call (SPEC P2, beyond).
    """

    relist_each_step: bool = False

    @abc.abstractmethod
    async def get_tools(self, ctx: ReadonlyContext) -> list[BaseTool]:
        """The tools available now."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (connections, subprocesses)."""
