"""SPEC P0, P3, P6, P8, P9, P10 (request processors), C9 (cost per step) and V7 (Solon's agent
kinds in rondo's terms)."""

from __future__ import annotations

import inspect
import sys
from contextlib import aclosing
from typing import Any

import pytest
from pydantic import BaseModel

from rondo import Agent, Content, Event, FunctionCall, FunctionTool, Runner, Team
from rondo.context import ReadonlyContext
from rondo.flow.compaction import CompactionConfig
from rondo.flow.contents import build_contents
from rondo.flow.processors import DEFAULT_REQUEST_PROCESSORS
from rondo.lifecycle import ReasonStart, RunEnd
from rondo.models import ModelRequest
from rondo.run_config import RunConfig
from rondo.sessions.base import EventLog, EventsView
from rondo.testing import ScriptedModel, check_stream
from rondo.types import FunctionResponse, Part

from ._support import APP, SESSION, USER, collect, lifecycle, stored


def lookup(city: str) -> dict[str, Any]:
    """Looks a city up."""
    return {"city": city}


class Answer(BaseModel):
    city: str
    temperature: int


def _bank(model: ScriptedModel, log: list[int]) -> Runner:
    def pay(amount: int) -> dict[str, int]:
        """Pays."""
        log.append(amount)
        return {"paid": amount}

    agent = Agent(name="bank", model=model, tools=[FunctionTool(pay, require_confirmation=True)])
    return Runner(agent=agent, app_name=APP)


# -- P0 ----------------------------------------------------------------------------------------


async def test_p0_processors_run_before_every_model_call() -> None:
    built: list[int] = []

    def instruction(ctx: ReadonlyContext) -> str:
        built.append(len(ctx.session.events))
        return "Be brief."

    model = ScriptedModel(
        [
            FunctionCall(name="lookup", args={"city": "a"}),
            FunctionCall(name="lookup", args={"city": "b"}),
            "done",
        ]
    )
    agent = Agent(name="a", model=model, tools=[lookup], instruction=instruction)
    await collect(Runner(agent=agent, app_name=APP), "go")
    # Three model calls, three requests built, each from the history as it then was (F6).
    assert built == [1, 3, 5]
    assert [r.config.system_instruction is not None for r in model.requests] == [True] * 3


async def test_p0_a_processor_yields_its_events_before_the_model_is_called() -> None:
    log: list[int] = []
    model = ScriptedModel([FunctionCall(name="pay", args={"amount": 3}, id="c1"), "paid"])
    runner = _bank(model, log)
    await collect(runner, "pay 3")
    session = await stored(runner)
    events = await collect(runner, Content(role="user", parts=[session.pending[0].approve()]))
    # The confirmation processor's record (the approved call's result) comes first; the
    # model event that answers after it comes last.
    assert events[0].get_function_responses()[0].response == {"paid": 3}
    assert events[-1].text == "paid"
    assert model.calls == 2
    assert model.requests[1].contents[-1].parts[0].function_response is not None


async def test_p0_a_consumer_that_stops_during_preprocessing_stops_the_run_there() -> None:
    log: list[int] = []
    model = ScriptedModel([FunctionCall(name="pay", args={"amount": 4}, id="c1"), "never"])
    runner = _bank(model, log)
    await collect(runner, "pay 4")
    session = await stored(runner)
    resume = runner.stream_async(
        user_id=USER,
        session_id=SESSION,
        new_message=Content(role="user", parts=[session.pending[0].approve()]),
    )
    seen: list[Any] = []
    async with aclosing(resume) as events:
        async for event in events:
            seen.append(event)
            if event.type == "hitl_decided":
                break  # still inside the confirmation processor
    assert log == []
    assert model.calls == 1
    assert not any(isinstance(e, ReasonStart) for e in seen)


# -- P3 ----------------------------------------------------------------------------------------


async def test_p3_the_confirmation_processor_resumes_the_call_before_the_request() -> None:
    log: list[int] = []
    model = ScriptedModel([FunctionCall(name="pay", args={"amount": 5}, id="c1"), "paid 5"])
    runner = _bank(model, log)
    await collect(runner, "pay 5")
    session = await stored(runner)
    events = await lifecycle(runner, Content(role="user", parts=[session.pending[0].reject("no")]))
    kinds = [e.type for e in events]
    assert kinds.index("hitl_decided") < kinds.index("tool_call_end") < kinds.index("reason_start")
    assert log == []  # a refusal never reaches the handler
    answered = model.requests[1].contents[-1].parts[0].function_response
    assert answered is not None
    assert answered.id == "c1"
    assert "rejected" in answered.response["error"]


# -- P6 ----------------------------------------------------------------------------------------


async def test_p6_compaction_runs_before_contents_so_the_summary_is_in_this_request() -> None:
    summarizer = ScriptedModel(["SUMMARY"], name="summarizer")
    model = ScriptedModel(["one", "two", "three"])
    config = RunConfig(
        compaction=CompactionConfig(token_threshold=60, retention_events=1, summarizer=summarizer)
    )
    runner = Runner(agent=Agent(name="a", model=model), app_name=APP)
    for i in range(3):
        await collect(runner, f"message {i} " + "x" * 120, run_config=config)
    assert summarizer.calls >= 1
    # The request of the step that compacted already holds the summary.
    first_compacting = summarizer.calls and next(
        i for i, r in enumerate(model.requests) if "SUMMARY" in repr(r.contents)
    )
    assert first_compacting is not None
    names = [p.__name__ for p in DEFAULT_REQUEST_PROCESSORS]
    assert names.index("compaction_processor") == names.index("contents_processor") - 1


# -- P8 ----------------------------------------------------------------------------------------


async def test_p8_the_output_schema_fallback_adds_set_model_response_and_says_so() -> None:
    model = ScriptedModel(
        [FunctionCall(name="set_model_response", args={"city": "Oslo", "temperature": 2})],
        capabilities={"response_schema_with_tools": False},
    )
    agent = Agent(name="a", model=model, tools=[lookup], output_schema=Answer)
    result = await agent.run("weather?")
    request = model.requests[0]
    assert [d.name for d in request.config.tools] == ["lookup", "set_model_response"]
    assert request.config.response_schema is None
    assert "set_model_response" in (request.config.system_instruction or "")
    assert result.output == Answer(city="Oslo", temperature=2)


async def test_p8_no_fallback_when_the_model_combines_schema_and_tools() -> None:
    model = ScriptedModel(['{"city": "Oslo", "temperature": 2}'])
    agent = Agent(name="a", model=model, tools=[lookup], output_schema=Answer)
    await agent.run("weather?")
    request = model.requests[0]
    assert [d.name for d in request.config.tools] == ["lookup"]
    assert request.config.response_schema is not None


# -- P9 ----------------------------------------------------------------------------------------


async def test_p9_transfer_tool_lists_the_legal_targets_and_the_instruction_names_them() -> None:
    model = ScriptedModel(["hi"])
    billing = Agent(name="billing", model=model, description="Handles bills.")
    helper = Agent(name="helper", model=model, mode="task", description="Does tasks.")
    root = Agent(name="root", model=model, sub_agents=[billing, helper])
    await collect(Runner(agent=root, app_name=APP), "go")
    request = model.requests[0]
    transfer = next(d for d in request.config.tools if d.name == "transfer_to_agent")
    assert transfer.parameters["properties"]["agent_name"]["enum"] == ["billing"]
    system = request.config.system_instruction or ""
    assert "billing" in system
    assert "Handles bills." in system


async def test_p9_no_transfer_tool_without_targets() -> None:
    model = ScriptedModel(["hi"])
    await collect(Runner(agent=Agent(name="solo", model=model), app_name=APP), "go")
    assert "transfer_to_agent" not in [d.name for d in model.requests[0].config.tools]


# -- P10 ---------------------------------------------------------------------------------------


def test_p10_no_planner_or_code_executor_pretends_to_work() -> None:
    """Planning is real (rondo.tools.plan emits plan events); code execution is absent: an
    agent refuses the options rather than ignore them, and no processor is a silent no-op."""
    params = inspect.signature(Agent).parameters
    assert "planner" not in params
    assert "code_executor" not in params
    with pytest.raises(TypeError):
        Agent(name="a", model=ScriptedModel([]), planner=object())  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Agent(name="a", model=ScriptedModel([]), code_executor=object())  # type: ignore[call-arg]
    names = {p.__name__ for p in DEFAULT_REQUEST_PROCESSORS}
    assert not {n for n in names if "plan" in n or "code" in n}
    from rondo.tools.plan import PlanToolset

    assert {t.name for t in PlanToolset()._tools} == {  # pyright: ignore[reportPrivateUsage]
        "create_plan",
        "update_plan_step",
        "revise_plan",
    }


# -- C9 ----------------------------------------------------------------------------------------


def _history(n: int, first: int = 0) -> list[Event]:
    events: list[Event] = []
    for i in range(first, first + n // 4):
        events.append(Event(author="user", content=Content.user(f"q{i}")))
        call = FunctionCall(name="lookup", args={"city": str(i)}, id=f"c{i}")
        events.append(
            Event(author="a", content=Content(role="model", parts=[Part(function_call=call)]))
        )
        response = FunctionResponse(name="lookup", response={"ok": i}, id=f"c{i}")
        events.append(
            Event(
                author="a", content=Content(role="user", parts=[Part(function_response=response)])
            )
        )
        events.append(Event(author="a", content=Content.model(f"a{i}")))
    return events


def _calls_for_next_step(prior: int) -> int:
    """Python calls spent building step k+1's contents after k steps were built already."""
    log = EventLog(_history(prior))
    build_contents(EventsView(log), agent_name="a", branch="", isolation_scope="")
    log.extend(_history(4, first=prior))
    count = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        build_contents(EventsView(log), agent_name="a", branch="", isolation_scope="")
    finally:
        sys.setprofile(None)
    return count


def test_c9_a_step_costs_the_same_python_calls_after_5000_events_as_after_100() -> None:
    small = _calls_for_next_step(100)
    large = _calls_for_next_step(5000)
    # The list of contents is copied per request (O(n) in C, one call); the Python work is
    # the new events' conversion, whatever the history's length.
    assert large <= small * 1.5, (small, large)


# -- V7 ----------------------------------------------------------------------------------------


async def test_v7_a_simple_agent_is_an_agent_without_tools() -> None:
    agent = Agent(name="simple", model=ScriptedModel(["hello"]))
    events = [e async for e in agent.stream("hi")]
    check_stream(events)
    assert [e.type for e in events if e.type != "reason_delta"] == [
        "run_start",
        "context_size",
        "reason_start",
        "reason_end",
        "run_end",
    ]


async def test_v7_a_react_agent_is_an_agent_with_tools_reason_then_action_rounds() -> None:
    model = ScriptedModel([FunctionCall(name="lookup", args={"city": "Rome"}), "Rome it is"])
    agent = Agent(name="react", model=model, tools=[lookup])
    events = [e async for e in agent.stream("where?")]
    check_stream(events)
    kinds = [e.type for e in events if e.type != "reason_delta"]
    assert kinds == [
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


async def test_v7_call_styles_options_and_the_typed_result() -> None:
    """Solon's call / stream with per-request options, and toBean as RunResult.output."""
    agent = Agent(
        name="typed",
        model=ScriptedModel(['{"city": "Oslo", "temperature": 1}'] * 3),
        output_schema=Answer,
    )
    sync_result = agent.run_sync("weather?", session_id="s-sync", run_config=RunConfig())
    assert sync_result.output == Answer(city="Oslo", temperature=1)
    assert sync_result.session_id == "s-sync"
    async_result = await agent.run("weather?", user_id="someone")
    assert async_result.output == Answer(city="Oslo", temperature=1)
    streamed = [e async for e in agent.stream("weather?")]
    end = streamed[-1]
    assert isinstance(end, RunEnd)
    assert end.output == {"city": "Oslo", "temperature": 1} or end.output == Answer(
        city="Oslo", temperature=1
    )


async def test_v7_team_and_harness_are_the_team_agent_and_harness_engine() -> None:
    team = Team(name="crew", members=[Agent(name="m", model=ScriptedModel(["m says"]))])
    events = [
        e
        async for e in Runner(agent=team, app_name=APP).stream_async(
            user_id=USER, session_id="t", new_message="go"
        )
    ]
    check_stream(events)
    assert [e.type for e in events if e.type.startswith("node")] == ["node_start", "node_end"]
    assert isinstance(events[-1], RunEnd)
    assert events[-1].text == "m says"
    _ = ModelRequest
