"""SPEC X1 (rondo's rule, docs/agents.md): task and single-turn agents run inside their
parent's call, so they get no transfer target for their parent or peers — they answer by
finishing, and their result is the call's response."""

from __future__ import annotations

import pytest

from rondo import Agent, FunctionCall, Runner
from rondo.testing import ScriptedModel


@pytest.mark.parametrize("mode", ["task", "single_turn"])
async def test_x1_a_task_agent_has_no_transfer_to_its_parent(mode: str) -> None:
    helper_model = ScriptedModel(["helped"])
    helper = Agent(name="helper", model=helper_model, mode=mode)  # type: ignore[arg-type]
    peer = Agent(name="peer", model=ScriptedModel([]))
    main_model = ScriptedModel(
        [FunctionCall(name="helper", args={"request": "help"}, id="c1"), "thanks"]
    )
    main = Agent(name="main", model=main_model, sub_agents=[helper, peer])
    result = await Runner(agent=main).run_to_result(user_id="u", new_message="go")
    assert result.text == "thanks"
    [request] = helper_model.requests
    names = {d.name for d in request.config.tools}
    assert "transfer_to_agent" not in names  # neither the parent nor the peer is a target
    # The parent transfers only to its chat-mode children; the task agent is a call.
    main_tools = {d.name: d for d in main_model.requests[0].config.tools}
    assert main_tools["transfer_to_agent"].parameters["properties"]["agent_name"]["enum"] == [
        "peer"
    ]
    responses = [r for e in result.events for r in e.get_function_responses() if r.id == "c1"]
    assert responses[0].response == {"result": "helped"}
