"""SPEC V6: lifecycle events are runtime objects; the wire format is an explicit, versioned
projection with a stable schema. Also custom agents (BaseAgent subclasses)."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator

from rondo import Agent, BaseAgent, Content, Event, Runner
from rondo.context import InvocationContext
from rondo.lifecycle import (
    SCHEMA_VERSION,
    RunEnd,
    json_schema,
    parse_lifecycle_event,
    to_json,
    to_sse,
)
from rondo.testing import ScriptedModel, check_stream


async def test_v6_sse_and_json_projection_round_trip() -> None:
    runner = Runner(agent=Agent(name="a", model=ScriptedModel(["hello"])), app_name="app")
    events = [e async for e in runner.stream_async(user_id="u", session_id="s", new_message="hi")]
    check_stream(events)
    for event in events:
        frame = to_sse(event)
        head, data, tail = frame.split("\n", 2)
        assert head == f"event: {event.type}"
        assert tail == "\n"
        payload = json.loads(data.removeprefix("data: "))
        assert payload["schema_version"] == SCHEMA_VERSION
        assert payload["type"] == event.type
        assert parse_lifecycle_event(json.loads(to_json(event))) == event
    end = events[-1]
    assert isinstance(end, RunEnd)
    assert json.loads(to_json(end))["text"] == "hello"


def test_v6_schema_lists_every_event_type_and_unknown_types_are_ignored() -> None:
    schema = json_schema()
    text = json.dumps(schema)
    for kind in (
        "run_start",
        "reason_delta",
        "tool_call_end",
        "hitl_pending",
        "task_event",
        "run_end",
    ):
        assert kind in text
    assert parse_lifecycle_event({"type": "from_the_future", "run_id": "r"}) is None


async def test_custom_agents_subclass_base_agent() -> None:
    class Echo(BaseAgent):
        async def _run_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
            text = ctx.user_content.text if ctx.user_content else ""
            yield Event(
                author=self.name,
                invocation_id=ctx.invocation_id,
                run_id=ctx.run_id,
                content=Content.model(text.upper()),
            )

    class Legacy(BaseAgent):  # ADK's method name works too
        async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
            yield Event(author=self.name, content=Content.model("legacy"))

    for agent, expected in ((Echo(name="echo"), "HI THERE"), (Legacy(name="legacy"), "legacy")):
        runner = Runner(agent=agent, app_name="app")
        events = [
            e async for e in runner.run_async(user_id="u", session_id="s", new_message="hi there")
        ]
        assert [e.text for e in events] == [expected]
        session = await runner.session_service.get_session(
            app_name="app", user_id="u", session_id="s"
        )
        assert session is not None
        assert session.events[-1].text == expected
