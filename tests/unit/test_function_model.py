"""`rondo.testing.FunctionModel`: every answer a function of the request, never running out
(the examples' offline model)."""

from __future__ import annotations

from rondo import Agent, FunctionCall, Runner
from rondo.lifecycle import ReasonDelta, RunEnd
from rondo.models import ModelRequest
from rondo.run_config import RunConfig
from rondo.testing import FunctionModel


def _echo(request: ModelRequest) -> str | FunctionCall:
    last = request.contents[-1]
    if any(p.function_response for p in last.parts):
        return "the tool said ok"
    if last.text == "tool":
        return FunctionCall(name="ok", args={})
    return f"you said {last.text}"


def ok() -> dict[str, str]:
    """Says ok."""
    return {"status": "ok"}


async def test_a_function_model_answers_for_ever_and_keeps_one_request() -> None:
    model = FunctionModel(_echo)
    agent = Agent(name="a", model=model, tools=[ok])
    for i in range(30):  # far past any script: it never runs out
        result = await agent.run(f"hello {i}")
        assert result.output == f"you said hello {i}"
    assert model.calls == 30
    assert len(model.requests) == 1
    assert model.requests[0].contents[-1].text == "hello 29"
    assert (await agent.run("tool")).output == "the tool said ok"


async def test_a_function_model_streams_text_word_by_word() -> None:
    runner = Runner(agent=Agent(name="a", model=FunctionModel(_echo)))
    events = [
        e
        async for e in runner.stream_async(
            user_id="u",
            session_id="s",
            new_message="three small words",
            run_config=RunConfig(streaming_mode="sse"),
        )
    ]
    deltas = [e.text for e in events if isinstance(e, ReasonDelta) and e.kind == "text_delta"]
    assert deltas == ["you", " said", " three", " small", " words"]
    assert isinstance(events[-1], RunEnd)
    assert events[-1].text == "you said three small words"


async def test_an_async_respond_function_is_awaited() -> None:
    async def respond(request: ModelRequest) -> str:
        return "async " + request.contents[-1].text

    assert (await Agent(name="a", model=FunctionModel(respond)).run("hi")).output == "async hi"
