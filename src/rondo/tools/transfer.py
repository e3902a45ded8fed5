"""`transfer_to_agent`: agent transfer is a tool call (SPEC X1)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rondo.errors import ToolArgumentsError
from rondo.models.base import FunctionDeclaration
from rondo.tools.base import BaseTool

if TYPE_CHECKING:
    from rondo.context import ToolContext

__all__ = ["TRANSFER_TOOL_NAME", "TransferToAgentTool"]

TRANSFER_TOOL_NAME = "transfer_to_agent"


class TransferToAgentTool(BaseTool):
    """Hands the conversation to another agent; its `agent_name` is an enum of legal targets."""

    def __init__(self, targets: list[str]) -> None:
        super().__init__(
            name=TRANSFER_TOOL_NAME,
            description="Transfer the conversation to another agent better suited to answer.",
        )
        self.targets = targets
        self._declaration = FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters={
                "type": "object",
                "properties": {
                    "agent_name": {
                        "type": "string",
                        "enum": list(targets),
                        "description": "The name of the agent to transfer to.",
                    }
                },
                "required": ["agent_name"],
            },
        )

    def declaration(self) -> FunctionDeclaration:
        return self._declaration

    async def run(self, args: dict[str, object], tool_context: ToolContext) -> Any:
        name = args.get("agent_name")
        unknown = sorted(set(args) - {"agent_name"})
        if unknown:
            raise ToolArgumentsError(
                f"Invalid arguments: unknown argument {unknown}; allowed arguments: agent_name"
            )
        if not isinstance(name, str) or name not in self.targets:
            raise ToolArgumentsError(
                f"Invalid arguments: argument 'agent_name': {name!r} is not an agent you can "
                f"transfer to; choose one of: {', '.join(self.targets)}"
            )
        tool_context.actions.transfer_to_agent = name
        return {"transferred_to": name}
