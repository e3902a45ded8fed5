"""An agent that stops between two events until the test lets it go (the attack suite).

For a message naming a file path, the model calls `wait_for(path)`, a tool that returns once
that file exists; then the model answers `released`. The test acts on the server's
surroundings (stops the database, leaves the connection) while the run waits.
"""

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

from rondo import Agent
from rondo.models.base import ModelRequest, ModelResponse
from rondo.types import Content, FunctionCall, Part


class GateModel:
    name = "gate"

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncIterator[ModelResponse]:
        last = request.contents[-1]
        if any(p.function_response for p in last.parts):
            yield ModelResponse(content=Content.model("released"))
            return
        call = FunctionCall(name="wait_for", args={"path": last.text})
        yield ModelResponse(content=Content(role="model", parts=[Part(function_call=call)]))


async def wait_for(path: str) -> dict[str, Any]:
    """Waits until the file at `path` exists."""
    while not os.path.exists(path):  # noqa: ASYNC110, ASYNC240 - a poll of a test file
        await asyncio.sleep(0.02)
    return {"released": path}


root_agent = Agent(name="gate", model=GateModel(), tools=[wait_for])
