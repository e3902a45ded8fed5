"""SPEC O1 — OpenTelemetry GenAI spans and metrics on the global providers.

Checked with the SDK's in-memory span exporter and metric reader (`tests/_otel.py`); skipped
without opentelemetry-sdk unless `RONDO_REQUIRE_OTEL_SDK=1`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from rondo import (
    Agent,
    AgentTool,
    Content,
    FunctionCall,
    ModelError,
    Runner,
    SequentialAgent,
    Usage,
)
from rondo.models import ModelResponse
from rondo.testing import ScriptedModel
from tests._otel import Sdk, sdk

from ._support import APP, SESSION, collect

SECRET = "zebra-7731"


@pytest.fixture
def otel(monkeypatch: pytest.MonkeyPatch) -> Sdk:
    found = sdk()
    found.spans.clear()
    for name in (
        "RONDO_OTEL_CAPTURE_CONTENT",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
    ):
        monkeypatch.delenv(name, raising=False)
    return found


def add(a: int, b: int) -> dict[str, Any]:
    """Add two numbers."""
    return {"sum": a + b}


def explode(note: str) -> str:
    """Always fails."""
    raise ValueError(f"cannot handle {note}")


def _by_name(spans: list[Any]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for span in spans:
        out.setdefault(span.name, []).append(span)
    return out


def _tool_loop(model_name: str, tool: Any = add, args: dict[str, Any] | None = None) -> Runner:
    model = ScriptedModel(
        [FunctionCall(name=tool.__name__, args=args or {"a": 2, "b": 3}), "five"],
        name=model_name,
    )
    return Runner(agent=Agent(name="calc", model=model, tools=[tool]), app_name=APP)


async def test_o1_agent_model_and_tool_spans_nest_with_genai_attributes(otel: Sdk) -> None:
    events = await collect(_tool_loop("o1-model"), "what is 2+3?")
    spans = _by_name(otel.finished())
    assert sorted(spans) == ["chat o1-model", "execute_tool add", "invoke_agent calc"]
    (agent,) = spans["invoke_agent calc"]
    chats = spans["chat o1-model"]
    (tool,) = spans["execute_tool add"]
    assert len(chats) == 2
    assert agent.parent is None
    for child in (*chats, tool):
        assert child.parent is not None
        assert child.parent.span_id == agent.context.span_id
        assert child.context.trace_id == agent.context.trace_id
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["gen_ai.agent.name"] == "calc"
    assert agent.attributes["gen_ai.request.model"] == "o1-model"
    for chat in chats:
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.request.model"] == "o1-model"
    call = events[0].get_function_calls()[0]
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "add"
    assert tool.attributes["gen_ai.tool.call.id"] == call.id
    assert tool.attributes["gen_ai.tool.description"] == "Add two numbers."
    # rondo's ids on every span; the event each span became, as ADK's dev UI looks it up.
    stored = events[-1]
    for span in (agent, *chats, tool):
        assert span.attributes["rondo.run_id"] == stored.run_id
        assert span.attributes["rondo.invocation_id"] == stored.invocation_id
        assert span.attributes["gen_ai.conversation.id"] == SESSION
        assert span.attributes["rondo.session_id"] == SESSION
    assert [c.attributes["gcp.vertex.agent.event_id"] for c in chats] == [
        events[0].id,
        events[2].id,
    ]
    assert tool.attributes["gcp.vertex.agent.event_id"] == events[1].id
    # The tool span ends when the call does, inside its agent's span.
    assert agent.start_time <= tool.start_time <= tool.end_time <= agent.end_time


async def test_o1_usage_reported_by_the_model_goes_on_the_span_and_the_token_histogram(
    otel: Sdk,
) -> None:
    answer = ModelResponse(
        content=Content.model("hello"), usage=Usage(input_tokens=11, output_tokens=4)
    )
    model = ScriptedModel([answer], name="o1-usage")
    await collect(Runner(agent=Agent(name="greeter", model=model), app_name=APP))
    (chat,) = [s for s in otel.finished() if s.name == "chat o1-usage"]
    assert chat.attributes["gen_ai.usage.input_tokens"] == 11
    assert chat.attributes["gen_ai.usage.output_tokens"] == 4
    tokens = {
        p.attributes["gen_ai.token.type"]: p.sum
        for p in otel.points("gen_ai.client.token.usage")
        if p.attributes.get("gen_ai.request.model") == "o1-usage"
    }
    assert tokens == {"input": 11, "output": 4}


async def test_o1_operation_duration_histogram_per_operation(otel: Sdk) -> None:
    await collect(_tool_loop("o1-duration"))
    chat = [
        p
        for p in otel.points("gen_ai.client.operation.duration")
        if p.attributes.get("gen_ai.request.model") == "o1-duration"
        and p.attributes["gen_ai.operation.name"] == "chat"
    ]
    assert sum(p.count for p in chat) == 2
    tool = [
        p
        for p in otel.points("gen_ai.client.operation.duration")
        if p.attributes.get("gen_ai.tool.name") == "add"
    ]
    assert sum(p.count for p in tool) >= 1


async def test_o1_failed_tool_call_is_an_error_span(otel: Sdk) -> None:
    from opentelemetry.trace import StatusCode

    events = await collect(_tool_loop("o1-fail", explode, {"note": "x"}))
    assert "error" in events[1].get_function_responses()[0].response  # T3 still holds
    (tool,) = [s for s in otel.finished() if s.name == "execute_tool explode"]
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.attributes["error.type"] == "ValueError"
    (agent,) = [s for s in otel.finished() if s.name == "invoke_agent calc"]
    assert agent.status.status_code is not StatusCode.ERROR  # the agent recovered


async def test_o1_failed_model_call_is_an_error_span_and_fails_its_agent(otel: Sdk) -> None:
    from opentelemetry.trace import StatusCode

    model = ScriptedModel([ModelError("quota exceeded")], name="o1-broken")
    with pytest.raises(ModelError):
        await collect(Runner(agent=Agent(name="broken", model=model), app_name=APP))
    spans = _by_name(otel.finished())
    (chat,) = spans["chat o1-broken"]
    (agent,) = spans["invoke_agent broken"]
    for span in (chat, agent):
        assert span.status.status_code is StatusCode.ERROR
        assert span.attributes["error.type"] == "ModelError"


def _all_values(spans: list[Any]) -> str:
    return json.dumps([dict(s.attributes) for s in spans], default=str)


async def test_o1_no_message_content_unless_opted_in(otel: Sdk) -> None:
    await collect(_tool_loop("o1-private", explode, {"note": SECRET}), f"please {SECRET}")
    spans = otel.finished()
    assert len(spans) == 4
    assert SECRET not in _all_values(spans)
    assert not any(k.endswith("messages") for s in spans for k in s.attributes)


@pytest.mark.parametrize(
    "variable", ["RONDO_OTEL_CAPTURE_CONTENT", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"]
)
async def test_o1_message_content_when_opted_in(
    otel: Sdk, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "true")
    await collect(_tool_loop("o1-open", add, {"a": 7731, "b": 1}), f"please {SECRET}")
    spans = _by_name(otel.finished())
    (agent,) = spans["invoke_agent calc"]
    first, last = spans["chat o1-open"]
    (tool,) = spans["execute_tool add"]
    assert SECRET in str(agent.attributes["gen_ai.input.messages"])
    assert "five" in str(agent.attributes["gen_ai.output.messages"])
    sent = json.loads(str(first.attributes["gen_ai.input.messages"]))
    assert sent[-1]["role"] == "user"
    assert SECRET in sent[-1]["parts"][0]["content"]
    assert "five" in str(last.attributes["gen_ai.output.messages"])
    assert json.loads(str(tool.attributes["gen_ai.tool.call.arguments"])) == {"a": 7731, "b": 1}
    assert json.loads(str(tool.attributes["gen_ai.tool.call.result"])) == {"sum": 7732}


async def test_o1_sub_agents_nest_under_their_parent_and_agent_tools_under_the_tool(
    otel: Sdk,
) -> None:
    helper = Agent(name="helper", model=ScriptedModel(["helped"], name="o1-helper"))
    caller = Agent(
        name="caller",
        model=ScriptedModel(
            [FunctionCall(name="helper", args={"request": "help"}), "done"], name="o1-caller"
        ),
        tools=[AgentTool(helper)],
    )
    closing = Agent(name="closing", model=ScriptedModel(["bye"], name="o1-closing"))
    root = SequentialAgent(name="pipeline", sub_agents=[caller, closing])
    await collect(Runner(agent=root, app_name=APP))
    spans = _by_name(otel.finished())
    ids = {name: found[0].context.span_id for name, found in spans.items()}

    def parent(name: str) -> int | None:
        span = spans[name][0]
        return span.parent.span_id if span.parent is not None else None

    assert parent("invoke_agent pipeline") is None
    assert parent("invoke_agent caller") == ids["invoke_agent pipeline"]
    assert parent("invoke_agent closing") == ids["invoke_agent pipeline"]
    assert parent("execute_tool helper") == ids["invoke_agent caller"]
    assert parent("invoke_agent helper") == ids["execute_tool helper"]
    assert parent("chat o1-helper") == ids["invoke_agent helper"]
    assert len({s.context.trace_id for s in otel.finished()}) == 1


async def test_o1_spans_a_tool_makes_nest_under_its_execute_tool_span(otel: Sdk) -> None:
    from opentelemetry import trace

    def lookup(city: str) -> str:
        """Look a city up."""
        with trace.get_tracer("user-code").start_as_current_span("db query"):
            return city.upper()

    await collect(_tool_loop("o1-user", lookup, {"city": "oslo"}))
    spans = _by_name(otel.finished())
    (tool,) = spans["execute_tool lookup"]
    (query,) = spans["db query"]
    assert query.parent is not None
    assert query.parent.span_id == tool.context.span_id


_NO_SDK_RUN = """
import asyncio, sys
from rondo import Agent, FunctionCall, Runner
from rondo.testing import ScriptedModel

def add(a: int, b: int) -> int:
    "Add."
    return a + b

async def main():
    model = ScriptedModel([FunctionCall(name="add", args={"a": 1, "b": 2}), "3"])
    runner = Runner(agent=Agent(name="calc", model=model, tools=[add]), app_name="a")
    async for _ in runner.run_async(user_id="u", session_id="s", new_message="1+2"):
        pass

asyncio.run(main())
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""


def test_o1_without_an_sdk_rondo_never_loads_opentelemetry() -> None:
    """Nobody configured a provider: a tool loop imports no opentelemetry module at all."""
    out = subprocess.run(
        [sys.executable, "-c", _NO_SDK_RUN], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


async def test_o1_a_streamed_model_call_is_one_span_ended_with_its_final_event(otel: Sdk) -> None:
    from rondo import RunConfig

    chunks = [
        ModelResponse(content=Content.model("It is "), partial=True),
        ModelResponse(content=Content.model("sunny."), partial=True),
    ]
    model = ScriptedModel([chunks], name="o1-stream")
    events = await collect(
        Runner(agent=Agent(name="streamer", model=model), app_name=APP),
        run_config=RunConfig(streaming_mode="sse"),
    )
    assert [e.partial for e in events] == [True, True, False]
    (chat,) = [s for s in otel.finished() if s.name == "chat o1-stream"]
    assert chat.attributes["gcp.vertex.agent.event_id"] == events[-1].id


async def test_o1_concurrent_tool_calls_each_get_a_span_tied_to_the_merged_event(
    otel: Sdk,
) -> None:
    model = ScriptedModel(
        [
            [
                FunctionCall(name="add", args={"a": 1, "b": 2}),
                FunctionCall(name="add", args={"a": 3, "b": 4}),
            ],
            "done",
        ],
        name="o1-parallel",
    )
    events = await collect(Runner(agent=Agent(name="calc", model=model, tools=[add]), app_name=APP))
    tools = [s for s in otel.finished() if s.name == "execute_tool add"]
    (agent,) = [s for s in otel.finished() if s.name == "invoke_agent calc"]
    ids = {c.id for c in events[0].get_function_calls()}
    assert {s.attributes["gen_ai.tool.call.id"] for s in tools} == ids
    assert len(ids) == 2
    for span in tools:
        assert span.parent is not None
        assert span.parent.span_id == agent.context.span_id
        assert span.attributes["gcp.vertex.agent.event_id"] == events[1].id


async def test_o1_a_run_the_consumer_stops_early_still_ends_its_spans(otel: Sdk) -> None:
    from contextlib import aclosing

    from opentelemetry.trace import StatusCode

    runner = _tool_loop("o1-stop")
    async with aclosing(
        runner.run_async(user_id="u1", session_id="stop", new_message="hi")
    ) as events:
        async for _event in events:
            break  # only the model's call: the tool never runs
    spans = _by_name(otel.finished())
    (agent,) = spans["invoke_agent calc"]
    assert agent.status.status_code is not StatusCode.ERROR
    assert len(spans["chat o1-stop"]) == 1
    assert "execute_tool add" not in spans


async def test_o1_the_models_provider_is_named_on_its_span_and_metrics(otel: Sdk) -> None:
    class AcmeModel(ScriptedModel):
        provider_name = "acme"

    model = AcmeModel(["hi"], name="o1-acme")
    await collect(Runner(agent=Agent(name="greeter", model=model), app_name=APP))
    (chat,) = [s for s in otel.finished() if s.name == "chat o1-acme"]
    assert chat.attributes["gen_ai.provider.name"] == "acme"
    assert chat.attributes["gen_ai.system"] == "acme"
    assert any(
        p.attributes.get("gen_ai.provider.name") == "acme"
        for p in otel.points("gen_ai.client.operation.duration")
    )


async def test_25_model_call_span_carries_cost_and_cache_tokens(otel: Sdk) -> None:
    usage = Usage(input_tokens=20, output_tokens=3, cached_tokens=8, cost_usd=0.0021)
    answer = ModelResponse(content=Content.model("hi"), usage=usage)
    model = ScriptedModel([answer], name="o1-cost")
    await collect(Runner(agent=Agent(name="greeter", model=model), app_name=APP))
    (chat,) = [s for s in otel.finished() if s.name == "chat o1-cost"]
    assert chat.attributes["rondo.cost_usd"] == 0.0021
    assert chat.attributes["gen_ai.usage.cache_read.input_tokens"] == 8
    assert "rondo.cost.unpriced" not in chat.attributes


async def test_25_unpriced_model_call_span_says_unpriced_never_zero(otel: Sdk) -> None:
    answer = ModelResponse(
        content=Content.model("hi"), usage=Usage(input_tokens=5, output_tokens=1)
    )
    model = ScriptedModel([answer], name="o1-unpriced-model")
    await collect(Runner(agent=Agent(name="greeter", model=model), app_name=APP))
    (chat,) = [s for s in otel.finished() if s.name == "chat o1-unpriced-model"]
    assert chat.attributes["rondo.cost.unpriced"] is True
    assert "rondo.cost_usd" not in chat.attributes
