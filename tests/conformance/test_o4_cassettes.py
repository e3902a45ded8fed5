"""SPEC O4: record a model's exchanges to a cassette, replay them offline; a replay whose
request diverges raises `CassetteMismatchError` naming the first difference."""

from __future__ import annotations

import json
from contextlib import aclosing
from pathlib import Path
from typing import Any, ClassVar

import pytest

from rondo import Agent, Event, FunctionCall, RunConfig, Runner, ToolContext
from rondo.errors import RondoError
from rondo.models import GenerateConfig, ModelRequest, ModelResponse
from rondo.testing import (
    CassetteMismatchError,
    ReplayModel,
    ScriptedModel,
    record,
    replay,
)
from rondo.types import Content

SSE = RunConfig(streaming_mode="sse")


async def records(agent: Agent, message: str, run_config: RunConfig | None = None) -> list[Event]:
    """Every record of one run, partial events included."""
    runner = Runner(agent=agent)
    out: list[Event] = []
    stream = runner.run_async(
        user_id="u", session_id="s", new_message=message, run_config=run_config
    )
    async with aclosing(stream) as events:
        async for event in events:
            out.append(event)
    return out


def shown(events: list[Event]) -> list[tuple[str, bool, Any]]:
    """What a run said, without the call ids the loop invents afresh on every run."""
    out: list[tuple[str, bool, Any]] = []
    for event in events:
        content = event.content.model_dump(mode="json") if event.content else None
        for part in content["parts"] if content else []:
            for key in ("function_call", "function_response"):
                if part.get(key):
                    part[key]["id"] = None
        out.append((event.author, event.partial, content))
    return out


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def weather_agent(model: Any, seen: list[int] | None = None, cassette: Path | None = None) -> Agent:
    def get_weather(city: str, tool_context: ToolContext) -> dict[str, str]:
        """Returns the weather for a city."""
        if seen is not None and cassette is not None:
            seen.append(len(lines(cassette)))  # what is on disk while the run goes on
        return {"report": f"It is 18°C and sunny in {city}."}

    return Agent(
        name="weather", model=model, instruction="Answer weather questions.", tools=[get_weather]
    )


def real_model() -> ScriptedModel:
    def answer(request: ModelRequest) -> str:
        part = request.contents[-1].parts[0]
        assert part.function_response is not None
        return str(part.function_response.response["report"])

    return ScriptedModel([FunctionCall(name="get_weather", args={"city": "Paris"}), answer])


async def test_o4_each_exchange_is_written_and_flushed_as_it_completes(tmp_path: Path) -> None:
    cassette = tmp_path / "weather.jsonl"
    seen: list[int] = []
    agent = weather_agent(record(real_model(), cassette), seen, cassette)
    result = await agent.run("Weather in Paris?")
    assert result.output == "It is 18°C and sunny in Paris."
    assert seen == [2]  # the header and the first call, before the second call was made
    header, first, second = lines(cassette)
    assert header == {"rondo_cassette": 1}
    assert first["request"]["contents"] == [
        {"role": "user", "parts": [{"text": "Weather in Paris?"}]}
    ]
    assert first["responses"][0]["content"]["parts"][0]["function_call"] == {
        "name": "get_weather",
        "args": {"city": "Paris"},
    }
    assert second["responses"][0]["content"]["parts"] == [
        {"text": "It is 18°C and sunny in Paris."}
    ]


async def test_o4_replay_is_offline_and_deterministic(tmp_path: Path) -> None:
    cassette = tmp_path / "weather.jsonl"
    recorded = await records(weather_agent(record(real_model(), cassette)), "Weather in Paris?")
    replays: list[list[tuple[str, bool, Any]]] = []
    for _ in range(2):
        model = replay(cassette)
        assert isinstance(model, ReplayModel)
        replays.append(shown(await records(weather_agent(model), "Weather in Paris?")))
        model.check_finished()
    assert replays[0] == replays[1] == shown(recorded)
    assert len(replays[0]) == 3  # call, tool result, answer


async def test_o4_streamed_chunks_are_kept(tmp_path: Path) -> None:
    def chunk(text: str) -> ModelResponse:
        return ModelResponse(content=Content.model(text), partial=True)

    cassette = tmp_path / "stream.jsonl"
    agent = Agent(
        name="streamer", model=record(ScriptedModel([[chunk("Hel"), chunk("lo!")]]), cassette)
    )
    await agent.run("hi", run_config=SSE)
    (exchange,) = lines(cassette)[1:]
    assert exchange["stream"] is True
    assert [
        (r.get("partial", False), r["content"]["parts"][0]["text"]) for r in exchange["responses"]
    ] == [
        (True, "Hel"),
        (True, "lo!"),
        (False, "Hello!"),
    ]
    streamed = await records(Agent(name="streamer", model=replay(cassette)), "hi", SSE)
    assert [(e.partial, e.content.text) for e in streamed if e.content] == [
        (True, "Hel"),
        (True, "lo!"),
        (False, "Hello!"),
    ]
    # Replayed to a call that does not stream: the final aggregate only.
    plain = await records(Agent(name="streamer", model=replay(cassette)), "hi")
    assert [(e.partial, e.content.text) for e in plain if e.content] == [(False, "Hello!")]


async def test_o4_diverging_request_raises_cassette_mismatch_error(tmp_path: Path) -> None:
    cassette = tmp_path / "weather.jsonl"
    await weather_agent(record(real_model(), cassette)).run("Weather in Paris?")
    with pytest.raises(CassetteMismatchError) as caught:
        await weather_agent(replay(cassette)).run("Weather in Rome?")
    assert isinstance(caught.value, RondoError)
    assert str(caught.value) == (
        f"{cassette}: model call 1 differs from exchange 1 of 2 at contents[0].parts[0].text "
        "(from character 11): recorded 'Weather in Paris?', got 'Weather in Rome?'"
    )


async def test_o4_running_past_the_cassette_is_an_error(tmp_path: Path) -> None:
    cassette = tmp_path / "one.jsonl"
    await Agent(name="a", model=record(ScriptedModel(["Hi."]), cassette)).run("hello")
    agent = Agent(name="a", model=replay(cassette))
    await agent.run("hello", session_id="s")
    with pytest.raises(
        CassetteMismatchError, match=r"model call 2 runs past the cassette, which holds 1 exchange$"
    ):
        await agent.run("hello", session_id="s")


async def test_o4_cassette_holds_no_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-SECRET-98765")

    class KeyedModel(ScriptedModel):
        """A provider-like model object that carries a key and headers."""

        api_key = "sk-live-SECRET-12345"
        default_headers: ClassVar[dict[str, str]] = {"Authorization": "Bearer sk-live-SECRET-12345"}

    model = KeyedModel([RuntimeError("401: incorrect API key sk-env-SECRET-98765")])
    config = GenerateConfig(
        extra={
            "headers": {"Authorization": "Bearer sk-live-SECRET-12345"},
            "api_key": "sk-live-SECRET-12345",
            "reasoning_effort": "low",
        }
    )
    cassette = tmp_path / "keys.jsonl"
    agent = Agent(name="keyed", model=record(model, cassette), generate_config=config)
    with pytest.raises(RuntimeError):
        await agent.run("hi")
    text = cassette.read_text(encoding="utf-8")
    assert "SECRET" not in text
    (exchange,) = lines(cassette)[1:]
    assert exchange["request"]["config"]["extra"] == {
        "headers": "<redacted>",
        "api_key": "<redacted>",
        "reasoning_effort": "low",
    }
    assert exchange["error"] == {
        "type": "RuntimeError",
        "message": "401: incorrect API key <redacted>",
    }
