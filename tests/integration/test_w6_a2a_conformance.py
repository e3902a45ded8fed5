"""SPEC W6, issue 27 item 3: the mandatory checks of the A2A conformance kit (a2aproject/a2a-tck
at 410ba92), kept here because the kit is on no package registry, so CI cannot install it.
`tests/integration/a2a_tck/` runs the kit itself by hand (README.md there has the results).

Each check is one the kit's mandatory categories make over JSON-RPC against `rondo api-server
--a2a` with one app: where it finds the card, the card's required fields, the JSON-RPC 2.0
error codes, the A2A error codes, a message answered with a task, GetTask's historyLength,
ListTasks' filters and its refusals, and the public card under --auth-tokens."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests._a2a import serve
from tests._require import require_module

httpx = require_module("httpx", what="SERVER", install="pip install httpx")
require_module("fastapi", what="SERVER", install="pip install 'rondo-agents[server]'")

pytestmark = pytest.mark.integration

from rondo.server import create_app  # noqa: E402

APPS = Path(__file__).parents[1] / "server" / "apps"
V1 = {"A2A-Version": "1.0"}


@pytest.fixture
def agents_dir(tmp_path: Path) -> Path:
    shutil.copytree(APPS / "chat", tmp_path / "chat")
    shutil.copy(APPS / "echo_model.py", tmp_path / "echo_model.py")
    return tmp_path


@pytest.fixture
async def sut(agents_dir: Path) -> AsyncIterator[Any]:
    """An httpx client on the server; its URL is the JSON-RPC endpoint, as the kit's --sut-url."""
    async with (
        serve(create_app(agents_dir, db="memory", a2a=True)) as base,
        httpx.AsyncClient(base_url=f"{base}/a2a/chat", headers=V1) as http,
    ):
        yield http


def _rpc(method: str, params: Any, request_id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def _message(text: str, message_id: str, **ids: str) -> dict[str, Any]:
    return {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}], **ids}


async def _call(http: Any, body: Any) -> dict[str, Any]:
    response = await http.post("", json=body)
    assert response.status_code == 200
    return response.json()


async def test_w6_a2a_tck_card_at_the_host_root_with_its_required_fields(sut: Any) -> None:
    from a2a.client.card_resolver import parse_agent_card
    from a2a.utils.proto_utils import validate_proto_required_fields

    origin = str(sut.base_url).rstrip("/").removesuffix("/a2a/chat")
    async with httpx.AsyncClient() as plain:  # the kit reads the card without any header
        for path in ("/.well-known/agent-card.json", "/.well-known/agent.json"):
            card = (await plain.get(origin + path)).json()
            for field in ("name", "description", "version", "capabilities", "skills"):
                assert card[field], field
            assert card["defaultInputModes"] == card["defaultOutputModes"] == ["text/plain"]
            assert card["supportedInterfaces"][0] == {
                "url": f"{origin}/a2a/chat",
                "protocolBinding": "JSONRPC",
                "protocolVersion": "1.0",
            }
            assert validate_proto_required_fields(parse_agent_card(card)) is None


async def test_w6_a2a_tck_json_rpc_errors(sut: Any) -> None:
    raw = await sut.post("", content=b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage"')
    assert raw.json()["error"]["code"] == -32700
    cases: list[tuple[Any, int]] = [
        ({"id": 1, "method": "GetTask", "params": {"id": "x"}}, -32600),  # no jsonrpc
        ({**_rpc("GetTask", {"id": "x"}), "jsonrpc": "1.0"}, -32600),
        ({"jsonrpc": "2.0", "id": 1, "params": {}}, -32600),  # no method
        ([_rpc("GetTask", {"id": "x"})], -32600),  # batches are not supported
        (_rpc("NoSuchMethod", {}), -32601),
        (_rpc("SendMessage", {"message": {}}), -32602),
        (_rpc("SendMessage", {"message": "not an object"}), -32602),
    ]
    for body, code in cases:
        answer = await _call(sut, body)
        assert answer["error"]["code"] == code, body
        assert answer["jsonrpc"] == "2.0"
    assert (await _call(sut, _rpc("NoSuchMethod", {}, "abc")))["id"] == "abc"


async def test_w6_a2a_tck_a2a_errors(sut: Any) -> None:
    cases: list[tuple[str, dict[str, Any], int]] = [
        ("GetTask", {"id": "no-such-task"}, -32001),
        ("CancelTask", {"id": "no-such-task"}, -32001),
        ("CreateTaskPushNotificationConfig", {"taskId": "x", "url": "http://a.test/h"}, -32003),
        ("ListTasks", {"pageToken": "invalid-token-xyz"}, -32602),
        ("ListTasks", {"pageSize": 0}, -32602),
        ("ListTasks", {"pageSize": -1}, -32602),
        ("ListTasks", {"pageSize": 101}, -32602),
        ("ListTasks", {"historyLength": -1}, -32602),
        ("ListTasks", {"status": "INVALID_STATUS"}, -32602),
        ("ListTasks", {"statusTimestampAfter": "not a time"}, -32602),
    ]
    for method, params, code in cases:
        answer = await _call(sut, _rpc(method, params))
        assert answer["error"]["code"] == code, (method, params)


async def test_w6_a2a_tck_message_send_get_and_list(sut: Any) -> None:
    sent = await _call(sut, _rpc("SendMessage", {"message": _message("tea", "tck-m-1")}))
    task = sent["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"][0]["text"] == "Stub reply: noted 'tea'"
    assert task["history"][0]["messageId"] == "tck-m-1"
    got = (await _call(sut, _rpc("GetTask", {"id": task["id"], "historyLength": 1})))["result"]
    assert got["id"] == task["id"]
    assert len(got["history"]) == 1
    # A finished task is terminal: no more messages, no cancel.
    again = _message("more", "tck-m-2", taskId=task["id"], contextId=task["contextId"])
    assert (await _call(sut, _rpc("SendMessage", {"message": again})))["error"]["code"] == -32004
    assert (await _call(sut, _rpc("CancelTask", {"id": task["id"]})))["error"]["code"] == -32002
    other = _message("coffee", "tck-m-3")
    await _call(sut, _rpc("SendMessage", {"message": other}))
    listed = (await _call(sut, _rpc("ListTasks", {"contextId": task["contextId"]})))["result"]
    assert [t["id"] for t in listed["tasks"]] == [task["id"]]
    assert listed["totalSize"] == 1
    assert listed["nextPageToken"] == ""
    page = (await _call(sut, _rpc("ListTasks", {"pageSize": 1})))["result"]
    assert (len(page["tasks"]), page["totalSize"]) == (1, 2)
    rest = await _call(sut, _rpc("ListTasks", {"pageSize": 1, "pageToken": page["nextPageToken"]}))
    pages = [page["tasks"][0]["id"], rest["result"]["tasks"][0]["id"]]
    assert len(set(pages)) == 2
    assert task["id"] in pages
    assert rest["result"]["nextPageToken"] == ""


async def test_w6_a2a_tck_public_card_access_control(agents_dir: Path) -> None:
    app = create_app(agents_dir, db="memory", a2a=True, auth_tokens={"tck-token": "tck"})
    async with serve(app) as base, httpx.AsyncClient(base_url=base) as anonymous:
        card = await anonymous.get("/.well-known/agent-card.json")
        assert card.status_code == 200
        assert "bearer" in card.json()["securitySchemes"]
        body = _rpc("GetTask", {"id": "x"})
        refused = await anonymous.post("/a2a/chat", json=body, headers=V1)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
        bearer = {**V1, "Authorization": "Bearer tck-token"}
        allowed = await anonymous.post("/a2a/chat", json=body, headers=bearer)
        assert allowed.json()["error"]["code"] == -32001
