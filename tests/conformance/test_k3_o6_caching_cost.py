"""K3 prompt caching and O6 cost, through the real provider SDKs on a recorded transport.

Anthropic requests carry `cache_control` breakpoints on the system prompt, the last tool and
the ends of the last two messages, and the prefix a breakpoint covered stays byte-identical in
the next step's request; OpenAI requests carry one `prompt_cache_key` per session. Every model
call is priced from `genai-prices` — unpriced (None), never 0, when the model is unknown.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from rondo import Agent, RunConfig, Runner
from rondo.testing import ScriptedModel
from rondo.types import FunctionCall, Usage
from tests._require import require_module
from tests.unit._http_fakes import Exchanges, json_reply

require_module("anthropic", what="ANTHROPIC", install="pip install 'rondo-agents[anthropic]'")
require_module("openai", what="OPENAI", install="pip install 'rondo-agents[openai]'")

STEPS = 20


def get_weather(city: str) -> dict[str, str]:
    """The weather in a city."""
    return {"city": city, "forecast": "sunny"}


def _anthropic_message(*blocks: dict[str, Any], stop: str) -> dict[str, Any]:
    return {
        "id": "msg",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": list(blocks),
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 50,
            "output_tokens": 10,
            "cache_read_input_tokens": 2000,
            "cache_creation_input_tokens": 100,
        },
    }


def _anthropic_run(*, caching: bool) -> tuple[Exchanges, Any]:
    from rondo.models._retry import RetryPolicy
    from rondo.models.anthropic import AnthropicModel

    replies = [
        json_reply(
            _anthropic_message(
                {
                    "type": "tool_use",
                    "id": f"toolu_{i}",
                    "name": "get_weather",
                    "input": {"city": f"c{i}"},
                },
                stop="tool_use",
            )
        )
        for i in range(STEPS - 1)
    ]
    replies.append(
        json_reply(_anthropic_message({"type": "text", "text": "Done."}, stop="end_turn"))
    )
    exchanges = Exchanges(*replies)
    model = AnthropicModel(
        "claude-sonnet-4-5",
        api_key="sk-ant-test",
        http_client=exchanges.client(),
        retry=RetryPolicy(max_attempts=1),
    )
    agent = Agent(name="a", model=model, instruction="Check every city.", tools=[get_weather])
    result = Runner(agent=agent, app_name="app").run_sync(
        user_id="u", new_message="Weather?", run_config=RunConfig(prompt_caching=caching)
    )
    return exchanges, result


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "cache_control"}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_strip(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def _marked(blocks: list[dict[str, Any]]) -> list[int]:
    return [i for i, b in enumerate(blocks) if "cache_control" in b]


def test_k3_anthropic_breakpoints_on_the_stable_prefix() -> None:
    exchanges, result = _anthropic_run(caching=True)
    assert result.output == "Done."
    bodies = [exchanges.body(i) for i in range(STEPS)]
    for body in bodies:
        assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
        assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
        messages = body["messages"]
        breakpoints = sum(1 for m in messages for b in m["content"] if "cache_control" in b)
        assert 1 <= breakpoints <= 2  # with system and tools: Anthropic's limit of four
        assert "cache_control" in messages[-1]["content"][-1]
    for before, after in itertools.pairwise(bodies):
        # The prefix the previous request cached is the next one's, byte for byte.
        cut = len(before["messages"])
        assert json.dumps(_strip(after["messages"][:cut])) == json.dumps(_strip(before["messages"]))
        assert json.dumps(after["tools"]) == json.dumps(before["tools"])
        assert json.dumps(after["system"]) == json.dumps(before["system"])
        # The block the previous request marked last is in this one, unchanged but for marks.
        assert _strip(after["messages"][cut - 1]) == _strip(before["messages"][-1])


def test_k3_prompt_caching_can_be_turned_off() -> None:
    exchanges, _ = _anthropic_run(caching=False)
    for i in range(STEPS):
        assert "cache_control" not in json.dumps(exchanges.body(i))
        assert isinstance(exchanges.body(i)["system"], str)


def test_o6_usage_records_cache_reads_writes_and_the_price() -> None:
    genai_prices = pytest.importorskip("genai_prices")
    _, result = _anthropic_run(caching=True)
    metrics = result.metrics
    assert metrics.model_calls == STEPS
    assert metrics.cached_tokens == 2000 * STEPS
    assert metrics.cache_write_tokens == 100 * STEPS
    one = genai_prices.calc_price(
        genai_prices.Usage(
            input_tokens=2150, output_tokens=10, cache_read_tokens=2000, cache_write_tokens=100
        ),
        model_ref="claude-sonnet-4-5",
        provider_id="anthropic",
    )
    assert metrics.cost_usd == pytest.approx(float(one.total_price) * STEPS)
    assert metrics.unpriced_calls == 0
    usage = result.events[0].usage
    assert usage is not None
    assert usage.cost_usd == pytest.approx(float(one.total_price))


def _openai_completion(**message: Any) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": 1200,
            "completion_tokens": 5,
            "total_tokens": 1205,
            "prompt_tokens_details": {"cached_tokens": 1024},
        },
    }


def _openai_runner(exchanges: Exchanges, **kwargs: Any) -> Runner:
    from rondo.models._retry import RetryPolicy
    from rondo.models.openai import OpenAIModel

    model = OpenAIModel(
        "gpt-4o-mini",
        api_key="sk-test",
        http_client=exchanges.client(),
        retry=RetryPolicy(max_attempts=1),
        **kwargs,
    )
    return Runner(agent=Agent(name="a", model=model), app_name="app")


def test_k3_openai_one_prompt_cache_key_per_session() -> None:
    exchanges = Exchanges(*(json_reply(_openai_completion(content="hi")) for _ in range(3)))
    runner = _openai_runner(exchanges)
    runner.run_sync(user_id="u", session_id="s1", new_message="one")
    runner.run_sync(user_id="u", session_id="s1", new_message="two")
    runner.run_sync(user_id="u", session_id="s2", new_message="three")
    keys = [exchanges.body(i).get("prompt_cache_key") for i in range(3)]
    assert keys[0]
    assert keys[0] == keys[1]
    assert keys[2]
    assert keys[2] != keys[0]
    assert "s1" not in keys[0]  # a digest: no session id reaches the provider


def test_k3_openai_compatible_servers_get_no_cache_key_unless_asked() -> None:
    exchanges = Exchanges(json_reply(_openai_completion(content="hi")))
    from rondo.models._retry import RetryPolicy
    from rondo.models.openai import OpenAIModel

    model = OpenAIModel(
        "local",
        base_url="http://127.0.0.1:9/v1",
        api_key="x",
        http_client=exchanges.client(),
        retry=RetryPolicy(max_attempts=1),
    )
    Runner(agent=Agent(name="a", model=model), app_name="app").run_sync(
        user_id="u", new_message="x"
    )
    assert "prompt_cache_key" not in exchanges.body(0)


def test_o6_unknown_models_are_unpriced_never_free() -> None:
    model = ScriptedModel([FunctionCall(name="get_weather", args={"city": "x"}), "ok"])
    agent = Agent(name="a", model=model, tools=[get_weather])
    result = agent.run_sync("hi")
    assert result.metrics.cost_usd is None

    from rondo.models.pricing import price_usage

    usage = Usage(input_tokens=10, output_tokens=2)
    assert price_usage("openai", "no-such-model-xyz", usage) is None
    assert price_usage(None, "gpt-4o-mini", usage) is None
    assert price_usage("local", "smollm2", usage) == 0.0


def test_o6_a_run_with_an_unpriced_call_reports_no_partial_sum() -> None:
    from rondo.events import Event
    from rondo.runner import _Summary  # pyright: ignore[reportPrivateUsage]

    summary = _Summary()
    summary.record(Event(author="a", usage=Usage(input_tokens=1, cost_usd=0.5)))
    summary.record(Event(author="a", usage=Usage(input_tokens=1)))
    assert summary.unpriced_calls == 1
    assert (Usage(cost_usd=0.5) + Usage()).cost_usd is None
    assert (Usage(cost_usd=0.5) + Usage(cost_usd=0.25)).cost_usd == 0.75
