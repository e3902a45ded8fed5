"""SPEC D3: timeouts and faults in the loop — tools that hang or raise, models that hang or
fail. A fault either becomes a response the model reacts to (tools) or ends the run with a
`RondoError` (models); either way the stored session is consistent and a resume completes it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from rondo import (
    Agent,
    Event,
    FunctionCall,
    FunctionTool,
    RunConfig,
    Runner,
    ToolContext,
)
from rondo.errors import (
    ModelRateLimitError,
    ModelServerError,
    ModelTimeoutError,
    ToolDefinitionError,
)
from rondo.models.base import ModelResponse
from rondo.sessions.memory import InMemorySessionService
from rondo.testing import ScriptedModel

CALL = FunctionCall(name="slow", args={}, id="c-1")


async def run(runner: Runner, message: str | None = "go", **kwargs: Any) -> list[Event]:
    return [
        e
        async for e in runner.run_async(user_id="u", session_id="s", new_message=message, **kwargs)
    ]


def runner_for(model: Any, tools: list[Any], service: InMemorySessionService) -> Runner:
    return Runner(
        agent=Agent(name="agent", model=model, tools=tools),
        app_name="app",
        session_service=service,
    )


async def never() -> None:
    await asyncio.Event().wait()


async def test_d3_hung_async_tool_times_out_into_an_error_response() -> None:
    async def slow() -> str:
        """Hangs."""
        await never()
        return "never"

    model = ScriptedModel([CALL, "recovered"])
    events = await run(
        runner_for(model, [FunctionTool(slow, timeout=0.05)], InMemorySessionService())
    )
    [response] = events[1].get_function_responses()
    assert response.id == "c-1"
    assert "did not return within 0.05 s" in response.response["error"]
    # The model saw the error and answered; the run went on.
    assert events[-1].text == "recovered"
    seen = model.requests[1].contents[-1].parts[0].function_response
    assert seen is not None
    assert "did not return" in seen.response["error"]


async def test_d3_hung_sync_tool_is_told_to_stop_and_its_late_result_is_dropped() -> None:
    stopped = threading.Event()

    def slow(tool_context: ToolContext) -> str:
        """Spins until told to stop."""
        while not tool_context.cancelled:
            time.sleep(0.005)
        stopped.set()
        return "late"

    model = ScriptedModel([CALL, "ok"])
    events = await run(
        runner_for(model, [FunctionTool(slow, timeout=0.05)], InMemorySessionService())
    )
    assert "did not return" in events[1].get_function_responses()[0].response["error"]
    assert await asyncio.to_thread(stopped.wait, 5)
    assert all("late" not in str(e.content) for e in events)


def test_d3_tool_timeout_must_be_positive() -> None:
    def f() -> None:
        """Nothing."""

    with pytest.raises(ToolDefinitionError):
        FunctionTool(f, timeout=0)


async def test_d3_raising_tool_is_an_error_response_and_the_run_goes_on() -> None:
    def slow() -> str:
        """Fails."""
        raise ConnectionResetError("peer went away")

    events = await run(runner_for(ScriptedModel([CALL, "ok"]), [slow], InMemorySessionService()))
    assert events[1].get_function_responses()[0].response == {
        "error": "ConnectionResetError: peer went away"
    }
    assert events[-1].text == "ok"


async def test_d3_hung_model_call_raises_model_timeout_and_resume_completes() -> None:
    service = InMemorySessionService()

    async def hang(_request: Any) -> str:
        await never()
        return "never"

    def slow() -> str:
        """A step."""
        return "ran"

    ran = FunctionTool(slow)
    first = ScriptedModel([CALL, hang])
    with pytest.raises(ModelTimeoutError, match=r"model_timeout=0\.05"):
        await run(runner_for(first, [ran], service), run_config=RunConfig(model_timeout=0.05))
    session = await service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    assert [e.author for e in session.events] == ["user", "agent", "agent", "agent"]
    # Nothing lost, and the failure is on record (issue 23); it does not end the invocation.
    assert session.events[-1].error_code == "ModelTimeoutError"
    # The resume makes only the call that timed out.
    again = ScriptedModel(["done"])
    events = await run(runner_for(again, [ran], service), None)
    assert [e.text for e in events] == ["done"]
    assert again.calls == 1
    assert events[0].invocation_id == session.events[0].invocation_id


async def test_d3_model_timeout_counts_the_whole_stream() -> None:
    """A stream that keeps sending chunks still ends at the call's deadline."""

    class Trickle:
        name = "trickle"

        async def generate(self, request: Any, *, stream: bool = False) -> Any:
            while True:
                await asyncio.sleep(0.01)
                yield ModelResponse.model_validate(
                    {"content": {"role": "model", "parts": [{"text": "."}]}, "partial": True}
                )

    model = Trickle()
    with pytest.raises(ModelTimeoutError):
        await run(
            runner_for(model, [], InMemorySessionService()),
            run_config=RunConfig(model_timeout=0.1, streaming_mode="sse"),
        )


async def test_d3_model_timeout_can_be_recovered_by_on_model_error() -> None:
    async def hang(_request: Any) -> str:
        await never()
        return "never"

    def fallback(_ctx: Any, _request: Any, error: Exception) -> ModelResponse | None:
        assert isinstance(error, ModelTimeoutError)
        return ModelResponse.model_validate(
            {"content": {"role": "model", "parts": [{"text": "fallback"}]}}
        )

    agent = Agent(name="agent", model=ScriptedModel([hang]), on_model_error_callback=fallback)
    runner = Runner(agent=agent, app_name="app", session_service=InMemorySessionService())
    events = await run(runner, run_config=RunConfig(model_timeout=0.05))
    assert [e.text for e in events] == ["fallback"]


@pytest.mark.parametrize(
    "error", [ModelServerError("503 overloaded"), ModelRateLimitError("429 slow down")]
)
async def test_d3_provider_error_mid_run_ends_it_and_resume_completes(error: Exception) -> None:
    service = InMemorySessionService()
    runs: list[str] = []

    def slow(tool_context: ToolContext) -> str:
        """A step."""
        runs.append(tool_context.function_call_id or "")
        return "ran"

    with pytest.raises(type(error)):
        await run(runner_for(ScriptedModel([CALL, error]), [slow], service))
    events = await run(runner_for(ScriptedModel(["done"]), [slow], service), None)
    assert [e.text for e in events] == ["done"]
    assert runs == ["c-1"]  # the stored tool result was not re-run
