"""SPEC W8 / issue 22 item 2: the AI SDK's UI message stream at /ai-sdk/APP.

The stream is read two ways: chunk by chunk here, and by the AI SDK's own chat (the
`AbstractChat` + `DefaultChatTransport` that `useChat` runs) in Node, which parses every chunk
against its schema and builds the UI messages a React app would render.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx

GOLDEN = Path(__file__).parent / "golden"
PICK_COLOR = {
    "name": "pick_color",
    "description": "Asks the user to pick a color.",
    "inputSchema": {"type": "object", "properties": {"question": {"type": "string"}}},
}


def _user(text: str, n: int = 1, files: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}, *(files or [])]
    return {"id": f"u{n}", "role": "user", "parts": parts}


def _chunks(answer: httpx.Response) -> list[dict[str, Any]]:
    """The stream's chunks, checking its framing: SSE, the protocol's header, `[DONE]` last."""
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert answer.headers["x-vercel-ai-ui-message-stream"] == "v1"
    frames = answer.text.split("\n\n")
    assert frames[-1] == ""
    assert frames[-2] == "data: [DONE]"
    chunks = [json.loads(f.removeprefix("data: ")) for f in frames[:-2]]
    assert chunks[0]["type"] == "start"
    assert chunks[-1]["type"] == "finish"
    assert all(c.get("delta", "x") != "" for c in chunks), "an empty delta"
    return chunks


def _types(chunks: list[dict[str, Any]]) -> list[str]:
    return [c["type"] for c in chunks]


def _session(client: httpx.Client, app: str, sid: str) -> dict[str, Any]:
    answer = client.get(f"/apps/{app}/users/user/sessions/{sid}")
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_w8_ai_sdk_stream_has_text_reasoning_tools_and_state(client: httpx.Client) -> None:
    chunks = _chunks(client.post("/ai-sdk/helper", json={"id": "c1", "messages": [_user("ham")]}))
    types = _types(chunks)
    assert types[:2] == ["start", "data-state"]
    call = next(c for c in chunks if c["type"] == "tool-input-start")
    assert call["toolName"] == "remember"
    available = next(c for c in chunks if c["type"] == "tool-input-available")
    assert available["input"] == {"note": "ham"}
    output = next(c for c in chunks if c["type"] == "tool-output-available")
    assert (output["toolCallId"], output["output"]) == (call["toolCallId"], {"note": "ham"})
    reasoning = "".join(c["delta"] for c in chunks if c["type"] == "reasoning-delta")
    assert reasoning == "Let me look at the result."
    text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert text == 'Done: {"note": "ham"}'
    states = [c["data"] for c in chunks if c["type"] == "data-state"]
    assert states[-1] == _session(client, "helper", "c1")["state"]
    assert chunks[-1]["finishReason"] == "stop"
    assert types.count("start-step") == types.count("finish-step") == 2


def test_w8_ai_sdk_only_the_newest_message_is_new(client: httpx.Client) -> None:
    client.post("/ai-sdk/helper", json={"id": "c2", "messages": [_user("one")]})
    history = [
        _user("one"),
        {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "Done"}]},
        _user("two", 2),
    ]
    _chunks(client.post("/ai-sdk/helper", json={"id": "c2", "messages": history}))
    state = _session(client, "helper", "c2")["state"]
    assert state["notes"] == ["one", "two"]


def test_w8_ai_sdk_confirmation_is_an_approval_request_and_its_response_answers_it(
    client: httpx.Client,
) -> None:
    chunks = _chunks(client.post("/ai-sdk/bank", json={"id": "c3", "messages": [_user("100")]}))
    request = next(c for c in chunks if c["type"] == "tool-approval-request")
    call = next(c for c in chunks if c["type"] == "tool-input-start")
    assert request["toolCallId"] == call["toolCallId"]
    assert "tool-output-available" not in _types(chunks)
    assert chunks[-1]["finishReason"] == "tool-calls"
    assistant = {
        "id": "a1",
        "role": "assistant",
        "parts": [
            {
                "type": "dynamic-tool",
                "toolName": "remember",
                "toolCallId": call["toolCallId"],
                "state": "approval-responded",
                "input": {"note": "100"},
                "approval": {"id": request["approvalId"], "approved": False, "reason": "no"},
            }
        ],
    }
    answer = _chunks(
        client.post("/ai-sdk/bank", json={"id": "c3", "messages": [_user("100"), assistant]})
    )
    result = next(c for c in answer if c["type"].startswith("tool-output"))
    assert result["toolCallId"] == call["toolCallId"]
    assert "sent" not in json.dumps(result)
    assert client.get("/apps/bank/users/user/sessions/c3/pending").json() == []


def test_w8_ai_sdk_failure_ends_with_an_error_chunk(client: httpx.Client) -> None:
    answer = client.post("/ai-sdk/flaky", json={"id": "f", "messages": [_user("x")]})
    last = json.loads(answer.text.split("\n\n")[-2].removeprefix("data: "))
    assert last["type"] == "error"
    assert "/secret/path" not in last["errorText"]


def test_w8_ai_sdk_bad_requests_are_4xx(client: httpx.Client) -> None:
    assert client.post("/ai-sdk/nope", json={"id": "x", "messages": []}).status_code == 404
    assert client.post("/ai-sdk/helper", json={"messages": []}).status_code == 422
    bad_file = {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,%%%"}
    refused = client.post(
        "/ai-sdk/helper", json={"id": "x", "messages": [_user("see", files=[bad_file])]}
    )
    assert refused.status_code == 400
    assert "base64" in refused.json()["detail"]


def _file(data: bytes, media_type: str = "image/png", name: str = "dot.png") -> dict[str, Any]:
    encoded = base64.b64encode(data).decode()
    return {
        "type": "file",
        "mediaType": media_type,
        "filename": name,
        "url": f"data:{media_type};base64,{encoded}",
    }


def test_w8_ai_sdk_files_are_saved_as_artifacts_and_reach_the_model(client: httpx.Client) -> None:
    body = {"id": "c5", "messages": [_user("see", 1, [_file(b"\x89PNG fake")])]}
    chunks = _chunks(client.post("/ai-sdk/helper", json=body))
    text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert text == "Got image/png of 9 bytes"
    assert client.get("/apps/helper/users/user/sessions/c5/artifacts").json() == ["dot.png"]
    first = next(e for e in _session(client, "helper", "c5")["events"] if e["author"] == "user")
    stored = first["content"]["parts"][1]
    assert "inlineData" not in stored
    assert stored["fileData"]["fileUri"] == "artifact://dot.png?version=0"
    assert first["actions"]["artifactDelta"] == {"dot.png": 0}


def test_w8_ai_sdk_files_too_large_or_of_types_the_model_cannot_take_are_refused(
    client: httpx.Client,
) -> None:
    from rondo.server.front_end import MAX_FILE_BYTES

    big = {"id": "c6", "messages": [_user("see", 1, [_file(b"x" * (MAX_FILE_BYTES + 1))])]}
    too_large = client.post("/ai-sdk/helper", json=big)
    assert too_large.status_code == 413
    assert "at most" in too_large.json()["detail"]
    exe = {"id": "c6", "messages": [_user("run", 1, [_file(b"MZ", "application/x-msdownload")])]}
    refused = client.post("/ai-sdk/helper", json=exe)
    assert refused.status_code == 415
    assert "does not take application/x-msdownload" in refused.json()["detail"]
    assert client.get("/apps/helper/users/user/sessions/c6/artifacts").json() == []


def _normalized(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for chunk in chunks:
        chunk = dict(chunk)
        for key in ("id", "toolCallId", "approvalId"):
            if key in chunk and chunk[key] != "state":
                chunk[key] = names.setdefault(chunk[key], f"id{len(names)}")
        out.append(chunk)
    return out


def test_w8_ai_sdk_golden_frames_of_a_recorded_run(client: httpx.Client) -> None:
    chunks = _chunks(client.post("/ai-sdk/helper", json={"id": "g", "messages": [_user("ham")]}))
    golden = GOLDEN / "ai_sdk_helper.json"
    assert _normalized(chunks) == json.loads(golden.read_text())


def test_w8_ai_sdk_real_chat_runs_turns_approvals_and_client_tools(client: httpx.Client) -> None:
    from tests.server._node import node_client

    run = node_client()
    url = f"{client.base_url}/ai-sdk/helper"
    scenario: dict[str, Any] = {"id": "node-1", "turns": [{"user": "one"}, {"user": "two"}]}
    turns = run("ai_sdk_chat.mjs", url, json.dumps(scenario))["turns"]
    assert [(t["status"], t["errors"]) for t in turns] == [("ready", [])] * 2
    last = turns[-1]["messages"][-1]
    assert last["parts"][-1] == {"type": "text", "text": 'Done: {"note": "two"}', "state": "done"}
    state = next(p for p in last["parts"] if p["type"] == "data-state")["data"]
    assert state == _session(client, "helper", "node-1")["state"]
    tool = next(p for p in last["parts"] if p["type"] == "dynamic-tool")
    assert (tool["state"], tool["output"]) == ("output-available", {"note": "two"})
    # A confirmation: approval requested, approved by the chat, the call's output arrives.
    scenario = {"id": "node-2", "turns": [{"user": "100"}, {"approve": True}]}
    asked, approved = run(
        "ai_sdk_chat.mjs", f"{client.base_url}/ai-sdk/bank", json.dumps(scenario)
    )["turns"]
    paused = next(p for p in asked["messages"][-1]["parts"] if p["type"] == "dynamic-tool")
    assert paused["state"] == "approval-requested"
    done = next(p for p in approved["messages"][-1]["parts"] if p["type"] == "dynamic-tool")
    assert (done["state"], done["output"]) == ("output-available", {"note": "100", "sent": True})
    assert approved["messages"][-1]["parts"][-1]["text"] == "Stub reply: noted '100'"
    # A client-side tool: the run ends on its call; the chat's output continues it.
    scenario = {
        "id": "node-3",
        "tools": [PICK_COLOR],
        "turns": [{"user": "a color?"}, {"toolOutput": {"color": "teal"}}],
    }
    asked, answered = run("ai_sdk_chat.mjs", url, json.dumps(scenario))["turns"]
    call = next(p for p in asked["messages"][-1]["parts"] if p["type"] == "dynamic-tool")
    assert (call["toolName"], call["state"]) == ("pick_color", "input-available")
    assert answered["messages"][-1]["parts"][-1]["text"] == 'Done: {"color": "teal"}'
