"""SPEC G: guarantees the core keeps beyond the seeds."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from rondo import (
    Agent,
    Blob,
    Content,
    Event,
    EventActions,
    FunctionCall,
    FunctionResponse,
    Part,
    Runner,
    ToolContext,
)
from rondo.events import EventCompaction, PendingCall, ToolConfirmation
from rondo.models import ModelResponse, Usage
from rondo.testing import ScriptedModel
from tests.conformance._support import APP, collect, stored

# -- G1: records are immutable ------------------------------------------------------------------

RECORDS: list[tuple[BaseModel, str, Any]] = [
    (Event(author="a"), "author", "b"),
    (EventActions(), "escalate", True),
    (Content.user("hi"), "role", "model"),
    (Part(text="x"), "text", "y"),
    (FunctionCall(name="f"), "id", "1"),
    (FunctionResponse(name="f"), "response", {"ok": 1}),
    (Blob(mime_type="a/b", data=b""), "data", b"x"),
    (Usage(), "input_tokens", 3),
    (ModelResponse(), "partial", True),
    (ToolConfirmation(), "confirmed", True),
    (PendingCall(call_id="c", tool_name="t"), "call_id", "d"),
    (
        EventCompaction(start_timestamp=0, end_timestamp=1, compacted_content=Content.user("s")),
        "end_timestamp",
        2.0,
    ),
]


@pytest.mark.parametrize(("record", "field", "value"), RECORDS, ids=lambda v: type(v).__name__)
def test_g1_records_are_frozen(record: BaseModel, field: str, value: Any) -> None:
    with pytest.raises(ValidationError, match="frozen"):
        setattr(record, field, value)
    changed = record.model_copy(update={field: value})
    assert getattr(changed, field) == value
    assert getattr(record, field) != value


def test_g1_long_running_ids_are_a_frozenset() -> None:
    event = Event(author="a", long_running_tool_ids={"x"})  # pyright: ignore[reportArgumentType]
    assert event.long_running_tool_ids == frozenset({"x"})
    assert Event.model_validate_json(event.model_dump_json()) == event


async def test_g1_output_key_and_client_ids_build_new_records() -> None:
    """The loop's own two edits (output_key saved into an event; client call ids assigned to
    a response) make new records: the scripted responses stay as they were."""
    call_response = ModelResponse(
        content=Content(role="model", parts=[Part(function_call=FunctionCall(name="note"))])
    )
    answer = ModelResponse(content=Content.model("done"))

    def note(tool_context: ToolContext) -> str:
        tool_context.actions.skip_summarization = False  # the mutable draft, not the record
        return "ok"

    agent = Agent(
        name="a", model=ScriptedModel([call_response, answer]), tools=[note], output_key="out"
    )
    runner = Runner(agent=agent, app_name=APP)
    events = await collect(runner)
    assert call_response.content is not None
    assert call_response.content.parts[0].function_call is not None
    assert call_response.content.parts[0].function_call.id is None
    assert events[0].get_function_calls()[0].id
    assert answer.content == Content.model("done")
    assert events[-1].actions.state_delta == {"out": "done"}
    session = await stored(runner)
    assert session.state["out"] == "done"
    assert session.events[-1] == events[-1]
