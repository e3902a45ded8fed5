"""A model for the cost footer's browser test: one tool round, then an answer, each reporting
usage (with cached tokens), under the provider and name a price source knows — or does not.

The three apps beside this file differ only in `provider` / `name`: `priced` is Claude Sonnet
4.5 (priced by genai-prices), `mystery` a model no price source knows (unpriced), `local` a
local model (free).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from rondo import Agent
from rondo.models.base import ModelRequest, ModelResponse
from rondo.types import Content, FunctionCall, Part, Usage


def get_weather(city: str) -> dict[str, Any]:
    """Returns the weather for a city.

    Args:
        city: The city's name.
    """
    return {"city": city, "condition": "sunny"}


USAGE = Usage(
    input_tokens=12_000,
    output_tokens=300,
    total_tokens=12_300,
    cached_tokens=10_000,
    cache_write_tokens=1_500,
)


class CostedModel:
    """Calls `get_weather` once, then answers; each call reports `USAGE`."""

    def __init__(self, provider: str, name: str) -> None:
        self.provider = provider
        self.name = name

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncIterator[ModelResponse]:
        answered = any(p.function_response for c in request.contents for p in c.parts)
        if answered:
            part = Part(text="It is sunny.")
        else:
            part = Part(function_call=FunctionCall(name="get_weather", args={"city": "Oslo"}))
        yield ModelResponse(content=Content(role="model", parts=[part]), usage=USAGE)


def agent(provider: str, name: str) -> Agent:
    return Agent(name="costed", model=CostedModel(provider, name), tools=[get_weather])
