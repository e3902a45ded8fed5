"""An agent whose tool writes an artifact: the tool's event carries an artifact delta."""

from typing import Any

from echo_model import EchoModel

from rondo import Agent, ToolContext
from rondo.types import Part


async def remember(note: str, tool_context: ToolContext) -> dict[str, Any]:
    """Writes the note to notes.txt."""
    version = await tool_context.save_artifact("notes.txt", Part(text=note))
    return {"note": note, "version": version}


root_agent = Agent(name="files", model=EchoModel(), tools=[remember])
