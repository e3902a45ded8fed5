"""SPEC H4 over HTTP: the real rondo server on a free port. A nested confirmation reached
through `/run_sse` is listed by `GET …/pending` with its path; approving it through the
pending route (or answering it through `/run_sse`, as google-adk's clients do) continues the
nested run and then the parent, in one run — for each wiring, on the in-memory store, SQLite
and PostgreSQL. The nested session is visible through the session routes."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests._require import require_module

httpx = require_module("httpx", what="SERVER", install="pip install httpx")
require_module("fastapi", what="SERVER", install="pip install 'rondo-agents[server]'")
require_module("uvicorn", what="SERVER", install="pip install 'rondo-agents[server]'")

from rondo.lifecycle import RunEnd, parse_lifecycle_event  # noqa: E402
from rondo.server import create_app  # noqa: E402
from tests._stores import postgres_url  # noqa: E402
from tests.integration._h4_world import WIRINGS, runs  # noqa: E402
from tests.server._live import serve, sse_events  # noqa: E402

__all__ = ["postgres_url"]

pytestmark = pytest.mark.integration

_APP = """
from pathlib import Path

from tests.integration._h4_world import build_main

root_agent = build_main({wiring!r}, Path({ledger!r}))
"""


@contextmanager
def _server(tmp_path: Path, wiring: str, db: str) -> Iterator[tuple[httpx.Client, str, Path]]:
    app = f"h4_{wiring}_{uuid.uuid4().hex[:6]}"
    ledger = tmp_path / "ledger"
    ledger.mkdir(exist_ok=True)
    folder = tmp_path / "apps" / app
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text(_APP.format(wiring=wiring, ledger=str(ledger)))
    with (
        serve(create_app(tmp_path / "apps", db=db, loopback_only=True)) as url,
        httpx.Client(base_url=url, timeout=30) as http,
    ):
        yield http, app, ledger


def _message(session: str, app: str, user: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "appName": app,
        "userId": user,
        "sessionId": session,
        "newMessage": {"role": "user", "parts": parts},
    }


def _records(answer: httpx.Response) -> list[dict[str, Any]]:
    assert answer.status_code == 200, answer.text
    return sse_events(answer.text)


def _db(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "memory":
        return "memory"
    if kind == "sqlite":
        return str(tmp_path / "sessions.db")
    return str(request.getfixturevalue("postgres_url"))


STORES = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.mark.parametrize("store", STORES)
@pytest.mark.parametrize("wiring", WIRINGS)
def test_h4_a_nested_confirmation_over_run_sse_and_the_pending_routes(
    wiring: str, store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    user = f"u-{uuid.uuid4().hex[:8]}"
    with _server(tmp_path, wiring, _db(store, tmp_path, request)) as (http, app, ledger):
        base = f"/apps/{app}/users/{user}/sessions"
        assert http.post(f"{base}/s").status_code == 200
        paused = _records(http.post("/run_sse", json=_message("s", app, user, [{"text": "go"}])))
        # The parent's model was called once: no text answer, its call has no response.
        assert not any(
            p.get("text") for e in paused if e["author"] == "main" for p in e["content"]["parts"]
        )
        listed = http.get(f"{base}/s/pending")
        assert listed.status_code == 200
        [pending] = listed.json()
        assert pending["path"] == ["main", "worker@c1"]
        assert pending["toolName"] == "delete_file"
        assert runs(ledger) == []

        decided = http.post(f"{base}/s/pending/{pending['callId']}", json={"decision": "approve"})
        assert decided.status_code == 200, decided.text
        events = [parse_lifecycle_event(e) for e in sse_events(decided.text)]
        end = events[-1]
        assert isinstance(end, RunEnd)
        assert end.text == "main: done (worker: deleted x)"
        assert end.run_id == pending["runId"]
        assert end.pending == []
        assert runs(ledger) == ["x"]
        assert http.get(f"{base}/s/pending").json() == []
        if wiring != "task_mode":  # its own session, linked to the call, through the API
            nested = http.get(f"{base}/s~c1")
            assert nested.status_code == 200
            texts = [p.get("text") for e in nested.json()["events"] for p in e["content"]["parts"]]
            assert "worker: deleted x" in texts


@pytest.mark.parametrize("wiring", WIRINGS)
def test_h4_a_nested_rejection_sent_through_run_sse_never_runs_the_tool(
    wiring: str, tmp_path: Path
) -> None:
    user = f"u-{uuid.uuid4().hex[:8]}"
    with _server(tmp_path, wiring, "memory") as (http, app, ledger):
        base = f"/apps/{app}/users/{user}/sessions"
        http.post(f"{base}/s")
        paused = _records(http.post("/run_sse", json=_message("s", app, user, [{"text": "go"}])))
        # google-adk's clients read the request from the records: the confirmation call.
        [call] = [
            p["functionCall"]
            for e in paused
            for p in e["content"]["parts"]
            if "functionCall" in p
            and p["functionCall"]["name"] == "adk_request_confirmation"
            and e["author"] == "main"
        ]
        answer = {
            "functionResponse": {
                "id": call["id"],
                "name": "adk_request_confirmation",
                "response": {"confirmed": False},
            }
        }
        done = _records(http.post("/run_sse", json=_message("s", app, user, [answer])))
        texts = [p.get("text") for e in done for p in e["content"]["parts"] if p.get("text")]
        assert texts[-1] == "main: done (worker: refused)"
        assert runs(ledger) == []
        assert json.loads(http.get(f"{base}/s/pending").text) == []
