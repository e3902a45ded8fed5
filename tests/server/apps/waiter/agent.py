"""An agent whose tool answers later: the run waits for the result of a long-running call."""

from typing import Any

from echo_model import EchoModel

from rondo import Agent, LongRunningFunctionTool


def remember(note: str) -> dict[str, Any] | None:
    """Asks a manager; the answer comes later."""
    return None


root_agent = Agent(name="waiter", model=EchoModel(), tools=[LongRunningFunctionTool(remember)])
