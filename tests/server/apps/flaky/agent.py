"""An agent whose model fails after the first event: the stream must end with an error."""

from collections.abc import AsyncIterator

from rondo import Agent
from rondo.models.base import ModelRequest, ModelResponse
from rondo.types import Content


class FailingModel:
    name = "failing"

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncIterator[ModelResponse]:
        if stream:
            yield ModelResponse(content=Content.model("partial "), partial=True)
        raise OSError("the model's connection dropped at /secret/path")
        yield ModelResponse()  # pragma: no cover - makes this an async generator


root_agent = Agent(name="flaky", model=FailingModel())
