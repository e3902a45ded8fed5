"""SPEC A — streaming (A1–A3)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import pytest

from rondo import Agent, Content, Event, FunctionCall, Part, RunConfig, Runner, Usage
from rondo.lifecycle import ReasonDelta, ReasonEnd
from rondo.models import ModelRequest, ModelResponse
from rondo.models.aggregator import StreamAggregator
from rondo.testing import ScriptedModel, check_stream
from rondo.types import PartialArg

from ._support import APP, SESSION, USER, StreamModel, chunk, collect, lifecycle, run_end, stored

SSE = RunConfig(streaming_mode="sse")


def _adapter(
    raw_chunks: list[ModelResponse], log: list[str] | None = None, fail: Exception | None = None
):
    """A model adapter in the shape the SPEC asks for: every provider chunk goes through the
    library's aggregator and is yielded at once; the aggregate comes at the normal end only."""

    async def generate(request: ModelRequest, stream: bool) -> AsyncIterator[ModelResponse]:
        aggregator = StreamAggregator()
        for index, raw in enumerate(raw_chunks):
            if log is not None:
                log.append(f"produce {index}")
            yield aggregator.add(raw)
        if fail is not None:
            raise fail
        final = aggregator.close()
        if final is not None:
            yield final

    return generate


# -- A1 --------------------------------------------------------------------------------------


async def test_a1_partials_reach_the_consumer_immediately_then_one_final_aggregate():
    log: list[str] = []
    raw = [
        ModelResponse(content=Content.model("Hang")),
        ModelResponse(content=Content.model("zhou is ")),
        ModelResponse(content=Content.model("26°C")),
    ]
    runner = Runner(agent=Agent(name="helper", model=StreamModel(_adapter(raw, log))), app_name=APP)
    events: list[Event] = []
    async with aclosing(
        runner.run_async(user_id=USER, session_id=SESSION, new_message="weather?", run_config=SSE)
    ) as stream:
        async for event in stream:
            log.append(f"consume {event.text!r} partial={event.partial}")
            events.append(event)
    # Each delta reaches the consumer before the next chunk is even produced.
    assert log == [
        "produce 0",
        "consume 'Hang' partial=True",
        "produce 1",
        "consume 'zhou is ' partial=True",
        "produce 2",
        "consume '26°C' partial=True",
        "consume 'Hangzhou is 26°C' partial=False",
    ]
    assert [e.partial for e in events] == [True, True, True, False]
    assert events[-1].content is not None
    assert len(events[-1].content.parts) == 1


def test_a1_text_and_thought_are_never_merged_into_one_part():
    aggregator = StreamAggregator()
    for text, is_thought in [
        ("plan A", True),
        (" then B", True),
        ("Answer", False),
        (" is 4", False),
        ("double-check", True),
    ]:
        out = aggregator.add(
            ModelResponse(
                content=Content(role="model", parts=[Part(text=text, thought=is_thought)])
            )
        )
        assert out.partial is True
        assert out.content is not None
        assert out.content.parts[0].text == text
    final = aggregator.close()
    assert final is not None
    assert final.partial is False
    assert final.content is not None
    assert [(p.text, p.thought) for p in final.content.parts] == [
        ("plan A then B", True),
        ("Answer is 4", False),
        ("double-check", True),
    ]


def test_a1_function_call_args_streamed_as_json_path_fragments_are_assembled():
    aggregator = StreamAggregator()
    fragments = [
        FunctionCall(
            name="get_weather",
            id="w1",
            partial_args=[PartialArg(json_path="$.location.city", value="To")],
            will_continue=True,
        ),
        FunctionCall(
            name="get_weather",
            id="w1",
            partial_args=[
                PartialArg(json_path="$.location.city", value="kyo"),
                PartialArg(json_path="$.days", value=3),
            ],
            will_continue=True,
        ),
        FunctionCall(
            name="get_weather",
            id="w1",
            partial_args=[PartialArg(json_path="$.units", value="c")],
            will_continue=False,
        ),
    ]
    for fragment in fragments:
        aggregator.add(
            ModelResponse(content=Content(role="model", parts=[Part(function_call=fragment)]))
        )
    final = aggregator.close()
    assert final is not None
    assert final.content is not None
    [part] = final.content.parts
    assert part.function_call is not None
    assert (part.function_call.name, part.function_call.id, part.function_call.args) == (
        "get_weather",
        "w1",
        {"location": {"city": "Tokyo"}, "days": 3, "units": "c"},
    )
    assert part.function_call.partial_args is None


@pytest.mark.parametrize("closed_by", ["last_fragment", "close"])
def test_a1_a_call_assembled_from_fragments_keeps_its_thought_signature(closed_by: str) -> None:
    aggregator = StreamAggregator()
    first = FunctionCall(
        name="plan",
        id="p1",
        partial_args=[PartialArg(json_path="$.step", value="on")],
        will_continue=True,
    )
    last = FunctionCall(
        name="plan",
        id="p1",
        partial_args=[PartialArg(json_path="$.step", value="e")],
        will_continue=closed_by == "close",
    )
    aggregator.add(
        ModelResponse(
            content=Content(
                role="model", parts=[Part(function_call=first, thought_signature=b"sig")]
            )
        )
    )
    aggregator.add(ModelResponse(content=Content(role="model", parts=[Part(function_call=last)])))
    final = aggregator.close()
    assert final is not None
    assert final.content is not None
    [part] = final.content.parts
    assert part.thought_signature == b"sig"
    assert part.function_call is not None
    assert part.function_call.args == {"step": "one"}


async def test_a1_a_streamed_call_is_dispatched_with_the_assembled_args():
    seen: list[Any] = []

    def get_weather(location: dict[str, str], days: int) -> dict[str, Any]:
        seen.append((location, days))
        return {"temperature": 18}

    stream = [
        ModelResponse(
            content=Content(
                role="model",
                parts=[
                    Part(
                        function_call=FunctionCall(
                            name="get_weather",
                            partial_args=[PartialArg(json_path="$.location.city", value="Pa")],
                            will_continue=True,
                        )
                    )
                ],
            ),
            partial=True,
        ),
        ModelResponse(
            content=Content(
                role="model",
                parts=[
                    Part(
                        function_call=FunctionCall(
                            name="",
                            partial_args=[
                                PartialArg(json_path="$.location.city", value="ris"),
                                PartialArg(json_path="$.days", value=2),
                            ],
                            will_continue=False,
                        )
                    )
                ],
            ),
            partial=True,
        ),
    ]
    model = ScriptedModel([stream, "18 in Paris"])
    agent = Agent(name="helper", model=model, tools=[get_weather])
    events = await collect(Runner(agent=agent, app_name=APP), "go", run_config=SSE)
    assert seen == [({"city": "Paris"}, 2)]
    final_calls = [e for e in events if not e.partial and e.get_function_calls()]
    assert [c.args for c in final_calls[0].get_function_calls()] == [
        {"location": {"city": "Paris"}, "days": 2}
    ]


def test_a1_usage_grounding_citation_and_finish_reason_are_flushed_at_close():
    aggregator = StreamAggregator()
    aggregator.add(
        ModelResponse(
            content=Content.model("Paris "),
            usage=Usage(input_tokens=5, output_tokens=1, total_tokens=6),
        )
    )
    aggregator.add(
        ModelResponse(
            content=Content.model("is sunny"),
            usage=Usage(input_tokens=5, output_tokens=4, total_tokens=9),
            grounding_metadata={"sources": ["meteo.example"]},
            citation_metadata={"citations": [{"start": 0, "end": 5}]},
            finish_reason="STOP",
        )
    )
    final = aggregator.close()
    assert final is not None
    assert final.partial is False
    assert final.content == Content.model("Paris is sunny")
    assert final.usage == Usage(input_tokens=5, output_tokens=4, total_tokens=9)
    assert final.finish_reason == "STOP"
    assert final.grounding_metadata == {"sources": ["meteo.example"]}
    assert final.citation_metadata == {"citations": [{"start": 0, "end": 5}]}
    # Nothing streamed, nothing to aggregate.
    assert StreamAggregator().close() is None


async def test_a1_the_stored_record_carries_usage_and_finish_reason_of_the_aggregate():
    raw = [
        ModelResponse(content=Content.model("a")),
        ModelResponse(
            content=Content.model("b"),
            usage=Usage(input_tokens=3, output_tokens=2, total_tokens=5),
            finish_reason="STOP",
        ),
    ]
    runner = Runner(agent=Agent(name="helper", model=StreamModel(_adapter(raw))), app_name=APP)
    events = await collect(runner, "go", run_config=SSE)
    final = events[-1]
    assert (final.partial, final.text, final.finish_reason) == (False, "ab", "STOP")
    assert final.usage == Usage(input_tokens=3, output_tokens=2, total_tokens=5)
    session = await stored(runner)
    assert session.events[-1].usage == final.usage


# -- A2 --------------------------------------------------------------------------------------


async def test_a2_consumers_tell_deltas_from_the_aggregate_and_only_the_aggregate_is_stored():
    model = ScriptedModel([[chunk("thinking...", thought=True), chunk("It is "), chunk("26°C")]])
    runner = Runner(agent=Agent(name="helper", model=model), app_name=APP)
    events = await collect(runner, "weather?", run_config=SSE)
    assert [(e.partial, e.text) for e in events] == [
        (True, ""),
        (True, "It is "),
        (True, "26°C"),
        (False, "It is 26°C"),
    ]
    assert model.stream_flags == [True]
    session = await stored(runner)
    assert [(e.author, e.partial) for e in session.events] == [("user", False), ("helper", False)]
    assert session.events[-1].id == events[-1].id
    assert session.events[-1].content is not None
    assert [(p.text, p.thought) for p in session.events[-1].content.parts] == [
        ("thinking...", True),
        ("It is 26°C", False),
    ]


async def test_a2_without_sse_only_the_aggregate_is_seen():
    model = ScriptedModel([[chunk("It is "), chunk("26°C")]])
    runner = Runner(agent=Agent(name="helper", model=model), app_name=APP)
    events = await collect(runner, "weather?")
    assert model.stream_flags == [False]
    assert [(e.partial, e.text) for e in events] == [(False, "It is 26°C")]


async def test_a2_lifecycle_deltas_are_distinct_from_the_final_record():
    model = ScriptedModel([[chunk("hm", thought=True), chunk("It is "), chunk("26°C")]])
    runner = Runner(agent=Agent(name="helper", model=model), app_name=APP)
    events = await lifecycle(runner, "weather?")
    deltas = [(e.kind, e.text, e.is_thinking) for e in events if isinstance(e, ReasonDelta)]
    assert deltas == [
        ("thinking_start", "", True),
        ("thinking_delta", "hm", True),
        ("thinking_end", "", True),
        ("text_start", "", False),
        ("text_delta", "It is ", False),
        ("text_delta", "26°C", False),
        ("text_end", "", False),
    ]
    [reason_end] = [e for e in events if isinstance(e, ReasonEnd)]
    assert reason_end.event.partial is False
    assert reason_end.event.text == "It is 26°C"
    assert run_end(events).text == "It is 26°C"


# -- A3 --------------------------------------------------------------------------------------


async def test_a3_a_stream_that_errors_produces_no_final_aggregate():
    raw = [
        ModelResponse(content=Content.model("It is ")),
        ModelResponse(content=Content.model("2")),
    ]
    model = StreamModel(_adapter(raw, fail=ConnectionResetError("stream cut")))
    runner = Runner(agent=Agent(name="helper", model=model), app_name=APP)
    got: list[Event] = []

    async def drain() -> None:
        async with aclosing(
            runner.run_async(user_id=USER, session_id=SESSION, new_message="go", run_config=SSE)
        ) as stream:
            async for event in stream:
                got.append(event)

    with pytest.raises(ConnectionResetError, match="stream cut"):
        await drain()
    # The partials, then no aggregate of them: only the record of the failure (issue 23).
    assert [(e.partial, e.text) for e in got[:-1]] == [(True, "It is "), (True, "2")]
    assert (got[-1].text, got[-1].error_code) == ("", "ConnectionResetError")
    session = await stored(runner)
    assert [(e.author, e.text, e.error_code) for e in session.events] == [
        ("user", "go", None),
        ("helper", "", "ConnectionResetError"),
    ]
    assert len(model.requests) == 1


async def test_a3_a_failed_stream_has_no_final_aggregate_in_the_lifecycle_view_either():
    raw = [ModelResponse(content=Content.model("It is "))]
    model = StreamModel(_adapter(raw, fail=ConnectionResetError("stream cut")))
    runner = Runner(agent=Agent(name="helper", model=model), app_name=APP)
    collected: list[Any] = []

    async def drain() -> None:
        async with aclosing(
            runner.stream_async(user_id=USER, session_id=SESSION, new_message="go")
        ) as stream:
            async for event in stream:
                collected.append(event)

    with pytest.raises(ConnectionResetError):
        await drain()
    check_stream(collected, completed=False)
    assert not any(isinstance(e, ReasonEnd) for e in collected)
    assert [e.type for e in collected][:3] == ["run_start", "context_size", "reason_start"]
