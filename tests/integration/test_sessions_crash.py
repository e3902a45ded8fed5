"""SPEC R1/R4: no lost event. A process killed mid-run (SIGKILL) loses nothing it yielded.

The Runner yields an event only after its append committed, so after a restart every event
the consumer had received is in the store — on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rondo.sessions.sql import SqlSessionService
from tests._stores import Backend, postgres_url, sql_backend
from tests.integration._kill import kill_when

__all__ = ["postgres_url", "sql_backend"]

pytestmark = pytest.mark.integration

CHILD = Path(__file__).with_name("_crash_child.py")


def run_until_killed(backend: Backend, session_id: str, after: int) -> list[str]:
    """Start the child, let it yield `after` events, SIGKILL it; the ids it had received."""
    search_path = backend.engine_kwargs.get("connect_args", {}).get("server_settings", {})
    args = [sys.executable, str(CHILD), str(backend.url), session_id]
    if search_path:
        args.append(search_path["search_path"])
    return kill_when(args, lambda _, received: len(received) >= after)


@pytest.mark.parametrize("after", [1, 25])
async def test_r4_sigkill_mid_run_loses_no_event_the_consumer_received(
    sql_backend: Backend, after: int
) -> None:
    received = run_until_killed(sql_backend, f"s{after}", after)
    assert len(received) == after

    restarted = sql_backend.make()
    assert isinstance(restarted, SqlSessionService)
    session = await restarted.get_session(app_name="crash", user_id="u", session_id=f"s{after}")
    assert session is not None
    stored = [e.id for e in session.events]
    assert session.events[0].author == "user"
    # Everything received is stored, in the order received. (The child ran on while the
    # parent read, so the store may hold later events too, never fewer.)
    assert stored[1 : 1 + after] == received
    assert session.version == len(stored)

    # The store is consistent and writable after the crash: the run can go on.
    await restarted.append_event(session, session.events[0].model_copy(update={"id": "after"}))
    assert session.version == len(stored) + 1
