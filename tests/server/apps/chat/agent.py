"""The reference agent of shared/reference/adk-api, written with rondo."""

from typing import Any

from echo_model import EchoModel

from rondo import Agent, ToolContext


def remember(note: str, tool_context: ToolContext) -> dict[str, Any]:
    """Remembers a note for later."""
    count = int(tool_context.state.get("note_count", 0)) + 1
    tool_context.state["note_count"] = count
    tool_context.state["last_note"] = note
    return {"note": note, "count": count}


root_agent = Agent(
    name="chat", model=EchoModel(), tools=[remember], instruction="Remember what the user says."
)
