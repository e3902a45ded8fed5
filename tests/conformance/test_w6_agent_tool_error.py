"""SPEC W6 / T7: an agent used as a tool whose run ends on an error record (a remote agent
that cannot be reached, say) gives the caller an `{"error": ...}` response, not an empty
result."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from rondo import Agent, AgentTool, BaseAgent, Event, FunctionCall, Runner
from rondo.context import InvocationContext
from rondo.testing import ScriptedModel


class Failing(BaseAgent):
    async def _run_impl(self, ctx: InvocationContext) -> AsyncGenerator[Any, None]:
        yield Event(author=self.name, content=None, error_code="Down", error_message="it is down")


async def test_w6_agent_tool_of_an_agent_that_failed_is_an_error_response() -> None:
    model = ScriptedModel([FunctionCall(name="helper", args={"request": "x"}), "ok"])
    agent = Agent(name="root", model=model, tools=[AgentTool(Failing(name="helper"))])
    events = [
        e async for e in Runner(agent=agent).run_async(user_id="u", session_id="s", new_message="?")
    ]
    assert events[1].get_function_responses()[0].response == {"error": "it is down"}
    # The model sees the error and answers on.
    assert events[-1].text == "ok"
