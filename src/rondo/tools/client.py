"""Tools that run in the client: a front end declares them, the model may call them, and the
run pauses on the call until the client sends its result as the next message (SPEC W8).

A front end's tool list (AG-UI's `RunAgentInput.tools`) arrives with each request, so these
tools join a run through `RunConfig.extra_tools`, never an agent's own list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from rondo.models.base import FunctionDeclaration
from rondo.tools.base import BaseTool

if TYPE_CHECKING:
    from rondo.context import ToolContext

__all__ = ["ClientTool"]

_NO_ARGS: dict[str, object] = {"type": "object", "properties": {}}


class ClientTool(BaseTool):
    """A tool the client runs: its call pauses the run as a long-running call (SPEC T5)."""

    def __init__(self, *, name: str, description: str = "", parameters: Any = None) -> None:
        super().__init__(name=name, description=description, is_long_running=True)
        schema = cast(dict[str, object], parameters) if isinstance(parameters, dict) else None
        self.parameters: dict[str, object] = schema if schema else dict(_NO_ARGS)

    def declaration(self) -> FunctionDeclaration:
        return FunctionDeclaration(
            name=self.name, description=self.description, parameters=self.parameters
        )

    async def run(self, args: dict[str, object], tool_context: ToolContext) -> None:
        # No response yet: the client runs it and answers in its next request.
        return None
