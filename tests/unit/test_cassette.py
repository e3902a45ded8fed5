"""Cassette details: what is compared, the mismatch messages, errors, interruptions, files."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rondo import Agent, FunctionCall, RunConfig
from rondo.errors import LlmCallsLimitExceeded, ModelError, ModelRateLimitError
from rondo.models import FunctionDeclaration, GenerateConfig, ModelRequest, ModelResponse
from rondo.testing import (
    CassetteError,
    CassetteMismatchError,
    CassettePlayer,
    CassetteRecorder,
    ScriptedModel,
    record,
    replay,
)
from rondo.testing.cassette import request_record
from rondo.types import Blob, Content, FunctionResponse, Part

WEATHER_TOOL = FunctionDeclaration(
    name="get_weather",
    description="Returns the weather.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def request(
    text: str = "hello",
    *,
    instruction: str | None = "Be brief.",
    tools: list[FunctionDeclaration] | None = None,
    temperature: float | None = None,
    contents: list[Content] | None = None,
) -> ModelRequest:
    return ModelRequest(
        model="scripted",
        contents=contents if contents is not None else [Content.user(text)],
        config=GenerateConfig(
            system_instruction=instruction,
            tools=[WEATHER_TOOL] if tools is None else tools,
            temperature=temperature,
        ),
    )


async def drain(responses: AsyncIterator[ModelResponse]) -> list[ModelResponse]:
    return [r async for r in responses]


async def recorded(
    tmp_path: Path, *requests: ModelRequest, script: list[Any] | None = None
) -> Path:
    path = tmp_path / "c.jsonl"
    model = record(ScriptedModel(script or ["ok"] * len(requests)), path)
    for r in requests:
        await drain(model.generate(r))
    return path


async def mismatch(path: Path, live: ModelRequest, **kwargs: Any) -> str:
    with pytest.raises(CassetteMismatchError) as caught:
        await drain(replay(path, **kwargs).generate(live))
    return str(caught.value).removeprefix(f"{path}: ")


async def test_mismatch_in_the_instruction(tmp_path: Path) -> None:
    path = await recorded(tmp_path, request())
    assert await mismatch(path, request(instruction="Be verbose.")) == (
        "model call 1 differs from exchange 1 of 1 at instruction (from character 3): "
        "recorded 'Be brief.', got 'Be verbose.'"
    )
    assert await mismatch(path, request(instruction=None)) == (
        "model call 1 differs from exchange 1 of 1 at instruction: recorded 'Be brief.', got null"
    )


async def test_mismatch_in_the_tools(tmp_path: Path) -> None:
    path = await recorded(tmp_path, request())
    other = FunctionDeclaration(name="get_time", description="Returns the time.")
    assert await mismatch(path, request(tools=[])) == (
        "model call 1 differs from exchange 1 of 1 at tools: the recorded tool 'get_weather' "
        "is not declared"
    )
    assert await mismatch(path, request(tools=[WEATHER_TOOL, other])) == (
        "model call 1 differs from exchange 1 of 1 at tools: 'get_time' is declared but was "
        "not recorded"
    )
    changed = WEATHER_TOOL.model_copy(
        update={"parameters": {"type": "object", "properties": {"city": {"type": "integer"}}}}
    )
    assert await mismatch(path, request(tools=[changed])) == (
        "model call 1 differs from exchange 1 of 1 at "
        "tools['get_weather'].parameters.properties.city.type (from character 0): "
        "recorded 'string', got 'integer'"
    )


async def test_tool_order_is_not_compared(tmp_path: Path) -> None:
    other = FunctionDeclaration(name="get_time", description="Returns the time.")
    path = await recorded(tmp_path, request(tools=[WEATHER_TOOL, other]))
    assert await drain(replay(path).generate(request(tools=[other, WEATHER_TOOL])))


async def test_mismatch_in_the_config(tmp_path: Path) -> None:
    path = await recorded(tmp_path, request(temperature=0.2))
    assert await mismatch(path, request(temperature=0.7)) == (
        "model call 1 differs from exchange 1 of 1 at config.temperature: recorded 0.2, got 0.7"
    )
    assert await mismatch(path, request()) == (
        "model call 1 differs from exchange 1 of 1 at config.temperature: recorded 0.2, got nothing"
    )


async def test_mismatch_in_the_contents(tmp_path: Path) -> None:
    history = [Content.user("hello"), Content.model("Hi!"), Content.user("weather?")]
    path = await recorded(tmp_path, request(contents=history))
    assert await mismatch(path, request(contents=history[:1])) == (
        "model call 1 differs from exchange 1 of 1 at contents: 1 items, recorded 3; "
        'missing contents[1]: {"role": "model", "parts": [{"text": "Hi!"}]}'
    )
    longer = [*history, Content.model("Sunny.")]
    assert await mismatch(path, request(contents=longer)) == (
        "model call 1 differs from exchange 1 of 1 at contents: 4 items, recorded 3; "
        'new contents[3]: {"role": "model", "parts": [{"text": "Sunny."}]}'
    )
    other_role = [history[0], Content(role="user", parts=[Part(text="Hi!")]), history[2]]
    assert await mismatch(path, request(contents=other_role)) == (
        "model call 1 differs from exchange 1 of 1 at contents[1].role (from character 0): "
        "recorded 'model', got 'user'"
    )


async def test_a_long_text_is_shown_around_its_first_difference(tmp_path: Path) -> None:
    long = "word " * 40
    path = await recorded(tmp_path, request(long + "Paris"))
    assert await mismatch(path, request(long + "Rome")) == (
        "model call 1 differs from exchange 1 of 1 at contents[0].parts[0].text "
        "(from character 200): recorded '…word word word word Paris', got '…word word word word Rome'"
    )


async def test_ignored_fields_are_not_compared(tmp_path: Path) -> None:
    path = await recorded(tmp_path, request())
    assert await drain(replay(path, ignore={"instruction"}).generate(request(instruction="x")))
    with pytest.raises(CassetteError, match="cannot ignore prompt: the fields are model, "):
        replay(path, ignore={"prompt"})


def test_call_ids_are_renumbered_in_order_and_stay_paired() -> None:
    def history(call_id: str) -> list[Content]:
        call = FunctionCall(name="get_weather", args={"city": "Paris"}, id=call_id)
        result = FunctionResponse(name="get_weather", response={"ok": True}, id=call_id)
        return [
            Content.user("weather?"),
            Content(role="model", parts=[Part(function_call=call)]),
            Content(role="user", parts=[Part(function_response=result)]),
        ]

    first = request_record(request(contents=history("call_abc")))
    second = request_record(request(contents=history("toolu_999")))
    assert first == second
    assert first["contents"][1]["parts"][0]["function_call"]["id"] == "call#1"
    assert first["contents"][2]["parts"][0]["function_response"]["id"] == "call#1"


def test_inline_data_in_requests_is_kept_as_a_digest() -> None:
    image = Content(
        role="user", parts=[Part(inline_data=Blob(mime_type="image/png", data=b"PNG1"))]
    )
    kept = request_record(request(contents=[image]))["contents"][0]["parts"][0]["inline_data"]
    assert set(kept) == {"mime_type", "sha256", "base64_size"}
    other = Content(
        role="user", parts=[Part(inline_data=Blob(mime_type="image/png", data=b"PNG2"))]
    )
    assert request_record(request(contents=[other])) != request_record(request(contents=[image]))


async def test_concurrent_calls_may_come_in_another_order(tmp_path: Path) -> None:
    path = await recorded(tmp_path, request("a"), request("b"), script=["for a", "for b"])
    model = replay(path)
    assert (await drain(model.generate(request("b"))))[0].content == Content.model("for b")
    assert (await drain(model.generate(request("a"))))[0].content == Content.model("for a")
    model.check_finished()


async def test_fewer_calls_than_recorded_is_an_error_when_checked(tmp_path: Path) -> None:
    path = await recorded(tmp_path, request("a"), request("b"))
    model = replay(path)
    await drain(model.generate(request("a")))
    with pytest.raises(CassetteMismatchError) as caught:
        model.check_finished()
    assert str(caught.value) == (
        f"{path}: the run made 1 model call but the cassette holds 2; 1 were never asked for"
    )


async def test_errors_are_recorded_and_raised_again(tmp_path: Path) -> None:
    path = tmp_path / "errors.jsonl"
    model = record(ScriptedModel([ModelError("quota exceeded"), RuntimeError("boom")]), path)
    for _ in range(2):
        with pytest.raises(Exception):  # noqa: B017, PT011 - the originals, passed through
            await drain(model.generate(request()))
    replayed = replay(path)
    with pytest.raises(ModelError, match=r"^quota exceeded$"):
        await drain(replayed.generate(request()))
    with pytest.raises(ModelError, match=r"^\(replayed\) RuntimeError: boom$"):
        await drain(replayed.generate(request()))


async def test_provider_failures_keep_their_type_and_details(tmp_path: Path) -> None:
    path = tmp_path / "limited.jsonl"
    limited = ModelRateLimitError("slow down", status_code=429, provider="openai", model="gpt")
    with pytest.raises(ModelRateLimitError):
        await drain(record(ScriptedModel([limited]), path).generate(request()))
    with pytest.raises(ModelRateLimitError) as caught:
        await drain(replay(path).generate(request()))
    replayed = caught.value
    assert (str(replayed), replayed.status_code, replayed.retryable) == ("slow down", 429, True)
    assert (replayed.provider, replayed.model) == ("openai", "gpt")


async def test_rondo_errors_keep_their_type(tmp_path: Path) -> None:
    path = tmp_path / "limit.jsonl"
    with pytest.raises(LlmCallsLimitExceeded):
        await drain(
            record(ScriptedModel([LlmCallsLimitExceeded("too many")]), path).generate(request())
        )
    with pytest.raises(LlmCallsLimitExceeded, match="too many"):
        await drain(replay(path).generate(request()))


async def test_a_stopped_stream_is_recorded_as_interrupted(tmp_path: Path) -> None:
    chunks = [ModelResponse(content=Content.model(t), partial=True) for t in ("Hel", "lo", "!")]
    path = tmp_path / "stopped.jsonl"
    responses = record(ScriptedModel([chunks]), path).generate(request(), stream=True)
    first = await anext(responses)
    assert first.partial
    await responses.aclose()
    (line,) = [json.loads(x) for x in path.read_text().splitlines()[1:]]
    assert line["interrupted"] is True
    assert [r["content"]["parts"][0]["text"] for r in line["responses"]] == ["Hel"]
    assert [
        r.content.text
        for r in await drain(replay(path).generate(request(), stream=True))
        if r.content
    ] == ["Hel"]


async def test_responses_after_the_final_one_continue_the_exchange(tmp_path: Path) -> None:
    class TwoRounds(ScriptedModel):
        async def generate(self, request: ModelRequest, *, stream: bool = False) -> Any:
            yield ModelResponse(content=Content.model("one"))
            yield ModelResponse(content=Content.model("two"))

    path = tmp_path / "rounds.jsonl"
    await drain(record(TwoRounds(), path).generate(request()))
    _, first, more = (json.loads(x) for x in path.read_text().splitlines())
    assert (first["exchange"], more["exchange"], more["continued"]) == (0, 0, True)
    texts = [r.content.text for r in await drain(replay(path).generate(request())) if r.content]
    assert texts == ["one", "two"]


async def test_a_recording_starts_afresh_unless_appending(tmp_path: Path) -> None:
    path = await recorded(tmp_path, request("a"), request("b"))
    again = record(ScriptedModel(["ok"]), path, append=True)
    await drain(again.generate(request("c")))
    assert [json.loads(x)["exchange"] for x in path.read_text().splitlines()[1:]] == [0, 1, 2]
    CassetteRecorder(path)
    assert path.read_text() == '{"rondo_cassette": 1}\n'


async def test_capabilities_are_recorded_and_replayed(tmp_path: Path) -> None:
    path = tmp_path / "caps.jsonl"
    model = ScriptedModel(["ok"], name="gpt", capabilities={"response_schema_with_tools": False})
    await drain(record(model, path).generate(request()))
    replayed = replay(path)
    assert replayed.name == "gpt"
    assert replayed.capabilities == model.capabilities


async def test_a_streamed_recording_replays_to_a_call_that_does_not_stream(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    await drain(record(ScriptedModel(["ok"]), path).generate(request(), stream=False))
    streamed = await drain(replay(path).generate(request(), stream=True))
    assert [(r.partial, r.content) for r in streamed] == [(False, Content.model("ok"))]


async def test_several_models_share_one_cassette(tmp_path: Path) -> None:
    path = tmp_path / "two.jsonl"
    recorder = CassetteRecorder(path)
    planner = recorder.wrap(ScriptedModel(["plan"], name="planner"))
    writer = recorder.wrap(ScriptedModel(["text"], name="writer"))
    await drain(planner.generate(request("p")))
    await drain(writer.generate(request("w")))
    with pytest.raises(CassetteError, match="holds several models \\(planner, writer\\): name one"):
        replay(path)
    player = CassettePlayer(path)
    with pytest.raises(CassetteError, match="holds no exchange of model 'other'"):
        player.model("other")
    assert (await drain(player.model("writer").generate(request("w", instruction="Be brief."))))[
        0
    ].content == Content.model("text")


async def test_an_agent_run_through_the_cassette_uses_the_loop_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    agent = Agent(name="a", model=record(ScriptedModel(["Hi there."]), path))
    assert (
        await agent.run("hello", run_config=RunConfig(streaming_mode="sse"))
    ).output == "Hi there."
    assert (await Agent(name="a", model=replay(path)).run("hello")).output == "Hi there."


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "is not a rondo cassette (version 1)"),
        ('{"something": 1}\n', "is not a rondo cassette (version 1)"),
        ('{"rondo_cassette": 1}\n{"exchange": "x"}\n', "line 2 is not a cassette exchange"),
    ],
)
def test_unreadable_cassettes(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(CassetteError, match=message.replace("(", "\\(").replace(")", "\\)")):
        replay(path)


def test_missing_cassette(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="no such cassette"):
        replay(tmp_path / "absent.jsonl")
