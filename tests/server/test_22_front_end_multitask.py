"""Issue 22 item 6 with issue 21 item 4: the front-end routes share the run machinery of the
native ones, double-texting included. A message on a busy session is refused (409) by
default; `multitask` — the AI SDK's body field, AG-UI's `forwardedProps.multitask`, OpenAI's
`metadata.multitask` — makes it interrupt the running run (or wait for it) instead. A value
that is not a strategy is a 400 naming the ones there are."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

_BASE = "/apps/slow/users/user/sessions/busy"


def _start_long_run(client: httpx.Client) -> str:
    assert client.post(_BASE).status_code == 200
    message = {"role": "user", "parts": [{"text": "long one"}]}
    body = {
        "appName": "slow",
        "userId": "user",
        "sessionId": "busy",
        "newMessage": message,
        "background": True,
    }
    started = client.post("/run_sse", json=body)
    assert started.status_code == 202, started.text
    deadline = time.monotonic() + 20  # until the long run has stored its call
    while len(client.get(_BASE).json()["events"]) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return started.json()["runId"]


def _ai_sdk(text: str, **extra: Any) -> dict[str, Any]:
    message = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"id": "busy", "messages": [message], **extra}


def _ag_ui(text: str, **forwarded: Any) -> dict[str, Any]:
    return {
        "threadId": "busy",
        "runId": "client-run",
        "messages": [{"id": "m1", "role": "user", "content": text}],
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": forwarded,
    }


def _openai(text: str, **metadata: Any) -> dict[str, Any]:
    return {
        "model": "slow",
        "messages": [{"role": "user", "content": text}],
        "metadata": {"session_id": "busy", **metadata},
    }


ROUTES = {
    "ai-sdk": ("/ai-sdk/slow", _ai_sdk),
    "ag-ui": ("/ag-ui/slow", _ag_ui),
    "openai": ("/v1/chat/completions", _openai),
}


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_21_front_end_route_interrupts_a_busy_session_when_asked(
    client: httpx.Client, route: str
) -> None:
    path, body = ROUTES[route]
    run_id = _start_long_run(client)
    refused = client.post(path, json=body("instead"))
    assert refused.status_code == 409, refused.text
    answer = client.post(path, json=body("instead", multitask="interrupt"), timeout=60)
    assert answer.status_code == 200, answer.text
    assert "done: instead" in answer.text
    stopped = client.get(_BASE + f"/runs/{run_id}").json()
    assert stopped["status"] == "cancelled"
    texts = [
        p.get("text", "")
        for e in client.get(_BASE).json()["events"]
        for p in (e.get("content") or {}).get("parts", [])
    ]
    assert "done: instead" in texts


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_21_front_end_route_names_the_strategies_on_a_bad_multitask(
    client: httpx.Client, route: str
) -> None:
    path, body = ROUTES[route]
    assert client.post(_BASE).status_code == 200
    answer = client.post(path, json=body("hi", multitask="shove"))
    assert answer.status_code == 400, answer.text
    assert "reject, enqueue, interrupt, rollback" in answer.text
