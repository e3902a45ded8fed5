"""The benchmark's agent on rondo: shared/reference/adk-api's reference agent, no real model.

For any user text the model calls `remember(note=<text>)`; once the call is answered it
replies `Stub reply: noted '<note>'` — the same three events per run as the google-adk
twin in ../../adk/chat/agent.py.
"""

from collections.abc import AsyncIterator
from typing import Any

from rondo import Agent, ToolContext
from rondo.models.base import ModelRequest, ModelResponse
from rondo.types import Content, FunctionCall, Part


class EchoModel:
    name = "echo"

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncIterator[ModelResponse]:
        last = request.contents[-1]
        answered = [p.function_response for p in last.parts if p.function_response]
        if answered:
            note = answered[0].response.get("note", "?")
            yield ModelResponse(content=Content.model(f"Stub reply: noted '{note}'"))
            return
        call = FunctionCall(name="remember", args={"note": last.text})
        yield ModelResponse(content=Content(role="model", parts=[Part(function_call=call)]))


def remember(note: str, tool_context: ToolContext) -> dict[str, Any]:
    """Remembers a note for later."""
    count = int(tool_context.state.get("note_count", 0)) + 1
    tool_context.state["note_count"] = count
    tool_context.state["last_note"] = note
    return {"note": note, "count": count}


root_agent = Agent(
    name="chat", model=EchoModel(), tools=[remember], instruction="Remember what the user says."
)
