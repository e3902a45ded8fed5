"""SPEC W1: rondo answers google-adk's routes with google-adk's JSON.

The same requests google-adk 2.13's `api_server` answered in `adk_capture/` (the reference
agent, written with rondo in `apps/chat`) must give the same status, the same keys in
camelCase, no nulls, and the same values once the ids and clocks that differ by nature are
masked.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.server._live import reference, sse_events

_VOLATILE = {"id", "invocationId", "timestamp", "lastUpdateTime"}


def masked(value: Any, key: str | None = None) -> Any:
    """`value` with ids and clocks masked, and the documented rondo-only keys removed."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k == "runId":  # rondo's run id: an extra key, ignored by ADK's Event model
                continue
            if k == "nodeInfo":  # ADK's workflow node path; rondo has no node graph there
                out[k] = {"path": "<path>"}
                continue
            out[k] = masked(v, k)
        return out
    if isinstance(value, list):
        return [masked(v) for v in value]
    if key in _VOLATILE:
        return f"<{key}>"
    return value


def no_nulls(value: Any, path: str = "$") -> None:
    assert value is not None, f"null at {path}"
    if isinstance(value, dict):
        for k, v in value.items():
            no_nulls(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            no_nulls(v, f"{path}[{i}]")


def _same_as_capture(response: httpx.Response, capture: str) -> Any:
    status, headers, body = reference(capture)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == headers["content-type"]
    expected = masked(json.loads(body))
    got = response.json()
    if got is not None:
        no_nulls(got)
    assert masked(got) == expected
    return got


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def _run_body(session_id: str, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "appName": "chat",
        "userId": "u1",
        "sessionId": session_id,
        "newMessage": _message(text),
        **extra,
    }


def test_w1_list_apps_and_version(client: httpx.Client) -> None:
    apps = client.get("/list-apps", params={"relative_path": "./"})
    assert apps.status_code == 200
    assert "chat" in apps.json()
    version = client.get("/version").json()
    assert set(version) == {"version", "language", "language_version"}
    assert version["language"] == "python"
    assert client.get("/health").json() == {"status": "ok"}


def test_w1_create_session_matches_adk(client: httpx.Client) -> None:
    created = client.post("/apps/chat/users/u1/sessions", json={"state": {"k": 1}})
    _same_as_capture(created, "03-create-session.txt")
    # As ADK: POST with an id takes the whole body as the initial state.
    with_id = client.post("/apps/chat/users/u1/sessions/my-session-id", json={"state": {}})
    got = _same_as_capture(with_id, "04-create-session-with-id.txt")
    assert got["id"] == "my-session-id"
    again = client.post("/apps/chat/users/u1/sessions/my-session-id", json={})
    assert again.status_code == 409
    assert again.json() == {"detail": "Session already exists: my-session-id"}


def test_w1_run_run_sse_and_session_match_adk(client: httpx.Client) -> None:
    sid = "d97f3c33-d0cb-4a04-8a7d-875531342c09"
    client.post("/apps/chat/users/u1/sessions", json={"state": {"k": 1}})
    client.post("/apps/chat/users/u1/sessions/my-session-id", json={"state": {}})
    assert client.post(f"/apps/chat/users/u1/sessions/{sid}").status_code == 200

    ran = _same_as_capture(client.post("/run", json=_run_body(sid, "milk")), "05-run.txt")
    call_id = ran[0]["content"]["parts"][0]["functionCall"]["id"]
    assert ran[1]["content"]["parts"][0]["functionResponse"]["id"] == call_id
    assert ran[0]["longRunningToolIds"] == []  # present on call events only, as ADK

    streamed = client.post("/run_sse", json=_run_body(sid, "eggs", streaming=False))
    status, headers, body = reference("06-run-sse.txt")
    assert streamed.status_code == status
    assert streamed.headers["content-type"] == headers["content-type"]
    assert [masked(e) for e in sse_events(streamed.text)] == [
        masked(e) for e in sse_events(body.rstrip("\n") + "\n\n")
    ]

    session = _same_as_capture(
        client.get(f"/apps/chat/users/u1/sessions/{sid}"), "07-get-session.txt"
    )
    assert session["state"] == {"note_count": 2, "last_note": "eggs"}

    listed = client.get("/apps/chat/users/u1/sessions")
    _, _, listed_body = reference("08-list-sessions.txt")
    # rondo lists newest first; ADK's in-memory store lists in creation order.
    key = json.dumps
    assert sorted(map(key, masked(listed.json()))) == sorted(
        map(key, masked(json.loads(listed_body)))
    )

    _same_as_capture(
        client.get(f"/apps/chat/users/u1/sessions/{sid}/artifacts"), "12-list-artifacts.txt"
    )
    _same_as_capture(client.delete(f"/apps/chat/users/u1/sessions/{sid}"), "13-delete-session.txt")
    assert client.get(f"/apps/chat/users/u1/sessions/{sid}").status_code == 404


def test_w1_errors_match_adk(client: httpx.Client) -> None:
    bad = client.post("/run", content=b"{not json", headers={"content-type": "application/json"})
    _same_as_capture(bad, "09-bad-json.txt")
    missing = client.get("/apps/chat/users/u1/sessions/does-not-exist")
    _same_as_capture(missing, "11-missing-session.txt")
    unknown = client.post(
        "/run",
        json={"appName": "nope", "userId": "u", "sessionId": "s", "newMessage": _message("x")},
    )
    _, _, body = reference("10-unknown-app.txt")
    assert unknown.status_code == 404
    # ADK names its server-side path here; rondo names the apps instead.
    assert unknown.json()["detail"].startswith("Agent not found: 'nope'.")
    assert json.loads(body)["detail"].startswith("Agent not found: 'nope'.")


def test_w1_streaming_sends_partial_events_then_the_whole_answer(client: httpx.Client) -> None:
    client.post("/apps/chat/users/u1/sessions/s")
    answer = client.post("/run_sse", json=_run_body("s", "tea", streaming=True))
    events = sse_events(answer.text)
    for event in events:
        no_nulls(event)
    partial = [e for e in events if e.get("partial")]
    final = events[-1]
    assert len(partial) > 1
    assert all(e["partial"] is True for e in partial)
    assert "partial" not in final  # the aggregate, as a non-streamed event
    text = "".join(e["content"]["parts"][0]["text"] for e in partial)
    assert text == final["content"]["parts"][0]["text"] == "Stub reply: noted 'tea'"
    # Only whole events are stored.
    stored = client.get("/apps/chat/users/u1/sessions/s").json()["events"]
    assert all("partial" not in e for e in stored)
    assert len(stored) == 4


def test_w1_an_artifact_delta_goes_out_as_adk_sends_it(client: httpx.Client) -> None:
    client.post("/apps/files/users/u1/sessions/s")
    events = sse_events(
        client.post("/run_sse", json={**_run_body("s", "buy milk"), "appName": "files"}).text
    )
    # As google-adk: the tool's event twice — its content with an empty artifactDelta,
    # then the actions alone — because ADK's web UI renders artifacts from the latter.
    content_part, action_part = events[1], events[2]
    assert content_part["id"] == action_part["id"]
    assert content_part["actions"]["artifactDelta"] == {}
    assert "functionResponse" in content_part["content"]["parts"][0]
    assert "content" not in action_part
    assert action_part["actions"]["artifactDelta"] == {"notes.txt": 0}
    assert len(events) == 4
    # /run and the stored session keep it as one event.
    stored = client.get("/apps/files/users/u1/sessions/s").json()["events"]
    assert stored[2]["actions"]["artifactDelta"] == {"notes.txt": 0}
    assert "functionResponse" in stored[2]["content"]["parts"][0]
    saved = client.get("/apps/files/users/u1/sessions/s/artifacts/notes.txt").json()
    assert saved == {"text": "buy milk"}
