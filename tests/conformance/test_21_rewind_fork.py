"""Issue 21.5: `Runner.rewind_async` and `Runner.fork_async` on every store (memory, SQLite,
PostgreSQL): a rewind is one version-checked record; the session reads as before the
invocation — events, state (the created state included), artifact versions, the agent that
answers next — and the rewound records stay listed."""

from __future__ import annotations

import asyncio
from contextlib import aclosing
from typing import Any

import pytest

from rondo import Agent, Event, FunctionCall, Part, Runner, StaleSessionError, ToolContext
from rondo.artifacts import InMemoryArtifactService
from rondo.errors import InvocationNotFoundError, SessionExistsError
from rondo.sessions.base import BaseSessionService
from rondo.testing import ScriptedModel
from tests._stores import Backend, backend, postgres_url

__all__ = ["backend", "postgres_url"]

APP = "app"


async def _run(runner: Runner, session_id: str, text: str) -> list[Event]:
    async with aclosing(
        runner.run_async(user_id="u", session_id=session_id, new_message=text)
    ) as events:
        return [e async for e in events]


def _note_runner(service: BaseSessionService, artifacts: InMemoryArtifactService) -> Runner:
    async def note(value: str, tool_context: ToolContext) -> dict[str, Any]:
        """Remember a value."""
        tool_context.state["note"] = value
        tool_context.state[f"seen_{value}"] = True
        await tool_context.save_artifact("notes.txt", Part(text=value))
        if value == "two":
            await tool_context.save_artifact("later.txt", Part(text="only in two"))
        loaded = await tool_context.load_artifact("notes.txt")
        return {"stored": loaded.text if loaded else None}

    async def peek(tool_context: ToolContext) -> dict[str, Any]:
        """Read the notes file."""
        loaded = await tool_context.load_artifact("notes.txt")
        later = await tool_context.load_artifact("later.txt")
        return {
            "notes": loaded.text if loaded else None,
            "later": later.text if later else None,
            "files": sorted(await tool_context.list_artifacts()),
        }

    model = ScriptedModel(
        [
            FunctionCall(name="note", args={"value": "one"}),
            "noted one",
            FunctionCall(name="note", args={"value": "two"}),
            "noted two",
            FunctionCall(name="peek"),
            "peeked",
        ]
    )
    return Runner(
        agent=Agent(name="agent", model=model, tools=[note, peek]),
        app_name=APP,
        session_service=service,
        artifact_service=artifacts,
    )


async def test_21_rewind_reads_as_before_the_invocation(backend: Backend) -> None:
    service = backend.make()
    artifacts = InMemoryArtifactService()
    await service.create_session(
        app_name=APP, user_id="u", session_id="s", state={"mode": "start", "note": "created"}
    )
    runner = _note_runner(service, artifacts)
    await _run(runner, "s", "first")
    before = await service.get_session(app_name=APP, user_id="u", session_id="s")
    assert before is not None
    assert before.state["note"] == "one"
    second = await _run(runner, "s", "second")
    invocation = second[0].invocation_id

    record = await runner.rewind_async(
        user_id="u", session_id="s", rewind_before_invocation_id=invocation
    )
    assert record.actions.rewind_before_invocation_id == invocation
    for reader in (service, backend.make()):  # this process and a fresh one
        after = await reader.get_session(app_name=APP, user_id="u", session_id="s")
        assert after is not None
        assert [e.id for e in after.events] == [e.id for e in before.events]
        assert after.state == before.state  # the created "mode" and the first note
        assert after.state["mode"] == "start"
        assert "seen_two" not in after.state
        assert after.pending == []
        # Audit: the rewound records (the user message, the run's records, the rewind).
        rewound_ids = [e.id for e in after.rewound]
        assert rewound_ids[-1] == record.id
        assert [e.id for e in second] == rewound_ids[1:-1]
        assert after.rewound[0].invocation_id == invocation
        assert after.version == before.version + len(second) + 2  # nothing deleted

    # The next run reads the file at the version the first invocation saved.
    peeked = await _run(runner, "s", "third")
    answer = next(e for e in peeked if e.get_function_responses())
    response = answer.get_function_responses()[0].response
    assert response == {"notes": "one", "later": None, "files": ["notes.txt"]}
    # The model saw neither the second message nor its answers.
    sent = runner.agent.model.requests[-2]  # type: ignore[attr-defined]
    texts = [p.text for c in sent.contents for p in c.parts if p.text]
    assert "second" not in texts
    assert "noted two" not in texts
    assert "first" in texts
    assert "third" in texts


async def test_21_rewind_restores_the_state_created_with(backend: Backend) -> None:
    """google-adk#4933: a rewind to the first invocation keeps the state the session was
    created with (ADK recomputes state from events only and loses it)."""
    service = backend.make()
    artifacts = InMemoryArtifactService()
    await service.create_session(
        app_name=APP, user_id="u", session_id="s", state={"note": "created", "user:x": 1}
    )
    runner = _note_runner(service, artifacts)
    first = await _run(runner, "s", "first")
    await runner.rewind_async(
        user_id="u", session_id="s", rewind_before_invocation_id=first[0].invocation_id
    )
    after = await backend.make().get_session(app_name=APP, user_id="u", session_id="s")
    assert after is not None
    assert after.state == {"note": "created", "user:x": 1}
    assert list(after.events) == []


async def test_21_rewind_unknown_or_rewound_invocation_is_refused(backend: Backend) -> None:
    service = backend.make()
    runner = _note_runner(service, InMemoryArtifactService())
    first = await _run(runner, "s", "first")
    second = await _run(runner, "s", "second")
    with pytest.raises(InvocationNotFoundError):
        await runner.rewind_async(user_id="u", session_id="s", rewind_before_invocation_id="nope")
    await runner.rewind_async(
        user_id="u", session_id="s", rewind_before_invocation_id=second[0].invocation_id
    )
    with pytest.raises(InvocationNotFoundError):  # already rewound away
        await runner.rewind_async(
            user_id="u", session_id="s", rewind_before_invocation_id=second[0].invocation_id
        )
    # A rewind further back over an earlier rewind still reads right.
    await runner.rewind_async(
        user_id="u", session_id="s", rewind_before_invocation_id=first[0].invocation_id
    )
    after = await backend.make().get_session(app_name=APP, user_id="u", session_id="s")
    assert after is not None
    assert list(after.events) == []
    assert after.state == {}


async def test_21_rewind_is_version_checked(backend: Backend) -> None:
    service = backend.make()
    runner = _note_runner(service, InMemoryArtifactService())
    await _run(runner, "s", "first")
    second = await _run(runner, "s", "second")
    seen = await service.get_session(app_name=APP, user_id="u", session_id="s")
    assert seen is not None
    with pytest.raises(StaleSessionError):
        await runner.rewind_async(
            user_id="u",
            session_id="s",
            rewind_before_invocation_id=second[0].invocation_id,
            expected_version=seen.version - 1,
        )
    await runner.rewind_async(
        user_id="u",
        session_id="s",
        rewind_before_invocation_id=second[0].invocation_id,
        expected_version=seen.version,
    )
    # A handle read before the rewind can no longer append (no lost update).
    with pytest.raises(StaleSessionError):
        await backend.make().append_event(seen, Event(author="user"))


async def test_21_rewind_races_concurrent_appends_one_wins(backend: Backend) -> None:
    service = backend.make()
    runner = _note_runner(service, InMemoryArtifactService())
    await _run(runner, "s", "first")
    second = await _run(runner, "s", "second")
    handle = await service.get_session(app_name=APP, user_id="u", session_id="s")
    assert handle is not None
    seen = handle.version

    async def append() -> str:
        try:
            await backend.make().append_event(handle, Event(author="user"))
        except StaleSessionError:
            return "stale"
        return "ok"

    async def rewind() -> str:
        try:
            await runner.rewind_async(
                user_id="u",
                session_id="s",
                rewind_before_invocation_id=second[0].invocation_id,
                expected_version=seen,
            )
        except StaleSessionError:
            return "stale"
        return "ok"

    outcomes = await asyncio.gather(append(), rewind())
    assert sorted(outcomes) == ["ok", "stale"]


async def test_21_rewind_next_message_goes_to_the_agent_of_then(backend: Backend) -> None:
    service = backend.make()
    child = Agent(name="child", model=ScriptedModel(["child here"]))
    root_model = ScriptedModel(
        ["root one", FunctionCall(name="transfer_to_agent", args={"agent_name": "child"}), "root"]
    )
    runner = Runner(
        agent=Agent(name="root", model=root_model, sub_agents=[child]),
        app_name=APP,
        session_service=service,
    )
    await _run(runner, "s", "hello")
    moved = await _run(runner, "s", "to the child")
    assert moved[-1].author == "child"
    await runner.rewind_async(
        user_id="u", session_id="s", rewind_before_invocation_id=moved[0].invocation_id
    )
    again = await _run(runner, "s", "hello again")
    assert again[-1].author == "root"
    assert again[-1].text == "root"


async def test_21_fork_copies_history_up_to_an_invocation(backend: Backend) -> None:
    service = backend.make()
    runner = _note_runner(service, InMemoryArtifactService())
    await service.create_session(app_name=APP, user_id="u", session_id="s", state={"mode": "m"})
    first = await _run(runner, "s", "first")
    second = await _run(runner, "s", "second")
    original = await service.get_session(app_name=APP, user_id="u", session_id="s")
    assert original is not None

    fork = await runner.fork_async(
        user_id="u",
        session_id="s",
        before_invocation_id=second[0].invocation_id,
        new_session_id="s-fork",
    )
    whole = await runner.fork_async(user_id="u", session_id="s")
    reader = backend.make()
    got = await reader.get_session(app_name=APP, user_id="u", session_id="s-fork")
    assert got is not None
    assert fork.id == "s-fork"
    assert [e.id for e in got.events] == [e.id for e in original.events][: len(first) + 1]
    assert got.state == {"mode": "m", "note": "one", "seen_one": True}
    copy = await reader.get_session(app_name=APP, user_id="u", session_id=whole.id)
    assert copy is not None
    assert [e.id for e in copy.events] == [e.id for e in original.events]
    assert copy.state == original.state
    untouched = await reader.get_session(app_name=APP, user_id="u", session_id="s")
    assert untouched is not None
    assert untouched.version == original.version
    with pytest.raises(InvocationNotFoundError):
        await runner.fork_async(user_id="u", session_id="s", before_invocation_id="nope")
    if backend.name == "memory":  # the in-memory store shares the records themselves
        assert all(a is b for a, b in zip(copy.events, original.events, strict=True))


async def test_21_fork_of_a_rewound_session_reads_the_same_and_rewinds_alone(
    backend: Backend,
) -> None:
    """A fork reads as its original did (history, state, pending calls), its own rewinds
    restore the state the original was created with, and the original never moves. A SQL
    store copies the stored prefix inside the database, so the fork keeps the rewound
    records for audit too."""
    service = backend.make()
    runner = _note_runner(service, InMemoryArtifactService())
    await service.create_session(app_name=APP, user_id="u", session_id="s", state={"mode": "m"})
    first = await _run(runner, "s", "first")
    second = await _run(runner, "s", "second")
    await runner.rewind_async(
        user_id="u", session_id="s", rewind_before_invocation_id=second[0].invocation_id
    )
    third = await _run(runner, "s", "third")
    original = await service.get_session(app_name=APP, user_id="u", session_id="s")
    assert original is not None

    fork = await runner.fork_async(user_id="u", session_id="s", new_session_id="f")
    reader = backend.make()
    got = await reader.get_session(app_name=APP, user_id="u", session_id="f")
    assert got is not None
    assert [e.id for e in got.events] == [e.id for e in original.events]
    assert got.state == original.state
    assert got.pending == original.pending
    if backend.name != "memory":
        assert [e.id for e in got.rewound] == [e.id for e in original.rewound]
    with pytest.raises(SessionExistsError):
        await runner.fork_async(user_id="u", session_id="s", new_session_id="f")

    await runner.rewind_async(
        user_id="u", session_id=fork.id, rewind_before_invocation_id=first[0].invocation_id
    )
    rewound = await reader.get_session(app_name=APP, user_id="u", session_id="f")
    assert rewound is not None
    assert rewound.events == []
    assert rewound.state == {"mode": "m"}
    untouched = await reader.get_session(app_name=APP, user_id="u", session_id="s")
    assert untouched is not None
    assert untouched.version == original.version
    assert untouched.events[-1].id == third[-1].id
