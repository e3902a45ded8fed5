"""The README's first command, in-process: the weather example on the real local model."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rondo import Runner
from rondo.cli import app
from rondo.lifecycle import RunEnd, ToolCallEnd
from tests._require import require_module

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


def test_o3_the_weather_eval_set_passes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """examples/README.md's command: `rondo eval examples/weather
    examples/weather/weather.evalset.json`, thresholds from the test_config.json beside it."""
    require_module("rouge_score", what="EVAL", install="pip install 'rondo-agents[eval]'")
    monkeypatch.delenv("RONDO_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    weather = Path(__file__).parents[2] / "examples" / "weather"
    result = CliRunner().invoke(app, ["eval", str(weather), str(weather / "weather.evalset.json")])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "2 of 2 cases passed" in result.stdout
    assert "response_match_score >= 0.7" in result.stderr
