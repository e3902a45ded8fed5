"""The same agent on google-adk itself: validates the UI bar against the reference backend."""

from collections.abc import AsyncGenerator

from google.adk.agents import Agent
from google.adk.models import BaseLlm, LlmResponse
from google.adk.tools import ToolContext
from google.genai import types


class EchoLlm(BaseLlm):
    model: str = "echo"

    async def generate_content_async(
        self, llm_request, stream=False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1]
        answered = [p.function_response for p in last.parts if p.function_response]
        if answered:
            note = answered[0].response.get("note", "?")
            yield LlmResponse(
                content=types.Content(
                    role="model", parts=[types.Part(text=f"Stub reply: noted '{note}'")]
                )
            )
            return
        text = "".join(p.text or "" for p in last.parts)
        yield LlmResponse(
            content=types.Content(
                role="model",
                parts=[
                    types.Part(
                        function_call=types.FunctionCall(name="remember", args={"note": text})
                    )
                ],
            )
        )


def remember(note: str, tool_context: ToolContext) -> dict:
    """Remembers a note for later."""
    count = int(tool_context.state.get("note_count", 0)) + 1
    tool_context.state["note_count"] = count
    tool_context.state["last_note"] = note
    return {"note": note, "count": count}


root_agent = Agent(
    name="chat", model=EchoLlm(), tools=[remember], instruction="Remember what the user says."
)
