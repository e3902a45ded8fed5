"""`exit_loop`: lets an agent inside a `LoopAgent` end the loop."""

from __future__ import annotations

from rondo.context import ToolContext
from rondo.tools.function import FunctionTool


def _exit_loop(tool_context: ToolContext) -> dict[str, object]:
    """Call this only when the task is done and the loop should stop."""
    tool_context.actions.escalate = True
    tool_context.actions.skip_summarization = True
    return {}


exit_loop = FunctionTool(_exit_loop, name="exit_loop")
