"""An agent whose tool needs a human's confirmation, and one that waits for a result."""

from typing import Any

from echo_model import EchoModel

from rondo import Agent, FunctionTool

SENT: list[str] = []


def remember(note: str) -> dict[str, Any]:
    """Sends money (after a human confirms)."""
    SENT.append(note)
    return {"note": note, "sent": True}


root_agent = Agent(
    name="bank", model=EchoModel(), tools=[FunctionTool(remember, require_confirmation=True)]
)
