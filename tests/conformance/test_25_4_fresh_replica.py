"""Issue 25 item 4 (SPEC K3): a replica that never saw a long, summarized session reads only
what its first request needs — the newest summary, the records after it and the ones it
retains — while the whole history stays readable through the session API.

Counted, not timed: the records a SQL store decodes (`decoded_records`) and the items the
contents view builds (on every store, the in-memory one included).
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

import rondo.flow.contents as contents_module
from rondo import Agent, Content, Event, EventActions, RunConfig, Runner
from rondo.events import EventCompaction
from rondo.flow.compaction import SUMMARY_PREFIX, CompactionConfig
from rondo.flow.context_strategies import SlidingWindow, Summarizing
from rondo.sessions.base import BaseSessionService, EventLog, EventsView
from rondo.sessions.sql import decoded_records
from rondo.testing import ScriptedModel
from tests._stores import Backend, backend, postgres_url

__all__ = ["backend", "postgres_url"]  # fixtures used by the tests below

APP, USER, SID, AGENT = "app", "u", "s", "bot"
STORED = 200  # records before the summary
RETAINED = 4  # of those, the newest ones the summary leaves raw
T0 = 1_000.0
SUMMARY = f"{SUMMARY_PREFIX}everything up to m{STORED - RETAINED - 1}"


def _texts(n: int, stop: int) -> Iterator[Event]:
    for i in range(n, stop):
        user = i % 2 == 0
        yield Event(
            author="user" if user else AGENT,
            invocation_id=f"inv-{i // 2}",
            timestamp=T0 + i,
            content=Content.user(f"m{i}") if user else Content.model(f"m{i}"),
        )


async def _fill(service: BaseSessionService) -> list[str]:
    session = await service.create_session(app_name=APP, user_id=USER, session_id=SID)
    ids: list[str] = []
    for event in _texts(0, STORED):
        ids.append((await service.append_event(session, event)).id)
    summary = Event(
        author=AGENT,
        invocation_id=f"inv-{STORED // 2}",
        timestamp=T0 + STORED,
        actions=EventActions(
            compaction=EventCompaction(
                start_timestamp=T0,
                end_timestamp=T0 + STORED - RETAINED - 1,
                compacted_content=Content.user(SUMMARY),
            )
        ),
    )
    ids.append((await service.append_event(session, summary)).id)
    for event in _texts(STORED + 1, STORED + 3):
        ids.append((await service.append_event(session, event)).id)
    return ids


class _Counted:
    """Counts the contents view's items built while it is installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.built = 0
        real = contents_module._Item  # pyright: ignore[reportPrivateUsage]
        outer = self

        class Item(real):  # type: ignore[misc, valid-type]
            __slots__ = ()

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                outer.built += 1
                super().__init__(*args, **kwargs)

        monkeypatch.setattr(contents_module, "_Item", Item)


@pytest.mark.parametrize("how", ["run_config", "strategy"])
async def test_25_4_fresh_replica_decodes_only_the_tail(
    backend: Backend, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = await _fill(backend.make())
    model = ScriptedModel(["the answer"])
    never = CompactionConfig(token_threshold=10**9, retention_events=RETAINED)
    strategies = [Summarizing(never)] if how == "strategy" else []
    agent = Agent(name=AGENT, model=model, context_strategies=strategies)
    config = RunConfig(compaction=never) if how == "run_config" else None
    # A store instance that never saw the session (in memory: the one store, whose contents
    # views were never built: filling it built none).
    replica = backend.make()
    runner = Runner(agent=agent, app_name=APP, session_service=replica)
    items = _Counted(monkeypatch)
    decoded = decoded_records()
    async for _ in runner.run_async(
        user_id=USER, session_id=SID, new_message="one more", run_config=config
    ):
        pass
    read = decoded_records() - decoded
    # The summary, the records it retains, the ones after it and what the runner looks at
    # (the newest): never the records the summary replaced.
    if backend.durable:
        assert 0 < read <= 1 + RETAINED + 2, read
    else:
        assert read == 0  # nothing to decode in memory
    assert items.built <= 1 + RETAINED + 2 + 1, items.built
    texts = [p.text for c in model.requests[0].contents for p in c.parts]
    retained = [f"m{i}" for i in range(STORED - RETAINED, STORED)]
    assert texts == [SUMMARY, *retained, f"m{STORED + 1}", f"m{STORED + 2}", "one more"]
    # The whole history is still there for whoever reads the session, on this replica too.
    again = await replica.get_session(app_name=APP, user_id=USER, session_id=SID)
    assert again is not None
    assert [e.id for e in again.events][: len(ids)] == ids
    assert [e.text for e in again.events][-2:] == ["one more", "the answer"]
    assert [e.text for e in again.events][:3] == ["m0", "m1", "m2"]


async def test_25_4_a_summary_made_on_a_fresh_replica_reads_only_the_tail(
    backend: Backend,
) -> None:
    """K1 on a replica that never saw the session: the new summary rolls the stored one and
    what followed it, without reading what that one replaced."""
    await _fill(backend.make())
    summarizer = ScriptedModel(["NEW SUMMARY"], name="summarizer")
    config = CompactionConfig(token_threshold=1, retention_events=1, summarizer=summarizer)
    model = ScriptedModel(["the answer"])
    replica = backend.make()
    runner = Runner(agent=Agent(name=AGENT, model=model), app_name=APP, session_service=replica)
    decoded = decoded_records()
    async for _ in runner.run_async(
        user_id=USER,
        session_id=SID,
        new_message="one more",
        run_config=RunConfig(compaction=config),
    ):
        pass
    if backend.durable:
        assert decoded_records() - decoded <= 1 + RETAINED + 2
    transcript = summarizer.requests[0].contents[0].text
    assert transcript.startswith(f"[earlier summary] {SUMMARY}\n")
    assert "[user] m0\n" not in transcript
    assert f"[user] m{STORED - RETAINED - 2}" not in transcript
    assert f"[user] m{STORED - RETAINED}" in transcript
    texts = [p.text for c in model.requests[0].contents for p in c.parts]
    assert texts == [f"{SUMMARY_PREFIX}NEW SUMMARY", "one more"]


@pytest.mark.parametrize("window", ["turns", "tokens"])
async def test_25_4_a_window_alone_decodes_only_the_newest_records(
    backend: Backend, window: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `SlidingWindow` alone (no compaction, no summary stored): the first request on a
    replica that never saw the session decodes the newest records the window needs, read in
    one go (64 here), and the session's first record — not the whole history; the model sees
    exactly what the window keeps of the whole history; the session API still gives it all."""
    session = await backend.make().create_session(app_name=APP, user_id=USER, session_id=SID)
    filler = backend.make()
    for event in _texts(0, STORED):
        await filler.append_event(session, event)
    model = ScriptedModel(["the answer"])
    # Three turns: by count, or by tokens (each turn here is two short texts, ~3 tokens).
    strategy = SlidingWindow(3) if window == "turns" else SlidingWindow(max_tokens=9)
    agent = Agent(name=AGENT, model=model, context_strategies=[strategy])
    replica = backend.make()
    runner = Runner(agent=agent, app_name=APP, session_service=replica)
    items = _Counted(monkeypatch)
    decoded = decoded_records()
    async for _ in runner.run_async(user_id=USER, session_id=SID, new_message="one more"):
        pass
    read = decoded_records() - decoded
    print("DECODED", backend.name, window, read)
    if backend.durable:
        assert 0 < read <= 64 + 1 + 2, read
    else:
        assert read == 0
    assert items.built == 0  # text records: the view holds their contents as they are
    # Exactly what the window keeps of the whole history (the turns-window: the newest three).
    history = [
        Content.user(f"m{i}") if i % 2 == 0 else Content.model(f"m{i}") for i in range(STORED)
    ]
    ctx: Any = SimpleNamespace(session=SimpleNamespace(events=EventsView(EventLog([]))))
    kept = strategy.view([*history, Content.user("one more")], ctx)
    assert model.requests[0].contents == kept
    if window == "turns":
        assert [c.text for c in kept] == ["m196", "m197", "m198", "m199", "one more"]
    assert len(kept) < 20
    # The whole history is still there for whoever reads the session, on this replica too.
    whole = await replica.get_session(app_name=APP, user_id=USER, session_id=SID)
    assert whole is not None
    assert [e.text for e in whole.events][:3] == ["m0", "m1", "m2"]
    assert [e.text for e in whole.events][-2:] == ["one more", "the answer"]
    assert len(whole.events) == STORED + 2
