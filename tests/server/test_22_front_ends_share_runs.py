"""Issue 22 item 6: the front-end protocols run on the server's run machinery (the detached
run `/run_lifecycle` uses), not a loop of their own attached to the request: their runs are
in the server's journal, listed with the lifecycle format, and rejoinable with it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.server._live import sse_events

AG_UI = (
    "/ag-ui/helper",
    lambda sid: {
        "threadId": sid,
        "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": "ham"}],
    },
)
AI_SDK = (
    "/ai-sdk/helper",
    lambda sid: {
        "id": sid,
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "ham"}]}],
    },
)


def _openai(stream: bool) -> tuple[str, Any]:
    return (
        "/v1/chat/completions",
        lambda sid: {
            "model": "helper",
            "messages": [{"role": "user", "content": "ham"}],
            "metadata": {"session_id": sid},
            "stream": stream,
        },
    )


ROUTES = {
    "ag_ui": AG_UI,
    "ai_sdk": AI_SDK,
    "openai_stream": _openai(True),
    "openai": _openai(False),
}


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_22_front_end_run_is_the_servers_detached_run(client: httpx.Client, name: str) -> None:
    if name == "ag_ui":
        pytest.importorskip("ag_ui", reason="AG-UI needs the agui extra (ag-ui-protocol)")
    path, body = ROUTES[name]
    sid = f"shared-{name}"
    answer = client.post(path, json=body(sid))
    assert answer.status_code == 200, answer.text
    runs = client.get(f"/apps/helper/users/user/sessions/{sid}/runs")
    assert runs.status_code == 200, runs.text
    [run] = runs.json()
    # Only a run this server drove as a detached run has a journal in the lifecycle format
    # (a run of the log alone reads "adk"), and only then can it be rejoined in that format.
    assert run["format"] == "lifecycle"
    assert run["status"] == "completed"
    assert run["lastEventId"] is not None
    rejoined = client.get(
        f"/apps/helper/users/user/sessions/{sid}/runs/{run['runId']}/stream",
        params={"format": "lifecycle"},
    )
    assert rejoined.status_code == 200, rejoined.text
    kinds = [e["type"] for e in sse_events(rejoined.text)]
    assert kinds[0] == "run_start", kinds
    assert kinds[-1] == "run_end", kinds


def test_22_run_registry_keeps_the_newest_runs_and_drops_the_oldest_ended() -> None:
    """Every front-end run now enters the registry: it stays bounded, dropping ended runs
    oldest first and never a running one."""
    from types import SimpleNamespace

    from rondo.server.runs import RunRegistry

    registry = RunRegistry()
    keep = RunRegistry.KEEP
    running = SimpleNamespace(key=("a", "u", "s-run"), run_id="r-run", done=False, previous=None)
    registry.add(running)  # pyright: ignore[reportArgumentType]
    for n in range(keep + 10):
        run = SimpleNamespace(key=("a", "u", f"s{n}"), run_id=f"r{n}", done=True, previous=None)
        registry.add(run)  # pyright: ignore[reportArgumentType]
    assert registry.get("a", "u", "s-run", "r-run") is running
    assert registry.get("a", "u", "s0", "r0") is None
    assert registry.get("a", "u", f"s{keep + 9}", f"r{keep + 9}") is not None
    kept = [n for n in range(keep + 10) if registry.get("a", "u", f"s{n}", f"r{n}") is not None]
    assert kept == list(range(11, keep + 10))
