"""SPEC W8 / issue 22 item 3: agents as MCP tools, tested with the MCP SDK's own client over
streamable HTTP (`rondo api-server --mcp`, i.e. `create_app(mcp=True)`) and over stdio
(`rondo mcp AGENT_PATH` in a subprocess)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

import rondo
from tests._require import require_module
from tests.server._live import APPS

mcp = require_module("mcp", what="MCP", install="pip install 'rondo-agents[mcp]'")

import httpx2  # noqa: E402  (the MCP SDK's HTTP client)
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp_types import ElicitResult  # noqa: E402


@asynccontextmanager
async def _client(url: str, token: str | None = None, **options: Any) -> AsyncIterator[Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        mcp.Client(streamable_http_client(f"{url}/mcp", http_client=http), **options) as client,
    ):
        yield client


def _approving(approve: bool, asked: list[str]) -> Any:
    async def callback(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": approve, "comment": "no way"})

    return callback


@pytest.fixture
def server(launch: Any) -> Any:
    with launch(mcp=True) as http:
        yield str(http.base_url), http


async def test_w8_mcp_each_app_is_a_tool_and_sessions_continue(server: Any) -> None:
    url, http = server
    async with _client(url) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"helper", "bank", "chat"} <= set(tools)
        assert "broken" not in tools  # an app that fails to load is left out
        schema = tools["helper"].input_schema
        assert set(schema["properties"]) >= {"message", "session_id"}
        assert schema["required"] == ["message"]
        first = await client.call_tool("helper", {"message": "one"})
        assert first.is_error is False
        assert first.content[0].text == 'Done: {"note": "one"}'
        session_id = first.structured_content["session_id"]
        assert first.structured_content["answer"] == 'Done: {"note": "one"}'
        again = await client.call_tool("helper", {"message": "two", "session_id": session_id})
        assert again.structured_content["session_id"] == session_id
    state = http.get(f"/apps/helper/users/user/sessions/{session_id}").json()["state"]
    assert state["notes"] == ["one", "two"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("approve", [True, False])
async def test_w8_mcp_confirmation_uses_elicitation(server: Any, mode: str, approve: bool) -> None:
    url, _ = server
    asked: list[str] = []
    async with _client(url, elicitation_callback=_approving(approve, asked), mode=mode) as client:
        answer = await client.call_tool("bank", {"message": "100"})
    assert len(asked) == 1
    assert 'remember({"note": "100"})' in asked[0]
    assert answer.structured_content["pending"] == []
    if approve:
        assert answer.content[0].text == "Stub reply: noted '100'"
    else:
        assert "sent" not in answer.content[0].text


async def test_w8_mcp_without_elicitation_returns_the_pending_call_and_how_to_answer(
    server: Any,
) -> None:
    url, _ = server
    async with _client(url) as client:
        paused = await client.call_tool("bank", {"message": "100"})
        (pending,) = paused.structured_content["pending"]
        assert pending["kind"] == "confirmation"
        session_id = paused.structured_content["session_id"]
        assert session_id in paused.content[0].text
        assert "decision" in paused.content[0].text
        done = await client.call_tool(
            "bank", {"message": "", "session_id": session_id, "decision": "approve"}
        )
        assert done.content[0].text == "Stub reply: noted '100'"
        wrong = await client.call_tool(
            "bank", {"message": "", "session_id": session_id, "decision": "approve"}
        )
        assert wrong.is_error is True
        assert "has none" in wrong.content[0].text


async def test_w8_mcp_needs_the_bearer_token(launch: Any) -> None:
    with launch(mcp=True, auth_tokens={"tok-a": "alice"}) as http:
        url = str(http.base_url)
        assert http.post("/mcp", json={}).status_code == 401
        async with _client(url, token="tok-a") as client:
            answer = await client.call_tool("helper", {"message": "mine"})
        session_id = answer.structured_content["session_id"]
        mine = http.get(
            f"/apps/helper/users/alice/sessions/{session_id}",
            headers={"Authorization": "Bearer tok-a"},
        )
        assert mine.status_code == 200


async def test_w8_mcp_stdio_serves_one_agent() -> None:
    params = mcp.StdioServerParameters(
        command=sys.executable,
        args=["-m", "rondo.cli", "mcp", str(APPS / "helper"), "--db", "memory"],
    )
    async with mcp.Client(params) as client:
        (tool,) = (await client.list_tools()).tools
        assert tool.name == "helper"
        first = await client.call_tool("helper", {"message": "one"})
        assert first.content[0].text == 'Done: {"note": "one"}'
        session_id = first.structured_content["session_id"]
        again = await client.call_tool("helper", {"message": "two", "session_id": session_id})
        assert again.content[0].text == 'Done: {"note": "two"}'
        assert again.structured_content["session_id"] == session_id


async def test_w8_mcp_api_server_flag_serves_mcp(tmp_path: Path) -> None:
    from tests.server.test_w1_cli import _command  # pyright: ignore[reportPrivateUsage]

    with _command("api-server", str(APPS), "--db", "memory", "--mcp", cwd=tmp_path) as url:
        async with _client(url) as client:
            answer = await client.call_tool("helper", {"message": "cli"})
    assert answer.content[0].text == 'Done: {"note": "cli"}'


GOLDEN = Path(__file__).parent / "golden" / "mcp_helper.json"


async def test_w8_mcp_golden_result_of_a_recorded_run(server: Any) -> None:
    """Issue 22 item 6: the tool's answer to a recorded run (the tool listing and the call's
    result, as the MCP SDK's client reads them), the new session's id masked."""
    url, _ = server
    async with _client(url) as client:
        (tool,) = [t for t in (await client.list_tools()).tools if t.name == "helper"]
        result = await client.call_tool("helper", {"message": "ham"})
    session_id = result.structured_content["session_id"]
    answer = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    server = answer["_meta"]["io.modelcontextprotocol/serverInfo"]
    assert server == {"name": "rondo", "version": rondo.__version__}
    server["version"] = "<version>"
    recorded = {"tool": tool.model_dump(mode="json", by_alias=True, exclude_none=True)}
    recorded["result"] = answer
    text = json.dumps(recorded).replace(session_id, "<session>")
    assert json.loads(text) == json.loads(GOLDEN.read_text())
