"""SPEC R1, R3, R4, R5 on every store: in-memory, SQLite and PostgreSQL (artifacts: in-memory
and filesystem).

Each test runs against all three back ends (`backend` fixture) — the same module proves the
same behaviour. `backend.make()` opens a new service on the same storage, as a restarted
process would (for the in-memory store it returns the one service).
"""

from __future__ import annotations

import asyncio
import datetime
import decimal
import enum
import math
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest

from rondo import (
    Agent,
    Content,
    Event,
    EventActions,
    FunctionCall,
    FunctionResponse,
    Part,
    Runner,
    StaleSessionError,
    ToolContext,
)
from rondo.artifacts import BaseArtifactService, FileArtifactService, InMemoryArtifactService
from rondo.errors import (
    InvalidArtifactNameError,
    InvalidIdError,
    InvalidPageError,
    InvalidStateValueError,
    RondoError,
    SessionError,
    SessionExistsError,
    SessionNotFoundError,
)
from rondo.events import EventCompaction, ToolConfirmation
from rondo.sessions.base import BaseSessionService, Session
from rondo.testing import ScriptedModel
from rondo.tools.memory_tool import MEMORY_INSTRUCTION, load_memory
from rondo.types import (
    Blob,
    CodeExecutionResult,
    ExecutableCode,
    FileData,
    PartialArg,
    Usage,
)
from tests._stores import Backend, backend, postgres_url, sql_backend

__all__ = ["backend", "postgres_url", "sql_backend"]  # fixtures used by the tests below

APP = "app"


def text_event(text: str, author: str = "user", **kw: Any) -> Event:
    content = Content.user(text) if author == "user" else Content.model(text)
    return Event(author=author, content=content, **kw)


def delta_event(delta: dict[str, Any], author: str = "agent") -> Event:
    return Event(author=author, actions=EventActions(state_delta=delta))


def every_field_event() -> Event:
    """An event with every field set, including bytes and nested JSON."""
    return Event(
        author="helper",
        invocation_id="inv-1",
        run_id="run-1",
        branch="root.par.helper",
        isolation_scope="scope-1",
        timestamp=1_700_000_000.123456,
        content=Content(
            role="model",
            parts=[
                Part(text="let me think", thought=True, thought_signature=b"\x00\xffsig"),
                Part(text='héllo ✓ \u2028 "quoted"'),
                Part(
                    function_call=FunctionCall(
                        name="lookup",
                        args={"a": [1, 2.5, None, {"b": True}], "s": "x"},
                        id="call-1",
                        partial_args=[PartialArg(json_path="$.s", value="x")],
                        will_continue=False,
                    )
                ),
                Part(
                    function_response=FunctionResponse(
                        name="lookup", response={"ok": 1, "list": []}, id="call-0"
                    )
                ),
                Part(
                    inline_data=Blob(
                        mime_type="image/png", data=bytes(range(256)), display_name="i"
                    )
                ),
                Part(file_data=FileData(file_uri="file:///x.txt", mime_type="text/plain")),
                Part(executable_code=ExecutableCode(code="print(1)")),
                Part(code_execution_result=CodeExecutionResult(outcome="ok", output="1\n")),
            ],
        ),
        turn_complete=True,
        finish_reason="stop",
        error_code="E42",
        error_message="an error",
        interrupted=True,
        usage=Usage(
            input_tokens=1, output_tokens=2, total_tokens=3, thoughts_tokens=4, cached_tokens=5
        ),
        actions=EventActions(
            state_delta={"k": {"nested": [1, "two", None]}, "app:a": 1, "user:u": 2.5},
            artifact_delta={"report.txt": 2},
            transfer_to_agent="other",
            escalate=True,
            skip_summarization=True,
            requested_tool_confirmations={
                "call-1": ToolConfirmation(hint="sure?", confirmed=False, payload={"x": [1]})
            },
            compaction=EventCompaction(
                start_timestamp=1.0, end_timestamp=2.0, compacted_content=Content.model("sum")
            ),
        ),
        long_running_tool_ids={"call-1"},
        input_transcription="in",
        output_transcription="out",
        custom_metadata={"m": [1, {"n": None}], "f": 0.1},
    )


async def get(service: BaseSessionService, session: Session, **bounds: Any) -> Session:
    found = await service.get_session(
        app_name=session.app_name, user_id=session.user_id, session_id=session.id, **bounds
    )
    assert found is not None
    return found


# -- R4: the session-service contract ----------------------------------------------------------


async def test_r4_create_get_and_missing_session(backend: Backend) -> None:
    service = backend.make()
    created = await service.create_session(app_name=APP, user_id="u1", session_id="s1")
    assert (created.id, created.app_name, created.user_id) == ("s1", APP, "u1")
    assert created.version == 0
    assert list(created.events) == []
    assert created.pending == []
    generated = await service.create_session(app_name=APP, user_id="u1")
    assert generated.id
    assert generated.id != "s1"

    got = await get(backend.make(), created)
    assert (got.id, got.version, list(got.events)) == ("s1", 0, [])
    assert got.last_update_time == pytest.approx(created.last_update_time)
    for missing in (
        {"app_name": APP, "user_id": "u1", "session_id": "nope"},
        {"app_name": APP, "user_id": "u2", "session_id": "s1"},
        {"app_name": "other", "user_id": "u1", "session_id": "s1"},
    ):
        assert await service.get_session(**missing) is None


async def test_r4_creating_an_existing_session_fails(backend: Backend) -> None:
    service = backend.make()
    await service.create_session(app_name=APP, user_id="u1", session_id="s1", state={"k": 1})
    with pytest.raises(SessionError, match="already exists"):
        await backend.make().create_session(
            app_name=APP, user_id="u1", session_id="s1", state={"k": 2}
        )
    session = await service.get_session(app_name=APP, user_id="u1", session_id="s1")
    assert session is not None
    assert session.state == {"k": 1}


async def test_r4_append_returns_the_event_and_advances_the_handle(backend: Backend) -> None:
    service = backend.make()
    session = await service.create_session(app_name=APP, user_id="u1")
    first, second = text_event("one"), text_event("two", author="agent")
    assert await service.append_event(session, first) is first
    assert await service.append_event(session, second) is second
    assert session.version == 2
    assert list(session.events) == [first, second]
    assert session.last_update_time == second.timestamp

    stored = await get(backend.make(), session)
    assert stored.version == 2
    assert [e.id for e in stored.events] == [first.id, second.id]
    assert list(stored.events) == [first, second]


async def test_r4_partial_events_are_returned_but_never_stored(backend: Backend) -> None:
    service = backend.make()
    session = await service.create_session(app_name=APP, user_id="u1")
    partial = text_event("par", author="agent", partial=True)
    assert await service.append_event(session, partial) is partial
    assert session.version == 0
    assert len(session.events) == 0
    assert len((await get(backend.make(), session)).events) == 0


async def test_r4_every_event_field_round_trips_losslessly(backend: Backend) -> None:
    service = backend.make()
    session = await service.create_session(app_name=APP, user_id="u1")
    original = every_field_event()
    expected = original.model_dump_json()
    await service.append_event(session, original)

    loaded = (await get(backend.make(), session)).events[0]
    assert loaded == original
    assert loaded.model_dump_json() == expected
    assert loaded.content is not None
    assert loaded.content.parts[4].inline_data is not None
    assert loaded.content.parts[4].inline_data.data == bytes(range(256))
    assert loaded.timestamp == 1_700_000_000.123456


async def test_r4_stale_handle_is_refused_and_stores_nothing(backend: Backend) -> None:
    service = backend.make()
    session = await service.create_session(app_name=APP, user_id="u1", state={"k": 0})
    first = await get(service, session)
    second = await get(backend.make(), session)
    await service.append_event(first, delta_event({"k": 1}))

    late = delta_event({"k": 2, "app:shared": 2, "user:mine": 2, "other": 2})
    with pytest.raises(StaleSessionError, match="get_session"):
        await backend.make().append_event(second, late)
    assert second.version == 0
    assert len(second.events) == 0

    stored = await get(backend.make(), session)
    assert stored.version == 1
    assert stored.state == {"k": 1}
    assert [e.id for e in stored.events] == [first.events[0].id]
    # Re-reading gives a handle that may append again.
    await service.append_event(stored, delta_event({"k": 3}))
    assert (await get(backend.make(), session)).state == {"k": 3}


async def test_r4_two_handles_of_one_service_cannot_both_append(backend: Backend) -> None:
    service = backend.make()
    session = await service.create_session(app_name=APP, user_id="u1")
    a, b = await get(service, session), await get(service, session)
    await service.append_event(a, text_event("a"))
    with pytest.raises(StaleSessionError):
        await service.append_event(b, text_event("b"))
    assert [e.text for e in (await get(service, session)).events] == ["a"]


async def test_r4_appending_to_a_deleted_session_fails(backend: Backend) -> None:
    service = backend.make()
    session = await service.create_session(app_name=APP, user_id="u1")
    await service.append_event(session, text_event("one"))
    await service.delete_session(app_name=APP, user_id="u1", session_id=session.id)
    assert await service.get_session(app_name=APP, user_id="u1", session_id=session.id) is None
    with pytest.raises(SessionNotFoundError):
        await service.append_event(session, text_event("two"))
    # Deleting a missing session is not an error.
    await service.delete_session(app_name=APP, user_id="u1", session_id=session.id)


async def test_r4_store_survives_a_restart_with_events_state_and_pending(
    sql_backend: Backend,
) -> None:
    service = sql_backend.make()
    session = await service.create_session(
        app_name=APP, user_id="u1", session_id="s1", state={"app:a": 1, "user:b": 2, "c": 3}
    )
    call = Event(
        author="agent",
        content=Content(
            role="model", parts=[Part(function_call=FunctionCall(name="wait", id="lr-1"))]
        ),
        long_running_tool_ids={"lr-1"},
        actions=EventActions(state_delta={"c": 4, "temp:t": 5}),
    )
    await service.append_event(session, text_event("go"))
    await service.append_event(session, call)
    await service.close()

    restarted = sql_backend.make()
    stored = await get(restarted, session)
    assert [e.id for e in stored.events] == [session.events[0].id, call.id]
    assert stored.state == {"app:a": 1, "user:b": 2, "c": 4}
    assert [(p.call_id, p.tool_name, p.kind) for p in stored.pending] == [
        ("lr-1", "wait", "long_running")
    ]
    assert stored.version == 2


async def test_r4_get_session_bounds_recent_events(backend: Backend) -> None:
    service = backend.make()
    session = await service.create_session(app_name=APP, user_id="u1")
    base = time.time()
    events = [text_event(f"e{i}", timestamp=base + i) for i in range(6)]
    for event in events:
        await service.append_event(session, event)

    for reader in (service, backend.make()):
        recent = await get(reader, session, num_recent_events=2)
        assert [e.text for e in recent.events] == ["e4", "e5"]
        assert recent.version == 6
        after = await get(reader, session, after_timestamp=base + 3)
        assert [e.text for e in after.events] == ["e3", "e4", "e5"]
        both = await get(reader, session, num_recent_events=5, after_timestamp=base + 3.5)
        assert [e.text for e in both.events] == ["e4", "e5"]
        assert len((await get(reader, session, num_recent_events=0)).events) == 0
        assert len((await get(reader, session, num_recent_events=99)).events) == 6
        assert len((await get(reader, session, after_timestamp=base + 99)).events) == 0
        assert len((await get(reader, session)).events) == 6


async def test_r4_bounded_handle_appends_like_any_other(backend: Backend) -> None:
    service = backend.make()
    session = await service.create_session(app_name=APP, user_id="u1")
    for i in range(4):
        await service.append_event(session, text_event(f"e{i}"))
    recent = await get(backend.make(), session, num_recent_events=1)
    await backend.make().append_event(recent, text_event("e4"))
    assert [e.text for e in recent.events] == ["e3", "e4"]
    full = await get(backend.make(), session)
    assert [e.text for e in full.events] == ["e0", "e1", "e2", "e3", "e4"]


async def test_r4_list_sessions_pages_newest_first_without_events(backend: Backend) -> None:
    service = backend.make()
    ids = []
    for i in range(5):
        created = await service.create_session(
            app_name=APP, user_id="u1" if i % 2 == 0 else "u2", session_id=f"s{i}"
        )
        await service.append_event(created, text_event(f"m{i}", timestamp=1000.0 + i))
        ids.append(created.id)
    await service.create_session(app_name="other-app", user_id="u1", session_id="x")

    reader = backend.make()
    everything = await reader.list_sessions(app_name=APP)
    assert [s.id for s in everything.sessions] == ids[::-1]
    assert everything.next_page_token is None
    assert all(len(s.events) == 0 for s in everything.sessions)
    assert all(s.version == 1 for s in everything.sessions)

    pages: list[list[str]] = []
    token: str | None = None
    while True:
        page = await reader.list_sessions(app_name=APP, limit=2, page_token=token)
        pages.append([s.id for s in page.sessions])
        token = page.next_page_token
        if token is None:
            break
    assert pages == [["s4", "s3"], ["s2", "s1"], ["s0"]]

    mine = await reader.list_sessions(app_name=APP, user_id="u1")
    assert [s.id for s in mine.sessions] == ["s4", "s2", "s0"]
    assert {s.user_id for s in mine.sessions} == {"u1"}


async def test_r4_get_session_reuses_the_event_log(backend: Backend) -> None:
    """Handles share one log, so the contents view cached on it (C9) survives turns."""
    service = backend.make()
    session = await service.create_session(app_name=APP, user_id="u1")
    await service.append_event(session, text_event("one"))
    first = await get(service, session)
    second = await get(service, session)
    assert first.events.log is second.events.log

    # Another writer (a second process) appends; this service extends the same log.
    other = backend.make()
    await other.append_event(await get(other, session), text_event("two"))
    third = await get(service, session)
    assert third.events.log is first.events.log
    assert [e.text for e in third.events] == ["one", "two"]
    # Older handles keep the window they were read at.
    assert [e.text for e in first.events] == ["one"]


async def test_r4_concurrent_runs_on_different_sessions_never_interfere(backend: Backend) -> None:
    service = backend.make()

    def bump(n: int, tool_context: ToolContext) -> dict[str, Any]:
        """Record n."""
        tool_context.state["n"] = n
        tool_context.state["user:last"] = n
        return {"n": n}

    async def one(i: int) -> list[Event]:
        model = ScriptedModel([FunctionCall(name="bump", args={"n": i}), f"done {i}"])
        runner = Runner(
            agent=Agent(name="agent", model=model, tools=[bump]),
            app_name=APP,
            session_service=service,
        )
        async with aclosing(
            runner.run_async(user_id=f"u{i}", session_id=f"s{i}", new_message=f"go {i}")
        ) as events:
            return [e async for e in events]

    results = await asyncio.gather(*(one(i) for i in range(20)))
    reader = backend.make()
    for i, events in enumerate(results):
        assert events[-1].text == f"done {i}"
        stored = await reader.get_session(app_name=APP, user_id=f"u{i}", session_id=f"s{i}")
        assert stored is not None
        assert [e.id for e in stored.events][1:] == [e.id for e in events]
        assert stored.events[0].text == f"go {i}"
        assert stored.state == {"n": i, "user:last": i}
        assert stored.version == 4


async def test_r4_200_concurrent_invocations_complete_without_errors(backend: Backend) -> None:
    service = backend.make()

    def echo(i: int) -> dict[str, Any]:
        """Echo i."""
        return {"i": i}

    def answer(request: Any) -> Any:
        # Invocations interleave: answer from the request, not from the script's position.
        last = request.contents[-1]
        if any(p.function_response is not None for p in last.parts):
            return "ok"
        return FunctionCall(name="echo", args={"i": len(request.contents)})

    runner = Runner(
        agent=Agent(name="agent", model=ScriptedModel([answer] * 400), tools=[echo]),
        app_name=APP,
        session_service=service,
    )

    async def one(i: int) -> int:
        n = 0
        async with aclosing(
            runner.run_async(user_id="u", session_id=f"s{i}", new_message="hi")
        ) as events:
            async for _ in events:
                n += 1
        return n

    counts = await asyncio.gather(*(one(i) for i in range(200)), return_exceptions=True)
    errors = [c for c in counts if isinstance(c, BaseException)]
    assert errors == []
    listed = await backend.make().list_sessions(app_name=APP, user_id="u")
    assert len(listed.sessions) == 200
    assert {s.version for s in listed.sessions} == {4}


async def test_r4_stale_handles_racing_on_one_session_lose_cleanly(backend: Backend) -> None:
    """Many writers holding the same version: exactly one wins, the rest store nothing."""
    service = backend.make()
    session = await service.create_session(app_name=APP, user_id="u1")
    handles = [await get(backend.make(), session) for _ in range(8)]
    results = await asyncio.gather(
        *(backend.make().append_event(h, text_event(f"w{i}")) for i, h in enumerate(handles)),
        return_exceptions=True,
    )
    winners = [r for r in results if isinstance(r, Event)]
    losers = [r for r in results if isinstance(r, StaleSessionError)]
    assert len(winners) == 1
    assert len(losers) == 7
    stored = await get(backend.make(), session)
    assert [e.id for e in stored.events] == [winners[0].id]


async def test_r4_ids_that_are_not_ids_are_refused_the_same_way_on_every_store(
    backend: Backend,
) -> None:
    service = backend.make()
    cases: list[tuple[dict[str, Any], str]] = [
        ({"session_id": ""}, "the session id is empty; pass None to have one generated"),
        ({"session_id": "a/b"}, "session id 'a/b' may hold only letters, digits and . _ ~ : @ -"),
        ({"session_id": "a b"}, "session id 'a b' may hold only"),
        ({"session_id": "%2F"}, "session id '%2F' may hold only"),
        ({"session_id": ".."}, "may not be . or .."),
        ({"session_id": "s" * 129}, "is 129 characters long; at most 128"),
        ({"session_id": "é"}, "session id 'é' may hold only"),
        ({"session_id": 7}, "a session id must be a str, not int"),
        ({"user_id": ""}, "the user id is empty"),
        ({"user_id": "   "}, "the user id is empty"),
        ({"user_id": " bob"}, "user id ' bob' starts or ends with whitespace"),
        ({"user_id": "bo\x00b"}, "holds a control character or a lone surrogate"),
        ({"app_name": "a\nb"}, "app name 'a\\nb' holds a control character"),
        ({"app_name": "x" * 129}, "is 129 characters long; at most 128"),
        ({"app_name": None}, "app name must be a str, not NoneType"),
    ]
    for bad, message in cases:
        key = {"app_name": APP, "user_id": "u1", "session_id": "s1", **bad}
        calls = [
            service.create_session(**key),
            service.get_session(**key),
            service.delete_session(**key),
        ]
        if "session_id" not in bad:
            calls.append(service.list_sessions(app_name=key["app_name"], user_id=key["user_id"]))
        for call in calls:
            with pytest.raises(InvalidIdError) as caught:
                await call
            assert message in str(caught.value)
            assert isinstance(caught.value, ValueError)
    # Nothing was created by any of it: never a silent new random session.
    assert (await service.list_sessions(app_name=APP)).sessions == []


async def test_r4_list_sessions_refuses_a_page_that_cannot_exist(backend: Backend) -> None:
    service = backend.make()
    with pytest.raises(InvalidPageError, match="page_token"):
        await service.list_sessions(app_name=APP, page_token="not-a-token")
    with pytest.raises(InvalidPageError, match="limit must be at least 1"):
        await service.list_sessions(app_name=APP, limit=0)


async def test_r4_ids_in_every_common_shape_are_accepted(backend: Backend) -> None:
    service = backend.make()
    session_ids = ["3f2a9c1e-8b7d-4e6f-a1b2-c3d4e5f60718", "s_1.2~x:y@z-", "s" * 128]
    users = ["alice@example.com", "auth0|5f7c", "Jane Doe", "用户"]
    for i, sid in enumerate(session_ids):
        app, user = ("My App", users[i % len(users)]) if i % 2 else (APP, users[i])
        await service.create_session(app_name=app, user_id=user, session_id=sid)
        found = await backend.make().get_session(app_name=app, user_id=user, session_id=sid)
        assert found is not None
        assert (found.app_name, found.user_id, found.id) == (app, user, sid)


async def test_r4_concurrent_creation_of_one_session_fails_once_with_session_exists(
    backend: Backend,
) -> None:
    """Two creates of one id at once — from one service, and from two instances (on
    PostgreSQL: two connections) — make one session; the other gets `SessionExistsError`
    and none of its state is applied."""
    for n, makers in enumerate([(backend.make, None), (backend.make, backend.make)]):
        first = makers[0]()
        second = first if makers[1] is None else makers[1]()
        sid = f"race{n}"
        results = await asyncio.gather(
            first.create_session(
                app_name=APP, user_id="u1", session_id=sid, state={"who": 1, f"user:{sid}": 1}
            ),
            second.create_session(
                app_name=APP, user_id="u1", session_id=sid, state={"who": 2, f"user:{sid}": 2}
            ),
            return_exceptions=True,
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        made = [r for r in results if isinstance(r, Session)]
        assert len(made) == 1, results
        assert [type(e) for e in errors] == [SessionExistsError]
        stored = await get(backend.make(), made[0])
        assert stored.state["who"] == made[0].state["who"]
        assert stored.state[f"user:{sid}"] == made[0].state["who"]


# -- G3: state values are JSON, one rule in every store ----------------------------------------


class _Opaque:
    pass


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


NOT_JSON = [
    pytest.param(
        {"user:prefs": {"tags": {"a"}}},
        "state key 'user:prefs' → 'tags': a set is not JSON; use a list",
        id="set",
    ),
    pytest.param(
        {"k": frozenset()}, "state key 'k': a frozenset is not JSON; use a list", id="frozenset"
    ),
    pytest.param(
        {"k": (1, 2)},
        "state key 'k': a tuple is not JSON (it would come back as a list); use a list",
        id="tuple",
    ),
    pytest.param(
        {"k": b"x"},
        "state key 'k': bytes is not JSON; store text (e.g. base64) or save an artifact",
        id="bytes",
    ),
    pytest.param(
        {"k": datetime.datetime(2026, 1, 1)},
        "state key 'k': a datetime is not JSON; store value.isoformat()",
        id="datetime",
    ),
    pytest.param(
        {"k": decimal.Decimal("1.5")},
        "state key 'k': a Decimal is not JSON; use a float, an int or a string",
        id="decimal",
    ),
    pytest.param({"k": math.nan}, "state key 'k': NaN is not JSON; use None or a string", id="nan"),
    pytest.param(
        {"app:k": [1, {"x": math.inf}]},
        "state key 'app:k' → [1] → 'x': inf is not JSON; use None or a string",
        id="nested-inf",
    ),
    pytest.param(
        {"k": -math.inf}, "state key 'k': -inf is not JSON; use None or a string", id="-inf"
    ),
    pytest.param(
        {"k": {"a": {1: "x"}}},
        "state key 'k' → 'a': the dict key 1 is not a string (JSON's keys are)",
        id="int-key",
    ),
    pytest.param(
        {"k": "a\x00b"},
        "state key 'k': the string contains a NUL character (\\x00), which PostgreSQL cannot store",
        id="nul",
    ),
    pytest.param(
        {"k": ["\ud800"]},
        "state key 'k' → [0]: the string contains a lone surrogate, which is not UTF-8",
        id="surrogate",
    ),
    pytest.param(
        {"k": _Opaque()},
        "state key 'k': a _Opaque is not JSON; use a dict, list, str, number, bool or None",
        id="object",
    ),
    pytest.param(
        {"k": Content.user("x")},
        "state key 'k': a Content is not JSON; store value.model_dump(mode='json')",
        id="model",
    ),
    pytest.param(
        {"k": _nested(70)},
        "state key 'k' → [0] → [0] → [0] → … → [0] → [0]: nested deeper than 64 levels "
        "(is it a cycle?)",
        id="too-deep",
    ),
    pytest.param(
        {"temp:scratch": {1}}, "state key 'temp:scratch': a set is not JSON; use a list", id="temp"
    ),
]

BEFORE = {"k": 0, "user:prefs": {"tags": []}, "app:k": 1}


@pytest.mark.parametrize(("delta", "message"), NOT_JSON)
async def test_g3_a_value_that_is_not_json_is_refused_and_nothing_is_stored(
    backend: Backend, delta: dict[str, Any], message: str
) -> None:
    service = backend.make()
    session = await service.create_session(app_name=APP, user_id="u1", state=BEFORE)
    event = Event(
        author="agent", content=Content.model("hi"), actions=EventActions(state_delta=delta)
    )
    with pytest.raises(InvalidStateValueError) as caught:
        await service.append_event(session, event)
    assert str(caught.value) == message
    assert isinstance(caught.value, RondoError)
    assert isinstance(caught.value, ValueError)
    assert caught.value.key == next(iter(delta))
    assert (session.version, len(session.events)) == (0, 0)
    stored = await get(backend.make(), session)
    assert (stored.version, len(stored.events), stored.state) == (0, 0, BEFORE)
    # The handle is still current, and a JSON write goes through.
    await service.append_event(session, delta_event({"k": 1}))
    assert (await get(backend.make(), session)).state["k"] == 1

    with pytest.raises(InvalidStateValueError) as created:
        await service.create_session(app_name=APP, user_id="u1", session_id="bad", state=delta)
    assert str(created.value) == message
    assert await backend.make().get_session(app_name=APP, user_id="u1", session_id="bad") is None


async def test_g3_state_keys_must_be_strings(backend: Backend) -> None:
    with pytest.raises(InvalidStateValueError, match="state key 1: state keys must be strings"):
        await backend.make().create_session(app_name=APP, user_id="u1", state={1: "x"})  # type: ignore[dict-item]  # pyright: ignore[reportArgumentType]


class Colour(enum.StrEnum):
    RED = "red"


class Size(enum.IntEnum):
    BIG = 3


JSON_VALUES: dict[str, Any] = {
    "text": 'héllo ✓ \u2028 "quoted" \x01\t',
    "empty": "",
    "big": 2**70,
    "negative": -3,
    "float": 0.1,
    "whole_float": 2.0,
    "yes": True,
    "no": False,
    "none": None,
    "list": [1, "two", [3.5, None], {}, []],
    "dict": {"nested": {"deep": [True, {"x": _nested(60)}]}},
    "enum": Colour.RED,
    "int_enum": Size.BIG,
    "ordered": OrderedDict(b=1, a=2),
}


JSON_TYPES: dict[str, type] = {
    "text": str,
    "empty": str,
    "big": int,
    "negative": int,
    "float": float,
    "whole_float": float,
    "yes": bool,
    "no": bool,
    "none": type(None),
    "list": list,
    "dict": dict,
    "enum": str,
    "int_enum": int,
    "ordered": dict,
}


async def test_g3_json_values_come_back_equal_from_every_store(backend: Backend) -> None:
    service = backend.make()
    state = {f"{scope}{k}": v for scope in ("", "app:", "user:") for k, v in JSON_VALUES.items()}
    session = await service.create_session(app_name=APP, user_id="u1", state=state)
    later = {f"{k}_later": v for k, v in state.items()}
    await service.append_event(session, delta_event(later))
    stored = await get(backend.make(), session)
    assert stored.state == {**state, **later}
    for key, value in stored.state.items():
        # bool stays bool, int stays int, float stays float; enums come back as their value.
        base = JSON_TYPES[key.removeprefix("app:").removeprefix("user:").removesuffix("_later")]
        assert isinstance(value, base), key
        assert base is bool or not isinstance(value, bool), key


# -- R3: state scopes --------------------------------------------------------------------------


async def test_r3_create_session_puts_prefixed_keys_in_their_scopes(backend: Backend) -> None:
    service = backend.make()
    s1 = await service.create_session(
        app_name=APP, user_id="u1", state={"app:theme": "dark", "user:name": "Ada", "draft": 1}
    )
    assert s1.state == {"app:theme": "dark", "user:name": "Ada", "draft": 1}
    reader = backend.make()
    s2 = await reader.create_session(app_name=APP, user_id="u1")
    s3 = await reader.create_session(app_name=APP, user_id="u2")
    s4 = await reader.create_session(app_name="other", user_id="u1")
    assert s2.state == {"app:theme": "dark", "user:name": "Ada"}
    assert s3.state == {"app:theme": "dark"}
    assert s4.state == {}


async def test_r3_deltas_apply_per_scope_and_temp_is_never_stored(backend: Backend) -> None:
    service = backend.make()
    a = await service.create_session(app_name=APP, user_id="u1", state={"k": "a0"})
    b = await service.create_session(app_name=APP, user_id="u1", state={"k": "b0"})
    c = await service.create_session(app_name=APP, user_id="u2")
    event = delta_event({"app:n": 1, "user:n": 2, "k": "a1", "temp:scratch": 3})
    stored = await service.append_event(a, event)
    # The handle shows the merged view at once; temp: keys never reach it or the record.
    assert a.state == {"k": "a1", "app:n": 1, "user:n": 2}
    assert stored.actions.state_delta == {"app:n": 1, "user:n": 2, "k": "a1"}
    # G1: the stored record is a new record; the one handed in is unchanged.
    assert event.actions.state_delta["temp:scratch"] == 3

    reader = backend.make()
    assert (await get(reader, a)).state == {"k": "a1", "app:n": 1, "user:n": 2}
    assert (await get(reader, b)).state == {"k": "b0", "app:n": 1, "user:n": 2}
    assert (await get(reader, c)).state == {"app:n": 1}
    stored_event = (await get(reader, a)).events[0]
    assert "temp:scratch" not in stored_event.actions.state_delta

    # Later deltas update keys one by one (dict.update semantics), nested values replaced.
    await service.append_event(a, delta_event({"app:n": {"x": 1}, "app:m": None}))
    await service.append_event(a, delta_event({"app:n": {"y": 2}}))
    assert (await get(backend.make(), c)).state == {"app:n": {"y": 2}, "app:m": None}


async def test_r3_runner_scopes_persist_and_temp_lives_for_one_invocation(
    backend: Backend,
) -> None:
    seen: list[Any] = []

    def remember(tool_context: ToolContext) -> dict[str, Any]:
        """Write every scope."""
        seen.append(tool_context.state.get("temp:t"))
        tool_context.state.update(
            {"app:visits": 1, "user:visits": 2, "visits": 3, "temp:t": "scratch"}
        )
        return {}

    def check(tool_context: ToolContext) -> dict[str, Any]:
        """Read temp state."""
        seen.append(tool_context.state.get("temp:t"))
        return {}

    model = ScriptedModel(
        [
            FunctionCall(name="remember"),
            FunctionCall(name="check"),
            "done",
            FunctionCall(name="check"),
            "again",
        ]
    )
    agent = Agent(name="agent", model=model, tools=[remember, check])
    runner = Runner(agent=agent, app_name=APP, session_service=backend.make())
    async with aclosing(runner.run_async(user_id="u1", session_id="s1", new_message="go")) as ev:
        _ = [e async for e in ev]
    # A restarted process runs the next invocation.
    runner2 = Runner(agent=agent, app_name=APP, session_service=backend.make())
    async with aclosing(
        runner2.run_async(user_id="u1", session_id="s1", new_message="again")
    ) as ev:
        _ = [e async for e in ev]
    assert seen == [None, "scratch", None]

    stored = await backend.make().get_session(app_name=APP, user_id="u1", session_id="s1")
    assert stored is not None
    assert stored.state == {"app:visits": 1, "user:visits": 2, "visits": 3}
    assert all(not any(k.startswith("temp:") for k in e.actions.state_delta) for e in stored.events)


# -- R1: events up, history down ---------------------------------------------------------------


async def test_r1_each_event_is_stored_before_the_consumer_sees_it(backend: Backend) -> None:
    def tick(tool_context: ToolContext) -> dict[str, Any]:
        """Tick."""
        return {"ok": True}

    model = ScriptedModel([FunctionCall(name="tick"), FunctionCall(name="tick"), "done"])
    runner = Runner(
        agent=Agent(name="agent", model=model, tools=[tick]),
        app_name=APP,
        session_service=backend.make(),
    )
    observer = backend.make()  # a separate reader, like another process
    seen = 0
    async with aclosing(runner.run_async(user_id="u1", session_id="s1", new_message="go")) as ev:
        async for event in ev:
            stored = await observer.get_session(app_name=APP, user_id="u1", session_id="s1")
            assert stored is not None
            assert stored.events[-1].id == event.id
            seen += 1
    assert seen == 5


# -- R5: artifacts -----------------------------------------------------------------------------


def entries(path: Path) -> list[str]:
    return sorted(os.listdir(path))


def all_inside(root: Path) -> bool:
    return all(p.resolve().is_relative_to(root) for p in root.rglob("*"))


@pytest.fixture(params=["memory", "filesystem"])
def artifacts(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], BaseArtifactService]:
    """Opens an artifact service on one storage place (in-memory: the one service)."""
    if request.param == "memory":
        service = InMemoryArtifactService()
        return lambda: service
    return lambda: FileArtifactService(tmp_path / "artifacts")


async def test_r5_artifacts_are_versioned_named_blobs(
    artifacts: Callable[[], BaseArtifactService],
) -> None:
    service = artifacts()
    where = {"app_name": APP, "user_id": "u1", "session_id": "s1"}
    png = Part(inline_data=Blob(mime_type="image/png", data=bytes(range(256)) * 10))
    assert await service.save_artifact(**where, filename="notes.txt", artifact=Part(text="v0")) == 0
    assert await service.save_artifact(**where, filename="notes.txt", artifact=Part(text="v1")) == 1
    assert await service.save_artifact(**where, filename="img/logo.png", artifact=png) == 0

    reader = artifacts()
    assert await reader.load_artifact(**where, filename="notes.txt") == Part(text="v1")
    assert await reader.load_artifact(**where, filename="notes.txt", version=0) == Part(text="v0")
    assert await reader.load_artifact(**where, filename="notes.txt", version=7) is None
    assert await reader.load_artifact(**where, filename="missing.txt") is None
    assert await reader.load_artifact(**where, filename="img/logo.png") == png
    assert await reader.list_versions(**where, filename="notes.txt") == [0, 1]
    assert await reader.list_artifact_keys(**where) == ["img/logo.png", "notes.txt"]

    await reader.delete_artifact(**where, filename="notes.txt")
    assert await artifacts().load_artifact(**where, filename="notes.txt") is None
    assert await artifacts().list_versions(**where, filename="notes.txt") == []
    assert await artifacts().list_artifact_keys(**where) == ["img/logo.png"]
    # A new version after deletion starts again at 0.
    assert await service.save_artifact(**where, filename="notes.txt", artifact=Part(text="n")) == 0


async def test_r5_user_artifacts_are_shared_by_the_users_sessions(
    artifacts: Callable[[], BaseArtifactService],
) -> None:
    service = artifacts()
    s1 = {"app_name": APP, "user_id": "u1", "session_id": "s1"}
    s2 = {"app_name": APP, "user_id": "u1", "session_id": "s2"}
    other_user = {"app_name": APP, "user_id": "u2", "session_id": "s1"}
    await service.save_artifact(**s1, filename="user:profile", artifact=Part(text="Ada"))
    await service.save_artifact(**s1, filename="draft", artifact=Part(text="mine"))

    reader = artifacts()
    assert await reader.load_artifact(**s2, filename="user:profile") == Part(text="Ada")
    assert await reader.load_artifact(**s2, filename="draft") is None
    assert await reader.list_artifact_keys(**s1) == ["draft", "user:profile"]
    assert await reader.list_artifact_keys(**s2) == ["user:profile"]
    assert await reader.load_artifact(**other_user, filename="user:profile") is None
    assert await reader.list_artifact_keys(**other_user) == []
    assert await service.save_artifact(**s2, filename="user:profile", artifact=Part(text="B")) == 1


@pytest.mark.parametrize(
    "name",
    [
        "",
        "..",
        ".",
        "../secret",
        "a/../../b",
        "/etc/passwd",
        "a//b",
        "a\\b",
        "C:x",
        "a\x00b",
        "user:",
        "user:../x",
        "user:/abs",
        "dir/",
    ],
)
async def test_r5_artifact_names_that_escape_are_refused(
    artifacts: Callable[[], BaseArtifactService], tmp_path: Path, name: str
) -> None:
    service = artifacts()
    where = {"app_name": APP, "user_id": "u1", "session_id": "s1"}
    with pytest.raises(InvalidArtifactNameError, match="artifact name"):
        await service.save_artifact(**where, filename=name, artifact=Part(text="x"))
    with pytest.raises(InvalidArtifactNameError):
        await service.load_artifact(**where, filename=name)
    with pytest.raises(InvalidArtifactNameError):
        await service.list_versions(**where, filename=name)
    with pytest.raises(InvalidArtifactNameError):
        await service.delete_artifact(**where, filename=name)
    assert [n for n in entries(tmp_path) if n != "artifacts"] == []


async def test_r5_hostile_ids_stay_inside_the_artifact_root(tmp_path: Path) -> None:
    root = tmp_path / "artifacts"
    service = FileArtifactService(root)
    where = {"app_name": "..", "user_id": "../..", "session_id": "/tmp"}
    assert await service.save_artifact(**where, filename="a.txt", artifact=Part(text="x")) == 0
    assert await service.load_artifact(**where, filename="a.txt") == Part(text="x")
    assert entries(tmp_path) == ["artifacts"]
    assert all_inside(root)


async def test_r5_tools_and_callbacks_save_load_and_list_artifacts(
    artifacts: Callable[[], BaseArtifactService],
) -> None:
    listed: list[list[str]] = []

    async def write_report(text: str, tool_context: ToolContext) -> dict[str, Any]:
        """Save a report."""
        version = await tool_context.save_artifact("report.txt", Part(text=text))
        await tool_context.save_artifact("user:last_report", Part(text=text))
        return {"version": version}

    async def read_report(tool_context: ToolContext) -> dict[str, Any]:
        """Read the report back."""
        part = await tool_context.load_artifact("report.txt")
        first = await tool_context.load_artifact("report.txt", version=0)
        return {
            "text": part.text if part else None,
            "first": first.text if first else None,
            "names": await tool_context.list_artifacts(),
        }

    async def before_agent(ctx: Any) -> None:
        listed.append(await ctx.list_artifacts())

    model = ScriptedModel(
        [
            FunctionCall(name="write_report", args={"text": "first"}),
            FunctionCall(name="write_report", args={"text": "second"}),
            FunctionCall(name="read_report"),
            "done",
        ]
    )
    service = artifacts()
    runner = Runner(
        agent=Agent(
            name="agent",
            model=model,
            tools=[write_report, read_report],
            before_agent_callback=before_agent,
        ),
        app_name=APP,
        artifact_service=service,
    )
    async with aclosing(runner.run_async(user_id="u1", session_id="s1", new_message="go")) as ev:
        events = [e async for e in ev]
    responses = [e for e in events if e.get_function_responses()]
    assert [e.actions.artifact_delta for e in responses] == [
        {"report.txt": 0, "user:last_report": 0},
        {"report.txt": 1, "user:last_report": 1},
        {},
    ]
    assert responses[2].get_function_responses()[0].response == {
        "text": "second",
        "first": "first",
        "names": ["report.txt", "user:last_report"],
    }
    assert listed == [[]]
    stored = await runner.session_service.get_session(app_name=APP, user_id="u1", session_id="s1")
    assert stored is not None
    deltas = [e.actions.artifact_delta for e in stored.events if e.get_function_responses()]
    assert deltas[0] == {"report.txt": 0, "user:last_report": 0}


async def test_r5_artifact_delta_is_stored_with_the_event(sql_backend: Backend) -> None:
    async def save(tool_context: ToolContext) -> dict[str, Any]:
        """Save."""
        return {"v": await tool_context.save_artifact("a.bin", Part(text="x"))}

    runner = Runner(
        agent=Agent(
            name="agent", model=ScriptedModel([FunctionCall(name="save"), "ok"]), tools=[save]
        ),
        app_name=APP,
        session_service=sql_backend.make(),
        artifact_service=InMemoryArtifactService(),
    )
    async with aclosing(runner.run_async(user_id="u1", session_id="s1", new_message="go")) as ev:
        _ = [e async for e in ev]
    stored = await sql_backend.make().get_session(app_name=APP, user_id="u1", session_id="s1")
    assert stored is not None
    assert [e.actions.artifact_delta for e in stored.events] == [{}, {}, {"a.bin": 0}, {}]


# -- R5: memory --------------------------------------------------------------------------------


def conversation(session_id: str, user_id: str = "u1", *texts: str) -> Session:
    session = Session(id=session_id, app_name=APP, user_id=user_id)
    events = [
        text_event(t, author="user" if i % 2 == 0 else "agent", timestamp=1000.0 + i)
        for i, t in enumerate(texts)
    ]
    session.events.log.extend(events)
    session.events._extend_to(len(events))  # pyright: ignore[reportPrivateUsage]
    return session


async def test_r5_memory_remembers_sessions_and_searches_them(backend: Backend) -> None:
    memory = backend.make_memory()
    await memory.add_session_to_memory(
        conversation("s1", "u1", "I love hiking in the Alps", "The Alps are lovely in June")
    )
    await memory.add_session_to_memory(conversation("s2", "u1", "My cat is called Tom"))
    await memory.add_session_to_memory(conversation("s3", "u2", "Hiking again, in the Andes"))
    # Adding a session again replaces what was remembered of it (no duplicates).
    await memory.add_session_to_memory(
        conversation("s1", "u1", "I love hiking in the Alps", "The Alps are lovely in June")
    )

    reader = backend.make_memory()
    found = await reader.search_memory(app_name=APP, user_id="u1", query="Alps?")
    assert sorted(m.content.text for m in found.memories) == [
        "I love hiking in the Alps",
        "The Alps are lovely in June",
    ]
    assert {m.session_id for m in found.memories} == {"s1"}
    assert {m.author for m in found.memories} == {"user", "agent"}
    cat = await reader.search_memory(app_name=APP, user_id="u1", query="what is my CAT's name")
    assert [(m.content.text, m.author, m.timestamp) for m in cat.memories] == [
        ("My cat is called Tom", "user", 1000.0)
    ]
    # Another user's memories and other apps stay apart; queries are words, not syntax.
    hiking = await reader.search_memory(app_name=APP, user_id="u2", query="hiking")
    assert [m.content.text for m in hiking.memories] == ["Hiking again, in the Andes"]
    assert (await reader.search_memory(app_name="other", user_id="u1", query="cat")).memories == []
    for query in ("", "  ?! ", 'cat" OR "x', "NOT cat", "cat*", "a & b | !c"):
        result = await reader.search_memory(app_name=APP, user_id="u1", query=query)
        assert all("cat" in m.content.text.lower() for m in result.memories), query


async def test_r5_nothing_is_remembered_unless_asked(backend: Backend) -> None:
    memory = backend.make_memory()
    model = ScriptedModel(["first answer about zebras", "second"])
    runner = Runner(
        agent=Agent(name="agent", model=model),
        app_name=APP,
        session_service=backend.make(),
        memory_service=memory,
    )
    for text in ("tell me about zebras", "and again"):
        async with aclosing(
            runner.run_async(user_id="u1", session_id="s1", new_message=text)
        ) as ev:
            _ = [e async for e in ev]
    assert (await memory.search_memory(app_name=APP, user_id="u1", query="zebras")).memories == []
    assert "zebras" not in (model.requests[1].config.system_instruction or "")

    session = await runner.session_service.get_session(app_name=APP, user_id="u1", session_id="s1")
    assert session is not None
    await memory.add_session_to_memory(session)
    found = await memory.search_memory(app_name=APP, user_id="u1", query="zebras")
    assert sorted(m.content.text for m in found.memories) == [
        "first answer about zebras",
        "tell me about zebras",
    ]


async def test_r5_load_memory_tool_lets_an_agent_search_memory(backend: Backend) -> None:
    memory = backend.make_memory()
    await memory.add_session_to_memory(
        conversation("old", "u1", "My favourite colour is teal", "Noted: teal")
    )
    model = ScriptedModel(
        [FunctionCall(name="load_memory", args={"query": "favourite colour"}), "teal"]
    )
    runner = Runner(
        agent=Agent(name="agent", model=model, tools=[load_memory]),
        app_name=APP,
        session_service=backend.make(),
        memory_service=memory,
    )
    async with aclosing(
        runner.run_async(user_id="u1", session_id="new", new_message="what's my colour?")
    ) as ev:
        events = [e async for e in ev]
    response = events[1].get_function_responses()[0].response
    assert [m["text"] for m in response["memories"]] == ["My favourite colour is teal"]
    assert response["memories"][0]["author"] == "user"
    assert MEMORY_INSTRUCTION in (model.requests[0].config.system_instruction or "")
    assert [d.name for d in model.requests[0].config.tools] == ["load_memory"]


async def test_r5_load_memory_without_a_memory_service_is_a_tool_error() -> None:
    model = ScriptedModel([FunctionCall(name="load_memory", args={"query": "x"}), "ok"])
    runner = Runner(agent=Agent(name="agent", model=model, tools=[load_memory]), app_name=APP)
    async with aclosing(runner.run_async(user_id="u1", session_id="s", new_message="hi")) as ev:
        events = [e async for e in ev]
    error = events[1].get_function_responses()[0].response["error"]
    assert "memory service" in error
