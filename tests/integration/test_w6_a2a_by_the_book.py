"""SPEC W6, issue 27: A2A by the book. The card at the host root (one app, or --a2a-root),
its URLs from the request (or --public-url), public under --auth-tokens with the extended
card behind the token; a follow-up naming only its task keeps the task's context; an
unknown ListTasks status is -32602; A2A 0.3 clients on the same routes. Real uvicorn, the
a2a-sdk's own clients (its 0.3 compatibility client too) and hand-built JSON-RPC."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests._a2a import confirmation_answer, serve, weather_runner
from tests._require import require_module

httpx = require_module("httpx", what="SERVER", install="pip install httpx")
require_module("fastapi", what="SERVER", install="pip install 'rondo-agents[server]'")

pytestmark = pytest.mark.integration

from a2a.client import ClientConfig, create_client  # noqa: E402
from a2a.types import (  # noqa: E402
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
)
from google.protobuf import json_format  # noqa: E402

from rondo import FunctionCall, FunctionTool, ToolContext  # noqa: E402
from rondo.a2a import A2AApp  # noqa: E402
from rondo.a2a.executor import MESSAGE_ID_KEY  # noqa: E402
from rondo.errors import ConfigurationError  # noqa: E402
from rondo.server import create_app  # noqa: E402

APPS = Path(__file__).parents[1] / "server" / "apps"
TOKENS = {"tok-alice": "alice"}
CARD = "/.well-known/agent-card.json"


@pytest.fixture
def one_app(tmp_path: Path) -> Path:
    """An AGENTS_DIR with the one app `chat`."""
    shutil.copytree(APPS / "chat", tmp_path / "chat")
    shutil.copy(APPS / "echo_model.py", tmp_path / "echo_model.py")
    return tmp_path


def _rpc(method: str, params: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


V1 = {"A2A-Version": "1.0"}


# -- 1. the card where clients look -----------------------------------------------------------


async def test_w6_a2a_root_card_of_the_only_app_follows_the_request_host(one_app: Path) -> None:
    async with (
        serve(create_app(one_app, db="memory", a2a=True)) as base,
        httpx.AsyncClient(base_url=base) as http,
    ):
        for path in (CARD, "/.well-known/agent.json"):
            card = (await http.get(path)).json()
            assert card["name"] == "chat"
            assert {i["url"] for i in card["supportedInterfaces"]} == {f"{base}/a2a/chat"}
        # The URL is the one the client used (Host and scheme, the latter from a proxy's
        # X-Forwarded-Proto, which uvicorn trusts from the loopback), not the bound address.
        seen = await http.get(
            CARD, headers={"Host": "agents.example.test:8443", "X-Forwarded-Proto": "https"}
        )
        urls = {i["url"] for i in seen.json()["supportedInterfaces"]}
        assert urls == {"https://agents.example.test:8443/a2a/chat"}
        # The card leads a client to an agent that answers.
        client = await create_client(base, ClientConfig(streaming=False))
        async with client:
            responses = [
                r
                async for r in client.send_message(
                    SendMessageRequest(message=_text("tea", "m-root"))
                )
            ]
        assert responses[0].task.artifacts[0].parts[0].text == "Stub reply: noted 'tea'"


async def test_w6_a2a_root_card_with_several_apps_needs_a2a_root() -> None:
    async with (
        serve(create_app(APPS, db="memory", a2a=True)) as base,
        httpx.AsyncClient(base_url=base) as http,
    ):
        response = await http.get(CARD)
        assert response.status_code == 404
        assert "--a2a-root" in response.json()["detail"]
    async with (
        serve(create_app(APPS, db="memory", a2a_root="chat")) as base,
        httpx.AsyncClient(base_url=base) as http,
    ):
        card = (await http.get(CARD)).json()
        assert card["name"] == "chat"
        assert card["supportedInterfaces"][0]["url"] == f"{base}/a2a/chat"
        # Every app is still served at /a2a/APP.
        assert (await http.get(f"/a2a/tally{CARD}")).json()["name"] == "tally"
    with pytest.raises(ConfigurationError, match=r"a2a-root.*nope"):
        create_app(APPS, db="memory", a2a_root="nope")


async def test_w6_a2a_public_url_fixes_the_card_urls(one_app: Path) -> None:
    app = create_app(one_app, db="memory", a2a=True, public_url="https://agents.example.com/")
    async with serve(app) as base, httpx.AsyncClient(base_url=base) as http:
        for path in (CARD, f"/a2a/chat{CARD}"):
            card = (await http.get(path)).json()
            urls = {i["url"] for i in card["supportedInterfaces"]}
            assert urls == {"https://agents.example.com/a2a/chat"}
    with pytest.raises(ConfigurationError, match="http"):
        create_app(one_app, db="memory", a2a=True, public_url="agents.example.com")


async def test_w6_a2a_public_card_is_public_under_auth_tokens_the_extended_card_is_not(
    one_app: Path,
) -> None:
    app = create_app(one_app, db="memory", a2a=True, auth_tokens=TOKENS)
    async with serve(app) as base, httpx.AsyncClient(base_url=base) as anonymous:
        for path in (CARD, "/.well-known/agent.json", f"/a2a/chat{CARD}"):
            response = await anonymous.get(path)
            assert response.status_code == 200, path
            card = response.json()
            # The card says a token is needed, and keeps the agent's tools for callers.
            assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == (
                "Bearer"
            )
            assert card["capabilities"]["extendedAgentCard"] is True
            assert [s["name"] for s in card["skills"]] == ["chat"]
        # Nothing else around the card is public.
        extended = _rpc("GetExtendedAgentCard", {})
        assert (await anonymous.post("/a2a/chat", json=extended, headers=V1)).status_code == 401
        assert (await anonymous.post(f"/a2a/chat{CARD}", json={})).status_code == 401
        assert (await anonymous.get("/a2a/chat/x/.well-known/agent-card.json")).status_code == 401
        bearer = {**V1, "Authorization": "Bearer tok-alice"}
        full = (await anonymous.post("/a2a/chat", json=extended, headers=bearer)).json()
        assert [s["name"] for s in full["result"]["skills"]] == ["chat", "remember"]
        assert full["result"]["supportedInterfaces"][0]["url"] == f"{base}/a2a/chat"


# -- 2. follow-ups keep their context ---------------------------------------------------------

deleted: list[str] = []
message_ids: list[str] = []


def delete_file(path: str, tool_context: ToolContext) -> dict[str, Any]:
    """Delete a file."""
    deleted.append(path)
    message_ids.append(tool_context.state[MESSAGE_ID_KEY])
    return {"deleted": path}


def _text(text: str, message_id: str, *, task_id: str = "", context_id: str = "") -> Message:
    return Message(
        role=Role.ROLE_USER,
        message_id=message_id,
        task_id=task_id,
        context_id=context_id,
        parts=[Part(text=text)],
    )


def _answer(call_id: str, confirmed: bool, task_id: str) -> Message:
    """A confirmation's answer that names only its task (no contextId)."""
    part = confirmation_answer(call_id, confirmed)
    return Message(
        role=Role.ROLE_USER, message_id=f"answer-{task_id}", task_id=task_id, parts=[part]
    )


async def _send(client: Any, message: Message) -> Task:
    responses = [r async for r in client.send_message(SendMessageRequest(message=message))]
    first = responses[0]
    task_id = first.task.id if first.HasField("task") else first.status_update.task_id
    return await client.get_task(GetTaskRequest(id=task_id))


@pytest.mark.parametrize("confirmed", [True, False], ids=["approve", "reject"])
async def test_w6_a2a_answer_naming_only_its_task_continues_its_context(confirmed: bool) -> None:
    deleted.clear()
    message_ids.clear()
    runner = weather_runner(
        [FunctionCall(name="delete_file", args={"path": "a.txt"}), "Done with a.txt."],
        tools=[FunctionTool(delete_file, require_confirmation=True)],
    )
    async with serve(A2AApp(runner)) as url:
        client = await create_client(url, ClientConfig(streaming=False))
        async with client:
            task = await _send(client, _text("Delete a.txt", "m-1"))
            assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            call_id = json_format.MessageToDict(task.status.message.parts[0].data)["id"]
            done = await _send(client, _answer(call_id, confirmed, task.id))
    assert done.id == task.id
    assert done.context_id == task.context_id
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert deleted == (["a.txt"] if confirmed else [])
    # The run that applied the answer saw the A2A message id of the answer (item 3: clients
    # such as the kit's 1.0 line steer agents by it); like any temp: key it is not stored.
    assert message_ids == ([f"answer-{task.id}"] if confirmed else [])
    # One session, one conversation: the answer went to the call that waited for it.
    session = await runner.session_service.get_session(
        app_name="weather", user_id=f"A2A_USER_{task.context_id}", session_id=task.context_id
    )
    assert session is not None
    responses = [
        r.response
        for e in session.events
        for r in e.get_function_responses()
        if r.name == "delete_file"
    ]
    # As google-adk: "confirmation required" while it waits, then the decision's outcome.
    assert responses[0] == {"error": "confirmation required"}
    assert len(responses) == 2
    assert ("deleted" in responses[1]) is confirmed
    assert MESSAGE_ID_KEY not in session.state
    assert all(MESSAGE_ID_KEY not in e.actions.state_delta for e in session.events)


def steer(tool_context: ToolContext) -> dict[str, Any]:
    """What the caller asked for, by its message id."""
    message_id = str(tool_context.state.get(MESSAGE_ID_KEY))
    message_ids.append(message_id)
    return {"scenario": message_id.rsplit("-", 1)[0]}


async def test_w6_a2a_message_id_is_the_runs_temp_state() -> None:
    message_ids.clear()
    runner = weather_runner(
        [FunctionCall(name="steer", args={}), "Hello from TCK"] * 2, tools=[steer]
    )
    async with serve(A2AApp(runner)) as url:
        client = await create_client(url, ClientConfig(streaming=True))
        async with client:
            first = await _send(client, _text("hi", "tck-complete-task-1"))
            await _send(client, _text("hi", "tck-artifact-text-2", context_id=first.context_id))
    assert message_ids == ["tck-complete-task-1", "tck-artifact-text-2"]


async def test_w6_a2a_list_tasks_refuses_an_unknown_status_filter() -> None:
    runner = weather_runner(["Sunny."])
    async with serve(A2AApp(runner)) as url, httpx.AsyncClient(headers=V1) as http:
        sent = await http.post(
            url, json=_rpc("SendMessage", {"message": _json_message("hi", "m-4")})
        )
        assert sent.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        for bad in ("INVALID_STATUS", "completed", 99):
            answer = (await http.post(url, json=_rpc("ListTasks", {"status": bad}))).json()
            assert answer["error"]["code"] == -32602, bad
            assert "TASK_STATE_COMPLETED" in answer["error"]["message"]
        for status, count in (("TASK_STATE_COMPLETED", 1), ("TASK_STATE_WORKING", 0)):
            listed = (await http.post(url, json=_rpc("ListTasks", {"status": status}))).json()
            assert len(listed["result"].get("tasks", [])) == count


def _json_message(text: str, message_id: str) -> dict[str, Any]:
    return {"role": "ROLE_USER", "messageId": message_id, "parts": [{"text": text}]}


# -- 4. both protocol versions ----------------------------------------------------------------


async def test_w6_a2a_0_3_client_of_the_sdk_works_on_the_same_route(one_app: Path) -> None:
    """The a2a-sdk's own 0.3 client (its compatibility transport, chosen by the factory for a
    card whose only JSON-RPC interface is 0.3)."""
    from a2a.client import ClientFactory
    from a2a.client.card_resolver import parse_agent_card
    from a2a.compat.v0_3.jsonrpc_transport import CompatJsonRpcTransport

    async with serve(create_app(one_app, db="memory", a2a=True)) as base:
        async with httpx.AsyncClient() as http:
            card = parse_agent_card((await http.get(f"{base}{CARD}")).json())
        legacy = [i for i in card.supported_interfaces if i.protocol_version == "0.3"]
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(legacy)
        client = ClientFactory(ClientConfig(streaming=False)).create(card)
        assert isinstance(client._transport, CompatJsonRpcTransport)  # pyright: ignore
        async with client:
            task = await _send(client, _text("tea", "m-03"))
            follow = await _send(client, _text("milk", "m-03b", context_id=task.context_id))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert task.artifacts[0].parts[0].text == "Stub reply: noted 'tea'"
    assert follow.context_id == task.context_id
    assert follow.artifacts[0].parts[0].text == "Stub reply: noted 'milk'"


async def test_w6_a2a_0_3_request_without_a_version_header(one_app: Path) -> None:
    """A hand-built A2A 0.3 JSON-RPC request, as a 0.3 client sends it: no A2A-Version header,
    0.3 method names and part shapes."""
    async with (
        serve(create_app(one_app, db="memory", a2a=True)) as base,
        httpx.AsyncClient(base_url=base) as http,
    ):
        card = (await http.get(CARD)).json()
        assert (card["protocolVersion"], card["url"]) == ("0.3", f"{base}/a2a/chat")
        message = {
            "kind": "message",
            "role": "user",
            "messageId": "m-old",
            "parts": [{"kind": "text", "text": "tea"}],
        }
        sent = await http.post(card["url"], json=_rpc("message/send", {"message": message}))
        assert "a2a-version" not in sent.request.headers
        task = sent.json()["result"]
        assert task["kind"] == "task"
        assert task["status"]["state"] == "completed"
        assert task["artifacts"][0]["parts"][0] == {
            "kind": "text",
            "text": "Stub reply: noted 'tea'",
        }
        got = await http.post(card["url"], json=_rpc("tasks/get", {"id": task["id"]}))
        assert got.json()["result"]["id"] == task["id"]
        # A 1.0 method without the header is a version error, not a silent 0.3 answer.
        mismatch = await http.post(card["url"], json=_rpc("GetTask", {"id": task["id"]}))
        assert mismatch.json()["error"]["code"] == -32009
