"""`FunctionModel`: a model whose every answer is a function of the request.

`ScriptedModel` answers from a script that runs out; a `FunctionModel` never does, so an
example agent can run offline for as long as a chat or a server lasts, deterministically.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable

from rondo.models.base import ModelRequest, ModelResponse
from rondo.testing.scripted import ScriptedModel, ScriptItem
from rondo.types import Content

__all__ = ["FunctionModel"]


class FunctionModel(ScriptedModel):
    """A model that answers each request with `respond(request)`: any `ScriptedModel` item
    (text, a `FunctionCall` or a list of them, a `ModelResponse`, an exception), sync or
    async. Streamed, a text answer arrives word by word. Only the last request is kept
    (`.requests`), so a long-lived server does not grow."""

    def __init__(
        self,
        respond: Callable[[ModelRequest], ScriptItem | Awaitable[ScriptItem]],
        *,
        name: str = "function",
    ) -> None:
        super().__init__(name=name)
        self.respond = respond
        self._count = 0

    @property
    def calls(self) -> int:
        """How many requests it answered."""
        return self._count

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncGenerator[ModelResponse, None]:
        self.requests[:] = [request]
        self._count += 1
        item = self.respond(request)
        if inspect.isawaitable(item):
            item = await item
        if isinstance(item, str) and stream:
            words = item.split(" ")
            for i, word in enumerate(words):
                yield ModelResponse(
                    content=Content.model(word if i == 0 else " " + word), partial=True
                )
        for response in self._responses(item, stream):
            yield response
