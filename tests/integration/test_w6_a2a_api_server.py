"""SPEC W6 (issue 10 point 4): `rondo api-server AGENTS_DIR --a2a` serves every app over A2A
at /a2a/{app}; with --auth-tokens the A2A routes need a token and a context is the token
user's. Real uvicorn, the a2a-sdk's own client."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests._require import require_module

httpx = require_module("httpx", what="SERVER", install="pip install httpx")

require_module("fastapi", what="SERVER", install="pip install 'rondo-agents[server]'")
require_module("a2a", what="A2A", install="pip install 'rondo-agents[a2a]'")

pytestmark = pytest.mark.integration

from a2a.client import ClientConfig, create_client  # noqa: E402
from a2a.types import (  # noqa: E402
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)
from a2a.utils.errors import TaskNotFoundError  # noqa: E402

from rondo.server import create_app  # noqa: E402
from tests._a2a import serve  # noqa: E402

APPS = Path(__file__).parents[1] / "server" / "apps"
TOKENS = {"tok-alice": "alice", "tok-bob": "bob"}


def _message(text: str, context_id: str = "") -> Message:
    return Message(
        role=Role.ROLE_USER, message_id=f"m-{text}", context_id=context_id, parts=[Part(text=text)]
    )


async def _ask(client: Any, text: str, context_id: str = "") -> Any:
    """Send `text`; the task as it ended."""
    responses = [
        r async for r in client.send_message(SendMessageRequest(message=_message(text, context_id)))
    ]
    first = responses[0]
    task_id = first.task.id if first.HasField("task") else first.status_update.task_id
    return await client.get_task(GetTaskRequest(id=task_id))


@pytest.fixture
async def open_server() -> AsyncIterator[str]:
    async with serve(create_app(APPS, db="memory", a2a=True, loopback_only=True)) as url:
        yield url


@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
async def test_w6_a2a_api_server_serves_each_app_at_a2a_app(
    open_server: str, streaming: bool
) -> None:
    base = open_server
    async with httpx.AsyncClient(base_url=base) as http:
        card = (await http.get("/a2a/chat/.well-known/agent-card.json")).json()
        assert card["name"] == "chat"
        assert card["supportedInterfaces"][0]["url"] == f"{base}/a2a/chat"
        assert (await http.get("/a2a/nope/.well-known/agent-card.json")).status_code == 404
        broken = await http.get("/a2a/broken/.well-known/agent-card.json")
        assert broken.status_code == 503
        assert "broken" in broken.json()["detail"]
        client = await create_client(f"{base}/a2a/chat", ClientConfig(streaming=streaming))
        async with client:
            task = await _ask(client, "tea")
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert task.artifacts[0].parts[0].text == "Stub reply: noted 'tea'"
        # The A2A context is a session of the server's store, readable over its REST API.
        ctx = task.context_id
        session = (await http.get(f"/apps/chat/users/A2A_USER_{ctx}/sessions/{ctx}")).json()
        assert [e["author"] for e in session["events"]] == ["user", "chat", "chat", "chat"]


@pytest.fixture
async def token_server() -> AsyncIterator[str]:
    app = create_app(APPS, db="memory", a2a=True, auth_tokens=TOKENS)
    async with serve(app) as url:
        yield url


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_w6_a2a_with_auth_tokens_needs_a_token_and_a_context_is_the_token_users(
    token_server: str,
) -> None:
    base = token_server
    url = f"{base}/a2a/chat"
    async with (
        httpx.AsyncClient(base_url=base) as anonymous,
        httpx.AsyncClient(base_url=base, headers=_bearer("tok-alice")) as alice_http,
        httpx.AsyncClient(base_url=base, headers=_bearer("tok-bob")) as bob_http,
    ):
        # The card is public (a client learns from it that it needs a token); calls are not.
        assert (await anonymous.get("/a2a/chat/.well-known/agent-card.json")).status_code == 200
        rpc = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}
        assert (await anonymous.post("/a2a/chat", json=rpc)).status_code == 401
        wrong = await anonymous.post("/a2a/chat", json=rpc, headers=_bearer("guess"))
        assert wrong.status_code == 401
        card = (await alice_http.get("/a2a/chat/.well-known/agent-card.json")).json()
        assert "bearer" in card["securitySchemes"]
        alice = await create_client(url, ClientConfig(streaming=False, httpx_client=alice_http))
        bob = await create_client(url, ClientConfig(streaming=False, httpx_client=bob_http))
        async with alice, bob:
            task = await _ask(alice, "tea")
            assert task.status.state == TaskState.TASK_STATE_COMPLETED
            ctx = task.context_id
            with pytest.raises(TaskNotFoundError):
                await bob.get_task(GetTaskRequest(id=task.id))
            assert list((await bob.list_tasks(ListTasksRequest(context_id=ctx))).tasks) == []
            # Bob writing into Alice's context id starts a conversation of his own.
            await _ask(bob, "coffee", context_id=ctx)
        mine = (await alice_http.get(f"/apps/chat/users/alice/sessions/{ctx}")).json()
        assert mine["events"][0]["content"]["parts"][0]["text"] == "tea"
        his = (await bob_http.get(f"/apps/chat/users/bob/sessions/{ctx}")).json()
        assert his["events"][0]["content"]["parts"][0]["text"] == "coffee"
        # The REST API keeps its rule: Bob cannot read Alice's session.
        assert (await bob_http.get(f"/apps/chat/users/alice/sessions/{ctx}")).status_code == 403


async def test_w6_a2a_remote_agent_calls_a_server_with_tokens(token_server: str) -> None:
    from rondo import Agent, FunctionCall, Runner
    from rondo.a2a import RemoteA2AAgent
    from rondo.errors import RemoteAgentFailedError
    from rondo.testing import ScriptedModel

    url = f"{token_server}/a2a/chat"
    for remote, expected in (
        (RemoteA2AAgent(name="chat", url=url, headers=_bearer("tok-alice")), None),
        # The card is public: the call itself is refused, and the error says what to send.
        (RemoteA2AAgent(name="chat", url=url), RemoteAgentFailedError.__name__),
    ):
        transfer = FunctionCall(name="transfer_to_agent", args={"agent_name": "chat"})
        root = Agent(name="root", model=ScriptedModel([transfer]), sub_agents=[remote])
        events = [
            e
            async for e in Runner(agent=root).run_async(
                user_id="u", session_id="s", new_message="tea"
            )
            if e.author == "chat"
        ]
        assert events[-1].error_code == expected
        if expected is None:
            assert events[-1].text == "Stub reply: noted 'tea'"
        else:
            assert "HTTP 401" in (events[-1].error_message or "")
            assert "needs credentials" in (events[-1].error_message or "")


def test_w6_a2a_api_server_command_takes_the_a2a_option(tmp_path: Path) -> None:
    port = _free_port()
    command = ["api-server", str(APPS), "--db", "memory", "--a2a-root", "chat", "--port", str(port)]
    process = subprocess.Popen(
        [sys.executable, "-m", "rondo.cli", *command],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        card_url = f"http://127.0.0.1:{port}/a2a/chat/.well-known/agent-card.json"
        deadline = time.monotonic() + 30
        while True:
            try:
                response = httpx.get(card_url, timeout=1)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    output = process.stdout.read() if process.stdout else ""
                    raise AssertionError(f"the server did not start: {output}") from None
                time.sleep(0.1)
        assert response.status_code == 200
        assert response.json()["supportedInterfaces"][0]["url"] == (
            f"http://127.0.0.1:{port}/a2a/chat"
        )
        # --a2a-root (which implies --a2a): the app's card at the host root as well.
        root = httpx.get(f"http://127.0.0.1:{port}/.well-known/agent-card.json", timeout=5)
        assert root.json()["supportedInterfaces"][0]["url"] == f"http://127.0.0.1:{port}/a2a/chat"
    finally:
        process.terminate()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
