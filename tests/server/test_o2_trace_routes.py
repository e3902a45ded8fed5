"""SPEC O2 — the trace routes, in the JSON google-adk's dev UI reads, over a live server.

Needs opentelemetry-sdk (the server extra): skipped without it unless
`RONDO_REQUIRE_OTEL_SDK=1`.
"""

from __future__ import annotations

from typing import Any

import httpx

from tests._otel import sdk
from tests.server.conftest import Launch

TOKENS = {"tok-alice": "alice", "tok-bob": "bob"}
ALICE = {"Authorization": "Bearer tok-alice"}
BOB = {"Authorization": "Bearer tok-bob"}
ADK_SPAN_KEYS = {
    "name",
    "span_id",
    "trace_id",
    "start_time",
    "end_time",
    "attributes",
    "parent_span_id",
    "logs",
}


def _run(http: httpx.Client, user: str, text: str, **headers: Any) -> tuple[str, list[Any]]:
    session = http.post(f"/apps/chat/users/{user}/sessions", json={}, headers=headers).json()
    body = {
        "appName": "chat",
        "userId": user,
        "sessionId": session["id"],
        "newMessage": {"role": "user", "parts": [{"text": text}]},
    }
    events = http.post("/run", json=body, headers=headers)
    assert events.status_code == 200, events.text
    return session["id"], events.json()


def test_o2_session_trace_lists_the_runs_spans_in_adks_shape(launch: Launch) -> None:
    sdk()
    with launch(trace_store=True) as http:
        session_id, events = _run(http, "u1", "milk")
        _run(http, "u1", "other session")
        spans = http.get(f"/dev/apps/chat/debug/trace/session/{session_id}").json()
    assert spans
    for span in spans:
        assert set(span) == ADK_SPAN_KEYS
        assert isinstance(span["span_id"], int)
        assert isinstance(span["trace_id"], int)
        assert span["start_time"] <= span["end_time"]
    # The request's own spans (FastAPI's, when it makes them) share the run's trace.
    assert len({s["trace_id"] for s in spans}) == 1
    rondo = [s for s in spans if "gen_ai.operation.name" in s["attributes"]]
    names = sorted(s["name"] for s in rondo)
    assert names == ["chat echo", "chat echo", "execute_tool remember", "invoke_agent chat"]
    for span in rondo:
        assert span["attributes"]["gen_ai.conversation.id"] == session_id
    (root,) = [s for s in rondo if s["name"] == "invoke_agent chat"]
    assert all(s["parent_span_id"] == root["span_id"] for s in rondo if s is not root)
    assert {s["attributes"]["gcp.vertex.agent.invocation_id"] for s in rondo} == {
        events[0]["invocationId"]
    }


def test_o2_event_trace_finds_the_span_that_produced_an_event(launch: Launch) -> None:
    sdk()
    with launch(trace_store=True) as http:
        _session_id, events = _run(http, "u1", "eggs")
        tool_event = next(e for e in events if "functionResponse" in e["content"]["parts"][0])
        found = http.get(f"/dev/apps/chat/debug/trace/{tool_event['id']}")
        assert found.status_code == 200
        attributes = found.json()
        assert attributes["gcp.vertex.agent.event_id"] == tool_event["id"]
        assert attributes["gen_ai.tool.name"] == "remember"
        assert isinstance(attributes["trace_id"], int)
        assert isinstance(attributes["span_id"], int)
        missing = http.get("/dev/apps/chat/debug/trace/no-such-event")
        assert missing.status_code == 404
        assert isinstance(missing.json()["detail"], str)
        wrong_app = http.get(f"/dev/apps/bank/debug/trace/{tool_event['id']}")
        assert wrong_app.status_code == 404


def test_o2_without_a_span_store_the_routes_answer_nothing(launch: Launch) -> None:
    with launch() as http:
        session_id, events = _run(http, "u1", "tea")
        assert http.get(f"/dev/apps/chat/debug/trace/session/{session_id}").json() == []
        assert http.get(f"/dev/apps/chat/debug/trace/{events[0]['id']}").status_code == 404


def test_o2_w3_a_token_sees_only_its_own_users_spans(launch: Launch) -> None:
    sdk()
    with launch(trace_store=True, auth_tokens=TOKENS) as http:
        session_id, events = _run(http, "bob", "secret plan", **BOB)
        route = f"/dev/apps/chat/debug/trace/session/{session_id}"
        assert http.get(route, headers=BOB).json()
        # Issue 9 (W3): another user's session is a 404, never an answer, like an unknown one.
        assert http.get(route, headers=ALICE).status_code == 404
        unknown = "/dev/apps/chat/debug/trace/session/no-such-session"
        assert http.get(unknown, headers=ALICE).status_code == 404
        event_route = f"/dev/apps/chat/debug/trace/{events[0]['id']}"
        assert http.get(event_route, headers=BOB).status_code == 200
        assert http.get(event_route, headers=ALICE).status_code == 404
        assert http.get(route).status_code == 401
