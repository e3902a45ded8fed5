"""SPEC V — the typed lifecycle stream (V1–V4). Every collected stream goes through
`rondo.testing.check_stream`."""

from __future__ import annotations

import asyncio
from contextlib import aclosing
from typing import Any

import pytest
from pydantic import BaseModel

from rondo import (
    Agent,
    Blob,
    Content,
    FunctionCall,
    LongRunningFunctionTool,
    Part,
    RunConfig,
    Runner,
    RunResult,
)
from rondo.lifecycle import (
    ActionEnd,
    ActionStart,
    ContextSize,
    HITLDecided,
    HITLPending,
    NodeEnd,
    NodeStart,
    PlanUpdate,
    ReasonDelta,
    ReasonEnd,
    ReasonStart,
    RunEnd,
    RunStart,
    TaskEvent,
    ToolCallEnd,
    ToolCallStart,
    parse_lifecycle_event,
)
from rondo.models import ModelResponse
from rondo.testing import ScriptedModel, StreamContractError, check_stream

from ._support import (
    APP,
    SESSION,
    USER,
    chunk,
    lifecycle,
    response_message,
    run_end,
    stored,
    types_of,
)


def get_weather(city: str) -> dict[str, Any]:
    """Returns the current temperature for a city."""
    if city == "Atlantis":
        raise LookupError("no station")
    return {"city": city, "temperature": 26}


def _weather_runner(*extra: Any) -> tuple[Runner, ScriptedModel]:
    model = ScriptedModel(
        [FunctionCall(name="get_weather", args={"city": "Hangzhou"}, id="weather-1"), *extra]
    )
    agent = Agent(name="weather_agent", model=model, tools=[get_weather])
    return Runner(agent=agent, app_name=APP), model


# -- V1 --------------------------------------------------------------------------------------


async def test_v1_a_react_run_has_run_reason_action_and_tool_events():
    runner, model = _weather_runner("It is 26°C in Hangzhou.")
    events = await lifecycle(runner, "weather in Hangzhou?")
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
    session = await stored(runner)
    start = events[0]
    assert isinstance(start, RunStart)
    assert (start.session_id, start.user_id, start.resumed) == (SESSION, USER, False)

    first_end = events[3]
    assert isinstance(first_end, ReasonEnd)
    # ReasonEnd points at the stored record of its model response, with its tool calls.
    assert first_end.event.id == session.events[1].id
    assert first_end.tool_calls == [
        FunctionCall(name="get_weather", args={"city": "Hangzhou"}, id="weather-1")
    ]
    assert first_end.duration_ms >= 0

    action = events[4]
    assert isinstance(action, ActionStart)
    assert [c.id for c in action.tool_calls] == ["weather-1"]
    tool_start, tool_end = events[5], events[6]
    assert isinstance(tool_start, ToolCallStart)
    assert (tool_start.call_id, tool_start.tool_name, tool_start.args) == (
        "weather-1",
        "get_weather",
        {"city": "Hangzhou"},
    )
    assert isinstance(tool_end, ToolCallEnd)
    assert tool_end.result == {"city": "Hangzhou", "temperature": 26}
    assert tool_end.error is None
    assert tool_end.duration_ms >= 0
    action_end = events[7]
    assert isinstance(action_end, ActionEnd)
    assert action_end.event is not None
    assert action_end.event.id == session.events[2].id

    end = run_end(events)
    assert end.text == "It is 26°C in Hangzhou."
    assert end.output == "It is 26°C in Hangzhou."
    assert end.is_abnormal is False
    assert end.pending == []
    assert (end.metrics.model_calls, end.metrics.tool_calls) == (2, 1)
    assert end.metrics.duration_ms >= 0
    assert model.calls == 2


async def test_v1_reason_end_and_action_end_come_after_their_records_are_stored():
    runner, _ = _weather_runner("It is 26°C.")
    checked: list[tuple[str, bool]] = []
    events: list[Any] = []
    async with aclosing(
        runner.stream_async(user_id=USER, session_id=SESSION, new_message="weather?")
    ) as stream:
        async for event in stream:
            events.append(event)
            record = getattr(event, "event", None)
            if isinstance(event, ReasonEnd | ActionEnd) and record is not None:
                session = await stored(runner)
                checked.append((event.type, any(e.id == record.id for e in session.events)))
    check_stream(events)
    assert checked == [
        ("reason_end", True),
        ("action_end", True),
        ("reason_end", True),
    ]


async def test_v1_a_simple_agent_run_streams_text_and_thinking_deltas_with_boundaries():
    model = ScriptedModel([[chunk("Let me see", thought=True), chunk("Hello"), chunk(", world")]])
    runner = Runner(agent=Agent(name="simple", model=model), app_name=APP)
    events = await lifecycle(runner, "hi")
    assert types_of(events) == ["run_start", "context_size", "reason_start"] + [
        "reason_delta"
    ] * 7 + [
        "reason_end",
        "run_end",
    ]
    deltas = [(e.kind, e.text) for e in events if isinstance(e, ReasonDelta)]
    assert deltas == [
        ("thinking_start", ""),
        ("thinking_delta", "Let me see"),
        ("thinking_end", ""),
        ("text_start", ""),
        ("text_delta", "Hello"),
        ("text_delta", ", world"),
        ("text_end", ""),
    ]
    assert run_end(events).text == "Hello, world"


async def test_v1_media_deltas():
    image = Blob(mime_type="image/png", data=b"\x89PNG")
    stream = [
        chunk("Here: "),
        ModelResponse(content=Content(role="model", parts=[Part(inline_data=image)]), partial=True),
    ]
    runner = Runner(agent=Agent(name="artist", model=ScriptedModel([stream])), app_name=APP)
    events = await lifecycle(runner, "draw")
    deltas = [e for e in events if isinstance(e, ReasonDelta)]
    assert [d.kind for d in deltas] == ["text_start", "text_delta", "text_end", "media"]
    assert deltas[-1].media == image


async def test_v1_tool_call_end_carries_the_error_of_failed_calls():
    model = ScriptedModel(
        [
            [
                FunctionCall(name="get_weather", args={"city": "Atlantis"}, id="raises"),
                FunctionCall(name="get_weather", args={"town": "Oslo"}, id="bad-args"),
                FunctionCall(name="no_such_tool", args={}, id="unknown"),
                FunctionCall(name="get_weather", args={"city": "Oslo"}, id="fine"),
            ],
            "done",
        ]
    )
    runner = Runner(agent=Agent(name="helper", model=model, tools=[get_weather]), app_name=APP)
    events = await lifecycle(runner, "go")
    ends = {e.call_id: e for e in events if isinstance(e, ToolCallEnd)}
    assert set(ends) == {"raises", "bad-args", "unknown", "fine"}
    assert ends["raises"].error is not None
    assert "no station" in ends["raises"].error
    assert ends["bad-args"].error is not None
    assert "'town'" in ends["bad-args"].error
    assert ends["unknown"].error == "Tool 'no_such_tool' not found. Available tools: get_weather"
    assert ends["fine"].error is None
    for end in ends.values():
        if end.error is not None:
            assert end.result == {"error": end.error}


async def test_v1_a_pause_yields_hitl_pending_and_a_normal_run_end():
    export = LongRunningFunctionTool(lambda table: None, name="start_export")
    model = ScriptedModel([FunctionCall(name="start_export", args={"table": "t"}, id="exp-1")])
    runner = Runner(agent=Agent(name="helper", model=model, tools=[export]), app_name=APP)
    events = await lifecycle(runner, "export")
    pending = [e for e in events if isinstance(e, HITLPending)]
    assert len(pending) == 1
    assert [(p.call_id, p.tool_name, p.kind) for p in pending[0].pending] == [
        ("exp-1", "start_export", "long_running")
    ]
    end = run_end(events)
    assert end.is_abnormal is False
    assert [p.call_id for p in end.pending] == ["exp-1"]


def test_v1_every_lifecycle_type_has_its_tag_and_round_trips():
    common: dict[str, Any] = {"run_id": "run-1", "invocation_id": "inv-1", "agent_name": "a"}
    samples = [
        RunStart(**common),
        ReasonStart(reason_id="r", **common),
        ReasonDelta(reason_id="r", kind="text_delta", text="x", **common),
        ActionStart(reason_id="r", **common),
        ToolCallStart(reason_id="r", call_id="c", tool_name="t", **common),
        ToolCallEnd(reason_id="r", call_id="c", tool_name="t", result={"a": 1}, **common),
        ActionEnd(reason_id="r", **common),
        HITLPending(**common),
        HITLDecided(call_id="c", tool_name="t", decision="reject", comment="no", **common),
        PlanUpdate(stage="revise", plans=["a", "b"], index=1, **common),
        ContextSize(token_count=10, compressed=True, tokens_before=20, tokens_after=10, **common),
        NodeStart(node="n", **common),
        NodeEnd(node="n", text="done", **common),
        RunEnd(text="t", is_abnormal=False, **common),
    ]
    samples.append(
        TaskEvent(parent_run_id="run-0", task_id="t1", task_index=2, event=samples[0], **common)
    )
    tags = [s.type for s in samples]
    assert tags == [
        "run_start",
        "reason_start",
        "reason_delta",
        "action_start",
        "tool_call_start",
        "tool_call_end",
        "action_end",
        "hitl_pending",
        "hitl_decided",
        "plan_update",
        "context_size",
        "node_start",
        "node_end",
        "run_end",
        "task_event",
    ]
    for sample in samples:
        data = sample.model_dump(mode="json")
        assert data["type"] == sample.type
        assert data["run_id"] == "run-1"
        assert data["invocation_id"] == "inv-1"
        assert "timestamp" in data
        assert "schema_version" in data
        assert parse_lifecycle_event(data) == sample


# -- V2 --------------------------------------------------------------------------------------


async def test_v2_run_reason_and_call_ids_correlate_the_events():
    model = ScriptedModel(
        [
            [
                FunctionCall(name="get_weather", args={"city": "Oslo"}, id="c1"),
                FunctionCall(name="get_weather", args={"city": "Rome"}, id="c2"),
            ],
            FunctionCall(name="get_weather", args={"city": "Lima"}, id="c3"),
            "done",
        ]
    )
    runner = Runner(agent=Agent(name="helper", model=model, tools=[get_weather]), app_name=APP)
    events = await lifecycle(runner, "go")
    run_ids = {e.run_id for e in events}
    invocation_ids = {e.invocation_id for e in events}
    assert len(run_ids) == 1
    assert next(iter(run_ids)).startswith("run-")
    assert len(invocation_ids) == 1
    assert {e.agent_name for e in events} == {"helper"}

    reason_ids = [e.reason_id for e in events if isinstance(e, ReasonStart)]
    assert len(reason_ids) == 3
    assert len(set(reason_ids)) == 3
    current = None
    calls_by_reason: dict[str, list[str]] = {}
    for event in events:
        if isinstance(event, ReasonStart):
            current = event.reason_id
        elif isinstance(event, ReasonEnd | ActionStart | ActionEnd | ToolCallStart | ToolCallEnd):
            # Everything of a round carries the id of the reason round that asked for it.
            assert event.reason_id == current
            if isinstance(event, ToolCallStart):
                calls_by_reason.setdefault(event.reason_id, []).append(event.call_id)
    assert calls_by_reason == {reason_ids[0]: ["c1", "c2"], reason_ids[1]: ["c3"]}
    reason_ends = [e for e in events if isinstance(e, ReasonEnd)]
    assert [[c.id for c in e.tool_calls] for e in reason_ends] == [["c1", "c2"], ["c3"], []]


async def test_v2_the_run_id_is_reused_on_resume_and_a_new_message_starts_a_new_run():
    export = LongRunningFunctionTool(lambda table: None, name="start_export")
    model = ScriptedModel(
        [FunctionCall(name="start_export", args={"table": "t"}, id="exp-1"), "exported", "hello"]
    )
    runner = Runner(agent=Agent(name="helper", model=model, tools=[export]), app_name=APP)
    paused = await lifecycle(runner, "export")
    resumed = await lifecycle(runner, response_message("start_export", {"rows": 3}, "exp-1"))
    fresh = await lifecycle(runner, "something else")

    first_start, second_start, third_start = paused[0], resumed[0], fresh[0]
    assert isinstance(first_start, RunStart)
    assert isinstance(second_start, RunStart)
    assert isinstance(third_start, RunStart)
    assert second_start.run_id == first_start.run_id
    assert second_start.resumed is True
    assert third_start.run_id != first_start.run_id
    assert third_start.resumed is False
    # Every event also carries its invocation: one per call of stream_async.
    invocations = [{e.invocation_id for e in stream} for stream in (paused, resumed, fresh)]
    assert all(len(i) == 1 for i in invocations)
    assert len(set.union(*invocations)) == 3
    assert run_end(resumed).text == "exported"
    assert run_end(resumed).pending == []


async def test_v2_events_of_a_transfer_target_carry_its_name_and_the_same_run():
    model = ScriptedModel(
        [FunctionCall(name="transfer_to_agent", args={"agent_name": "expert"}), "expert answer"]
    )
    root = Agent(name="root", model=model, sub_agents=[Agent(name="expert", model=model)])
    events = await lifecycle(Runner(agent=root, app_name=APP), "go")
    reason_agents = [e.agent_name for e in events if isinstance(e, ReasonStart)]
    assert reason_agents == ["root", "expert"]
    assert len({e.run_id for e in events}) == 1
    assert run_end(events).text == "expert answer"


# -- V3 --------------------------------------------------------------------------------------


async def test_v3_a_completed_stream_ends_with_exactly_one_run_end():
    runner, _ = _weather_runner("answer")
    events = await lifecycle(runner, "q")
    assert [i for i, e in enumerate(events) if isinstance(e, RunEnd)] == [len(events) - 1]
    assert isinstance(events[0], RunStart)


async def test_v3_tool_starts_and_ends_pair_by_call_id_in_completion_order():
    release = asyncio.Event()

    async def slow(tag: str) -> dict[str, Any]:
        await release.wait()  # released by the consumer once it has seen fast's end
        return {"tag": tag}

    async def fast(tag: str) -> dict[str, Any]:
        return {"tag": tag}

    model = ScriptedModel(
        [
            [
                FunctionCall(name="slow", args={"tag": "s"}, id="slow-1"),
                FunctionCall(name="fast", args={"tag": "f"}, id="fast-1"),
            ],
            "done",
        ]
    )
    runner = Runner(agent=Agent(name="helper", model=model, tools=[slow, fast]), app_name=APP)
    events: list[Any] = []

    async def consume() -> None:
        async with aclosing(
            runner.stream_async(user_id=USER, session_id=SESSION, new_message="go")
        ) as stream:
            async for event in stream:
                events.append(event)
                if isinstance(event, ToolCallEnd) and event.call_id == "fast-1":
                    release.set()

    # If ends waited for every call, `slow` would never be released (the timeout fails the
    # test instead of hanging it).
    await asyncio.wait_for(consume(), 30)
    check_stream(events)
    tool_events = [
        (e.type, e.call_id) for e in events if isinstance(e, ToolCallStart | ToolCallEnd)
    ]
    assert tool_events == [
        ("tool_call_start", "slow-1"),
        ("tool_call_start", "fast-1"),
        ("tool_call_end", "fast-1"),
        ("tool_call_end", "slow-1"),
    ]
    # The merged record still lists results in call order.
    action_end = next(e for e in events if isinstance(e, ActionEnd))
    assert action_end.event is not None
    assert [r.id for r in action_end.event.get_function_responses()] == ["slow-1", "fast-1"]


async def test_v3_a_cancelled_stream_gets_no_synthetic_end():
    ran: list[str] = []

    def get_time(zone: str) -> dict[str, Any]:
        ran.append(zone)
        return {"zone": zone}

    model = ScriptedModel([FunctionCall(name="get_time", args={"zone": "UTC"}), "noon"])
    runner = Runner(agent=Agent(name="helper", model=model, tools=[get_time]), app_name=APP)
    collected: list[Any] = []
    async with aclosing(
        runner.stream_async(user_id=USER, session_id=SESSION, new_message="time?")
    ) as stream:
        async for event in stream:
            collected.append(event)
            if isinstance(event, ReasonEnd):
                break
    check_stream(collected, completed=False)
    assert types_of(collected) == ["run_start", "context_size", "reason_start", "reason_end"]
    assert ran == []
    assert model.calls == 1


async def test_v3_a_cancelled_consumer_task_gets_no_synthetic_end():
    started = asyncio.Event()

    async def wait_forever() -> dict[str, Any]:
        started.set()
        await asyncio.Event().wait()
        return {}

    model = ScriptedModel([FunctionCall(name="wait_forever"), "never"])
    runner = Runner(agent=Agent(name="helper", model=model, tools=[wait_forever]), app_name=APP)
    collected: list[Any] = []

    async def consume() -> None:
        async with aclosing(
            runner.stream_async(user_id=USER, session_id=SESSION, new_message="go")
        ) as stream:
            async for event in stream:
                collected.append(event)

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    check_stream(collected, completed=False)
    assert types_of(collected)[-1] == "tool_call_start"


async def test_v3_a_failed_stream_gets_no_synthetic_end():
    model = ScriptedModel(
        [FunctionCall(name="get_weather", args={"city": "Oslo"}), RuntimeError("boom")]
    )
    runner = Runner(agent=Agent(name="helper", model=model, tools=[get_weather]), app_name=APP)
    collected: list[Any] = []

    async def consume() -> None:
        async with aclosing(
            runner.stream_async(user_id=USER, session_id=SESSION, new_message="go")
        ) as stream:
            async for event in stream:
                collected.append(event)

    with pytest.raises(RuntimeError, match="boom"):
        await consume()
    check_stream(collected, completed=False)
    assert types_of(collected)[-3:] == ["action_end", "context_size", "reason_start"]


def test_v3_unknown_event_types_are_safe_to_ignore():
    future = {
        "type": "quantum_leap",
        "run_id": "run-1",
        "invocation_id": "inv-1",
        "agent_name": "a",
        "timestamp": 0.0,
        "schema_version": 99,
        "payload": {"anything": True},
    }
    assert parse_lifecycle_event(future) is None


def test_v3_the_checker_rejects_broken_streams():
    common: dict[str, Any] = {"run_id": "run-1", "invocation_id": "inv-1"}
    start, end = RunStart(**common), RunEnd(**common)
    reason = ReasonStart(reason_id="r1", **common)
    with pytest.raises(StreamContractError, match="follows run_end"):
        check_stream([start, end, reason])
    with pytest.raises(StreamContractError, match="run_end"):
        check_stream([start, reason])
    with pytest.raises(StreamContractError, match="unfinished stream has a run_end"):
        check_stream([start, end], completed=False)
    tool_end = ToolCallEnd(reason_id="r1", call_id="x", tool_name="t", **common)
    with pytest.raises(StreamContractError, match="without its tool_call_start"):
        check_stream([start, reason, tool_end, end])
    pending = HITLPending(**common)
    with pytest.raises(StreamContractError, match="HITL pause is not an abnormal end"):
        check_stream([start, pending, RunEnd(is_abnormal=True, **common)])


# -- V4 --------------------------------------------------------------------------------------


class Answer(BaseModel):
    city: str
    temperature: int


async def test_v4_call_async_call_and_stream_give_the_same_full_result():
    def make() -> Agent:
        return Agent(
            name="helper",
            model=ScriptedModel(
                [FunctionCall(name="get_weather", args={"city": "Oslo"}), "Oslo: 26°C"]
            ),
            tools=[get_weather],
        )

    # call (sync; works even though this test's event loop is running)
    result = make().run_sync("weather?")
    assert isinstance(result, RunResult)
    assert result.output == "Oslo: 26°C"
    assert [e.author for e in result.events] == ["helper", "helper", "helper"]
    assert result.session_id

    # async call
    result = await make().run("weather?")
    assert result.output == "Oslo: 26°C"
    assert result.is_abnormal is False

    # stream: the full result is read from RunEnd
    streamed: list[Any] = []
    async with aclosing(make().stream("weather?")) as events:
        async for event in events:
            streamed.append(event)
    check_stream(streamed)
    assert run_end(streamed).text == "Oslo: 26°C"
    assert run_end(streamed).output == "Oslo: 26°C"


async def test_v4_the_stream_result_comes_from_run_end_not_from_deltas():
    # The first round streams a preamble and then calls a tool (its final chunk is given,
    # not aggregated); the answer comes in the second round. Concatenating deltas gives the
    # preamble, not the result.
    first_round = [
        chunk("Checking "),
        chunk("the weather"),
        ModelResponse(
            content=Content(
                role="model",
                parts=[
                    Part(text="Checking the weather"),
                    Part(function_call=FunctionCall(name="get_weather", args={"city": "Oslo"})),
                ],
            )
        ),
    ]
    model = ScriptedModel([first_round, "It is 26°C."])
    agent = Agent(name="helper", model=model, tools=[get_weather])
    events = await lifecycle(Runner(agent=agent, app_name=APP), "weather?")
    deltas = "".join(e.text for e in events if isinstance(e, ReasonDelta))
    assert deltas == "Checking the weather"
    assert run_end(events).text == "It is 26°C."


async def test_v4_typed_output_with_an_output_schema():
    model = ScriptedModel(['{"city": "Oslo", "temperature": 3}'] * 2)
    agent = Agent(name="helper", model=model, output_schema=Answer)
    result = await agent.run("weather as JSON")
    assert result.output == Answer(city="Oslo", temperature=3)
    events = await lifecycle(Runner(agent=agent, app_name=APP), "again")
    assert run_end(events).output == Answer(city="Oslo", temperature=3)


def test_v4_sync_runner_iteration_and_run_config_per_call():
    model = ScriptedModel([[chunk("a"), chunk("b")]])
    runner = Runner(agent=Agent(name="helper", model=model), app_name=APP)
    events = list(
        runner.run(
            user_id=USER,
            session_id=SESSION,
            new_message="go",
            run_config=RunConfig(streaming_mode="sse"),
        )
    )
    assert [(e.partial, e.text) for e in events] == [(True, "a"), (True, "b"), (False, "ab")]
