"""Issue 25.5: the cheaper pieces of a run's answers are the same as what they replace."""

from __future__ import annotations

import uuid

from starlette.responses import Response

from rondo.server.adk_routes import _json  # pyright: ignore[reportPrivateUsage]
from rondo.sessions.memory import _new_id  # pyright: ignore[reportPrivateUsage]


def test_25_5_a_new_session_id_is_a_uuid4_in_hex() -> None:
    ids = {_new_id() for _ in range(2_000)}
    assert len(ids) == 2_000
    for value in list(ids)[:200]:
        parsed = uuid.UUID(hex=value)
        assert parsed.hex == value
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122


def test_25_5_a_json_answer_has_starlettes_headers() -> None:
    body = b'{"id":"s"}'
    plain = Response(body, media_type="application/json")
    assert _json({"id": "s"}).raw_headers == plain.raw_headers
    tagged = Response(body, media_type="application/json")
    tagged.headers["ETag"] = '"3"'
    answer = _json({"id": "s"}, '"3"')
    assert answer.raw_headers == tagged.raw_headers
    assert answer.body == body
    assert answer.status_code == 200
    assert answer.headers["etag"] == '"3"'


async def test_25_5_the_body_timer_times_out_and_lets_other_cancellations_through() -> None:
    import asyncio

    import pytest

    from rondo.server.limits import BodyTimeoutError, _within  # pyright: ignore[reportPrivateUsage]

    async def never() -> dict[str, object]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def at_once() -> dict[str, object]:
        return {"type": "http.request", "body": b"{}"}

    assert await _within(5, at_once) == {"type": "http.request", "body": b"{}"}
    with pytest.raises(BodyTimeoutError):
        await _within(0.02, never)
    waiting = asyncio.ensure_future(_within(5, never))
    await asyncio.sleep(0.01)
    waiting.cancel()  # the server stops: a cancellation, not a timeout
    with pytest.raises(asyncio.CancelledError):
        await waiting
    current = asyncio.current_task()
    assert current is not None
    assert current.cancelling() == 0


def test_25_5_the_projection_holds_plain_dicts_only() -> None:
    """pydantic-core writes a dict subclass (a record's read-only maps) ~1 µs slower than a
    dict: the ADK projection hands it plain ones, down to the call's arguments."""
    from rondo.events import Event, EventActions
    from rondo.server.wire import event_json
    from rondo.types import Content, FunctionCall, FunctionResponse, Part

    call = Part(function_call=FunctionCall(name="remember", args={"note": "x"}, id="c1"))
    answer = Part(function_response=FunctionResponse(name="remember", response={"ok": 1}))
    event = Event(
        author="chat",
        content=Content(role="model", parts=[call, answer]),
        actions=EventActions(state_delta={"k": 1}, artifact_delta={"a": 0}),
        custom_metadata={"m": 1},
    )
    seen: list[type] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            seen.append(type(value))  # pyright: ignore[reportUnknownArgumentType]
            for item in value.values():  # pyright: ignore[reportUnknownVariableType]
                walk(item)  # pyright: ignore[reportUnknownArgumentType]
        elif isinstance(value, list):
            for item in value:  # pyright: ignore[reportUnknownVariableType]
                walk(item)  # pyright: ignore[reportUnknownArgumentType]

    walk(event_json(event))
    assert len(seen) > 8
    assert set(seen) == {dict}
