"""SPEC D3 through a real provider adapter (OpenAI's, over a mocked HTTP transport): a server
that never answers hits `RunConfig.model_timeout`; 5xx answers past the retry policy end the run
with `ModelServerError`; either way a resume completes the run from the log."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests._require import require_module

httpx2 = require_module("httpx2", what="OPENAI", install="pip install 'rondo-agents[openai]'")
require_module("openai", what="OPENAI", install="pip install 'rondo-agents[openai]'")

from rondo import Agent, RunConfig, Runner, ToolContext  # noqa: E402
from rondo.errors import ModelServerError, ModelTimeoutError  # noqa: E402
from rondo.models.openai import OpenAIModel, RetryPolicy  # noqa: E402
from rondo.sessions.memory import InMemorySessionService  # noqa: E402
from tests.unit._http_fakes import Exchanges, json_reply  # noqa: E402

NO_WAIT = RetryPolicy(max_attempts=2, initial_delay=0.0, max_delay=0.0)


def completion(content: str | None, tool_calls: list[dict[str, Any]] | None = None) -> Any:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return json_reply(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if tool_calls else "stop",
                }
            ],
        }
    )


CALL = completion(
    None,
    [{"id": "call-1", "type": "function", "function": {"name": "step", "arguments": "{}"}}],
)


async def hang(_request: Any) -> Any:
    await asyncio.Event().wait()


def make(service: InMemorySessionService, exchanges: Exchanges, runs: list[str]) -> Runner:
    def step(tool_context: ToolContext) -> str:
        """A step."""
        runs.append(tool_context.function_call_id or "")
        return "ok"

    model = OpenAIModel(
        "gpt-4o-mini", api_key="sk-test", http_client=exchanges.client(), retry=NO_WAIT
    )
    return Runner(
        agent=Agent(name="agent", model=model, tools=[step]),
        app_name="app",
        session_service=service,
    )


async def run(runner: Runner, message: str | None, **kwargs: Any) -> list[Any]:
    return [
        e
        async for e in runner.run_async(user_id="u", session_id="s", new_message=message, **kwargs)
    ]


async def test_d3_provider_that_never_answers_times_out_then_resume_completes() -> None:
    # The first call must answer within the timeout too: generous, for a loaded CI machine.
    service = InMemorySessionService()
    runs: list[str] = []
    exchanges = Exchanges(CALL, hang)
    with pytest.raises(ModelTimeoutError):
        await run(make(service, exchanges, runs), "go", run_config=RunConfig(model_timeout=1.5))
    assert runs == ["call-1"]
    events = await run(make(service, Exchanges(completion("done")), runs), None)
    assert [e.text for e in events] == ["done"]
    assert runs == ["call-1"]  # the stored tool result was not re-run


async def test_d3_provider_5xx_past_the_retries_ends_the_run_then_resume_completes() -> None:
    service = InMemorySessionService()
    runs: list[str] = []
    down = json_reply({"error": {"message": "overloaded"}}, 503)
    exchanges = Exchanges(CALL, down, down)
    with pytest.raises(ModelServerError):
        await run(make(service, exchanges, runs), "go")
    assert len(exchanges.requests) == 3  # one call, then the failing one and its retry
    retry = Exchanges(completion("done"))
    events = await run(make(service, retry, runs), None)
    assert [e.text for e in events] == ["done"]
    assert len(retry.requests) == 1
    assert runs == ["call-1"]
