"""The flow seed's walk-through (§3.3): one tool call, two model calls, four records."""

from __future__ import annotations

import importlib.util
from contextlib import aclosing
from pathlib import Path
from types import ModuleType
from typing import Any

from rondo import Agent, FunctionCall, Runner
from rondo.models import ModelRequest
from rondo.testing import ScriptedModel

from ._support import lifecycle, stored, types_of

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "weather_walkthrough.py"


def _load_example() -> ModuleType:
    """A fresh copy of the example module (its log is module state)."""
    spec = importlib.util.spec_from_file_location("weather_walkthrough_under_test", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_weather_walkthrough():
    example = _load_example()
    log = await example.main()
    # The seed's printed output, line for line (Python's JSON spacing aside).
    assert log == [
        "EVENT author=weather_agent role=model partial=False final=False",
        '  FunctionCall name=get_weather id=weather-1 args={"city": "Hangzhou"}',
        "TOOL get_weather city=Hangzhou",
        "EVENT author=weather_agent role=user partial=False final=False",
        '  FunctionResponse name=get_weather id=weather-1 response={"city": "Hangzhou", '
        '"temperature": 26}',
        'MODEL #2 sees FunctionResponse: {"city": "Hangzhou", "temperature": 26}',
        "EVENT author=weather_agent role=model partial=False final=True",
        "  Text: 杭州当前气温为 26°C。",
        "GenerateContent calls=2",
    ]


async def test_weather_walkthrough_built_directly():
    timeline: list[str] = []

    def get_weather(city: str) -> dict[str, Any]:
        """Returns the current temperature for a city."""
        timeline.append(f"tool runs city={city}")
        return {"city": city, "temperature": 26}

    def second_call(request: ModelRequest) -> str:
        timeline.append("model call 2")
        return "杭州当前气温为 26°C。"

    model = ScriptedModel(
        [FunctionCall(name="get_weather", args={"city": "Hangzhou"}, id="weather-1"), second_call],
        name="offline-demo",
    )
    agent = Agent(
        name="weather_agent",
        model=model,
        instruction="Use get_weather to answer weather questions.",
        tools=[get_weather],
    )
    runner = Runner(agent=agent, app_name="flow_demo")
    events = []
    async with aclosing(
        runner.run_async(user_id="user-1", session_id="session-1", new_message="杭州现在多少度？")
    ) as stream:
        async for event in stream:
            timeline.append(f"consumer gets E{len(events) + 1}")
            events.append(event)

    # The model event reaches the consumer before the tool runs; the tool record before the
    # second model call.
    assert timeline == [
        "consumer gets E1",
        "tool runs city=Hangzhou",
        "consumer gets E2",
        "model call 2",
        "consumer gets E3",
    ]
    # E1..E3 as the seed lists them (E0, the user's message, is stored but not yielded).
    assert [
        (e.author, e.content.role if e.content else None, e.partial, e.is_final_response())
        for e in events
    ] == [
        ("weather_agent", "model", False, False),
        ("weather_agent", "user", False, False),
        ("weather_agent", "model", False, True),
    ]
    [call] = events[0].get_function_calls()
    assert (call.id, call.name, call.args) == ("weather-1", "get_weather", {"city": "Hangzhou"})
    [response] = events[1].get_function_responses()
    assert (response.id, response.name, response.response) == (
        "weather-1",
        "get_weather",
        {"city": "Hangzhou", "temperature": 26},
    )
    assert events[2].text == "杭州当前气温为 26°C。"

    # Two model calls; the requests differ: the second is rebuilt from the session.
    assert model.calls == 2
    first, second = model.requests
    assert [(c.role, c.text) for c in first.contents] == [("user", "杭州现在多少度？")]
    assert [c.role for c in second.contents] == ["user", "model", "user"]
    seen = [p.function_response for c in second.contents for p in c.parts if p.function_response]
    assert [(r.id, r.name, r.response) for r in seen] == [
        ("weather-1", "get_weather", {"city": "Hangzhou", "temperature": 26})
    ]
    assert first.config.system_instruction is not None
    assert "Use get_weather to answer weather questions." in first.config.system_instruction
    assert [d.name for d in first.config.tools] == ["get_weather"]
    assert list(first.tools) == ["get_weather"]

    session = await stored(runner, session_id="session-1", user_id="user-1")
    assert [(e.author, e.content.role if e.content else None) for e in session.events] == [
        ("user", "user"),
        ("weather_agent", "model"),
        ("weather_agent", "user"),
        ("weather_agent", "model"),
    ]
    assert session.events[0].text == "杭州现在多少度？"
    assert [e.id for e in session.events[1:]] == [e.id for e in events]
    assert len({e.invocation_id for e in session.events}) == 1


async def test_weather_walkthrough_lifecycle_view():
    example = _load_example()
    runner, model = example.build()
    events = await lifecycle(runner, "杭州现在多少度？", session_id="session-1", user_id="user-1")
    assert types_of(events) == [
        "run_start",
        "context_size",
        "reason_start",
        "reason_end",
        "action_start",
        "tool_call_start",
        "tool_call_end",
        "action_end",
        "context_size",
        "reason_start",
        "reason_end",
        "run_end",
    ]
    assert events[-1].text == "杭州当前气温为 26°C。"
    assert model.calls == 2
