"""A deterministic model for the server tests, like the reference ADK agent's `EchoLlm`.

For any user text it calls `remember(note=<text>)`; once the call is answered it replies
`Stub reply: noted '<note>'` (streamed word by word when asked to stream). It is a plain
module beside the app folders: AGENTS_DIR is on `sys.path` while the server loads apps.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from rondo.models.base import ModelRequest, ModelResponse
from rondo.types import Content, FunctionCall, Part


class EchoModel:
    name = "echo"

    def __init__(self, tool: str = "remember") -> None:
        self.tool = tool

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncIterator[ModelResponse]:
        last = request.contents[-1]
        answered = [p.function_response for p in last.parts if p.function_response]
        if answered:
            response: dict[str, Any] = answered[0].response
            text = f"Stub reply: noted '{response.get('note', response)}'"
            if stream:
                words = text.split(" ")
                for i, word in enumerate(words):
                    piece = word if i == 0 else " " + word
                    yield ModelResponse(content=Content.model(piece), partial=True)
            yield ModelResponse(content=Content.model(text))
            return
        yield ModelResponse(
            content=Content(
                role="model",
                parts=[Part(function_call=FunctionCall(name=self.tool, args={"note": last.text}))],
            )
        )
