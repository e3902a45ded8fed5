"""SPEC D2: the engine seam. `run_invocation` is what every durable engine runs for an
invocation; running it again after any interruption ends in the same log."""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

from rondo import Agent, FunctionCall, Runner, ToolContext
from rondo.durable.engine import run_invocation
from rondo.sessions.memory import InMemorySessionService
from rondo.testing import ScriptedModel
from rondo.types import Content


def runner_for(service: InMemorySessionService, runs: list[str], script: list[Any]) -> Runner:
    def step(tool_context: ToolContext) -> str:
        """A step."""
        runs.append(tool_context.function_call_id or "")
        return "ok"

    return Runner(
        agent=Agent(name="agent", model=ScriptedModel(script), tools=[step]),
        app_name="app",
        session_service=service,
    )


CALL = FunctionCall(name="step", args={}, id="c-1")


async def test_d2_run_invocation_again_after_it_ended_changes_nothing() -> None:
    service = InMemorySessionService()
    runs: list[str] = []
    first = await run_invocation(
        runner_for(service, runs, [CALL, "done"]),
        user_id="u",
        session_id="s",
        message=Content.user("go"),
        key="k1",
    )
    assert first.text == "done"
    assert first.run_id == "run-k1"
    model = ScriptedModel([])
    again = await run_invocation(
        Runner(agent=Agent(name="agent", model=model), app_name="app", session_service=service),
        user_id="u",
        session_id="s",
        message=Content.user("go"),
        key="k1",
    )
    assert again == first
    assert model.calls == 0
    session = await service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert [e.author for e in session.events] == ["user", "agent", "agent", "agent"]
    assert runs == ["c-1"]


async def test_d2_run_invocation_again_after_an_interruption_continues_from_the_log() -> None:
    service = InMemorySessionService()
    runs: list[str] = []
    # An earlier attempt stored the message and the model's call, then died.
    runner = runner_for(service, runs, [CALL])
    await run_invocation(
        runner_for(service, runs, []), user_id="u", session_id="s", message=None, key="k2"
    )  # no message, nothing stored: nothing to do
    session = await service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert list(session.events) == []
    from rondo import Event

    await service.append_event(
        session,
        Event(
            author="user",
            id="msg-k2",
            invocation_id="inv-k2",
            run_id="run-k2",
            content=Content.user("go"),
        ),
    )
    async with aclosing(runner.run_async(user_id="u", session_id="s")) as events:
        async for _ in events:
            break  # the model event is stored; the process "dies" here
    outcome = await run_invocation(
        runner_for(service, runs, ["done"]),
        user_id="u",
        session_id="s",
        message=Content.user("go"),
        key="k2",
    )
    assert outcome.text == "done"
    assert outcome.invocation_id == "inv-k2"
    assert runs == ["c-1"]
    session = await service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert sum(1 for e in session.events if e.author == "user") == 1


class RecordingSteps:
    """A `DurableSteps` that records what the loop hands it, as an engine would."""

    def __init__(self) -> None:
        self.steps: list[str] = []
        self.passed = 0

    async def _stream(self, agent: str, responses: Any) -> Any:
        self.steps.append(f"model:{agent}")
        async for response in responses:
            self.passed += 1
            yield response

    def model_call(self, agent: str, model: str, responses: Any) -> Any:
        return self._stream(agent, responses)

    async def tool_call(self, tool: str, call_id: str, run: Any) -> Any:
        self.steps.append(f"tool:{tool}:{call_id}")
        return await run()


async def test_d2_every_model_call_and_tool_call_goes_through_the_engines_steps() -> None:
    from rondo import RunConfig
    from rondo.models.base import ModelResponse

    service = InMemorySessionService()
    runs: list[str] = []
    steps = RecordingSteps()
    calls = [FunctionCall(name="step", args={}, id=f"c-{n}") for n in (1, 2)]
    stream = [
        ModelResponse(content=Content.model("do"), partial=True),
        ModelResponse(content=Content.model("done")),
    ]
    runner = runner_for(service, runs, [calls, stream])
    config = RunConfig(durable_steps=steps, streaming_mode="sse")
    events = [
        e
        async for e in runner.run_async(
            user_id="u", session_id="s", new_message="go", run_config=config
        )
    ]
    # Hooks stay workflow code; the tool's run and the model's stream (partials too) are steps.
    assert steps.steps == ["model:agent", "tool:step:c-1", "tool:step:c-2", "model:agent"]
    assert steps.passed == 3
    assert [e.partial for e in events if e.author == "agent"][-2:] == [True, False]
    assert runs == ["c-1", "c-2"]


async def test_d2_a_tool_error_inside_a_step_is_still_an_error_response() -> None:
    from rondo import RunConfig

    def boom() -> str:
        """Fails."""
        raise RuntimeError("no luck")

    service = InMemorySessionService()
    steps = RecordingSteps()
    runner = Runner(
        agent=Agent(
            name="agent",
            model=ScriptedModel([FunctionCall(name="boom", args={}, id="c-9"), "sorry"]),
            tools=[boom],
        ),
        app_name="app",
        session_service=service,
    )
    config = RunConfig(durable_steps=steps)
    events = [
        e
        async for e in runner.run_async(
            user_id="u", session_id="s", new_message="go", run_config=config
        )
    ]
    (response,) = [r for e in events for r in e.get_function_responses()]
    assert response.response == {"error": "RuntimeError: no luck"}
    assert "tool:boom:c-9" in steps.steps
    assert events[-1].text == "sorry"
