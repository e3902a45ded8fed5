"""Issue 26 item 1 (SPEC W3, O2): the trace routes show a user only their own spans.

Two users with tokens each make a session of the same name (`main`, as a UI would choose) and
run in it with content capture on; neither reads a span, a message or an event of the other's,
over real HTTP on every store.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from tests._otel import sdk
from tests.server._attack import ALICE, BOB, Hostile, hostile, message, store

__all__ = ["hostile", "store"]


# The span store is the process's: each test names its sessions afresh (both users alike).
_MAIN = "main"


@pytest.fixture(autouse=True)
def _fresh_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(f"{__name__}._MAIN", f"main-{uuid.uuid4().hex[:8]}")


def _run(http: httpx.Client, user: str, text: str, headers: dict[str, str]) -> list[Any]:
    made = http.post(f"/apps/chat/users/{user}/sessions/{_MAIN}", json={}, headers=headers)
    assert made.status_code == 200, made.text
    events = http.post("/run", json=message("chat", user, _MAIN, text), headers=headers)
    assert events.status_code == 200, events.text
    return events.json()


def _trace(http: httpx.Client, headers: dict[str, str], **params: str) -> list[Any]:
    route = f"/dev/apps/chat/debug/trace/session/{_MAIN}"
    answer = http.get(route, headers=headers, params=params)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_w3_attack_same_named_sessions_share_no_spans(
    hostile: Hostile, monkeypatch: pytest.MonkeyPatch
) -> None:
    sdk()
    monkeypatch.setenv("RONDO_OTEL_CAPTURE_CONTENT", "true")
    with hostile(trace_store=True) as http:
        bob_events = _run(http, "bob", "bob's secret plan", BOB)
        alice_events = _run(http, "alice", "alice's shopping list", ALICE)
        alice_spans = _trace(http, ALICE)
        bob_spans = _trace(http, BOB)
        # Alice may not ask for bob's spans by name either.
        as_bob = f"/dev/apps/chat/debug/trace/session/{_MAIN}?user_id=bob"
        assert _status(http, as_bob, ALICE) == 403
        bob_event = bob_events[-1]["id"]
        assert _status(http, f"/dev/apps/chat/debug/trace/{bob_event}", ALICE) == 404
        assert _status(http, f"/dev/apps/chat/debug/trace/{bob_event}", BOB) == 200
    assert alice_spans
    assert bob_spans
    alice_text, bob_text = json.dumps(alice_spans), json.dumps(bob_spans)
    assert "bob's secret plan" not in alice_text
    assert "alice's shopping list" in alice_text
    assert "alice's shopping list" not in bob_text
    assert _invocations(alice_spans) == {alice_events[0]["invocationId"]}
    assert _invocations(bob_spans) == {bob_events[0]["invocationId"]}


def test_w3_attack_without_tokens_user_id_narrows_the_trace(hostile: Hostile) -> None:
    sdk()
    with hostile(trace_store=True, auth_tokens=None, loopback_only=True) as http:
        bob = _run(http, "bob", "bob here", {})
        alice = _run(http, "alice", "alice here", {})
        only_alice = _trace(http, {}, user_id="alice")
        both = _trace(http, {})
    assert _invocations(only_alice) == {alice[0]["invocationId"]}
    # A server without users lets any caller act as any user: ADK's answer, every session so named.
    assert _invocations(both) == {alice[0]["invocationId"], bob[0]["invocationId"]}


def _status(http: httpx.Client, path: str, headers: dict[str, str]) -> int:
    return http.get(path, headers=headers).status_code


def _invocations(spans: list[Any]) -> set[str]:
    return {
        s["attributes"]["gcp.vertex.agent.invocation_id"]
        for s in spans
        if "gcp.vertex.agent.invocation_id" in s["attributes"]
    }
