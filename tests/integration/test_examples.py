"""The README's first command, in-process: the weather example on the real local model."""

from __future__ import annotations

import importlib
import re

import pytest

from rondo import Runner
from rondo.lifecycle import RunEnd, ToolCallEnd

from ._local import require_local_model

pytestmark = pytest.mark.integration

require_local_model()


async def test_weather_example_calls_the_tool_and_answers_with_its_temperature(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RONDO_MODEL", raising=False)
    example = importlib.reload(importlib.import_module("examples.weather.agent"))
    agent = example.root_agent
    assert agent.canonical_model.name == "smollm2"

    events = [
        event
        async for event in Runner(agent=agent).stream_async(
            user_id="u", session_id="s", new_message="What's the weather in Paris?"
        )
    ]

    calls = [e for e in events if isinstance(e, ToolCallEnd)]
    assert [(c.tool_name, c.args, c.error) for c in calls] == [
        ("get_weather", {"city": "Paris"}, None)
    ]
    assert calls[0].result is not None
    temperature = re.search(r"(-?\d+)°C", calls[0].result["report"])
    assert temperature is not None
    end = events[-1]
    assert isinstance(end, RunEnd)
    assert re.search(rf"(?<![\d-]){temperature.group(1)}(?!\d)", end.text), end.text
    assert end.metrics.model_calls == 2
