"""An agent whose runs take a moment and count in the session state: two runs on one session
from two servers overlap, and a lost update shows as a count below the runs that succeeded.

For any message the model waits 0.2 s (2 s for a message starting with "slow"), calls
`tally`, then answers `counted <n>`.
"""

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from rondo import Agent, ToolContext
from rondo.models.base import ModelRequest, ModelResponse
from rondo.types import Content, FunctionCall, Part


class TallyModel:
    name = "tally"

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncIterator[ModelResponse]:
        last = request.contents[-1]
        answered = [p.function_response for p in last.parts if p.function_response]
        if answered:
            yield ModelResponse(content=Content.model(f"counted {answered[0].response['count']}"))
            return
        # The window in which another server's run can start.
        await asyncio.sleep(2.0 if last.text.startswith("slow") else 0.2)
        call = FunctionCall(name="tally", args={})
        yield ModelResponse(content=Content(role="model", parts=[Part(function_call=call)]))


def tally(tool_context: ToolContext) -> dict[str, Any]:
    """Counts one more run."""
    count = int(tool_context.state.get("count", 0)) + 1
    tool_context.state["count"] = count
    return {"count": count}


root_agent = Agent(name="tally", model=TallyModel(), tools=[tally])
