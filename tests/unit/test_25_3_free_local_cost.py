"""Issue 25 item 2/3: a local model's calls are *free (local)*, apart from priced and unpriced.

`priced` marks a `local:` model's usage `free` with cost 0; `RunMetrics.free_calls` counts those
calls, so a front end can say "free (local)" where a priced run says dollars and an unknown
model "unpriced" — a run is never shown as $0 by a missing price.
"""

from __future__ import annotations

from rondo import Agent
from rondo.models.base import ModelResponse
from rondo.models.pricing import priced
from rondo.testing import ScriptedModel
from rondo.types import Content, FunctionCall, Part, Usage


class _LocalScripted(ScriptedModel):
    provider = "local"


def _answer(text: str = "", call: FunctionCall | None = None) -> ModelResponse:
    part = Part(function_call=call) if call is not None else Part(text=text)
    return ModelResponse(
        content=Content(role="model", parts=[part]),
        usage=Usage(input_tokens=120, output_tokens=8, total_tokens=128),
    )


def get_weather(city: str) -> dict[str, str]:
    """The weather in a city."""
    return {"city": city, "forecast": "sunny"}


def test_25_3_local_usage_is_free_not_a_price() -> None:
    model = _LocalScripted(name="smollm2")
    usage = priced(model, Usage(input_tokens=10, output_tokens=2))
    assert usage is not None
    assert usage.cost_usd == 0.0
    assert usage.free is True
    unknown = priced(ScriptedModel(name="mystery"), Usage(input_tokens=10, output_tokens=2))
    assert unknown is not None
    assert unknown.cost_usd is None
    assert unknown.free is False
    # A sum is free only when every part is.
    assert (usage + usage).free is True
    assert (usage + Usage(cost_usd=0.01)).free is False


def test_25_3_run_metrics_count_free_local_calls() -> None:
    script = [_answer(call=FunctionCall(name="get_weather", args={"city": "Oslo"})), _answer("ok")]
    agent = Agent(name="a", model=_LocalScripted(script, name="smollm2"), tools=[get_weather])
    result = agent.run_sync("hi")
    metrics = result.metrics
    assert metrics.model_calls == 2
    assert metrics.free_calls == 2
    assert metrics.unpriced_calls == 0
    assert metrics.cost_usd == 0.0
    # A model no price source knows: unpriced, never free.
    other = Agent(name="b", model=ScriptedModel([_answer("ok")], name="mystery")).run_sync("hi")
    assert other.metrics.free_calls == 0
    assert other.metrics.cost_usd is None
    assert other.metrics.unpriced_calls == 1
