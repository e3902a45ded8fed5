"""Memory services beyond the shared contract (conformance/test_r_sessions.py, R5)."""

from __future__ import annotations

from pathlib import Path

from rondo.events import Event
from rondo.memory import InMemoryMemoryService, SqlMemoryService
from rondo.memory._text import words
from rondo.sessions.base import EventLog, EventsView, Session
from rondo.sessions.sql import SqlSessionService
from rondo.types import Content, FunctionCall, Part


def session_of(*events: Event, session_id: str = "s") -> Session:
    return Session(id=session_id, app_name="a", user_id="u", events=EventsView(EventLog(events)))


def test_words_are_letters_and_digits_lower_cased() -> None:
    assert words("Hello, WORLD! hello_again 42x café") == ["hello", "world", "again", "42x", "café"]
    assert words("?! --") == []


async def test_only_text_is_remembered_not_thoughts_or_calls(tmp_path: Path) -> None:
    session = session_of(
        Event(author="a", content=Content(role="model", parts=[Part(text="secret", thought=True)])),
        Event(
            author="a",
            content=Content(role="model", parts=[Part(function_call=FunctionCall(name="secret"))]),
        ),
        Event(author="user", content=Content.user("public words")),
    )
    for memory in (InMemoryMemoryService(), SqlMemoryService(f"sqlite:///{tmp_path / 'm.db'}")):
        await memory.add_session_to_memory(session)
        assert (
            await memory.search_memory(app_name="a", user_id="u", query="secret")
        ).memories == []
        found = await memory.search_memory(app_name="a", user_id="u", query="public")
        assert [m.content.text for m in found.memories] == ["public words"]
        if isinstance(memory, SqlMemoryService):
            await memory.close()


async def test_results_are_ranked_and_capped(tmp_path: Path) -> None:
    events = [Event(author="user", content=Content.user(f"apple note {i}")) for i in range(30)]
    events.append(Event(author="user", content=Content.user("apple pie recipe")))
    for memory in (
        InMemoryMemoryService(max_results=5),
        SqlMemoryService(f"sqlite:///{tmp_path / 'm.db'}", max_results=5),
    ):
        await memory.add_session_to_memory(session_of(*events))
        found = await memory.search_memory(app_name="a", user_id="u", query="apple pie")
        assert len(found.memories) == 5
        assert found.memories[0].content.text == "apple pie recipe"
        if isinstance(memory, SqlMemoryService):
            await memory.close()


async def test_memory_and_sessions_share_one_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'app.db'}"
    sessions = SqlSessionService(url)
    memory = SqlMemoryService(url)
    session = await sessions.create_session(app_name="a", user_id="u", session_id="s")
    await sessions.append_event(session, Event(author="user", content=Content.user("remember me")))
    await memory.add_session_to_memory(session)
    found = await memory.search_memory(app_name="a", user_id="u", query="remember")
    assert [m.session_id for m in found.memories] == ["s"]
    reopened = SqlMemoryService(url)
    assert len((await reopened.search_memory(app_name="a", user_id="u", query="me")).memories) == 1
    for service in (sessions, memory, reopened):
        await service.close()
