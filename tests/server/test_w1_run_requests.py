"""Issue 23 item 4: run requests are validated as a client expects (SPEC W1, D1).

A run without `newMessage` is a 422 naming the field, unless the session's last invocation
was cut short: then the empty message resumes it, on every run route. `GET` on a POST-only
route is a 405 with `Allow`, with the web UI mounted at `/` too (as google-adk answers). The
pending route's JSON is camelCase without nulls, and `finishReason` is spelled as ADK does.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from rondo.events import Event
from rondo.server.wire import adk_finish_reason, event_json
from rondo.types import Content, Part
from tests._require import require_module
from tests.server._live import sse_events
from tests.server.conftest import Launch

_ROUTES = ("/run", "/run_sse", "/run_lifecycle")


def _body(session: str = "s", **extra: Any) -> dict[str, Any]:
    return {"appName": "chat", "userId": "u", "sessionId": session, **extra}


@pytest.mark.parametrize("route", _ROUTES)
@pytest.mark.parametrize("message", [None, {"role": "user", "parts": []}])
def test_w1_a_run_without_a_message_is_422_naming_the_field(
    client: httpx.Client, route: str, message: dict[str, Any] | None
) -> None:
    client.post("/apps/chat/users/u/sessions/s")
    body = _body() if message is None else _body(newMessage=message)
    answer = client.post(route, json=body)
    assert answer.status_code == 422, answer.text
    [error] = answer.json()["detail"]
    assert error["loc"] == ["body", "newMessage"]
    assert "interrupted" in error["msg"]
    # Nothing ran: no model turn was spent, nothing was stored.
    assert client.get("/apps/chat/users/u/sessions/s").json()["events"] == []


def test_w1_a_run_without_a_message_on_a_missing_session_is_still_404(
    client: httpx.Client,
) -> None:
    assert client.post("/run", json=_body("nope")).status_code == 404


def _interrupted_session(db: Path, session_id: str) -> None:
    """A session whose invocation stored the user's message and then died (SPEC D1)."""
    from rondo.sessions.sql import SqlSessionService

    async def write() -> None:
        service = SqlSessionService(db)
        session = await service.create_session(app_name="chat", user_id="u", session_id=session_id)
        message = Content(role="user", parts=[Part(text="ham")])
        await service.append_event(
            session, Event(author="user", invocation_id="e-cut", content=message)
        )
        await service.close()

    asyncio.run(write())


@pytest.mark.parametrize("route", _ROUTES)
def test_d1_an_empty_message_resumes_the_interrupted_invocation(
    launch: Launch, tmp_path: Path, route: str
) -> None:
    db = tmp_path / "sessions.db"
    _interrupted_session(db, "cut")
    with launch(db=str(db)) as client:
        answer = client.post(route, json=_body("cut"))
        assert answer.status_code == 200, answer.text
        session = client.get("/apps/chat/users/u/sessions/cut").json()
    events = session["events"]
    # The invocation went on under its own id, from the stored message, without a new one.
    assert {e["invocationId"] for e in events} == {"e-cut"}
    assert [e["author"] for e in events].count("user") == 1
    texts = [p.get("text") for e in events for p in e.get("content", {}).get("parts", [])]
    assert "Stub reply: noted 'ham'" in texts


@pytest.mark.parametrize("web", [False, True])
def test_w1_get_on_a_post_only_route_is_405(launch: Launch, web: bool) -> None:
    with launch(web=web) as client:
        for path in (*_ROUTES, "/apps/chat/users/u/sessions/s/pending/c1"):
            answer = client.get(path)
            assert answer.status_code == 405, (path, answer.text)
            assert answer.headers["allow"] == "POST"
            assert answer.json() == {"detail": "Method Not Allowed"}
        if web:  # the UI's own paths are still the UI's
            assert client.get("/").status_code == 200
            assert client.get("/js/main.js").status_code == 200
            assert client.get("/no-such-file.css").status_code == 404


def test_w2_the_pending_route_is_camel_case_without_nulls(client: httpx.Client) -> None:
    client.post("/apps/bank/users/u/sessions/s")
    run = client.post(
        "/run_lifecycle",
        json={**_body(), "appName": "bank", "newMessage": {"parts": [{"text": "5 EUR"}]}},
    )
    assert run.status_code == 200
    [call] = client.get("/apps/bank/users/u/sessions/s/pending").json()
    assert call["kind"] == "confirmation"
    assert call["originalCall"]["name"] == "remember"
    assert call["originalCall"]["args"] == {"note": "5 EUR"}
    assert call["originalCallId"] == call["originalCall"]["id"]
    assert {"callId", "toolName", "args", "runId", "invocationId", "agentName"} <= set(call)

    def keys(value: Any) -> list[str]:
        if isinstance(value, dict):
            return [k for k, v in value.items() for k in [k, *keys(v)]]  # pyright: ignore[reportUnknownVariableType]
        return []

    def values(value: Any) -> list[Any]:
        if isinstance(value, dict):
            return [x for v in value.values() for x in [v, *values(v)]]  # pyright: ignore[reportUnknownVariableType]
        return []

    assert not [k for k in keys(call) if "_" in k]
    assert None not in values(call)
    # Deciding by the listed callId works.
    decided = client.post(
        f"/apps/bank/users/u/sessions/s/pending/{call['callId']}", json={"decision": "approve"}
    )
    assert decided.status_code == 200
    assert any(e.get("type") == "hitl_decided" for e in sse_events(decided.text))


@pytest.mark.parametrize(
    ("rondo", "adk"),
    [
        ("stop", "STOP"),
        ("tool_calls", "STOP"),
        ("max_tokens", "MAX_TOKENS"),
        ("content_filter", "SAFETY"),
        ("malformed_function_call", "MALFORMED_FUNCTION_CALL"),
        ("recitation", "RECITATION"),
        ("something new", "OTHER"),
    ],
)
def test_w1_finish_reason_is_spelled_as_adk_does(rondo: str, adk: str) -> None:
    assert adk_finish_reason(rondo) == adk
    event = Event(author="a", invocation_id="e", finish_reason=rondo)
    assert event_json(event)["finishReason"] == adk
    genai = require_module("google.genai.types", what="GEMINI", install="pip install google-genai")
    assert genai.FinishReason(adk).value == adk  # a value ADK's own Event model reads
