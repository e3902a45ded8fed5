"""SPEC E — model response to event (E1–E3)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from rondo import (
    Agent,
    Content,
    FunctionCall,
    LongRunningFunctionTool,
    ParallelAgent,
    Part,
    RunConfig,
    Runner,
)
from rondo.artifacts import InMemoryArtifactService
from rondo.context import CallbackContext
from rondo.models import ModelRequest, ModelResponse
from rondo.testing import ScriptedModel

from ._support import APP, chunk, collect, stored, thought


def lookup(city: str) -> dict[str, Any]:
    return {"city": city}


# -- E1 --------------------------------------------------------------------------------------


async def test_e1_model_event_fields_come_from_agent_invocation_and_response():
    response = ModelResponse(
        content=Content(role="model", parts=[Part(text="answer", thought=False)]),
        finish_reason="STOP",
    )
    model = ScriptedModel([response])
    worker = Agent(name="worker", model=model)
    runner = Runner(agent=ParallelAgent(name="par", sub_agents=[worker]), app_name=APP)
    events = await collect(runner, "go")
    assert len(events) == 1
    event = events[0]
    assert event.author == "worker"
    assert event.branch == "par.worker"
    assert event.content == response.content
    assert event.finish_reason == "STOP"
    assert event.invocation_id.startswith("inv-")
    assert event.run_id.startswith("run-")
    session = await stored(runner)
    assert session.events[0].invocation_id == event.invocation_id


async def test_e1_state_and_artifact_deltas_from_model_callbacks_travel_on_the_model_event():
    async def before(ctx: CallbackContext, request: ModelRequest) -> None:
        ctx.state["asked"] = ctx.state.get("asked", 0) + 1

    async def after(ctx: CallbackContext, response: ModelResponse) -> None:
        ctx.state["answered"] = True
        await ctx.save_artifact("transcript.txt", Part(text="model said something"))

    model = ScriptedModel([FunctionCall(name="lookup", args={"city": "Oslo"}), "done"])
    agent = Agent(
        name="helper",
        model=model,
        tools=[lookup],
        before_model_callback=before,
        after_model_callback=after,
    )
    artifacts = InMemoryArtifactService()
    runner = Runner(agent=agent, app_name=APP, artifact_service=artifacts)
    events = await collect(runner, "go")
    call_event, tool_event, final_event = events
    assert call_event.actions.state_delta == {"asked": 1, "answered": True}
    assert call_event.actions.artifact_delta == {"transcript.txt": 0}
    # The tool's record carries no model-callback delta.
    assert tool_event.actions.state_delta == {}
    assert tool_event.actions.artifact_delta == {}
    # Each step has its own delta; the second reads the first's stored value.
    assert final_event.actions.state_delta == {"asked": 2, "answered": True}
    assert final_event.actions.artifact_delta == {"transcript.txt": 1}
    session = await stored(runner)
    assert session.state == {"asked": 2, "answered": True}


async def test_e1_streamed_events_carry_the_callback_delta_too():
    def after(ctx: CallbackContext, response: ModelResponse) -> None:
        if not response.partial:
            ctx.state["final_seen"] = True

    model = ScriptedModel([[chunk("a"), chunk("b")]])
    agent = Agent(name="helper", model=model, after_model_callback=after)
    runner = Runner(agent=agent, app_name=APP)
    events = await collect(runner, "go", run_config=RunConfig(streaming_mode="sse"))
    assert [e.partial for e in events] == [True, True, False]
    assert events[-1].actions.state_delta == {"final_seen": True}
    session = await stored(runner)
    assert session.state == {"final_seen": True}


# -- E2 --------------------------------------------------------------------------------------


async def test_e2_long_running_tool_ids_are_the_ids_of_calls_to_long_running_tools():
    long_tool = LongRunningFunctionTool(lambda job: None, name="start_job")
    model = ScriptedModel(
        [
            [
                FunctionCall(name="start_job", args={"job": "a"}, id="long-1"),
                FunctionCall(name="lookup", args={"city": "Oslo"}, id="short-1"),
                FunctionCall(name="start_job", args={"job": "b"}, id="long-2"),
                FunctionCall(name="no_such_tool", args={}, id="unknown-1"),
            ],
            "done",
        ]
    )
    agent = Agent(name="helper", model=model, tools=[long_tool, lookup])
    events = await collect(Runner(agent=agent, app_name=APP), "go")
    assert events[0].long_running_tool_ids == {"long-1", "long-2"}
    # The delayed calls have no response yet; the others have.
    assert [r.id for r in events[1].get_function_responses()] == ["short-1", "unknown-1"]
    assert events[1].long_running_tool_ids == set()


async def test_e2_a_long_running_call_without_a_model_id_gets_one_and_is_listed():
    long_tool = LongRunningFunctionTool(lambda job: None, name="start_job")
    model = ScriptedModel([FunctionCall(name="start_job", args={"job": "a"})])
    agent = Agent(name="helper", model=model, tools=[long_tool])
    runner = Runner(agent=agent, app_name=APP)
    events = await collect(runner, "go")
    call_id = events[0].get_function_calls()[0].id
    assert call_id
    assert events[0].long_running_tool_ids == {call_id}
    session = await stored(runner)
    assert [p.call_id for p in session.pending] == [call_id]


async def test_e2_no_long_running_tools_no_ids():
    model = ScriptedModel([FunctionCall(name="lookup", args={"city": "Oslo"}), "ok"])
    events = await collect(
        Runner(agent=Agent(name="helper", model=model, tools=[lookup]), app_name=APP), "go"
    )
    assert all(e.long_running_tool_ids == set() for e in events)


# -- E3 --------------------------------------------------------------------------------------


async def test_e3_output_key_stores_the_final_non_thought_text():
    final = ModelResponse(
        content=Content(
            role="model",
            parts=[
                Part(text="reasoning...", thought=True),
                Part(text="The answer "),
                Part(text="is 42"),
            ],
        )
    )
    model = ScriptedModel([FunctionCall(name="lookup", args={"city": "Oslo"}), final])
    agent = Agent(name="helper", model=model, tools=[lookup], output_key="answer")
    runner = Runner(agent=agent, app_name=APP)
    events = await collect(runner, "go")
    # Only the final event writes the key.
    assert [e.actions.state_delta.get("answer") for e in events] == [None, None, "The answer is 42"]
    session = await stored(runner)
    assert session.state["answer"] == "The answer is 42"


class Forecast(BaseModel):
    city: str
    temperature: int


async def test_e3_output_key_is_a_string_even_with_an_output_schema():
    model = ScriptedModel(['{"city": "Oslo", "temperature": 3}'])
    agent = Agent(name="helper", model=model, output_schema=Forecast, output_key="forecast")
    runner = Runner(agent=agent, app_name=APP)
    await collect(runner, "go")
    session = await stored(runner)
    assert session.state["forecast"] == '{"city": "Oslo", "temperature": 3}'
    assert isinstance(session.state["forecast"], str)
    # Beyond: the validated object's JSON is available as well.
    assert session.state["forecast_parsed"] == {"city": "Oslo", "temperature": 3}


async def test_e3_no_text_no_output_and_other_agents_do_not_write_the_key():
    model = ScriptedModel(
        [
            FunctionCall(name="transfer_to_agent", args={"agent_name": "expert"}),
            "expert's answer",
        ]
    )
    expert = Agent(name="expert", model=model)
    root = Agent(name="root", model=model, sub_agents=[expert], output_key="root_answer")
    runner = Runner(agent=root, app_name=APP)
    await collect(runner, "go")
    session = await stored(runner)
    assert "root_answer" not in session.state

    # A thought-only final (the bound of F3 aside) writes nothing either.
    thinker = ScriptedModel([thought("hmm"), "visible"])
    agent = Agent(name="thinker", model=thinker, output_key="out")
    runner = Runner(agent=agent, app_name=APP)
    events = await collect(runner, "go")
    assert [e.actions.state_delta.get("out") for e in events] == [None, "visible"]
