"""An agent for the front-end protocols (SPEC W8): it thinks, streams, writes state and calls
a client-side tool when the client declares one.

Its model answers a message with files by describing the bytes it received, calls `pick_color` (a client's tool) when the request declares it, else
`remember(note=<text>)`; once a call is answered it thinks aloud and replies
`Done: <result JSON>`, streamed word by word when asked to stream.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from rondo import Agent, ToolContext
from rondo.models.base import ModelRequest, ModelResponse
from rondo.types import Content, FunctionCall, Part

THOUGHT = "Let me look at the result."


class HelperModel:
    name = "helper"

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncIterator[ModelResponse]:
        last = request.contents[-1]
        files = [p.inline_data for p in last.parts if p.inline_data is not None]
        if files:
            seen = ", ".join(f"{f.mime_type} of {len(f.data)} bytes" for f in files)
            yield ModelResponse(content=Content.model(f"Got {seen}"))
            return
        answered = [p.function_response for p in last.parts if p.function_response]
        if answered:
            text = "Done: " + json.dumps(dict(answered[0].response), sort_keys=True)
            if stream:
                yield ModelResponse(
                    content=Content(role="model", parts=[Part(text=THOUGHT, thought=True)]),
                    partial=True,
                )
                for i, word in enumerate(text.split(" ")):
                    piece = word if i == 0 else " " + word
                    yield ModelResponse(content=Content.model(piece), partial=True)
            parts = [Part(text=THOUGHT, thought=True), Part(text=text)]
            yield ModelResponse(content=Content(role="model", parts=parts))
            return
        tool = "pick_color" if "pick_color" in request.tools else "remember"
        args = {"question": last.text} if tool == "pick_color" else {"note": last.text}
        call = Part(function_call=FunctionCall(name=tool, args=args))
        yield ModelResponse(content=Content(role="model", parts=[call]))


def remember(note: str, tool_context: ToolContext) -> dict[str, Any]:
    """Remembers a note in the session's state."""
    tool_context.state["last_note"] = note
    tool_context.state["notes"] = [*tool_context.state.get("notes", []), note]
    return {"note": note}


root_agent = Agent(name="helper", model=HelperModel(), tools=[remember])
