"""SPEC W2: the lifecycle stream over SSE, and decisions on pending calls."""

from __future__ import annotations

from typing import Any

import httpx

from rondo.lifecycle import (
    HITLDecided,
    HITLPending,
    ReasonDelta,
    RunEnd,
    RunStart,
    ToolCallEnd,
    parse_lifecycle_event,
)
from rondo.server.native_routes import pending_json
from tests.server._live import sse_events


def _run(app: str, text: str, session: str = "s", **extra: Any) -> dict[str, Any]:
    return {
        "appName": app,
        "userId": "u",
        "sessionId": session,
        "newMessage": {"role": "user", "parts": [{"text": text}]},
        **extra,
    }


def _lifecycle(answer: httpx.Response) -> list[Any]:
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/event-stream")
    events = [parse_lifecycle_event(e) for e in sse_events(answer.text)]
    assert all(e is not None for e in events)
    return events


def test_w2_run_lifecycle_streams_run_start_to_run_end(client: httpx.Client) -> None:
    client.post("/apps/chat/users/u/sessions/s")
    events = _lifecycle(client.post("/run_lifecycle", json=_run("chat", "ham")))
    assert isinstance(events[0], RunStart)
    assert events[0].session_id == "s"
    assert isinstance(events[-1], RunEnd)
    assert events[-1].text == "Stub reply: noted 'ham'"
    assert {e.run_id for e in events} == {events[0].run_id}
    # Streaming is on by default here: the answer arrives token by token.
    deltas = [e.text for e in events if isinstance(e, ReasonDelta) and e.kind == "text_delta"]
    assert "".join(deltas) == "Stub reply: noted 'ham'"
    assert len(deltas) > 1
    tool = next(e for e in events if isinstance(e, ToolCallEnd))
    assert tool.tool_name == "remember"
    assert tool.result == {"note": "ham", "count": 1}
    # The same run is in the session's records.
    session = client.get("/apps/chat/users/u/sessions/s").json()
    assert {e["runId"] for e in session["events"]} == {events[0].run_id}


def test_w2_run_lifecycle_without_streaming_sends_no_deltas(client: httpx.Client) -> None:
    client.post("/apps/chat/users/u/sessions/s")
    events = _lifecycle(client.post("/run_lifecycle", json=_run("chat", "x", streaming=False)))
    assert not [e for e in events if isinstance(e, ReasonDelta)]
    assert events[-1].text == "Stub reply: noted 'x'"


def _pause(client: httpx.Client, app: str, text: str) -> Any:
    client.post(f"/apps/{app}/users/u/sessions/s")
    events = _lifecycle(client.post("/run_lifecycle", json=_run(app, text)))
    assert any(isinstance(e, HITLPending) for e in events)
    end = events[-1]
    assert isinstance(end, RunEnd)
    assert len(end.pending) == 1
    listed = client.get(f"/apps/{app}/users/u/sessions/s/pending")
    assert listed.status_code == 200
    assert listed.json() == [pending_json(p) for p in end.pending]
    return end.pending[0]


def _decide(client: httpx.Client, app: str, call_id: str, **body: Any) -> list[Any]:
    return _lifecycle(client.post(f"/apps/{app}/users/u/sessions/s/pending/{call_id}", json=body))


def test_w2_approving_a_confirmation_runs_the_tool_and_resumes(client: httpx.Client) -> None:
    pending = _pause(client, "bank", "5 EUR")
    assert pending.kind == "confirmation"
    assert pending.tool_name == "remember"
    assert pending.args == {"note": "5 EUR"}
    events = _decide(client, "bank", pending.call_id, decision="approve")
    start = events[0]
    assert isinstance(start, RunStart)
    assert start.resumed
    assert start.run_id == pending.run_id
    decided = next(e for e in events if isinstance(e, HITLDecided))
    assert decided.decision == "approve"
    tool = next(e for e in events if isinstance(e, ToolCallEnd))
    assert tool.result == {"note": "5 EUR", "sent": True}
    assert events[-1].text == "Stub reply: noted '5 EUR'"
    assert client.get("/apps/bank/users/u/sessions/s/pending").json() == []


def test_w2_rejecting_a_confirmation_never_runs_the_tool(client: httpx.Client) -> None:
    pending = _pause(client, "bank", "9000 EUR")
    events = _decide(client, "bank", pending.call_id, decision="reject", comment="too much")
    decided = next(e for e in events if isinstance(e, HITLDecided))
    assert decided.decision == "reject"
    assert decided.comment == "too much"
    session = client.get("/apps/bank/users/u/sessions/s").json()
    responses = [
        p["functionResponse"]["response"]
        for e in session["events"]
        for p in e["content"]["parts"]
        if "functionResponse" in p and p["functionResponse"]["name"] == "remember"
    ]
    assert "too much" in responses[-1]["error"]
    assert all("sent" not in r for r in responses)


def test_w2_skipping_a_confirmation_records_the_observation(client: httpx.Client) -> None:
    pending = _pause(client, "bank", "1 EUR")
    events = _decide(
        client, "bank", pending.call_id, decision="skip", observation={"note": "done by hand"}
    )
    decided = next(e for e in events if isinstance(e, HITLDecided))
    assert decided.decision == "skip"
    # The tool did not run: the observation stands in for its result.
    results = [e.result for e in events if isinstance(e, ToolCallEnd)]
    assert results
    assert all("sent" not in (r or {}) for r in results)
    assert "done by hand" in events[-1].text


def test_w2_a_long_running_call_takes_its_result(client: httpx.Client) -> None:
    pending = _pause(client, "waiter", "ask the manager")
    assert pending.kind == "long_running"
    refused = client.post(
        f"/apps/waiter/users/u/sessions/s/pending/{pending.call_id}", json={"decision": "approve"}
    )
    assert refused.status_code == 400
    assert "result" in refused.json()["detail"]
    events = _decide(
        client, "waiter", pending.call_id, decision="approve", result={"note": "manager: yes"}
    )
    assert events[0].resumed
    assert events[-1].text == "Stub reply: noted 'manager: yes'"
    assert events[-1].pending == []


def test_w2_bad_decisions_are_refused(client: httpx.Client) -> None:
    pending = _pause(client, "bank", "2 EUR")
    base = "/apps/bank/users/u/sessions/s/pending"
    unknown = client.post(f"{base}/no-such-call", json={"decision": "approve"})
    assert unknown.status_code == 404
    assert "no-such-call" in unknown.json()["detail"]
    wrong = client.post(f"{base}/{pending.call_id}", json={"decision": "maybe"})
    assert wrong.status_code == 422
    assert wrong.json()["detail"][0]["loc"] == ["body", "decision"]
    assert client.get("/apps/bank/users/u/sessions/missing/pending").status_code == 404


def test_w2_openapi_documents_every_route(client: httpx.Client) -> None:
    schema = client.get("/openapi.json").json()
    routes = {(m.upper(), p) for p, ops in schema["paths"].items() for m in ops}
    session = "/apps/{app_name}/users/{user_id}/sessions/{session_id}"
    artifact = session + "/artifacts/{artifact_name}"
    expected = {
        ("GET", "/list-apps"),
        ("GET", "/version"),
        ("GET", "/health"),
        ("GET", "/config/telemetry"),
        ("POST", "/config/telemetry"),
        ("GET", "/apps/{app_name}/users/{user_id}/sessions"),
        ("POST", "/apps/{app_name}/users/{user_id}/sessions"),
        ("GET", session),
        ("POST", session),
        ("PATCH", session),
        ("DELETE", session),
        ("GET", session + "/artifacts"),
        ("POST", session + "/artifacts"),
        ("GET", artifact),
        ("DELETE", artifact),
        ("GET", artifact + "/versions"),
        ("GET", artifact + "/versions/{version_id}"),
        ("POST", "/run"),
        ("POST", "/run_sse"),
        ("POST", "/run_lifecycle"),
        ("GET", session + "/pending"),
        ("POST", session + "/pending/{call_id}"),
        ("GET", session + "/usage"),
    }
    assert expected <= routes
    for path, ops in schema["paths"].items():
        for method, op in ops.items():
            assert op.get("responses"), (method, path)
    # google-adk's RunAgentRequest, with rondo's fields for detached runs (SPEC W7).
    run_body = schema["components"]["schemas"]["DetachedRunRequest"]["properties"]
    assert {"appName", "userId", "sessionId", "newMessage", "streaming", "stateDelta"} <= set(
        run_body
    )
    assert {"background", "onDisconnect", "multitask"} <= set(run_body)
    decision = schema["components"]["schemas"]["PendingDecision"]["properties"]
    assert decision["decision"]["enum"] == ["approve", "reject", "skip"]
