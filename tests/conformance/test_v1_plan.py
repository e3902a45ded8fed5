"""SPEC V1: plan events have a producer — `rondo.tools.plan` (Solon's PlanEvent)."""

from __future__ import annotations

from typing import Any

from rondo import Agent, FunctionCall, Runner
from rondo.lifecycle import PlanUpdate
from rondo.testing import ScriptedModel
from rondo.tools import PlanToolset
from tests.conformance._support import APP, lifecycle, stored


def _planner(script: list[Any]) -> Runner:
    return Runner(
        agent=Agent(name="planner", model=ScriptedModel(script), tools=[PlanToolset()]),
        app_name=APP,
    )


async def test_v1_plan_tools_emit_plan_updates_between_tool_start_and_end() -> None:
    runner = _planner(
        [
            FunctionCall(name="create_plan", args={"steps": ["read", "write", "check"]}),
            FunctionCall(name="update_plan_step", args={"index": 0, "status": "done"}),
            FunctionCall(
                name="revise_plan", args={"steps": ["read", "write twice", "check"], "reason": "x"}
            ),
            "planned",
        ]
    )
    events = await lifecycle(runner, "make a plan")
    updates = [e for e in events if isinstance(e, PlanUpdate)]
    assert [(u.stage, u.index, u.plans, u.statuses) for u in updates] == [
        ("create", 0, ["read", "write", "check"], ["pending", "pending", "pending"]),
        ("progress", 0, ["read", "write", "check"], ["done", "pending", "pending"]),
        ("revise", 1, ["read", "write twice", "check"], ["done", "pending", "pending"]),
    ]
    for update in updates:
        at = events.index(update)
        start = max(i for i in range(at) if events[i].type == "tool_call_start")
        end = min(i for i in range(at, len(events)) if events[i].type == "tool_call_end")
        assert events[start].tool_name == events[end].tool_name
        assert update.reason_id == events[start].reason_id
        assert update.run_id == events[0].run_id
    session = await stored(runner)
    assert session.state["plan"] == {
        "steps": [
            {"title": "read", "status": "done"},
            {"title": "write twice", "status": "pending"},
            {"title": "check", "status": "pending"},
        ],
        "current": 1,
        "reason": "x",
    }


async def test_v1_progress_without_a_plan_or_out_of_range_is_an_error_the_model_sees() -> None:
    runner = _planner(
        [
            FunctionCall(name="update_plan_step", args={"index": 0, "status": "done"}),
            FunctionCall(name="create_plan", args={"steps": ["only"]}),
            FunctionCall(name="update_plan_step", args={"index": 3, "status": "done"}),
            "ok",
        ]
    )
    events = await lifecycle(runner, "go")
    errors = [e.error for e in events if e.type == "tool_call_end" and e.error]
    assert errors == [
        "there is no plan yet: call create_plan first",
        "step index 3 is out of range: the plan has steps 0 to 0",
    ]
