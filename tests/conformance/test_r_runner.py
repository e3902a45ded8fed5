"""SPEC R — Runner, sessions, state (R1, R2, R3, R6, R7)."""

from __future__ import annotations

import asyncio
import inspect
from contextlib import aclosing
from typing import Any

import pytest

import rondo
import rondo.errors
from rondo import (
    Agent,
    Content,
    Event,
    FunctionCall,
    InMemorySessionService,
    Plugin,
    RunConfig,
    Runner,
    ToolContext,
)
from rondo.context import CallbackContext, InvocationContext
from rondo.lifecycle import ToolCallStart
from rondo.models import ModelRequest, ModelResponse
from rondo.testing import ScriptedModel, check_stream

from ._support import APP, SESSION, USER, StreamModel, chunk, collect, stored

# -- R1 --------------------------------------------------------------------------------------


async def test_r1_runner_gets_or_creates_session_and_stores_user_event_without_yielding_it():
    model = ScriptedModel(["hello back", "again"])
    agent = Agent(name="helper", model=model)
    service = InMemorySessionService()
    runner = Runner(agent=agent, app_name=APP, session_service=service)
    assert runner.app_name == APP
    assert runner.agent is agent
    assert runner.session_service is service

    assert await service.get_session(app_name=APP, user_id=USER, session_id=SESSION) is None
    events = await collect(runner, "hello")

    # The caller sees only the agent's records, never its own message back.
    assert [(e.author, e.content.role if e.content else None) for e in events] == [
        ("helper", "model")
    ]
    assert events[0].text == "hello back"
    session = await stored(runner)
    assert [e.author for e in session.events] == ["user", "helper"]
    user_event = session.events[0]
    assert user_event.content == Content.user("hello")
    assert user_event.invocation_id == events[0].invocation_id

    # The same session id gets the existing session: the history carries over.
    await collect(runner, "second")
    session = await stored(runner)
    assert [e.author for e in session.events] == ["user", "helper", "user", "helper"]
    assert [c.text for c in model.requests[1].contents] == ["hello", "hello back", "second"]


async def test_r1_on_event_runs_before_append_and_append_before_the_caller_sees_it():
    seen_by_plugin: list[tuple[str, bool]] = []

    class Watch(Plugin):
        async def on_event(self, ctx: InvocationContext, event: Event) -> Event | None:
            seen_by_plugin.append((event.id, any(e.id == event.id for e in ctx.session.events)))
            return None

    def lookup(city: str) -> dict[str, Any]:
        return {"city": city}

    model = ScriptedModel([FunctionCall(name="lookup", args={"city": "Paris"}), "done"])
    runner = Runner(
        agent=Agent(name="helper", model=model, tools=[lookup]), app_name=APP, plugins=[Watch()]
    )
    seen_by_caller: list[tuple[str, bool]] = []
    async with aclosing(
        runner.run_async(user_id=USER, session_id=SESSION, new_message="go")
    ) as events:
        async for event in events:
            session = await stored(runner)
            seen_by_caller.append((event.id, any(e.id == event.id for e in session.events)))

    assert len(seen_by_caller) == 3
    # on_event saw every event before it was stored; the caller saw each after it was stored.
    assert seen_by_plugin == [(eid, False) for eid, _ in seen_by_caller]
    assert all(was_stored for _, was_stored in seen_by_caller)


async def test_r1_partial_events_go_through_on_event_but_are_not_stored():
    seen: list[tuple[bool, str]] = []

    class Watch(Plugin):
        async def on_event(self, ctx: InvocationContext, event: Event) -> Event | None:
            seen.append((event.partial, event.text))
            return None

    model = ScriptedModel([[chunk("Hel"), chunk("lo")]])
    runner = Runner(agent=Agent(name="helper", model=model), app_name=APP, plugins=[Watch()])
    events = await collect(runner, "hi", run_config=RunConfig(streaming_mode="sse"))
    assert seen == [(True, "Hel"), (True, "lo"), (False, "Hello")]
    assert [(e.partial, e.text) for e in events] == seen
    session = await stored(runner)
    assert [(e.author, e.text) for e in session.events] == [("user", "hi"), ("helper", "Hello")]


async def test_r1_producer_does_not_continue_until_the_append_finished():
    log: list[str] = []

    class SlowStore(InMemorySessionService):
        async def append_event(self, session: Any, event: Event) -> Event:
            kind = "call" if event.get_function_calls() else event.author
            log.append(f"append-start {kind}")
            for _ in range(5):
                await asyncio.sleep(0)
            result = await super().append_event(session, event)
            log.append(f"append-end {kind}")
            return result

    def lookup(city: str) -> dict[str, Any]:
        log.append("tool")
        return {"city": city}

    def second(request: ModelRequest) -> str:
        log.append("model-2")
        return "done"

    model = ScriptedModel([FunctionCall(name="lookup", args={"city": "Paris"}), second])
    runner = Runner(
        agent=Agent(name="helper", model=model, tools=[lookup]),
        app_name=APP,
        session_service=SlowStore(),
    )
    await collect(runner, "go")
    assert log == [
        "append-start user",
        "append-end user",
        "append-start call",
        "append-end call",
        "tool",
        "append-start helper",
        "append-end helper",
        "model-2",
        "append-start helper",
        "append-end helper",
    ]


async def test_r1_an_event_replaced_by_on_event_is_what_is_stored_and_yielded():
    class Redact(Plugin):
        async def on_event(self, ctx: InvocationContext, event: Event) -> Event | None:
            if event.text == "secret":
                return event.model_copy(update={"content": Content.model("[redacted]")})
            return None

    runner = Runner(
        agent=Agent(name="helper", model=ScriptedModel(["secret"])),
        app_name=APP,
        plugins=[Redact()],
    )
    events = await collect(runner, "tell me")
    assert [e.text for e in events] == ["[redacted]"]
    session = await stored(runner)
    assert [e.text for e in session.events] == ["tell me", "[redacted]"]


def test_r1_duplicate_agent_names_fail_at_construction():
    model = ScriptedModel([])
    with pytest.raises(rondo.DuplicateAgentNameError, match="'worker'"):
        Agent(
            name="root",
            model=model,
            sub_agents=[
                Agent(name="worker", model=model),
                Agent(name="middle", sub_agents=[Agent(name="worker", model=model)]),
            ],
        )
    with pytest.raises(rondo.DuplicateAgentNameError, match="'root'"):
        Agent(name="root", model=model, sub_agents=[Agent(name="root", model=model)])
    # The author "user" is reserved for the user's messages.
    with pytest.raises(rondo.ConfigurationError, match="reserved"):
        Agent(name="user", model=model)
    assert issubclass(rondo.DuplicateAgentNameError, rondo.RondoError)


def test_r1_all_framework_errors_derive_from_rondo_error():
    classes = [
        obj
        for _, obj in inspect.getmembers(rondo.errors, inspect.isclass)
        if issubclass(obj, Exception) and obj.__module__ == "rondo.errors"
    ]
    assert len(classes) >= 18
    for cls in classes:
        assert issubclass(cls, rondo.RondoError), cls
    # The public names resolve to the same classes.
    for name in rondo.errors.__all__:
        assert getattr(rondo, name) is getattr(rondo.errors, name)
    from rondo.testing.scripted import ScriptedModel as _Scripted

    assert issubclass(rondo.ScriptExhaustedError, rondo.RondoError)
    assert _Scripted is ScriptedModel


def test_r1_runner_needs_an_agent_and_plugins_must_be_plugins():
    with pytest.raises(rondo.ConfigurationError):
        Runner(agent="not an agent")  # type: ignore[arg-type]
    with pytest.raises(rondo.ConfigurationError, match="Plugin"):
        Runner(agent=Agent(name="a", model=ScriptedModel([])), plugins=[object()])  # type: ignore[list-item]


# -- R2 --------------------------------------------------------------------------------------


async def test_r2_one_session_many_invocations_and_distinct_kinds_of_ids():
    def lookup(city: str) -> dict[str, Any]:
        return {"city": city}

    model = ScriptedModel(
        [
            FunctionCall(name="lookup", args={"city": "Paris"}),
            FunctionCall(name="lookup", args={"city": "Rome"}),
            "first answer",
            "second answer",
        ]
    )
    runner = Runner(agent=Agent(name="helper", model=model, tools=[lookup]), app_name=APP)
    first = await collect(runner, "one")
    second = await collect(runner, "two")

    # Two steps in the first invocation (5 events), one in the second.
    assert len(first) == 5
    assert len(second) == 1
    session = await stored(runner)
    assert len(session.events) == 1 + 5 + 1 + 1
    inv1 = {e.invocation_id for e in first}
    inv2 = {e.invocation_id for e in second}
    assert len(inv1) == 1
    assert len(inv2) == 1
    assert inv1 != inv2
    assert session.events[0].invocation_id in inv1
    assert session.events[6].invocation_id in inv2

    event_ids = [e.id for e in session.events]
    assert len(set(event_ids)) == len(event_ids)
    call_ids = [c.id for e in first for c in e.get_function_calls()]
    response_ids = [r.id for e in first for r in e.get_function_responses()]
    assert len(call_ids) == 2
    assert all(call_ids)
    assert len(set(call_ids)) == 2
    assert response_ids == call_ids
    all_invocations = inv1 | inv2
    for cid in call_ids:
        assert cid not in event_ids
        assert cid not in all_invocations
    assert not set(event_ids) & all_invocations


# -- R3 --------------------------------------------------------------------------------------


async def test_r3_state_delta_is_applied_when_the_event_is_appended():
    observed: list[tuple[bool, Any]] = []

    class Watch(Plugin):
        async def on_event(self, ctx: InvocationContext, event: Event) -> Event | None:
            if "color" in event.actions.state_delta:
                session = await stored(runner)
                observed.append((True, session.state.get("color")))
            return None

    def paint(tool_context: ToolContext) -> dict[str, Any]:
        tool_context.state["color"] = "blue"
        return {"ok": True}

    model = ScriptedModel([FunctionCall(name="paint"), "painted"])
    runner = Runner(
        agent=Agent(name="helper", model=model, tools=[paint]), app_name=APP, plugins=[Watch()]
    )
    async with aclosing(
        runner.run_async(user_id=USER, session_id=SESSION, new_message="paint")
    ) as events:
        async for event in events:
            if event.actions.state_delta:
                session = await stored(runner)
                observed.append((False, session.state.get("color")))
    # Before the append (on_event) the state has no value; right after it, it has.
    assert observed == [(True, None), (False, "blue")]


async def test_r3_app_user_temp_and_session_scopes():
    def remember(tool_context: ToolContext) -> dict[str, Any]:
        tool_context.state.update(
            {"plain": "s", "app:shared": "a", "user:pref": "u", "temp:scratch": "t"}
        )
        return {"ok": True}

    runner = Runner(
        agent=Agent(
            name="helper",
            model=ScriptedModel([FunctionCall(name="remember"), "ok"]),
            tools=[remember],
        ),
        app_name=APP,
    )
    events = await collect(runner, "go")
    tool_event = events[1]
    # temp: keys never reach the store.
    assert tool_event.actions.state_delta == {"plain": "s", "app:shared": "a", "user:pref": "u"}
    service = runner.session_service
    same = await stored(runner)
    assert same.state == {"plain": "s", "app:shared": "a", "user:pref": "u"}
    stored_event = next(e for e in same.events if e.id == tool_event.id)
    assert "temp:scratch" not in stored_event.actions.state_delta

    other_session = await service.create_session(app_name=APP, user_id=USER, session_id="s2")
    assert other_session.state == {"app:shared": "a", "user:pref": "u"}
    other_user = await service.create_session(app_name=APP, user_id="u2", session_id="s3")
    assert other_user.state == {"app:shared": "a"}
    other_app = await service.create_session(app_name="other-app", user_id=USER, session_id="s4")
    assert other_app.state == {}


async def test_r3_temp_state_lives_for_the_invocation_only():
    reads: list[Any] = []

    def write(tool_context: ToolContext) -> dict[str, Any]:
        tool_context.state["temp:scratch"] = "t"
        return {"ok": True}

    def read(tool_context: ToolContext) -> dict[str, Any]:
        reads.append(tool_context.state.get("temp:scratch"))
        return {"ok": True}

    model = ScriptedModel(
        [
            FunctionCall(name="write"),
            FunctionCall(name="read"),
            "first done",
            FunctionCall(name="read"),
            "second done",
        ]
    )
    runner = Runner(agent=Agent(name="helper", model=model, tools=[write, read]), app_name=APP)
    await collect(runner, "one")
    await collect(runner, "two")
    # Visible to a later step of the same invocation, gone in the next invocation.
    assert reads == ["t", None]
    session = await stored(runner)
    assert "temp:scratch" not in session.state
    assert all("temp:scratch" not in e.actions.state_delta for e in session.events)


# -- R6 --------------------------------------------------------------------------------------


async def test_r6_plugins_see_every_invocation_callbacks_only_their_agent():
    plugin_seen: list[str] = []
    root_cb_seen: list[str] = []

    class Watch(Plugin):
        async def before_model(
            self, ctx: CallbackContext, request: ModelRequest
        ) -> ModelResponse | None:
            plugin_seen.append(ctx.agent_name)
            return None

    def root_cb(ctx: CallbackContext, request: ModelRequest) -> None:
        root_cb_seen.append(ctx.agent_name)

    model = ScriptedModel(
        [
            "root answers",
            FunctionCall(name="transfer_to_agent", args={"agent_name": "expert"}),
            "expert answers",
        ]
    )
    expert = Agent(name="expert", model=model, disallow_transfer_to_parent=True)
    root = Agent(name="root", model=model, sub_agents=[expert], before_model_callback=root_cb)
    runner = Runner(agent=root, app_name=APP, plugins=[Watch()])
    await collect(runner, "one")
    await collect(runner, "two")
    assert plugin_seen == ["root", "root", "expert"]
    assert root_cb_seen == ["root", "root"]


async def test_r6_plugins_and_callbacks_can_replace_results():
    class Override(Plugin):
        async def after_tool(
            self, tool: Any, args: dict[str, Any], tool_context: ToolContext, result: dict[str, Any]
        ) -> dict[str, Any] | None:
            return {"temperature": 99, "by": "plugin"}

    def upper(ctx: CallbackContext, response: ModelResponse) -> ModelResponse | None:
        if response.content is not None and response.content.text:
            return ModelResponse(content=Content.model(response.content.text.upper()))
        return None

    def get_weather(city: str) -> dict[str, Any]:
        return {"temperature": 26}

    model = ScriptedModel([FunctionCall(name="get_weather", args={"city": "Paris"}), "warm"])
    runner = Runner(
        agent=Agent(name="helper", model=model, tools=[get_weather], after_model_callback=upper),
        app_name=APP,
        plugins=[Override()],
    )
    events = await collect(runner, "weather?")
    assert events[1].get_function_responses()[0].response == {"temperature": 99, "by": "plugin"}
    assert events[2].text == "WARM"


async def test_r6_plugins_and_callbacks_can_handle_errors():
    class Handle(Plugin):
        async def on_tool_error(
            self, tool: Any, args: dict[str, Any], tool_context: ToolContext, error: Exception
        ) -> dict[str, Any] | None:
            return {"handled": str(error)}

    def recover(ctx: CallbackContext, request: ModelRequest, error: Exception) -> ModelResponse:
        return ModelResponse(content=Content.model(f"recovered from {error}"))

    def flaky() -> dict[str, Any]:
        raise RuntimeError("disk on fire")

    model = ScriptedModel([FunctionCall(name="flaky"), RuntimeError("model down")])
    runner = Runner(
        agent=Agent(name="helper", model=model, tools=[flaky], on_model_error_callback=recover),
        app_name=APP,
        plugins=[Handle()],
    )
    events = await collect(runner, "go")
    assert events[1].get_function_responses()[0].response == {"handled": "disk on fire"}
    assert events[2].text == "recovered from model down"


def test_r6_non_callable_callback_fails_at_construction():
    model = ScriptedModel([])
    for kwarg in (
        "before_model_callback",
        "after_model_callback",
        "on_model_error_callback",
        "before_tool_callback",
        "after_tool_callback",
        "on_tool_error_callback",
        "before_agent_callback",
        "after_agent_callback",
    ):
        with pytest.raises(rondo.InvalidCallbackError, match=kwarg):
            Agent(name="a", model=model, **{kwarg: 42})
        with pytest.raises(rondo.InvalidCallbackError, match=kwarg):
            Agent(name="a", model=model, **{kwarg: [lambda *a: None, "not callable"]})
    with pytest.raises(rondo.InvalidCallbackError, match="instruction"):
        Agent(name="a", model=model, instruction=42)  # type: ignore[arg-type]
    assert issubclass(rondo.InvalidCallbackError, TypeError)
    assert issubclass(rondo.InvalidCallbackError, rondo.RondoError)


# -- R7 --------------------------------------------------------------------------------------


def _slow_tool_agent(log: list[str], model: Any) -> Agent:
    def work(job: str) -> dict[str, Any]:
        log.append(f"tool {job}")
        return {"done": job}

    return Agent(name="helper", model=model, tools=[work])


async def test_r7_consumer_that_stops_after_the_model_event_runs_no_tool():
    log: list[str] = []
    model = ScriptedModel([FunctionCall(name="work", args={"job": "a"}), "done"])
    runner = Runner(agent=_slow_tool_agent(log, model), app_name=APP)
    got: list[Event] = []
    async with aclosing(
        runner.run_async(user_id=USER, session_id=SESSION, new_message="go")
    ) as events:
        async for event in events:
            got.append(event)
            break
    for _ in range(10):
        await asyncio.sleep(0)
    assert [c.name for c in got[0].get_function_calls()] == ["work"]
    assert log == []
    assert model.calls == 1


async def test_r7_consumer_that_breaks_without_closing_pulls_nothing_more():
    log: list[str] = []
    model = ScriptedModel([FunctionCall(name="work", args={"job": "a"}), "done"])
    runner = Runner(agent=_slow_tool_agent(log, model), app_name=APP)
    stream = runner.run_async(user_id=USER, session_id=SESSION, new_message="go")
    async for _event in stream:
        break
    for _ in range(10):
        await asyncio.sleep(0)
    assert log == []
    assert model.calls == 1
    await stream.aclose()
    assert log == []


async def test_r7_consumer_that_stops_after_the_tool_event_makes_no_further_model_call():
    log: list[str] = []
    model = ScriptedModel([FunctionCall(name="work", args={"job": "a"}), "done"])
    runner = Runner(agent=_slow_tool_agent(log, model), app_name=APP)
    async with aclosing(
        runner.run_async(user_id=USER, session_id=SESSION, new_message="go")
    ) as events:
        async for event in events:
            if event.get_function_responses():
                break
    assert log == ["tool a"]
    assert model.calls == 1
    session = await stored(runner)
    assert len(session.events) == 3


def test_r7_sync_consumer_that_stops_stops_the_run():
    log: list[str] = []
    model = ScriptedModel([FunctionCall(name="work", args={"job": "a"}), "done"])
    runner = Runner(agent=_slow_tool_agent(log, model), app_name=APP)
    events = runner.run(user_id=USER, session_id=SESSION, new_message="go")
    first = next(iter(events))
    events.close()  # type: ignore[attr-defined]
    assert first.get_function_calls()[0].name == "work"
    assert log == []
    assert model.calls == 1


async def test_r7_cancelling_the_consumer_cancels_in_flight_tools():
    started = asyncio.Event()
    cancelled: list[str] = []
    finished: list[str] = []

    async def wait_forever(name: str) -> dict[str, Any]:
        try:
            if name == "b":
                started.set()
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(name)
            raise
        finished.append(name)
        return {}

    for calls in (
        [FunctionCall(name="wait_forever", args={"name": "b"})],
        [
            FunctionCall(name="wait_forever", args={"name": "a"}),
            FunctionCall(name="wait_forever", args={"name": "b"}),
        ],
    ):
        started.clear()
        cancelled.clear()
        model = ScriptedModel([calls, "never"])
        runner = Runner(agent=Agent(name="helper", model=model, tools=[wait_forever]), app_name=APP)
        consumer = asyncio.create_task(collect(runner, "go"))
        await asyncio.wait_for(started.wait(), 10)
        await asyncio.sleep(0)
        consumer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await consumer
        assert sorted(cancelled) == sorted(c.args["name"] for c in calls)
        assert finished == []
        assert model.calls == 1
        session = await stored(runner)
        # The model event was stored; no tool response was.
        assert [e.author for e in session.events] == ["user", "helper"]


async def test_r7_cancelling_the_consumer_cancels_an_in_flight_model_call():
    started = asyncio.Event()
    cancelled: list[bool] = []

    async def hang(request: ModelRequest, stream: bool):
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        yield ModelResponse(content=Content.model("never"))

    runner = Runner(agent=Agent(name="helper", model=StreamModel(hang)), app_name=APP)
    consumer = asyncio.create_task(collect(runner, "go"))
    await asyncio.wait_for(started.wait(), 10)
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer
    assert cancelled == [True]
    session = await stored(runner)
    assert [e.author for e in session.events] == ["user"]


async def test_r7_a_lifecycle_consumer_that_stops_mid_batch_leaves_no_tool_running():
    started: list[str] = []
    finished: list[str] = []

    async def job(tag: str) -> dict[str, Any]:
        started.append(tag)
        await asyncio.sleep(0)
        finished.append(tag)
        return {"tag": tag}

    model = ScriptedModel(
        [[FunctionCall(name="job", args={"tag": t}, id=f"c-{t}") for t in "abc"], "done"]
    )
    runner = Runner(agent=Agent(name="helper", model=model, tools=[job]), app_name=APP)
    before = set(asyncio.all_tasks())
    collected: list[Any] = []
    async with aclosing(
        runner.stream_async(user_id=USER, session_id=SESSION, new_message="go")
    ) as events:
        async for event in events:
            collected.append(event)
            if isinstance(event, ToolCallStart):
                break
    check_stream(collected, completed=False)
    assert collected[-1].call_id == "c-a"
    for _ in range(10):
        await asyncio.sleep(0)
    # The calls whose start was never delivered never ran; nothing runs after the stop.
    assert "b" not in started
    assert "c" not in started
    assert finished == []
    assert model.calls == 1
    assert set(asyncio.all_tasks()) <= before
