"""Issue 19: a team's NodeStart/NodeEnd (and a member's RunStart) take their ids from the one
helper that gives a lifecycle event its ids, `InvocationContext.correlation` — not copies."""

from __future__ import annotations

from typing import Any

import pytest

from rondo import Agent, Runner, Team
from rondo.context import InvocationContext
from rondo.lifecycle import NodeEnd, NodeStart, RunStart
from rondo.testing import ScriptedModel


async def test_19_team_node_events_take_ids_from_the_context_helper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = InvocationContext.correlation

    def marked(self: InvocationContext) -> dict[str, Any]:
        return real(self) | {"invocation_id": "inv-from-correlation"}

    monkeypatch.setattr(InvocationContext, "correlation", marked)
    team = Team(
        name="desk",
        members=[
            Agent(name="writer", model=ScriptedModel(["draft"])),
            Agent(name="editor", model=ScriptedModel(["edited"])),
        ],
    )
    runner = Runner(agent=team, app_name="app")
    events = [e async for e in runner.stream_async(user_id="u", session_id="s", new_message="go")]
    framed = [e for e in events if isinstance(e, NodeStart | NodeEnd)]
    members = [e for e in events if isinstance(e, RunStart) and e.agent_name != "desk"]
    assert len(framed) == 4
    assert members
    assert {e.invocation_id for e in framed + members} == {"inv-from-correlation"}
    assert [(e.agent_name, e.node) for e in framed if isinstance(e, NodeStart)] == [
        ("desk", "writer"),
        ("desk", "editor"),
    ]
