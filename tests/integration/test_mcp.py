"""SPEC T7: MCP toolsets against real MCP servers (in-process, stdio subprocess, streamable
HTTP subprocess)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rondo import Agent, FunctionCall, Runner
from rondo.testing import ScriptedModel
from rondo.tools.mcp import MCPToolset
from tests._require import require_module

pytestmark = pytest.mark.integration

mcp = require_module("mcp", what="MCP", install="pip install 'rondo-agents[mcp]'")
SERVER = Path(__file__).with_name("mcp_weather_server.py")


def _agent(toolset: MCPToolset, script: list[Any]) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(script)
    return Agent(name="forecaster", model=model, tools=[toolset]), model


async def _exercise(toolset: MCPToolset) -> None:
    agent, model = _agent(
        toolset,
        [
            [
                FunctionCall(name="get_forecast", args={"city": "Oslo", "days": 2}),
                FunctionCall(name="fail_always", args={"reason": "test"}),
            ],
            "Sunny in Oslo.",
        ],
    )
    async with Runner(agent=agent, app_name="app") as runner:
        events = [e async for e in runner.run_async(user_id="u", session_id="s", new_message="?")]
    declared = {d.name: d for d in model.requests[0].config.tools}
    assert set(declared) == {"get_forecast", "fail_always"}
    assert declared["get_forecast"].parameters["properties"]["city"]["type"] == "string"
    assert declared["get_forecast"].description == "Forecast for a city."
    forecast, failure = events[1].get_function_responses()
    assert forecast.response == {"city": "Oslo", "days": 2, "forecast": ["sunny", "sunny"]}
    # The server decides how much of its exception to reveal; it is an error either way.
    assert "fail_always" in failure.response["error"]
    assert events[-1].text == "Sunny in Oslo."


async def test_t7_mcp_toolset_in_process() -> None:
    sys.path.insert(0, str(SERVER.parent))
    try:
        from mcp_weather_server import server  # pyright: ignore[reportMissingImports]
    finally:
        sys.path.pop(0)
    await _exercise(MCPToolset(server))


async def test_t7_mcp_toolset_over_stdio() -> None:
    params = mcp.StdioServerParameters(command=sys.executable, args=[str(SERVER), "stdio"])
    await _exercise(MCPToolset(params))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        else:
            raise RuntimeError("the MCP HTTP server did not start")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def test_t7_mcp_toolset_over_streamable_http(http_server: str) -> None:
    await _exercise(MCPToolset(http_server))


async def test_t7_mcp_tool_filter_and_prefix() -> None:
    params = mcp.StdioServerParameters(command=sys.executable, args=[str(SERVER), "stdio"])
    toolset = MCPToolset(params, tool_filter=["get_forecast"], prefix="wx")
    agent, model = _agent(
        toolset, [FunctionCall(name="wx_get_forecast", args={"city": "Rome"}), "ok"]
    )
    async with Runner(agent=agent, app_name="app") as runner:
        events = [e async for e in runner.run_async(user_id="u", session_id="s", new_message="?")]
    assert [d.name for d in model.requests[0].config.tools] == ["wx_get_forecast"]
    assert events[1].get_function_responses()[0].response["city"] == "Rome"
    await asyncio.sleep(0)
