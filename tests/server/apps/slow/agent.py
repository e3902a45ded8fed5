"""An agent that takes its time: two runs on one session overlap, a client can leave mid-run.

A message starting with "long" makes the model call `wait`, a tool that takes 30 s.
"""

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from rondo import Agent
from rondo.models.base import ModelRequest, ModelResponse
from rondo.types import Content, FunctionCall, Part


class SlowModel:
    name = "slow"

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncIterator[ModelResponse]:
        last = request.contents[-1]
        if any(p.function_response for p in last.parts):
            yield ModelResponse(content=Content.model("done waiting"))
            return
        if last.text.startswith("long"):
            call = FunctionCall(name="wait", args={})
            yield ModelResponse(content=Content(role="model", parts=[Part(function_call=call)]))
            return
        await asyncio.sleep(0.3)
        yield ModelResponse(content=Content.model(f"done: {last.text}"))


async def wait() -> dict[str, Any]:
    """Takes a long time."""
    await asyncio.sleep(30)
    return {"waited": True}


root_agent = Agent(name="slow", model=SlowModel(), tools=[wait])
