"""SPEC R4: `sqlite+aiosqlite:///path` — the URL every google-adk guide writes — works on a
core install (no aiosqlite): it opens the same file on Python's own sqlite3 driver."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

from rondo.sessions.sql import SqlSessionService

_WITHOUT_AIOSQLITE = textwrap.dedent(
    """
    import asyncio, sys
    sys.modules["aiosqlite"] = None  # as on a core install: `import aiosqlite` fails
    from rondo import Content, Event
    from rondo.sessions.sql import SqlSessionService

    async def main(url):
        service = SqlSessionService(url)
        session = await service.create_session(app_name="a", user_id="u", session_id="s")
        await service.append_event(session, Event(author="user", content=Content.user("hi")))
        await service.close()
        assert "aiosqlite" not in [m for m in sys.modules if sys.modules[m] is not None]

    asyncio.run(main(sys.argv[1]))
    """
)


async def test_r4_the_aiosqlite_url_runs_without_aiosqlite_on_the_same_file(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", _WITHOUT_AIOSQLITE, f"sqlite+aiosqlite:///{db}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    service = SqlSessionService(f"sqlite:///{db}")
    try:
        session = await service.get_session(app_name="a", user_id="u", session_id="s")
        assert session is not None
        assert [e.text for e in session.events] == ["hi"]
    finally:
        await service.close()
