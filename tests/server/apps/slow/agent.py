"""An agent whose model takes a moment: two runs on one session overlap."""

import asyncio
from collections.abc import AsyncIterator

from rondo import Agent
from rondo.models.base import ModelRequest, ModelResponse
from rondo.types import Content


class SlowModel:
    name = "slow"

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncIterator[ModelResponse]:
        await asyncio.sleep(0.3)
        yield ModelResponse(content=Content.model(f"done: {request.contents[-1].text}"))


root_agent = Agent(name="slow", model=SlowModel())
