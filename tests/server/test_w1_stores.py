"""SPEC W1: `--db` takes what `rondo run --db` takes; a restarted server finds its sessions."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.server.conftest import Launch


def _run_and_reopen(launch: Launch, db: str) -> None:
    user = f"u-{uuid.uuid4().hex[:8]}"
    body = {
        "appName": "chat",
        "userId": user,
        "sessionId": "s",
        "newMessage": {"role": "user", "parts": [{"text": "jam"}]},
    }
    with launch(db=db) as http:
        assert http.post(f"/apps/chat/users/{user}/sessions/s").status_code == 200
        assert http.post("/run", json=body).status_code == 200
    with launch(db=db) as http:  # a new server on the same store
        session = http.get(f"/apps/chat/users/{user}/sessions/s").json()
        assert session["state"] == {"note_count": 1, "last_note": "jam"}
        assert [e["author"] for e in session["events"]] == ["user", "chat", "chat", "chat"]
        assert [s["id"] for s in http.get(f"/apps/chat/users/{user}/sessions").json()] == ["s"]
        http.delete(f"/apps/chat/users/{user}/sessions/s")


def test_w1_a_sqlite_file_keeps_sessions_across_restarts(launch: Launch, tmp_path: Path) -> None:
    _run_and_reopen(launch, str(tmp_path / "nested" / "sessions.db"))


@pytest.mark.postgres
def test_w1_postgres_keeps_sessions_across_restarts(launch: Launch, postgres_url: str) -> None:
    _run_and_reopen(launch, postgres_url)
