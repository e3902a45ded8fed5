"""Issue 26 item 5 (SPEC W3): no server detail reaches a client.

An app that fails to import and a SQLite database another process holds locked are answered
with a message that says what to do, naming no path of the server's file system (nor the
database); the details go to the server log.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server._attack import message
from tests.server._live import APPS, sse_events
from tests.server.conftest import Launch

BROKEN_APP = APPS / "broken"


def test_w3_attack_an_app_that_fails_to_import_names_no_server_path(
    launch: Launch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    # An app whose import fails on a file of the server: the client learns what, not where.
    apps = tmp_path / "agents"
    (apps / "reads").mkdir(parents=True)
    secret = tmp_path / "srv-secret" / "config.json"
    (apps / "reads" / "agent.py").write_text(f"open({str(secret)!r})\n")
    caplog.set_level(logging.ERROR, logger="rondo.server")
    with launch(agents_dir=apps) as http:
        http.post("/apps/reads/users/u/sessions/s")
        answer = http.post("/run", json=message("reads", "u", "s", "hi"))
    assert answer.status_code == 500
    detail = answer.json()["detail"]
    assert "FileNotFoundError" in detail
    assert "config.json" in detail  # what is missing, so the operator can act on it
    assert "fix its code" in detail
    assert str(tmp_path) not in detail
    assert "srv-secret" not in detail
    assert str(secret) in caplog.text  # the server log keeps the whole story


def test_w3_attack_a_broken_app_keeps_agents_dir_out_of_the_answer(launch: Launch) -> None:
    with launch() as http:
        for route in ("/run", "/run_sse", "/run_lifecycle"):
            answer = http.post(route, json=message("broken", "u", "s", "hi"))
            assert answer.status_code == 500
            detail = answer.json()["detail"]
            assert "this app is broken on purpose" in detail
            assert str(APPS) not in detail
            assert str(BROKEN_APP) not in detail


@pytest.fixture
def locked_sqlite(tmp_path: Path) -> Iterator[tuple[Path, sqlite3.Connection]]:
    path = tmp_path / "private-dir" / "sessions.db"
    path.parent.mkdir()
    holder = sqlite3.connect(path, isolation_level=None)
    yield path, holder
    holder.close()


def test_w3_attack_a_locked_sqlite_database_is_a_503_naming_no_path(
    launch: Launch, locked_sqlite: tuple[Path, sqlite3.Connection], caplog: pytest.LogCaptureFixture
) -> None:
    from rondo.sessions.sql import SqlSessionService

    path, holder = locked_sqlite
    caplog.set_level(logging.ERROR, logger="rondo.server")
    store = SqlSessionService(path, connect_args={"timeout": 0.2})
    with launch(session_service=store) as http:
        assert http.post("/apps/chat/users/u/sessions/s").status_code == 200
        holder.execute("BEGIN EXCLUSIVE")  # another process holds the write lock
        made = http.post("/apps/chat/users/u/sessions/s2")
        ran = http.post("/run", json=message("chat", "u", "s", "hi"))
        streamed = http.post("/run_sse", json=message("chat", "u", "s", "hi"))
        holder.execute("ROLLBACK")
        after = http.post("/run", json=message("chat", "u", "s", "hi"))
    for answer in (made, ran):
        assert answer.status_code == 503, answer.text
        assert answer.headers["retry-after"]
        assert "locked by another process" in answer.json()["detail"]
    (frame,) = sse_events(streamed.text)
    assert "locked by another process" in frame["error"]
    for text in (made.text, ran.text, streamed.text):
        assert "private-dir" not in text
        assert "sessions.db" not in text
    assert "private-dir" in caplog.text
    assert after.status_code == 200, after.text  # the lock gone, the session runs
