"""`Runner.close()` (and `async with Runner`): what the agent tree opened is released — its
toolsets, and the HTTP clients its models opened in this event loop."""

from __future__ import annotations

import httpx

from rondo import Agent, Runner
from rondo.models.openai import OpenAIModel
from rondo.testing import ScriptedModel
from rondo.tools.base import BaseTool, BaseToolset


class _Toolset(BaseToolset):
    def __init__(self) -> None:
        self.closed = 0

    async def get_tools(self, ctx: object) -> list[BaseTool]:
        return []

    async def close(self) -> None:
        self.closed += 1


async def test_runner_close_closes_toolsets_of_every_agent() -> None:
    tools, helper_tools = _Toolset(), _Toolset()
    helper = Agent(name="helper", model=ScriptedModel(["ok"]), tools=[helper_tools])
    root = Agent(name="root", model=ScriptedModel(["ok"]), tools=[tools], sub_agents=[helper])
    async with Runner(agent=root):
        pass
    assert (tools.closed, helper_tools.closed) == (1, 1)


async def test_runner_close_closes_the_model_clients_opened_in_this_loop() -> None:
    model = OpenAIModel("m", api_key="sk", base_url="http://127.0.0.1:9/v1")
    # One model object shared by two agents: its client is closed once, and only this loop's.
    helper = Agent(name="helper", model=model)
    root = Agent(name="root", model=model, sub_agents=[helper])
    async with Runner(agent=root):
        client = model._client()  # what a run in this loop sends through
        assert not client.is_closed()
    assert client.is_closed()
    # Used again, the model opens a client of its own.
    reopened = model._client()
    assert reopened is not client
    assert not reopened.is_closed()
    await model.aclose()


async def test_runner_close_leaves_a_client_the_caller_owns() -> None:
    async with httpx.AsyncClient() as http:
        model = OpenAIModel("m", api_key="sk", base_url="http://127.0.0.1:9/v1", http_client=http)
        async with Runner(agent=Agent(name="root", model=model)):
            pass
        assert not http.is_closed
