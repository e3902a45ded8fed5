"""Issue 25.5: a run's records are encoded once for its SSE frames and the session read
back (`rondo.server.encoded`), byte for byte what the projection writes."""

from __future__ import annotations

from rondo.events import Event, EventActions
from rondo.server import encoded
from rondo.server.encoded import event_bytes, session_bytes
from rondo.server.frames import adk_payloads
from rondo.server.streams import dumps
from rondo.server.wire import event_json, session_json
from rondo.sessions.memory import InMemorySessionService
from rondo.types import Blob, Content, FunctionCall, FunctionResponse, Part


def _events() -> list[Event]:
    call = Part(function_call=FunctionCall(name="remember", args={"note": "é \u2028 x"}, id="c1"))
    answer = Part(function_response=FunctionResponse(name="remember", response={"ok": [1, 2]}))
    return [
        Event(author="user", content=Content(role="user", parts=[Part(text='note ✓ "q"')])),
        Event(author="chat", content=Content(role="model", parts=[call])),
        Event(
            author="chat",
            content=Content(role="user", parts=[answer]),
            actions=EventActions(state_delta={"seen": {"n": 1.5, "s": "ü"}}),
        ),
        Event(  # content with an artifact: two SSE frames
            author="chat",
            content=Content(role="model", parts=[Part(text="saved")]),
            actions=EventActions(artifact_delta={"a.txt": 0}),
        ),
        Event(  # larger than the memo keeps
            author="chat",
            content=Content(
                role="model",
                parts=[Part(inline_data=Blob(mime_type="image/png", data=b"\x00" * 9000))],
            ),
        ),
        Event(author="chat", content=Content(role="model", parts=[Part(text="done")])),
    ]


async def test_25_5_a_session_read_is_byte_for_byte_the_projection() -> None:
    service = InMemorySessionService()
    session = await service.create_session(
        app_name="chat",
        user_id="u",
        # `"events":[]` inside the state too: the events are spliced into the session's own.
        state={"k": "v", "events": [], "nested": {"list": [1, None, "ß"]}},
    )
    assert session_bytes(session) == dumps(session_json(session))
    for event in _events():
        current = await service.get_session(app_name="chat", user_id="u", session_id=session.id)
        assert current is not None
        await service.append_event(current, event)
    read = await service.get_session(app_name="chat", user_id="u", session_id=session.id)
    assert read is not None
    assert len(read.events) == 6
    expected = dumps(session_json(read))
    assert session_bytes(read) == expected  # encoded now
    assert session_bytes(read) == expected  # and from the memo


def test_25_5_an_events_frames_are_its_projection() -> None:
    for event in _events():
        payloads = adk_payloads(event)
        if event.actions.artifact_delta:
            assert len(payloads) == 2
        else:
            assert payloads == [dumps(event_json(event))]
            assert event_bytes(event) is payloads[0] or len(payloads[0]) > 8192


def test_25_5_the_memo_answers_a_record_with_its_own_encoding() -> None:
    event = _events()[-1]
    first = event_bytes(event)
    assert event_bytes(event) is first
    # Same id, other content: another record, its own JSON.
    other = event.model_copy(update={"author": "someone-else"})
    assert other.id == event.id
    assert b"someone-else" in event_bytes(other)
    assert event_bytes(event) is first


def test_25_5_the_memo_is_bounded_and_keeps_no_large_or_partial_record() -> None:
    big = _events()[4]
    event_bytes(big)
    assert all(entry[0] is not big for entry in encoded._memo.values())  # pyright: ignore[reportPrivateUsage]
    partial = Event(
        author="chat", partial=True, content=Content(role="model", parts=[Part(text="d")])
    )
    event_bytes(partial)
    assert all(entry[0] is not partial for entry in encoded._memo.values())  # pyright: ignore[reportPrivateUsage]
    many = [
        Event(author="chat", content=Content(role="model", parts=[Part(text=str(n))]))
        for n in range(encoded._ENTRIES + 50)  # pyright: ignore[reportPrivateUsage]
    ]
    for event in many:
        event_bytes(event)
    assert len(encoded._memo) == encoded._ENTRIES  # pyright: ignore[reportPrivateUsage]
    held = {id(entry[0]) for entry in encoded._memo.values()}  # pyright: ignore[reportPrivateUsage]
    assert id(many[-1]) in held
    assert id(many[0]) not in held  # the oldest went first
