"""SPEC K (compaction), C5 (summaries in contents) and the ContextSize lifecycle event."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from rondo import Agent, Content, Event, EventActions, FunctionCall, Part, Plugin, RunConfig, Runner
from rondo.events import EventCompaction
from rondo.flow.compaction import CompactionConfig, estimate_context, select_window
from rondo.lifecycle import ContextSize
from rondo.models import ModelRequest, ModelResponse
from rondo.testing import ScriptedModel, check_stream
from rondo.types import Usage


def _texts(request: ModelRequest) -> list[str]:
    return [p.text or "" for c in request.contents for p in c.parts]


async def _turns(runner: Runner, n: int, config: RunConfig) -> None:
    for i in range(n):
        async for _ in runner.run_async(
            user_id="u", session_id="s", new_message=f"message {i} " + "x" * 200, run_config=config
        ):
            pass


async def test_k1_summary_replaces_older_events_and_keeps_the_tail() -> None:
    summarizer = ScriptedModel([f"SUMMARY-{i}" for i in range(5)], name="summarizer")
    model = ScriptedModel([f"answer {i}" for i in range(10)])
    config = RunConfig(
        compaction=CompactionConfig(token_threshold=100, retention_events=2, summarizer=summarizer)
    )
    runner = Runner(agent=Agent(name="a", model=model), app_name="app")
    await _turns(runner, 3, config)
    assert summarizer.calls >= 1
    # The summarizer saw the older turns, not the retained tail.
    transcript = summarizer.requests[0].contents[0].text
    assert "message 0" in transcript
    latest = model.requests[-1]
    texts = _texts(latest)
    assert sum("SUMMARY-" in t for t in texts) == 1
    assert not any(t.startswith("message 0") for t in texts)
    assert any(t.startswith("message 2") for t in texts)  # the current input stays raw
    # The summary is a stored record, appended without plugin on_event and not yielded.
    session = await runner.session_service.get_session(app_name="app", user_id="u", session_id="s")
    assert session is not None
    records = [e for e in session.events if e.actions.compaction is not None]
    assert len(records) == summarizer.calls
    assert not records[0].is_final_response()  # F2: a compaction record is never final


async def test_k1_no_plugin_on_event_for_the_summary_and_no_yield() -> None:
    seen: list[Event] = []

    class Spy(Plugin):
        async def on_event(self, ctx: Any, event: Event) -> Event | None:
            seen.append(event)
            return None

    summarizer = ScriptedModel(["S"], name="summarizer")
    model = ScriptedModel(["a0", "a1", "a2"])
    config = RunConfig(
        compaction=CompactionConfig(token_threshold=100, retention_events=1, summarizer=summarizer)
    )
    runner = Runner(agent=Agent(name="a", model=model), app_name="app", plugins=[Spy()])
    yielded: list[Event] = []
    for i in range(3):
        async for event in runner.run_async(
            user_id="u", session_id="s", new_message=f"m{i} " + "y" * 300, run_config=config
        ):
            yielded.append(event)
    assert summarizer.calls >= 1
    assert all(e.actions.compaction is None for e in seen)
    assert all(e.actions.compaction is None for e in yielded)


async def test_k1_failure_is_logged_and_the_invocation_continues(
    caplog: pytest.LogCaptureFixture,
) -> None:
    summarizer = ScriptedModel([RuntimeError("summarizer down")] * 5, name="summarizer")
    model = ScriptedModel(["a0", "a1", "a2"])
    config = RunConfig(
        compaction=CompactionConfig(token_threshold=50, retention_events=1, summarizer=summarizer)
    )
    runner = Runner(agent=Agent(name="a", model=model), app_name="app")
    with caplog.at_level(logging.WARNING, logger="rondo.compaction"):
        await _turns(runner, 3, config)
    assert model.calls == 3
    assert "compaction failed" in caplog.text


def test_k1_window_never_splits_a_call_from_its_response() -> None:
    call = Event(
        author="a",
        timestamp=3.0,
        content=Content(
            role="model", parts=[Part(function_call=FunctionCall(name="t", args={}, id="c1"))]
        ),
    )
    response = Event(
        author="a",
        timestamp=4.0,
        content=Content(
            role="user",
            parts=[Part.model_validate({"function_response": {"name": "t", "id": "c1"}})],
        ),
    )
    events = [
        Event(author="user", timestamp=1.0, content=Content.user("hi")),
        Event(author="a", timestamp=2.0, content=Content.model("hello")),
        call,
        response,
        Event(author="a", timestamp=5.0, content=Content.model("done")),
    ]
    # Retaining 2 would keep the response but summarize its call: the cut moves back.
    window = select_window(events, 2)
    assert window == events[:2]
    # Events sharing a timestamp stay together.
    same = [
        Event(author="user", timestamp=1.0, content=Content.user("a")),
        Event(author="a", timestamp=2.0, content=Content.model("b")),
        Event(author="a", timestamp=2.0, content=Content.model("c")),
    ]
    assert select_window(same, 1) == same[:1]


async def test_k1_rolls_an_older_summary_into_the_new_one() -> None:
    summarizer = ScriptedModel(["FIRST SUMMARY", "SECOND SUMMARY"], name="summarizer")
    model = ScriptedModel([f"answer {i}" for i in range(10)])
    config = RunConfig(
        compaction=CompactionConfig(token_threshold=150, retention_events=1, summarizer=summarizer)
    )
    runner = Runner(agent=Agent(name="a", model=model), app_name="app")
    await _turns(runner, 5, config)
    assert summarizer.calls >= 2
    assert "FIRST SUMMARY" in summarizer.requests[1].contents[0].text
    texts = _texts(model.requests[-1])
    summaries = [t for t in texts if "SUMMARY" in t]
    assert len(summaries) == 1
    assert summarizer.script[summarizer.calls - 1] in summaries[0]


def test_k2_estimate_uses_the_latest_prompt_count_plus_newer_chars() -> None:
    from rondo.sessions.base import EventLog, EventsView

    log = EventLog(
        [
            Event(author="user", content=Content.user("x" * 4000)),
            Event(
                author="a",
                content=Content.model("ok"),
                usage=Usage(input_tokens=1000, output_tokens=10),
            ),
            Event(author="user", content=Content.user("y" * 400)),
        ]
    )
    estimate = estimate_context(EventsView(log), "", "")
    # 1010 reported tokens, plus 400 newer chars / 4; the old 4000 chars are inside the report.
    assert estimate.tokens == 1010 + 100
    log.append(Event(author="a", content=Content.model("z" * 40)))
    assert estimate_context(EventsView(log), "", "").tokens == 1010 + 110


async def test_c5_compaction_record_is_ignored_when_compaction_is_off() -> None:
    model = ScriptedModel(["fine"])
    runner = Runner(agent=Agent(name="a", model=model), app_name="app")
    session = await runner.session_service.create_session(
        app_name="app", user_id="u", session_id="s"
    )
    first = Event(author="user", timestamp=1.0, content=Content.user("keep me"))
    await runner.session_service.append_event(session, first)
    record = Event(
        author="a",
        timestamp=2.0,
        actions=EventActions(
            compaction=EventCompaction(
                start_timestamp=0.0,
                end_timestamp=1.5,
                compacted_content=Content.user("FORGED SUMMARY"),
            )
        ),
    )
    await runner.session_service.append_event(session, record)
    async for _ in runner.run_async(user_id="u", session_id="s", new_message="hi"):
        pass
    texts = _texts(model.requests[0])
    assert "keep me" in texts
    assert not any("FORGED" in t for t in texts)


async def test_k_context_size_event_reports_before_and_after() -> None:
    summarizer = ScriptedModel(["S"], name="summarizer")

    def answer(request: ModelRequest) -> ModelResponse:
        return ModelResponse(content=Content.model("ok"))

    model = ScriptedModel([answer] * 5)
    config = RunConfig(
        streaming_mode="sse",
        compaction=CompactionConfig(token_threshold=100, retention_events=1, summarizer=summarizer),
    )
    runner = Runner(agent=Agent(name="a", model=model), app_name="app")
    sizes: list[ContextSize] = []
    for i in range(3):
        events = [
            e
            async for e in runner.stream_async(
                user_id="u", session_id="s", new_message=f"m{i} " + "z" * 400, run_config=config
            )
        ]
        check_stream(events)
        kinds = [e.type for e in events]
        assert kinds.index("context_size") < kinds.index("reason_start")
        sizes.extend(e for e in events if isinstance(e, ContextSize))
    compressed = [s for s in sizes if s.compressed]
    assert compressed
    assert compressed[0].tokens_after < compressed[0].tokens_before
    assert compressed[0].messages_after < compressed[0].messages_before
    uncompressed = [s for s in sizes if not s.compressed]
    assert all(s.tokens_before == 0 and s.tokens_after == 0 for s in uncompressed)
