"""SPEC T — tools (T1–T6)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Literal

import pytest

import rondo
from rondo import (
    Agent,
    Event,
    FunctionCall,
    FunctionTool,
    LongRunningFunctionTool,
    Part,
    Plugin,
    Runner,
    ToolContext,
    tool,
)
from rondo.artifacts import InMemoryArtifactService
from rondo.memory import InMemoryMemoryService
from rondo.testing import ScriptedModel

from ._support import APP, collect, response_message, stored


def _responses(event: Event) -> list[dict[str, Any]]:
    return [r.response for r in event.get_function_responses()]


# -- T1 --------------------------------------------------------------------------------------


def forecast(
    city: str, days: int = 1, units: Literal["c", "f"] = "c", ctx: ToolContext | None = None
) -> dict[str, Any]:
    """Forecast the weather.

    Args:
        city: The city's name.
        days: How many days.
    """
    assert ctx is not None
    return {"city": city, "days": days, "units": units, "call": ctx.function_call_id}


def test_t1_name_description_and_schema_come_from_the_function():
    declaration = FunctionTool(forecast).declaration()
    assert declaration.name == "forecast"
    assert declaration.description == "Forecast the weather."
    assert declaration.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city's name."},
            "days": {"type": "integer", "default": 1, "description": "How many days."},
            "units": {"type": "string", "enum": ["c", "f"], "default": "c"},
        },
        "required": ["city"],
        "additionalProperties": False,
    }
    # Names and descriptions can be overridden; the decorator builds the same tool.
    renamed = FunctionTool(forecast, name="weather_forecast", description="Custom.")
    assert renamed.declaration().name == "weather_forecast"
    assert renamed.declaration().description == "Custom."

    @tool(name="decorated")
    def something(x: int) -> int:
        """Doubles x."""
        return 2 * x

    assert isinstance(something, FunctionTool)
    assert something.declaration().name == "decorated"
    assert something.declaration().description == "Doubles x."
    assert something(4) == 8


async def test_t1_sync_and_async_functions_run_with_the_context_injected():
    threads: dict[str, str] = {}

    def sync_tool(city: str, tool_context: ToolContext) -> dict[str, Any]:
        threads["sync"] = threading.current_thread().name
        return {"city": city, "call": tool_context.function_call_id}

    async def async_tool(count: int, context: ToolContext) -> int:
        threads["async"] = threading.current_thread().name
        return count * 2

    assert "tool_context" not in FunctionTool(sync_tool).declaration().parameters["properties"]
    assert list(FunctionTool(async_tool).declaration().parameters["properties"]) == ["count"]

    model = ScriptedModel(
        [
            [
                FunctionCall(name="sync_tool", args={"city": "Oslo"}, id="c-sync"),
                FunctionCall(name="async_tool", args={"count": "21"}, id="c-async"),
                FunctionCall(name="forecast", args={"city": "Rome", "days": 2.0}, id="c-fc"),
            ],
            "done",
        ]
    )
    agent = Agent(name="helper", model=model, tools=[sync_tool, async_tool, forecast])
    events = await collect(Runner(agent=agent, app_name=APP), "go")
    assert _responses(events[1]) == [
        {"city": "Oslo", "call": "c-sync"},
        {"result": 42},  # "21" validated in lax mode; a non-dict result is wrapped
        {"city": "Rome", "days": 2, "units": "c", "call": "c-fc"},
    ]
    # Sync functions run in worker threads, never on the event loop's thread.
    assert threads["sync"] != threading.current_thread().name
    assert threads["async"] == threading.current_thread().name


class Opaque:
    """A type with no JSON schema."""


def test_t1_a_tool_that_cannot_be_described_fails_at_construction():
    def variadic(*cities: str) -> None: ...

    def keywords(**options: Any) -> None: ...

    def positional(city: str, /) -> None: ...

    def opaque(thing: Opaque) -> None: ...

    cases = [
        (variadic, "variadic parameter 'cities'"),
        (keywords, "variadic parameter 'options'"),
        (positional, "positional-only parameter 'city'"),
        (opaque, "'opaque'.*cannot be described as JSON schema"),
        (lambda x: x, "a lambda needs an explicit name="),
    ]
    for func, message in cases:
        with pytest.raises(rondo.ToolDefinitionError, match=message):
            FunctionTool(func)
    # The same errors surface when the agent is built, not in the middle of a run.
    with pytest.raises(rondo.ToolDefinitionError, match="variadic"):
        Agent(name="helper", model=ScriptedModel([]), tools=[variadic])
    with pytest.raises(rondo.ToolDefinitionError, match="not a tool"):
        Agent(name="helper", model=ScriptedModel([]), tools=[42])  # type: ignore[list-item]
    with pytest.raises(rondo.ConfigurationError, match="several tools named"):
        Agent(name="helper", model=ScriptedModel([]), tools=[forecast, forecast])
    assert issubclass(rondo.ToolDefinitionError, rondo.ConfigurationError)
    assert issubclass(rondo.ToolDefinitionError, rondo.RondoError)


# -- T2 --------------------------------------------------------------------------------------


async def test_t2_eight_parallel_sync_tools_run_concurrently():
    barrier = threading.Barrier(8, timeout=30)
    spans: dict[int, tuple[float, float, int]] = {}

    def slow_io(i: int) -> dict[str, Any]:
        started = time.monotonic()
        # Every call waits here until all eight are running at once: sequential execution
        # would break the barrier (an error response) instead of passing it.
        barrier.wait()
        spans[i] = (started, time.monotonic(), threading.get_ident())
        return {"i": i}

    calls = [FunctionCall(name="slow_io", args={"i": i}, id=f"c{i}") for i in range(8)]
    model = ScriptedModel([calls, "done"])
    events = await collect(
        Runner(agent=Agent(name="helper", model=model, tools=[slow_io]), app_name=APP), "go"
    )
    assert _responses(events[1]) == [{"i": i} for i in range(8)]
    assert len({thread for _, _, thread in spans.values()}) == 8
    # Every call started before any call finished: the eight intervals overlap.
    assert max(s for s, _, _ in spans.values()) <= min(e for _, e, _ in spans.values())


async def test_t2_results_merge_in_call_order_regardless_of_completion_order():
    finished: list[str] = []
    b_done = asyncio.Event()

    async def first(tool_context: ToolContext) -> dict[str, Any]:
        await b_done.wait()  # only completes if `second` runs concurrently
        finished.append("first")
        return {"name": "first"}

    async def second(tool_context: ToolContext) -> dict[str, Any]:
        finished.append("second")
        b_done.set()
        return {"name": "second"}

    model = ScriptedModel(
        [[FunctionCall(name="first", id="a"), FunctionCall(name="second", id="b")], "done"]
    )
    events = await collect(
        Runner(agent=Agent(name="helper", model=model, tools=[first, second]), app_name=APP), "go"
    )
    assert finished == ["second", "first"]
    assert [(r.id, r.response) for r in events[1].get_function_responses()] == [
        ("a", {"name": "first"}),
        ("b", {"name": "second"}),
    ]


async def test_t2_state_deltas_deep_merge_and_the_later_call_wins():
    a_may_finish = asyncio.Event()

    async def set_a(tool_context: ToolContext) -> dict[str, Any]:
        await a_may_finish.wait()  # A finishes last, yet B (later in call order) wins
        tool_context.state["city"] = "Hangzhou"
        tool_context.state["prefs"] = {"unit": "C", "nested": {"x": 1}}
        return {}

    async def set_b(tool_context: ToolContext) -> dict[str, Any]:
        tool_context.state["city"] = "Shanghai"
        tool_context.state["prefs"] = {"language": "zh", "nested": {"y": 2}}
        a_may_finish.set()
        return {}

    model = ScriptedModel(
        [[FunctionCall(name="set_a", id="a"), FunctionCall(name="set_b", id="b")], "done"]
    )
    runner = Runner(agent=Agent(name="helper", model=model, tools=[set_a, set_b]), app_name=APP)
    events = await collect(runner, "go")
    assert events[1].actions.state_delta == {
        "city": "Shanghai",
        "prefs": {"unit": "C", "language": "zh", "nested": {"x": 1, "y": 2}},
    }
    session = await stored(runner)
    assert session.state["city"] == "Shanghai"


# -- T3 --------------------------------------------------------------------------------------


def get_weather(city: str, days: int = 1) -> dict[str, Any]:
    """Weather for a city."""
    if city == "Atlantis":
        raise LookupError("no weather station in Atlantis")
    return {"city": city, "days": days}


async def _one_call(call: FunctionCall, *tools: Any) -> tuple[dict[str, Any], ScriptedModel]:
    model = ScriptedModel([call, "I will tell the user"])
    agent = Agent(name="helper", model=model, tools=list(tools) or [get_weather])
    events = await collect(Runner(agent=agent, app_name=APP), "go")
    # The run continues: the model sees the error response and answers.
    assert model.calls == 2
    assert events[-1].text == "I will tell the user"
    seen = [p.function_response for c in model.requests[1].contents for p in c.parts]
    assert [r.response for r in seen if r is not None] == _responses(events[1])
    return _responses(events[1])[0], model


async def test_t3_a_tool_that_raises_becomes_an_error_response():
    response, _ = await _one_call(FunctionCall(name="get_weather", args={"city": "Atlantis"}))
    assert set(response) == {"error"}
    assert "no weather station in Atlantis" in response["error"]
    assert "LookupError" in response["error"]


async def test_t3_an_unknown_tool_becomes_an_error_response_listing_the_tools():
    response, _ = await _one_call(FunctionCall(name="get_wether", args={"city": "Oslo"}))
    assert response == {"error": "Tool 'get_wether' not found. Available tools: get_weather"}


async def test_t3_invalid_arguments_become_an_error_response_naming_the_argument():
    wrong_type, _ = await _one_call(
        FunctionCall(name="get_weather", args={"city": "Oslo", "days": "several"})
    )
    assert wrong_type["error"].startswith("Invalid arguments: ")
    assert "'days'" in wrong_type["error"]
    assert "several" in wrong_type["error"]

    missing, _ = await _one_call(FunctionCall(name="get_weather", args={"days": 2}))
    assert missing == {"error": "Invalid arguments: missing required argument 'city'"}

    unknown, _ = await _one_call(
        FunctionCall(name="get_weather", args={"city": "Oslo", "country": "NO"})
    )
    assert unknown == {
        "error": "Invalid arguments: unknown argument 'country'; allowed arguments: city, days"
    }


async def test_t3_transfer_to_an_agent_outside_the_enum_is_an_invalid_arguments_response():
    model = ScriptedModel(
        [FunctionCall(name="transfer_to_agent", args={"agent_name": "ghost"}), "ok, no transfer"]
    )
    root = Agent(
        name="root",
        model=model,
        sub_agents=[Agent(name="billing", model=model), Agent(name="support", model=model)],
    )
    events = await collect(Runner(agent=root, app_name=APP), "go")
    error = _responses(events[1])[0]["error"]
    assert "'ghost'" in error
    assert "billing, support" in error
    assert events[1].actions.transfer_to_agent is None
    assert events[-1].text == "ok, no transfer"
    assert [e.author for e in events] == ["root", "root", "root"]


async def test_t3_an_unknown_transfer_target_set_by_code_ends_the_run():
    def reroute(tool_context: ToolContext) -> dict[str, Any]:
        tool_context.actions.transfer_to_agent = "ghost"
        return {}

    model = ScriptedModel([FunctionCall(name="reroute"), "never"])
    root = Agent(
        name="root", model=model, tools=[reroute], sub_agents=[Agent(name="billing", model=model)]
    )
    with pytest.raises(rondo.TransferError, match=r"'ghost'.*billing"):
        await collect(Runner(agent=root, app_name=APP), "go")
    assert model.calls == 1


# -- T4 --------------------------------------------------------------------------------------


class ToolRecorder(Plugin):
    def __init__(self, log: list[str], answers: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.log = log
        self.answers = answers or {}

    async def before_tool(
        self, tool: Any, args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        self.log.append(f"plugin.before_tool {args}")
        return self.answers.get("before_tool")

    async def after_tool(
        self, tool: Any, args: dict[str, Any], tool_context: ToolContext, result: dict[str, Any]
    ) -> dict[str, Any] | None:
        self.log.append(f"plugin.after_tool {result}")
        return self.answers.get("after_tool")

    async def on_tool_error(
        self, tool: Any, args: dict[str, Any], tool_context: ToolContext, error: Exception
    ) -> dict[str, Any] | None:
        self.log.append(f"plugin.on_tool_error {type(error).__name__}")
        return self.answers.get("on_tool_error")


def _tool_callbacks(log: list[str], answers: dict[str, Any] | None = None) -> dict[str, Any]:
    answers = answers or {}

    def before(tool: Any, args: dict[str, Any], tool_context: ToolContext) -> Any:
        log.append(f"agent.before_tool {args}")
        return answers.get("before_tool")

    async def after(
        tool: Any, args: dict[str, Any], tool_context: ToolContext, result: dict[str, Any]
    ) -> Any:
        log.append(f"agent.after_tool {result}")
        return answers.get("after_tool")

    def on_error(
        tool: Any, args: dict[str, Any], tool_context: ToolContext, error: Exception
    ) -> Any:
        log.append(f"agent.on_tool_error {type(error).__name__}")
        return answers.get("on_tool_error")

    return {
        "before_tool_callback": before,
        "after_tool_callback": after,
        "on_tool_error_callback": on_error,
    }


async def _run_tool(
    log: list[str],
    call: FunctionCall,
    plugin_answers: dict[str, Any] | None = None,
    agent_answers: dict[str, Any] | None = None,
) -> list[Event]:
    def measure(city: str) -> dict[str, Any]:
        log.append(f"run {city}")
        if city == "Atlantis":
            raise LookupError("sunk")
        return {"city": city}

    model = ScriptedModel([call, "done"])
    agent = Agent(
        name="helper", model=model, tools=[measure], **_tool_callbacks(log, agent_answers)
    )
    runner = Runner(agent=agent, app_name=APP, plugins=[ToolRecorder(log, plugin_answers)])
    return await collect(runner, "go")


async def test_t4_tool_hook_order():
    log: list[str] = []
    events = await _run_tool(log, FunctionCall(name="measure", args={"city": "Oslo"}))
    assert log == [
        "plugin.before_tool {'city': 'Oslo'}",
        "agent.before_tool {'city': 'Oslo'}",
        "run Oslo",
        "plugin.after_tool {'city': 'Oslo'}",
        "agent.after_tool {'city': 'Oslo'}",
    ]
    assert _responses(events[1]) == [{"city": "Oslo"}]


async def test_t4_tool_hook_order_on_error():
    log: list[str] = []
    events = await _run_tool(
        log,
        FunctionCall(name="measure", args={"city": "Atlantis"}),
        agent_answers={"on_tool_error": {"fallback": True}},
    )
    assert log == [
        "plugin.before_tool {'city': 'Atlantis'}",
        "agent.before_tool {'city': 'Atlantis'}",
        "run Atlantis",
        "plugin.on_tool_error LookupError",
        "agent.on_tool_error LookupError",
        "plugin.after_tool {'fallback': True}",
        "agent.after_tool {'fallback': True}",
    ]
    assert _responses(events[1]) == [{"fallback": True}]


async def test_t4_before_tool_result_skips_the_run_but_not_after_tool():
    log: list[str] = []
    events = await _run_tool(
        log,
        FunctionCall(name="measure", args={"city": "Oslo"}),
        agent_answers={"before_tool": {"cached": 1}},
    )
    assert log == [
        "plugin.before_tool {'city': 'Oslo'}",
        "agent.before_tool {'city': 'Oslo'}",
        "plugin.after_tool {'cached': 1}",
        "agent.after_tool {'cached': 1}",
    ]
    assert _responses(events[1]) == [{"cached": 1}]

    # A plugin's result short-circuits the agent's before_tool as well.
    log.clear()
    events = await _run_tool(
        log,
        FunctionCall(name="measure", args={"city": "Oslo"}),
        plugin_answers={"before_tool": {"from": "plugin"}},
    )
    assert log == [
        "plugin.before_tool {'city': 'Oslo'}",
        "plugin.after_tool {'from': 'plugin'}",
        "agent.after_tool {'from': 'plugin'}",
    ]
    assert _responses(events[1]) == [{"from": "plugin"}]


async def test_t4_a_plugin_after_tool_result_short_circuits_the_agents():
    log: list[str] = []
    events = await _run_tool(
        log,
        FunctionCall(name="measure", args={"city": "Oslo"}),
        plugin_answers={"after_tool": {"rewritten": True}},
    )
    assert log[-1] == "plugin.after_tool {'city': 'Oslo'}"
    assert not any(entry.startswith("agent.after_tool") for entry in log)
    assert _responses(events[1]) == [{"rewritten": True}]


async def test_t4_to_change_arguments_mutate_them_and_return_none():
    seen: list[Any] = []

    def fix_args(tool: Any, args: dict[str, Any], tool_context: ToolContext) -> None:
        # The model used a wrong argument name: fix it in place before validation.
        if "town" in args:
            args["city"] = {"杭州": "Hangzhou"}.get(args.pop("town"), "?")

    def measure(city: str) -> dict[str, Any]:
        seen.append(city)
        return {"city": city}

    model = ScriptedModel([FunctionCall(name="measure", args={"town": "杭州"}), "done"])
    agent = Agent(name="helper", model=model, tools=[measure], before_tool_callback=fix_args)
    runner = Runner(agent=agent, app_name=APP)
    events = await collect(runner, "go")
    assert seen == ["Hangzhou"]
    assert _responses(events[1]) == [{"city": "Hangzhou"}]
    # The stored call event keeps what the model sent: callbacks edit their own copy.
    assert events[0].get_function_calls()[0].args == {"town": "杭州"}
    session = await stored(runner)
    assert session.events[1].get_function_calls()[0].args == {"town": "杭州"}


async def test_t4_after_tool_sees_error_responses_and_may_replace_them():
    seen: list[dict[str, Any]] = []

    def soften(
        tool: Any, args: dict[str, Any], tool_context: ToolContext, result: dict[str, Any]
    ) -> dict[str, Any] | None:
        seen.append(result)
        if "error" in result:
            return {"hint": "ask for a city"}
        return None

    model = ScriptedModel([FunctionCall(name="get_weather", args={"days": 2}), "done"])
    agent = Agent(name="helper", model=model, tools=[get_weather], after_tool_callback=soften)
    events = await collect(Runner(agent=agent, app_name=APP), "go")
    assert seen == [{"error": "Invalid arguments: missing required argument 'city'"}]
    assert _responses(events[1]) == [{"hint": "ask for a city"}]


# -- T5 --------------------------------------------------------------------------------------


async def test_t5_a_long_running_tool_returning_none_has_no_response_yet():
    started: list[str] = []

    def start_export(table: str) -> None:
        started.append(table)
        return None

    export = LongRunningFunctionTool(start_export)
    model = ScriptedModel(
        [FunctionCall(name="start_export", args={"table": "users"}, id="exp-1"), "export done"]
    )
    runner = Runner(agent=Agent(name="helper", model=model, tools=[export]), app_name=APP)
    events = await collect(runner, "export users")
    assert started == ["users"]
    assert len(events) == 1
    assert events[0].long_running_tool_ids == {"exp-1"}
    session = await stored(runner)
    assert [(p.call_id, p.tool_name, p.kind) for p in session.pending] == [
        ("exp-1", "start_export", "long_running")
    ]
    # The result arrives later, as the user's function response; the run resumes.
    later = await collect(runner, response_message("start_export", {"rows": 1200}, "exp-1"))
    assert [e.text for e in later] == ["export done"]
    assert later[0].run_id == events[0].run_id
    seen = [p.function_response for c in model.requests[1].contents for p in c.parts]
    assert [r.response for r in seen if r is not None] == [{"rows": 1200}]
    session = await stored(runner)
    assert session.pending == []


async def test_t5_a_long_running_tool_may_answer_at_once_and_a_normal_none_is_a_result():
    export = LongRunningFunctionTool(lambda table: {"status": "queued"}, name="start_export")

    def fire_and_forget(message: str) -> None:
        return None

    model = ScriptedModel(
        [
            [
                FunctionCall(name="start_export", args={"table": "t"}, id="a"),
                FunctionCall(name="fire_and_forget", args={"message": "m"}, id="b"),
            ],
            "ok",
        ]
    )
    agent = Agent(name="helper", model=model, tools=[export, fire_and_forget])
    events = await collect(Runner(agent=agent, app_name=APP), "go")
    assert [(r.id, r.response) for r in events[1].get_function_responses()] == [
        ("a", {"status": "queued"}),
        ("b", {"result": None}),
    ]
    assert events[0].long_running_tool_ids == {"a"}


async def test_t5_streaming_tools_yield_chunks_aggregated_in_order():
    async def count_up(n: int):
        for i in range(n):
            yield {"i": i}

    model = ScriptedModel([FunctionCall(name="count_up", args={"n": 3}), "counted"])
    agent = Agent(name="helper", model=model, tools=[FunctionTool(count_up)])
    events = await collect(Runner(agent=agent, app_name=APP), "go")
    assert _responses(events[1]) == [{"result": [{"i": 0}, {"i": 1}, {"i": 2}]}]


# -- T6 --------------------------------------------------------------------------------------


async def test_t6_tool_context_ids_state_and_actions():
    seen: dict[str, Any] = {}

    def inspect_ctx(tool_context: ToolContext) -> dict[str, Any]:
        seen["call_id"] = tool_context.function_call_id
        seen["agent"] = tool_context.agent_name
        seen["invocation"] = tool_context.invocation_id
        seen["greeting"] = tool_context.state.get("greeting")
        tool_context.state["visits"] = 1
        tool_context.actions.escalate = True
        return {"ok": True}

    model = ScriptedModel([FunctionCall(name="inspect_ctx", id="ctx-1"), "done"])
    runner = Runner(agent=Agent(name="helper", model=model, tools=[inspect_ctx]), app_name=APP)
    await runner.session_service.create_session(
        app_name=APP, user_id="u1", session_id="s1", state={"greeting": "hello"}
    )
    events = await collect(runner, "go")
    assert seen == {
        "call_id": "ctx-1",
        "agent": "helper",
        "invocation": events[0].invocation_id,
        "greeting": "hello",
    }
    assert events[1].actions.state_delta == {"visits": 1}
    assert events[1].actions.escalate is True
    session = await stored(runner)
    assert session.state == {"greeting": "hello", "visits": 1}


async def test_t6_skip_summarization_ends_the_turn_with_the_tool_result():
    def report(tool_context: ToolContext) -> dict[str, Any]:
        tool_context.actions.skip_summarization = True
        return {"report": "final numbers"}

    model = ScriptedModel([FunctionCall(name="report"), "never"])
    events = await collect(
        Runner(agent=Agent(name="helper", model=model, tools=[report]), app_name=APP), "go"
    )
    assert len(events) == 2
    assert events[1].actions.skip_summarization is True
    assert events[1].is_final_response()
    assert model.calls == 1


async def test_t6_transfer_through_actions():
    def route(tool_context: ToolContext) -> dict[str, Any]:
        tool_context.actions.transfer_to_agent = "billing"
        return {"routed": True}

    model = ScriptedModel([FunctionCall(name="route"), "billing here"])
    billing = Agent(name="billing", model=model)
    root = Agent(name="root", model=model, tools=[route], sub_agents=[billing])
    events = await collect(Runner(agent=root, app_name=APP), "go")
    assert [e.author for e in events] == ["root", "root", "billing"]
    assert events[1].actions.transfer_to_agent == "billing"
    assert events[2].text == "billing here"


async def test_t6_artifacts_and_memory_search():
    artifacts = InMemoryArtifactService()
    memory = InMemoryMemoryService()
    found: dict[str, Any] = {}

    async def archive(text: str, tool_context: ToolContext) -> dict[str, Any]:
        v0 = await tool_context.save_artifact("notes.txt", Part(text=text))
        v1 = await tool_context.save_artifact("notes.txt", Part(text=text + "!"))
        loaded = await tool_context.load_artifact("notes.txt")
        first = await tool_context.load_artifact("notes.txt", version=0)
        found["versions"] = (v0, v1)
        found["loaded"] = (loaded.text if loaded else None, first.text if first else None)
        found["keys"] = await tool_context.list_artifacts()
        result = await tool_context.search_memory("espresso")
        found["memories"] = [m.content.text for m in result.memories]
        return {"saved": v1}

    model = ScriptedModel([FunctionCall(name="archive", args={"text": "hi"}), "archived"])
    runner = Runner(
        agent=Agent(name="helper", model=model, tools=[archive]),
        app_name=APP,
        artifact_service=artifacts,
        memory_service=memory,
    )
    old = await runner.session_service.create_session(app_name=APP, user_id="u1", session_id="old")
    await runner.session_service.append_event(
        old, Event(author="user", content=rondo.Content.user("I like espresso"))
    )
    await memory.add_session_to_memory(old)
    events = await collect(runner, "go")
    assert found == {
        "versions": (0, 1),
        "loaded": ("hi!", "hi"),
        "keys": ["notes.txt"],
        "memories": ["I like espresso"],
    }
    assert events[1].actions.artifact_delta == {"notes.txt": 1}


async def test_t6_tool_context_without_services_fails_clearly():
    async def needs_services(tool_context: ToolContext) -> dict[str, Any]:
        await tool_context.search_memory("x")
        return {}

    model = ScriptedModel([FunctionCall(name="needs_services"), "ok"])
    events = await collect(
        Runner(agent=Agent(name="helper", model=model, tools=[needs_services]), app_name=APP), "go"
    )
    assert "no memory service" in _responses(events[1])[0]["error"]
