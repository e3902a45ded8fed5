"""An agent whose one tool takes a while: a replica can die while it runs (issue 21.7).

The model calls `work` once, then answers with what it returned (the call id it ran under:
a resumed run sends the call in flight again under the same id).
"""

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from rondo import Agent, ToolContext
from rondo.models.base import ModelRequest, ModelResponse
from rondo.types import Content, FunctionCall, Part

WORK_SECONDS = 1.5


class PatientModel:
    name = "patient"

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncIterator[ModelResponse]:
        last = request.contents[-1]
        answers = [p.function_response for p in last.parts if p.function_response]
        if answers:
            yield ModelResponse(content=Content.model(f"worked: {answers[0].response}"))
            return
        call = FunctionCall(name="work", args={"task": last.text})
        yield ModelResponse(content=Content(role="model", parts=[Part(function_call=call)]))


async def work(task: str, tool_context: ToolContext) -> dict[str, Any]:
    """Works on the task for a while."""
    await asyncio.sleep(WORK_SECONDS)
    return {"task": task, "call": tool_context.function_call_id}


root_agent = Agent(name="patient", model=PatientModel(), tools=[work])
