"""SPEC W8 / issue 22 item 1: AG-UI at /ag-ui/APP, a projection of the lifecycle stream.

Checked three ways: the events parse as the `ag-ui-protocol` package's own models with no
field it does not know, `ag-ui-validate` reports nothing about them, and `@ag-ui/client`'s
`HttpAgent` (Node) runs whole conversations against the server.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._require import require_module
from tests.server._live import sse_events

require_module("ag_ui", what="AGUI", install="pip install 'rondo-agents[agui]'")
validate = require_module("ag_ui_validate", what="AGUI", install="pip install ag-ui-validate")

from ag_ui.core import Event  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402

GOLDEN = Path(__file__).parent / "golden"
EVENTS: TypeAdapter[Any] = TypeAdapter(Event)
FEATURES = ["agentic-chat", "backend-tool-rendering", "human-in-the-loop", "shared-state"]
PICK_COLOR = {
    "name": "pick_color",
    "description": "Asks the user to pick a color.",
    "parameters": {"type": "object", "properties": {"question": {"type": "string"}}},
}


def _body(thread: str, run: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": run, "messages": messages, **extra}


def _user(text: str, n: int = 1) -> dict[str, Any]:
    return {"id": f"user-{n}", "role": "user", "content": text}


def _events(answer: httpx.Response) -> list[dict[str, Any]]:
    """The stream's events, each checked against the protocol's own models and validator."""
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/event-stream")
    events = sse_events(answer.text)
    for raw in events:
        model = EVENTS.validate_python(raw)
        assert not model.model_extra, f"fields AG-UI does not define: {model.model_extra}"
        assert model.model_dump(mode="json", by_alias=True) == raw
    checker = validate.create_validator(validate.ValidatorOptions(features=FEATURES))
    for raw in events:
        checker.feed(raw)
    checker.finalize()
    report = checker.report()
    assert report.diagnostics == []
    assert report.internal_errors == []
    return events


def _types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def _session(client: httpx.Client, app: str, thread: str) -> dict[str, Any]:
    answer = client.get(f"/apps/{app}/users/user/sessions/{thread}")
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_w8_ag_ui_run_streams_text_reasoning_tools_and_state(client: httpx.Client) -> None:
    events = _events(client.post("/ag-ui/helper", json=_body("t1", "r1", [_user("ham")])))
    types = _types(events)
    # Run-scoped events once each, echoing the client's ids; RUN_FINISHED last.
    assert types.count("RUN_STARTED") == 1
    assert types.count("RUN_FINISHED") == 1
    assert types[0] == "RUN_STARTED"
    assert types[-1] == "RUN_FINISHED"
    assert {(e["threadId"], e["runId"]) for e in (events[0], events[-1])} == {("t1", "r1")}
    assert types[1] == "STATE_SNAPSHOT"
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    assert start["toolCallName"] == "remember"
    args = "".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS")
    assert json.loads(args) == {"note": "ham"}
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == start["toolCallId"]
    assert json.loads(result["content"]) == {"note": "ham"}
    thought = "".join(e["delta"] for e in events if e["type"] == "REASONING_MESSAGE_CONTENT")
    assert thought == "Let me look at the result."
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == 'Done: {"note": "ham"}'
    assert all(e["delta"] for e in events if "delta" in e and isinstance(e["delta"], str))
    assert events[-1]["result"] == text
    # STATE_DELTA is the records' state delta as JSON Patch: applied, it is the session's state.
    state: dict[str, Any] = dict(events[1]["snapshot"])
    for e in events:
        if e["type"] == "STATE_DELTA":
            for op in e["delta"]:
                assert op["op"] == "add"
                state[op["path"][1:]] = op["value"]
    assert (
        state
        == _session(client, "helper", "t1")["state"]
        == {
            "last_note": "ham",
            "notes": ["ham"],
        }
    )


def test_w8_ag_ui_adds_only_the_new_turn(client: httpx.Client) -> None:
    first = _events(client.post("/ag-ui/helper", json=_body("t2", "r1", [_user("one")])))
    answer = next(e for e in first if e["type"] == "TEXT_MESSAGE_START")["messageId"]
    history = [
        _user("one"),
        {"id": answer, "role": "assistant", "content": 'Done: {"note": "one"}'},
        _user("two", 2),
    ]
    _events(client.post("/ag-ui/helper", json=_body("t2", "r2", history)))
    session = _session(client, "helper", "t2")
    said = [
        p["text"]
        for e in session["events"]
        if e["author"] == "user"
        for p in e["content"]["parts"]
        if "text" in p
    ]
    assert said == ["one", "two"]
    assert session["state"]["notes"] == ["one", "two"]


def test_w8_ag_ui_client_state_edits_reach_the_session(client: httpx.Client) -> None:
    body = _body("t3", "r1", [_user("x")], state={"theme": "dark"})
    events = _events(client.post("/ag-ui/helper", json=body))
    assert events[1]["snapshot"] == {"theme": "dark"}
    assert _session(client, "helper", "t3")["state"]["theme"] == "dark"


def test_w8_ag_ui_client_tool_ends_the_run_and_its_result_continues_it(
    client: httpx.Client,
) -> None:
    events = _events(
        client.post(
            "/ag-ui/helper", json=_body("t4", "r1", [_user("a color?")], tools=[PICK_COLOR])
        )
    )
    start = next(e for e in events if e["type"] == "TOOL_CALL_START")
    assert start["toolCallName"] == "pick_color"
    assert "TOOL_CALL_RESULT" not in _types(events)
    assert events[-1]["outcome"] == {"type": "success", "pendingToolCallIds": [start["toolCallId"]]}
    call_id = start["toolCallId"]
    history = [
        _user("a color?"),
        {
            "id": "a1",
            "role": "assistant",
            "toolCalls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "pick_color", "arguments": '{"question":"a color?"}'},
                }
            ],
        },
        {"id": "t1", "role": "tool", "toolCallId": call_id, "content": '{"color": "teal"}'},
    ]
    answer = _events(
        client.post("/ag-ui/helper", json=_body("t4", "r2", history, tools=[PICK_COLOR]))
    )
    text = "".join(e["delta"] for e in answer if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == 'Done: {"color": "teal"}'
    assert _session(client, "helper", "t4")["events"][-1]["content"]["parts"][-1]["text"] == text


def _pause(client: httpx.Client, thread: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    events = _events(client.post("/ag-ui/bank", json=_body(thread, "r1", [_user("100")])))
    # The paused call is streamed (start, args, end) with no result.
    assert _types(events) == [
        "RUN_STARTED",
        "STATE_SNAPSHOT",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "RUN_FINISHED",
    ]
    outcome = events[-1]["outcome"]
    assert outcome["type"] == "interrupt"
    (interrupt,) = outcome["interrupts"]
    assert interrupt["toolCallId"] == events[2]["toolCallId"]
    assert interrupt["reason"] == "tool_confirmation"
    pending = client.get(f"/apps/bank/users/user/sessions/{thread}/pending").json()
    assert [p["callId"] for p in pending] == [interrupt["id"]]
    return interrupt, events


@pytest.mark.parametrize("key", ["approved", "confirmed"])
def test_w8_ag_ui_confirmation_is_an_interrupt_and_resume_approves_it(
    client: httpx.Client, key: str
) -> None:
    interrupt, _ = _pause(client, f"bank-{key}")
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {key: True}}]
    events = _events(
        client.post("/ag-ui/bank", json=_body(f"bank-{key}", "r2", [_user("100")], resume=resume))
    )
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == interrupt["toolCallId"]
    assert json.loads(result["content"]) == {"note": "100", "sent": True}
    assert events[-1]["type"] == "RUN_FINISHED"
    assert "outcome" not in events[-1]
    assert client.get(f"/apps/bank/users/user/sessions/bank-{key}/pending").json() == []


def test_w8_ag_ui_resume_rejects_and_unknown_interrupts_are_refused(
    client: httpx.Client,
) -> None:
    interrupt, _ = _pause(client, "bank-no")
    wrong = [{"interruptId": "nope", "status": "resolved", "payload": {"approved": True}}]
    refused = client.post("/ag-ui/bank", json=_body("bank-no", "r2", [], resume=wrong))
    assert refused.status_code == 400
    assert "answers no interrupt" in refused.json()["detail"]
    no = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": False}}]
    events = _events(client.post("/ag-ui/bank", json=_body("bank-no", "r3", [], resume=no)))
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == interrupt["toolCallId"]
    assert "sent" not in json.loads(result["content"])


def test_w8_ag_ui_file_parts_are_saved_as_artifacts_and_reach_the_model(
    client: httpx.Client,
) -> None:
    image = {
        "type": "image",
        "source": {
            "type": "data",
            "value": base64.b64encode(b"GIF89a").decode(),
            "mimeType": "image/gif",
        },
    }
    message = {"id": "u1", "role": "user", "content": [{"type": "text", "text": "see"}, image]}
    events = _events(client.post("/ag-ui/helper", json=_body("files", "r1", [message])))
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "Got image/gif of 6 bytes"
    (name,) = client.get("/apps/helper/users/user/sessions/files/artifacts").json()
    assert name.startswith("upload_")


def test_w8_ag_ui_failure_ends_with_run_error(client: httpx.Client) -> None:
    events = _events(client.post("/ag-ui/flaky", json=_body("f1", "r1", [_user("x")])))
    assert events[0]["type"] == "RUN_STARTED"
    assert events[-1]["type"] == "RUN_ERROR"
    assert "/secret/path" not in events[-1]["message"]
    assert "RUN_FINISHED" not in _types(events)


def test_w8_ag_ui_bad_requests_are_4xx(client: httpx.Client) -> None:
    assert client.post("/ag-ui/nope", json=_body("t", "r", [_user("x")])).status_code == 404
    assert client.post("/ag-ui/helper", json={"threadId": "t"}).status_code == 422
    # Nothing new to run: the session's state, and no run.
    idle = _events(client.post("/ag-ui/helper", json=_body("idle", "r1", [])))
    assert _types(idle) == ["RUN_STARTED", "STATE_SNAPSHOT", "RUN_FINISHED"]


def test_w8_ag_ui_needs_the_token_and_keeps_users_apart(launch: Any) -> None:
    tokens = {"tok-a": "alice", "tok-b": "bob"}
    with launch(auth_tokens=tokens) as http:
        body = _body("shared", "r1", [_user("mine")])
        assert http.post("/ag-ui/helper", json=body).status_code == 401
        alice = {"Authorization": "Bearer tok-a"}
        _events(http.post("/ag-ui/helper", json=body, headers=alice))
        # Bob's thread of the same id is his own session: he sees none of Alice's state.
        bob = {"Authorization": "Bearer tok-b"}
        events = _events(http.post("/ag-ui/helper", json=_body("shared", "r1", []), headers=bob))
        assert events[1]["snapshot"] == {}
        assert http.get("/apps/helper/users/alice/sessions/shared", headers=bob).status_code == 403


def _normalized(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events with rondo's random ids and the clock replaced by stable names."""
    names: dict[str, str] = {}

    def name(value: str) -> str:
        return names.setdefault(value, f"id{len(names)}")

    out: list[dict[str, Any]] = []
    for event in events:
        event = dict(event)
        event.pop("timestamp", None)
        for key in ("messageId", "toolCallId"):
            if key in event:
                event[key] = name(event[key])
        out.append(event)
    return out


def test_w8_ag_ui_golden_frames_of_a_recorded_run(client: httpx.Client) -> None:
    events = _events(client.post("/ag-ui/helper", json=_body("g1", "r1", [_user("ham")])))
    golden = GOLDEN / "ag_ui_helper.json"
    assert _normalized(events) == json.loads(golden.read_text())


def test_w8_ag_ui_real_client_follows_session_state_and_interrupts(client: httpx.Client) -> None:
    from tests.server._node import node_client

    run = node_client()
    url = f"{client.base_url}/ag-ui/helper"
    scenario = {"threadId": "node-1", "turns": [{"user": "one"}, {"user": "two"}]}
    turns = run("ag_ui_client.mjs", url, json.dumps(scenario))["turns"]
    assert [t["error"] for t in turns] == [None, None]
    session = _session(client, "helper", "node-1")
    assert turns[-1]["state"] == session["state"] == {"last_note": "two", "notes": ["one", "two"]}
    roles = [m["role"] for m in turns[-1]["messages"]]
    assert roles == ["user", "assistant", "tool", "reasoning", "assistant"] * 2
    said = [e for e in session["events"] if e["author"] == "user"]
    assert len(said) == 2
    # A confirmation: the client sees the interrupt, answers it with `resume`, gets the result.
    scenario = {"threadId": "node-2", "turns": [{"user": "100"}, {"approve": True}]}
    url = f"{client.base_url}/ag-ui/bank"
    paused, resumed = run("ag_ui_client.mjs", url, json.dumps(scenario))["turns"]
    (interrupt,) = paused["pendingInterrupts"]
    assert resumed["error"] is None
    assert resumed["pendingInterrupts"] == []
    tool = next(m for m in resumed["messages"] if m["role"] == "tool")
    assert tool["toolCallId"] == interrupt["toolCallId"]
    assert json.loads(tool["content"]) == {"note": "100", "sent": True}
    assert resumed["messages"][-1]["content"] == "Stub reply: noted '100'"
    # A client-side tool: the run ends on its call, the client's result continues it.
    scenario = {
        "threadId": "node-3",
        "turns": [
            {"user": "a color?", "tools": [PICK_COLOR]},
            {"toolResult": {"content": '{"color": "teal"}'}, "tools": [PICK_COLOR]},
        ],
    }
    url = f"{client.base_url}/ag-ui/helper"
    asked, answered = run("ag_ui_client.mjs", url, json.dumps(scenario))["turns"]
    assert asked["messages"][-1]["toolCalls"][0]["function"]["name"] == "pick_color"
    assert answered["messages"][-1]["content"] == 'Done: {"color": "teal"}'
