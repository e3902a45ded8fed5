"""SPEC F — the loop (F1–F7)."""

from __future__ import annotations

import logging
from contextlib import aclosing
from typing import Any

import pytest
from pydantic import BaseModel

import rondo
from rondo import (
    Agent,
    Content,
    Event,
    EventActions,
    FunctionCall,
    FunctionResponse,
    LongRunningFunctionTool,
    Part,
    Plugin,
    RunConfig,
    Runner,
)
from rondo.context import CallbackContext, InvocationContext
from rondo.events import EventCompaction
from rondo.models import ModelRequest, ModelResponse
from rondo.testing import ScriptedModel, check_stream
from rondo.types import CodeExecutionResult, ExecutableCode

from ._support import (
    APP,
    SESSION,
    USER,
    StreamModel,
    chunk,
    collect,
    lifecycle,
    responses_in,
    run_end,
    stored,
    thought,
)


def lookup(city: str) -> dict[str, Any]:
    return {"city": city, "temperature": 20}


# -- F1 --------------------------------------------------------------------------------------


async def test_f1_steps_run_until_the_last_event_of_a_step_is_final():
    model = ScriptedModel(
        [
            FunctionCall(name="lookup", args={"city": "Paris"}),
            FunctionCall(name="lookup", args={"city": "Rome"}),
            "Paris 20, Rome 20",
            "never used",
        ]
    )
    runner = Runner(agent=Agent(name="helper", model=model, tools=[lookup]), app_name=APP)
    events = await collect(runner, "compare")
    shape = [
        (
            "call"
            if e.get_function_calls()
            else "response"
            if e.get_function_responses()
            else "text",
            e.is_final_response(),
        )
        for e in events
    ]
    assert shape == [
        ("call", False),
        ("response", False),
        ("call", False),
        ("response", False),
        ("text", True),
    ]
    assert model.calls == 3


async def test_f1_a_final_event_stops_the_loop_after_one_model_call():
    model = ScriptedModel(["just text", "never used"])
    runner = Runner(agent=Agent(name="helper", model=model), app_name=APP)
    events = await collect(runner, "hi")
    assert [e.text for e in events] == ["just text"]
    assert model.calls == 1


async def test_f1_the_last_event_of_the_step_decides_not_the_first_final_one():
    # A long-running call makes the model event final, but the tool answers at once: the
    # step's last event (its response) is not final, so the loop calls the model again.
    started = LongRunningFunctionTool(lambda job: {"status": "started"}, name="start_job")
    model = ScriptedModel([FunctionCall(name="start_job", args={"job": "x"}), "job started"])
    runner = Runner(agent=Agent(name="helper", model=model, tools=[started]), app_name=APP)
    events = await collect(runner, "go")
    assert events[0].is_final_response()
    assert events[0].long_running_tool_ids == {events[0].get_function_calls()[0].id}
    assert not events[1].is_final_response()
    assert events[2].text == "job started"
    assert model.calls == 2


async def test_f1_a_step_ending_on_a_final_long_running_call_stops():
    # No response yet (the tool returned None): the step's last event is the final model event.
    pending = LongRunningFunctionTool(lambda job: None, name="start_job")
    model = ScriptedModel([FunctionCall(name="start_job", args={"job": "x"}), "never used"])
    runner = Runner(agent=Agent(name="helper", model=model, tools=[pending]), app_name=APP)
    events = await collect(runner, "go")
    assert len(events) == 1
    assert events[0].is_final_response()
    assert model.calls == 1


async def test_f1_step_is_preprocess_model_call_event_then_tool_dispatch():
    log: list[str] = []

    class Trace(Plugin):
        async def before_model(
            self, ctx: CallbackContext, request: ModelRequest
        ) -> ModelResponse | None:
            # Preprocessing is done: the request already carries instruction, tools and history.
            log.append(
                f"before_model tools={sorted(request.tools)} contents={len(request.contents)}"
            )
            return None

        async def on_event(self, ctx: InvocationContext, event: Event) -> Event | None:
            kind = "call" if event.get_function_calls() else "other"
            log.append(f"event {kind}")
            return None

    def tool_fn(x: int) -> dict[str, Any]:
        log.append("tool")
        return {"x": x}

    model = ScriptedModel([FunctionCall(name="tool_fn", args={"x": 1}), "done"])
    runner = Runner(
        agent=Agent(name="helper", model=model, tools=[tool_fn]), app_name=APP, plugins=[Trace()]
    )
    await collect(runner, "go")
    assert log == [
        "before_model tools=['tool_fn'] contents=1",
        "event call",
        "tool",
        "event other",
        "before_model tools=['tool_fn'] contents=3",
        "event other",
    ]


# -- F2 --------------------------------------------------------------------------------------


def _event(parts: list[Part] | None = None, **kw: Any) -> Event:
    content = Content(role="model", parts=parts) if parts is not None else None
    return Event(author="a", content=content, **kw)


def test_f2_is_final_response_in_the_seed_order():
    text = [Part(text="answer")]
    call = [Part(function_call=FunctionCall(name="t", id="c1"))]
    response = [Part(function_response=FunctionResponse(name="t", id="c1"))]
    compaction = EventActions(
        compaction=EventCompaction(
            start_timestamp=0, end_timestamp=1, compacted_content=Content.model("sum")
        )
    )
    # Plain text: final.
    assert _event(text).is_final_response() is True
    # A compaction record is never final, even with the early-final markers set.
    assert _event(text, actions=compaction).is_final_response() is False
    both = compaction.model_copy(update={"skip_summarization": True})
    assert _event(text, actions=both).is_final_response() is False
    assert _event(text, actions=compaction, long_running_tool_ids={"c1"}).is_final_response() is (
        False
    )
    # skip_summarization / long-running ids: final even with a call or a response.
    skip = EventActions(skip_summarization=True)
    assert _event(response, actions=skip).is_final_response() is True
    assert _event(call, long_running_tool_ids={"c1"}).is_final_response() is True
    assert _event(text, partial=True, actions=skip).is_final_response() is True
    # Otherwise: no call, no response, not partial, no trailing code-execution result.
    assert _event(call).is_final_response() is False
    assert _event(response).is_final_response() is False
    assert _event(text, partial=True).is_final_response() is False
    result = Part(code_execution_result=CodeExecutionResult(outcome="ok", output="4"))
    code = Part(executable_code=ExecutableCode(code="print(2+2)"))
    assert _event([code, result]).is_final_response() is False
    assert _event([code, result, Part(text="It is 4")]).is_final_response() is True
    # A thought-only event is final as a record (the loop handles it, F3).
    assert _event([Part(text="hmm", thought=True)]).is_final_response() is True


# -- F3 --------------------------------------------------------------------------------------


async def test_f3_thought_only_turns_are_bounded(caplog: pytest.LogCaptureFixture):
    model = ScriptedModel([thought(f"thinking {i}") for i in range(11)] + ["never used"])
    runner = Runner(agent=Agent(name="helper", model=model), app_name=APP)
    with caplog.at_level(logging.WARNING, logger="rondo"):
        events = await collect(runner, "think")
    # The first thought-only turn plus at most 9 more calls: 10 in all.
    assert model.calls == 10
    assert len(events) == 10
    assert all(e.content and all(p.thought for p in e.content.parts) for e in events)
    # The last thinking event is kept (stored), and the stop is logged.
    session = await stored(runner)
    assert session.events[-1].id == events[-1].id
    assert session.events[-1].content.parts[0].text == "thinking 9"  # type: ignore[union-attr]
    assert any("thought-only" in r.getMessage() for r in caplog.records)


async def test_f3_a_thought_only_turn_gets_another_model_call():
    model = ScriptedModel([thought("let me think"), "the answer"])
    runner = Runner(agent=Agent(name="helper", model=model), app_name=APP)
    events = await collect(runner, "q")
    assert [e.text for e in events] == ["", "the answer"]
    assert model.calls == 2
    # The second request sees the thought turn in the history.
    assert [p.thought for p in model.requests[1].contents[1].parts] == [True]


async def test_f3_a_non_final_turn_resets_the_count():
    model = ScriptedModel(
        [thought(f"a{i}") for i in range(9)]
        + [FunctionCall(name="lookup", args={"city": "Oslo"})]
        + [thought(f"b{i}") for i in range(9)]
        + ["finally"]
    )
    runner = Runner(agent=Agent(name="helper", model=model, tools=[lookup]), app_name=APP)
    events = await collect(runner, "q")
    # Without the reset the 10th thought-only turn (the first "b") would have stopped the run.
    assert model.calls == 20
    assert events[-1].text == "finally"


# -- F4 --------------------------------------------------------------------------------------


async def _partial_only(request: ModelRequest, stream: bool):
    yield chunk("Hel")
    yield chunk("lo")


async def test_f4_a_step_ending_on_a_partial_stops_with_a_warning(
    caplog: pytest.LogCaptureFixture,
):
    model = StreamModel(_partial_only)
    runner = Runner(agent=Agent(name="helper", model=model), app_name=APP)
    with caplog.at_level(logging.WARNING, logger="rondo"):
        events = await collect(runner, "hi", run_config=RunConfig(streaming_mode="sse"))
    assert [(e.text, e.partial) for e in events] == [("Hel", True), ("lo", True)]
    # Never silently retried: one model call.
    assert len(model.requests) == 1
    assert any("partial" in r.getMessage() for r in caplog.records)
    session = await stored(runner)
    assert [e.author for e in session.events] == ["user"]


async def test_f4_partial_end_is_not_retried_without_sse_either():
    model = StreamModel(_partial_only)
    runner = Runner(agent=Agent(name="helper", model=model), app_name=APP)
    events = await collect(runner, "hi")
    assert [e.partial for e in events] == [True, True]
    assert len(model.requests) == 1


async def test_f4_the_run_result_is_abnormal():
    model = StreamModel(_partial_only)
    runner = Runner(agent=Agent(name="helper", model=model), app_name=APP)
    result = await runner.run_to_result(
        user_id=USER,
        session_id=SESSION,
        new_message="hi",
        run_config=RunConfig(streaming_mode="sse"),
    )
    assert result.is_abnormal is True
    assert result.pending == []
    assert len(model.requests) == 1


async def test_f4_the_lifecycle_run_end_is_abnormal_and_the_stream_is_well_formed():
    model = StreamModel(_partial_only)
    runner = Runner(agent=Agent(name="helper", model=model), app_name=APP)
    events = await lifecycle(runner, "hi", check=False)
    end = run_end(events)
    assert end.is_abnormal is True
    assert end.pending == []
    assert len(model.requests) == 1
    assert [e.kind for e in events if e.type == "reason_delta"][:2] == ["text_start", "text_delta"]
    check_stream(events)


# -- F5 --------------------------------------------------------------------------------------


async def test_f5_the_model_event_reaches_the_consumer_before_any_tool_runs():
    log: list[str] = []

    def slow(x: int) -> dict[str, Any]:
        log.append(f"tool {x}")
        return {"x": x}

    model = ScriptedModel(
        [[FunctionCall(name="slow", args={"x": 1}), FunctionCall(name="slow", args={"x": 2})], "ok"]
    )
    runner = Runner(agent=Agent(name="helper", model=model, tools=[slow]), app_name=APP)
    async with aclosing(
        runner.run_async(user_id=USER, session_id=SESSION, new_message="go")
    ) as events:
        async for event in events:
            if event.get_function_calls():
                log.append("consumer got calls")
            elif event.get_function_responses():
                log.append("consumer got responses")
            else:
                log.append("consumer got text")
    assert log[0] == "consumer got calls"
    assert sorted(log[1:3]) == ["tool 1", "tool 2"]
    assert log[3:] == ["consumer got responses", "consumer got text"]


async def test_f5_partial_events_are_yielded_but_never_dispatch_tools():
    runs: list[dict[str, Any]] = []

    def get_weather(city: str) -> dict[str, Any]:
        runs.append({"city": city})
        return {"temperature": 26}

    call = FunctionCall(name="get_weather", args={"city": "Hangzhou"}, id="w1")
    stream = [
        chunk("Checking "),
        ModelResponse(
            content=Content(role="model", parts=[Part(function_call=call)]), partial=True
        ),
    ]
    model = ScriptedModel([stream, "26 degrees"])
    runner = Runner(agent=Agent(name="helper", model=model, tools=[get_weather]), app_name=APP)
    events = await collect(runner, "weather?", run_config=RunConfig(streaming_mode="sse"))
    kinds = [
        (e.partial, bool(e.get_function_calls()), bool(e.get_function_responses())) for e in events
    ]
    assert kinds == [
        (True, False, False),
        (True, True, False),  # a partial carrying a complete call: yielded, not dispatched
        (False, True, False),  # the aggregate dispatches
        (False, False, True),
        (False, False, False),
    ]
    assert runs == [{"city": "Hangzhou"}]


class Answer(BaseModel):
    city: str
    temperature: int


async def test_f5_order_tool_responses_confirmation_structured_output_transfer():
    def dangerous(target: str) -> dict[str, Any]:
        return {"deleted": target}

    from rondo import FunctionTool

    confirm_tool = FunctionTool(dangerous, require_confirmation=True)
    model = ScriptedModel(
        [
            [
                FunctionCall(name="dangerous", args={"target": "db"}, id="c-danger"),
                FunctionCall(
                    name="set_model_response",
                    args={"city": "Paris", "temperature": 18},
                    id="c-final",
                ),
                FunctionCall(name="transfer_to_agent", args={"agent_name": "expert"}, id="c-xfer"),
            ],
            "expert speaking",
        ],
        capabilities={"response_schema_with_tools": False},
    )
    expert = Agent(name="expert", model=model)
    root = Agent(
        name="root",
        model=model,
        tools=[confirm_tool],
        output_schema=Answer,
        sub_agents=[expert],
    )
    runner = Runner(agent=root, app_name=APP)
    events = await collect(runner, "go")
    summary = [
        (
            e.author,
            e.content.role if e.content else None,
            [p.function_call.name for p in e.content.parts if p.function_call] if e.content else [],
            [p.function_response.name for p in e.content.parts if p.function_response]
            if e.content
            else [],
        )
        for e in events
    ]
    assert summary == [
        ("root", "model", ["dangerous", "set_model_response", "transfer_to_agent"], []),
        ("root", "user", [], ["dangerous", "set_model_response", "transfer_to_agent"]),
        ("root", "model", ["adk_request_confirmation"], []),
        ("root", "model", [], []),
        ("expert", "model", [], []),
    ]
    assert events[1].get_function_responses()[0].response == {"error": "confirmation required"}
    assert Answer.model_validate_json(events[3].text) == Answer(city="Paris", temperature=18)
    assert events[4].text == "expert speaking"


async def test_f5_structured_output_event_follows_the_tool_response():
    model = ScriptedModel(
        [FunctionCall(name="set_model_response", args={"city": "Rome", "temperature": 30})],
        capabilities={"response_schema_with_tools": False},
    )
    agent = Agent(name="helper", model=model, tools=[lookup], output_schema=Answer)
    events = await collect(Runner(agent=agent, app_name=APP), "go")
    assert [(e.content.role if e.content else None, e.is_final_response()) for e in events] == [
        ("model", False),
        ("user", False),
        ("model", True),
    ]
    assert events[2].content is not None
    assert events[2].content.parts[0].function_call is None
    assert Answer.model_validate_json(events[2].text) == Answer(city="Rome", temperature=30)


async def test_f5_transfer_happens_after_the_tool_responses():
    log: list[str] = []

    def note(x: str) -> dict[str, Any]:
        log.append("tool note")
        return {"noted": x}

    def expert_model(request: ModelRequest) -> str:
        log.append("expert model")
        return "expert here"

    model = ScriptedModel(
        [
            [
                FunctionCall(name="transfer_to_agent", args={"agent_name": "expert"}),
                FunctionCall(name="note", args={"x": "y"}),
            ],
            expert_model,
        ]
    )
    expert = Agent(name="expert", model=model)
    root = Agent(name="root", model=model, tools=[note], sub_agents=[expert])
    events = await collect(Runner(agent=root, app_name=APP), "go")
    assert [e.author for e in events] == ["root", "root", "expert"]
    assert [r.name for r in events[1].get_function_responses()] == ["transfer_to_agent", "note"]
    assert events[1].actions.transfer_to_agent == "expert"
    assert log == ["tool note", "expert model"]
    # The target continues the same invocation.
    assert len({e.invocation_id for e in events}) == 1


# -- F6 --------------------------------------------------------------------------------------


async def test_f6_each_request_is_rebuilt_from_the_stored_session():
    class Rewrite(Plugin):
        """Replaces the tool record before it is stored: only the session sees the change."""

        async def on_event(self, ctx: InvocationContext, event: Event) -> Event | None:
            responses = event.get_function_responses()
            if not responses:
                return None
            changed = FunctionResponse(
                name=responses[0].name, id=responses[0].id, response={"temperature": 99}
            )
            return event.model_copy(
                update={"content": Content(role="user", parts=[Part(function_response=changed)])}
            )

    def get_weather(city: str) -> dict[str, Any]:
        return {"temperature": 26}

    model = ScriptedModel([FunctionCall(name="get_weather", args={"city": "Paris"}), "ok"])
    runner = Runner(
        agent=Agent(name="helper", model=model, tools=[get_weather]),
        app_name=APP,
        plugins=[Rewrite()],
    )
    await collect(runner, "weather?")
    first, second = model.requests
    assert first is not second
    assert first.contents is not second.contents
    # The first request was not mutated by later steps.
    assert [c.text for c in first.contents] == ["weather?"]
    # The second request carries what the session stored, not what the tool returned.
    assert [r.response for r in responses_in(second)] == [{"temperature": 99}]


async def test_f6_what_the_store_did_not_keep_the_next_request_does_not_see():
    from rondo import InMemorySessionService

    class DropToolRecords(InMemorySessionService):
        async def append_event(self, session: Any, event: Event) -> Event:
            if event.get_function_responses():
                return event  # pretend nothing was stored
            return await super().append_event(session, event)

    model = ScriptedModel([FunctionCall(name="lookup", args={"city": "Paris"}), "ok"])
    runner = Runner(
        agent=Agent(name="helper", model=model, tools=[lookup]),
        app_name=APP,
        session_service=DropToolRecords(),
    )
    await collect(runner, "weather?")
    assert responses_in(model.requests[1]) == []


# -- F7 --------------------------------------------------------------------------------------


def test_f7_default_limit_is_500():
    assert RunConfig().max_llm_calls == 500
    assert issubclass(rondo.LlmCallsLimitExceeded, rondo.RondoError)


async def test_f7_max_llm_calls_raises_before_the_call_beyond_it():
    model = ScriptedModel([FunctionCall(name="lookup", args={"city": "Paris"})] * 5)
    runner = Runner(agent=Agent(name="helper", model=model, tools=[lookup]), app_name=APP)
    got: list[Event] = []

    async def drain() -> None:
        async with aclosing(
            runner.run_async(
                user_id=USER,
                session_id=SESSION,
                new_message="loop",
                run_config=RunConfig(max_llm_calls=2),
            )
        ) as events:
            async for event in events:
                got.append(event)

    with pytest.raises(rondo.LlmCallsLimitExceeded, match="max_llm_calls=2"):
        await drain()
    assert model.calls == 2
    assert len(got) == 4


async def test_f7_limit_counts_real_calls_across_transfers_not_before_model_replacements():
    replaced: list[int] = []

    def cached(ctx: CallbackContext, request: ModelRequest) -> ModelResponse | None:
        if not replaced:
            replaced.append(1)
            return ModelResponse(
                content=Content(
                    role="model",
                    parts=[Part(function_call=FunctionCall(name="lookup", args={"city": "Oslo"}))],
                )
            )
        return None

    model = ScriptedModel(
        [
            FunctionCall(name="transfer_to_agent", args={"agent_name": "expert"}),
            FunctionCall(name="lookup", args={"city": "Rome"}),
            "never reached",
        ]
    )
    expert = Agent(name="expert", model=model, tools=[lookup])
    root = Agent(
        name="root", model=model, tools=[lookup], sub_agents=[expert], before_model_callback=cached
    )
    runner = Runner(agent=root, app_name=APP)
    with pytest.raises(rondo.LlmCallsLimitExceeded):
        await collect(runner, "go", run_config=RunConfig(max_llm_calls=2))
    # One replaced response (not counted), then root's real call and the expert's real call.
    assert replaced == [1]
    assert model.calls == 2


async def test_f7_a_streamed_response_is_one_model_call():
    model = ScriptedModel([[chunk("a"), chunk("b"), chunk("c")]])
    runner = Runner(agent=Agent(name="helper", model=model), app_name=APP)
    events = await collect(
        runner, "go", run_config=RunConfig(streaming_mode="sse", max_llm_calls=1)
    )
    assert [(e.partial, e.text) for e in events][-1] == (False, "abc")
    assert model.calls == 1


async def test_f7_zero_or_less_means_unlimited():
    for limit in (0, -1):
        model = ScriptedModel([FunctionCall(name="lookup", args={"city": "Oslo"})] * 3 + ["done"])
        runner = Runner(agent=Agent(name="helper", model=model, tools=[lookup]), app_name=APP)
        events = await collect(
            runner, "go", run_config=RunConfig(max_llm_calls=limit), session_id=f"s{limit}"
        )
        assert model.calls == 4
        assert events[-1].text == "done"
