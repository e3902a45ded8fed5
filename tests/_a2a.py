"""Serving ASGI apps for the A2A tests: real uvicorn on a free loopback port, in the test's loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from tests._require import require_module

require_module("a2a", what="A2A", install="pip install 'rondo-agents[a2a]'")
uvicorn = require_module("uvicorn", what="A2A", install="pip install uvicorn")

__all__ = ["confirmation_answer", "get_weather", "serve", "weather_runner"]


@contextlib.asynccontextmanager
async def serve(app: Any) -> AsyncIterator[str]:
    """Serve `app` on 127.0.0.1 (port chosen by the OS); yields its base URL."""
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    # The test process keeps its own signal handling.
    server.install_signal_handlers = lambda: None  # pyright: ignore[reportAttributeAccessIssue]
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if task.done():
                task.result()  # raises the reason it could not start
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=10)


def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "sky": "sunny", "temp": 21}


def weather_runner(script: list[Any], *, app_name: str = "weather", tools: Any = None) -> Any:
    """A rondo Runner of a weather agent whose model follows `script`; `.agent.model` is the
    `ScriptedModel` (its `.requests` show what each turn saw)."""
    from rondo import Agent, Runner
    from rondo.testing import ScriptedModel

    agent = Agent(
        name="weather",
        model=ScriptedModel(script),
        description="Answers questions about the weather.",
        tools=[get_weather] if tools is None else tools,
    )
    return Runner(agent=agent, app_name=app_name)


def confirmation_answer(call_id: str, confirmed: bool) -> Any:
    """What an A2A client sends to answer a confirmation: a function-response data part
    (google-adk's marks)."""
    from a2a.types import Part
    from google.protobuf import json_format, struct_pb2

    data = {"id": call_id, "name": "adk_request_confirmation", "response": {"confirmed": confirmed}}
    meta = struct_pb2.Struct()
    meta.update({"adk_type": "function_response"})
    return Part(data=json_format.ParseDict(data, struct_pb2.Value()), metadata=meta)
