"""`load_memory`: lets an agent search the user's memory when it decides to (SPEC R5).

Memory is never searched or injected on its own (overview §4.4): the model calls this tool
with a query, and the Runner's memory service answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rondo.context import ToolContext
from rondo.tools.function import FunctionTool

if TYPE_CHECKING:
    from rondo.context import InvocationContext
    from rondo.models.base import ModelRequest

__all__ = ["MEMORY_INSTRUCTION", "LoadMemoryTool", "load_memory"]

MEMORY_INSTRUCTION = (
    "You have memory. You can use it to answer questions. If any questions need you to look "
    "up the memory, you should call the load_memory function with a query."
)


async def _load_memory(query: str, tool_context: ToolContext) -> dict[str, object]:
    """Loads the memories of the current user that match a query.

    Args:
        query: The words to look for in the user's past conversations.
    """
    found = await tool_context.search_memory(query)
    return {
        "memories": [
            {"author": m.author, "timestamp": m.timestamp, "text": m.content.text}
            for m in found.memories
        ]
    }


class LoadMemoryTool(FunctionTool):
    """The `load_memory` function tool, plus a line telling the model it has memory."""

    def __init__(self) -> None:
        super().__init__(_load_memory, name="load_memory")

    def process_request(self, ctx: InvocationContext, request: ModelRequest) -> None:
        super().process_request(ctx, request)
        request.append_instruction(MEMORY_INSTRUCTION)


load_memory = LoadMemoryTool()
