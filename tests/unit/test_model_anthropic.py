"""`AnthropicModel` against recorded Messages API exchanges (no network)."""

from __future__ import annotations

from typing import Any

import pytest

from tests._require import require_module

anthropic = require_module(
    "anthropic", what="ANTHROPIC", install="pip install 'rondo-agents[anthropic]'"
)

from rondo import Agent, Blob, Content, FunctionCall, FunctionResponse, Part, RunConfig, Runner  # noqa: E402
from rondo.errors import MissingAPIKeyError, ModelBadRequestError, ModelServerError  # noqa: E402
from rondo.models import FunctionDeclaration, GenerateConfig, ModelRequest, ModelResponse  # noqa: E402
from rondo.models.anthropic import AnthropicModel, RetryPolicy  # noqa: E402

from ._http_fakes import Exchanges, broken_sse_reply, json_reply, sse_reply  # noqa: E402

NO_WAIT = RetryPolicy(max_attempts=3, initial_delay=0.0, max_delay=0.0)

WEATHER = FunctionDeclaration(
    name="get_weather",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def message(
    *blocks: dict[str, Any],
    stop_reason: str = "end_turn",
    usage: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": list(blocks),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage
        or {
            "input_tokens": 20,
            "output_tokens": 9,
            "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 5,
            "output_tokens_details": {"thinking_tokens": 3},
        },
        **extra,
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def events(*blocks: list[tuple[str, dict[str, Any]]], stop_reason: str = "end_turn") -> list[Any]:
    """A message stream: message_start, the given block events, message_delta, message_stop."""
    start = message(stop_reason="end_turn", usage={"input_tokens": 20, "output_tokens": 1})
    start["content"], start["stop_reason"] = [], None
    out: list[Any] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(blocks):
        for name, data in block:
            out.append((name, {"type": name, "index": index, **data}))
    out.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 30},
            },
        )
    )
    out.append(("message_stop", {"type": "message_stop"}))
    return out


def block(start: dict[str, Any], *deltas: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("content_block_start", {"content_block": start}),
        *(("content_block_delta", {"delta": d}) for d in deltas),
        ("content_block_stop", {}),
    ]


def model(exchanges: Exchanges, **kwargs: Any) -> AnthropicModel:
    kwargs.setdefault("retry", NO_WAIT)
    return AnthropicModel(
        "claude-test", api_key="sk-ant-test", http_client=exchanges.client(), **kwargs
    )


async def collect(m: AnthropicModel, request: ModelRequest, *, stream: bool) -> list[ModelResponse]:
    return [r async for r in m.generate(request, stream=stream)]


def ask(value: str = "Weather in Paris?", **config: Any) -> ModelRequest:
    return ModelRequest(contents=[Content.user(value)], config=GenerateConfig(**config))


# -- request wire format ------------------------------------------------------------------------


async def test_request_maps_history_thinking_tools_and_config() -> None:
    exchanges = Exchanges(json_reply(message(text("Sunny."))))
    history = [
        Content.user("Weather in Paris?"),
        Content(
            role="model",
            parts=[
                Part(text="The user wants weather.", thought=True, thought_signature=b"sig-1"),
                Part(thought=True, thought_signature=b"redacted_thinking:opaque"),
                Part(text="Looking it up."),
                # No id (stripped by the loop): one is invented and paired with the result.
                Part(function_call=FunctionCall(name="get_weather", args={"city": "Paris"})),
            ],
        ),
        Content(
            role="user",
            parts=[
                Part(text="Also this:"),
                Part(inline_data=Blob(mime_type="image/jpeg", data=b"\xff\xd8")),
                Part(
                    function_response=FunctionResponse(
                        name="get_weather", response={"error": "service down"}
                    )
                ),
            ],
        ),
    ]
    config = GenerateConfig(
        system_instruction="You are terse.",
        tools=[WEATHER],
        tool_choice="get_weather",
        temperature=0.3,
        top_k=5,
        thinking_budget=2048,
        include_thoughts=False,
        stop_sequences=["END"],
    )
    await collect(model(exchanges), ModelRequest(contents=history, config=config), stream=False)

    body = exchanges.body()
    assert exchanges.requests[0].url.path == "/v1/messages"
    assert "sk-ant-test" in exchanges.requests[0].headers["authorization"]
    assert body["model"] == "claude-test"
    assert body["system"] == "You are terse."
    call_id = body["messages"][1]["content"][3]["id"]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "The user wants weather.", "signature": "sig-1"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "Looking it up."},
                {
                    "type": "tool_use",
                    "id": call_id,
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                # Tool results go first in their message, as the API requires.
                {
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": '{"error": "service down"}',
                    "is_error": True,
                },
                {"type": "text", "text": "Also this:"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9g="},
                },
            ],
        },
    ]
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "The weather in a city.",
            "input_schema": WEATHER.parameters,
        }
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "get_weather"}
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048, "display": "omitted"}
    # The default limit is raised above the thinking budget.
    assert body["max_tokens"] > 2048
    assert (body["temperature"], body["top_k"]) == (0.3, 5)
    assert body["stop_sequences"] == ["END"]


@pytest.mark.parametrize(
    ("choice", "wire"),
    [("auto", {"type": "auto"}), ("none", {"type": "none"}), ("required", {"type": "any"})],
)
async def test_tool_choice_keywords(choice: str, wire: dict[str, str]) -> None:
    exchanges = Exchanges(json_reply(message(text("ok"))))
    await collect(model(exchanges), ask(tools=[WEATHER], tool_choice=choice), stream=False)
    assert exchanges.body()["tool_choice"] == wire


async def test_max_tokens_and_structured_output() -> None:
    exchanges = Exchanges(json_reply(message(text('{"answer": "sunny"}'))))
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    await collect(model(exchanges), ask(max_output_tokens=99, response_schema=schema), stream=False)
    body = exchanges.body()
    assert body["max_tokens"] == 99
    format_ = body["output_config"]["format"]
    assert format_["type"] == "json_schema"
    assert format_["schema"]["properties"]["answer"]["type"] == "string"
    assert format_["schema"]["additionalProperties"] is False  # the API's strict subset


async def test_thinking_budget_zero_disables_and_minus_one_is_adaptive() -> None:
    exchanges = Exchanges(json_reply(message(text("a"))), json_reply(message(text("b"))))
    await collect(model(exchanges), ask(thinking_budget=0), stream=False)
    assert exchanges.body()["thinking"] == {"type": "disabled"}
    await collect(model(exchanges), ask(thinking_budget=-1), stream=False)
    assert exchanges.body()["thinking"] == {"type": "adaptive"}


# -- responses ----------------------------------------------------------------------------------


async def test_response_with_thinking_text_and_tool_use() -> None:
    reply = message(
        {"type": "thinking", "thinking": "Need the tool.", "signature": "sig-9"},
        {"type": "redacted_thinking", "data": "opaque"},
        text("Checking."),
        tool_use("toolu_1", "get_weather", {"city": "Paris"}),
        stop_reason="tool_use",
    )
    exchanges = Exchanges(json_reply(reply))
    [response] = await collect(model(exchanges), ask(tools=[WEATHER]), stream=False)
    assert response.content is not None
    assert response.content.parts == [
        Part(text="Need the tool.", thought=True, thought_signature=b"sig-9"),
        Part(thought=True, thought_signature=b"redacted_thinking:opaque"),
        Part(text="Checking."),
        Part(function_call=FunctionCall(name="get_weather", args={"city": "Paris"}, id="toolu_1")),
    ]
    assert response.finish_reason == "tool_calls"
    assert response.model_version == "claude-sonnet-4-5-20250929"
    assert response.usage is not None
    # Cached prompt tokens count as input, as with the other providers.
    assert response.usage.model_dump() == {
        "input_tokens": 125,
        "output_tokens": 9,
        "total_tokens": 134,
        "thoughts_tokens": 3,
        "cached_tokens": 100,
        "cache_write_tokens": 5,
        "cost_usd": None,
        "free": False,
    }


async def test_thinking_round_trips_unchanged() -> None:
    reply = message(
        {"type": "thinking", "thinking": "", "signature": "sig-omitted"},
        {"type": "redacted_thinking", "data": "opaque"},
        tool_use("toolu_1", "get_weather", {"city": "Paris"}),
        stop_reason="tool_use",
    )
    exchanges = Exchanges(json_reply(reply), json_reply(message(text("Sunny."))))
    [first] = await collect(model(exchanges), ask(tools=[WEATHER]), stream=False)
    assert first.content is not None
    history = [
        Content.user("Weather in Paris?"),
        first.content,
        Content(
            role="user",
            parts=[
                Part(
                    function_response=FunctionResponse(
                        name="get_weather", response={"forecast": "sunny"}, id="toolu_1"
                    )
                )
            ],
        ),
    ]
    await collect(model(exchanges), ModelRequest(contents=history), stream=False)
    assert exchanges.body()["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "", "signature": "sig-omitted"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
    ]


async def test_m5_refusal_stop_is_an_error_code_not_an_exception() -> None:
    reply = message(
        stop_reason="refusal",
        stop_details={"type": "refusal", "category": "cyber", "explanation": "Not this."},
    )
    exchanges = Exchanges(json_reply(reply))
    [response] = await collect(model(exchanges), ask(), stream=False)
    assert response.error_code == "refusal"
    assert response.error_message == "Not this."
    assert response.finish_reason == "refusal"


async def test_m5_http_error_raises_without_retry() -> None:
    error = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}
    exchanges = Exchanges(json_reply(error, 400))
    with pytest.raises(ModelBadRequestError) as caught:
        await collect(model(exchanges), ask(), stream=False)
    assert isinstance(caught.value.__cause__, anthropic.BadRequestError)
    assert caught.value.status_code == 400
    assert len(exchanges.requests) == 1


# -- streaming ----------------------------------------------------------------------------------


async def test_a1_stream_yields_deltas_then_one_aggregate() -> None:
    stream = events(
        block(
            {"type": "thinking", "thinking": "", "signature": ""},
            {"type": "thinking_delta", "thinking": "Paris? "},
            {"type": "thinking_delta", "thinking": "Use the tool."},
            {"type": "signature_delta", "signature": "sig-s"},
        ),
        block(
            {"type": "text", "text": ""},
            {"type": "text_delta", "text": "Let me "},
            {"type": "text_delta", "text": "check."},
        ),
        block(
            {"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {}},
            {"type": "input_json_delta", "partial_json": '{"ci'},
            {"type": "input_json_delta", "partial_json": 'ty": "Paris"}'},
        ),
        block(
            {"type": "tool_use", "id": "toolu_b", "name": "get_weather", "input": {}},
            {"type": "input_json_delta", "partial_json": '{"city": "Oslo"}'},
        ),
        stop_reason="tool_use",
    )
    exchanges = Exchanges(sse_reply(*stream))
    responses = await collect(model(exchanges), ask(tools=[WEATHER]), stream=True)

    assert exchanges.body()["stream"] is True
    *partials, final = responses
    assert all(r.partial for r in partials)
    assert not final.partial
    deltas = [(p.text, p.thought) for r in partials for p in (r.content.parts if r.content else [])]
    assert deltas[:2] == [("Paris? ", True), ("Use the tool.", True)]
    assert ("Let me ", False) in deltas
    assert final.content is not None
    assert final.content.parts == [
        Part(text="Paris? Use the tool.", thought=True, thought_signature=b"sig-s"),
        Part(text="Let me check."),
        Part(function_call=FunctionCall(name="get_weather", args={"city": "Paris"}, id="toolu_a")),
        Part(function_call=FunctionCall(name="get_weather", args={"city": "Oslo"}, id="toolu_b")),
    ]
    assert final.finish_reason == "tool_calls"
    assert final.usage is not None
    assert (final.usage.input_tokens, final.usage.output_tokens) == (20, 30)


async def test_a1_omitted_thinking_keeps_its_signature_when_streamed() -> None:
    stream = events(
        block(
            {"type": "thinking", "thinking": "", "signature": ""},
            {"type": "signature_delta", "signature": "sig-o"},
        ),
        block({"type": "text", "text": ""}, {"type": "text_delta", "text": "Hi."}),
    )
    exchanges = Exchanges(sse_reply(*stream))
    *_, final = await collect(model(exchanges), ask(), stream=True)
    assert final.content is not None
    assert final.content.parts == [
        Part(thought=True, thought_signature=b"sig-o"),
        Part(text="Hi."),
    ]


async def test_m5_streamed_refusal_and_malformed_input_are_error_codes() -> None:
    refusal = events(
        block({"type": "text", "text": ""}, {"type": "text_delta", "text": "No"}),
        stop_reason="refusal",
    )
    malformed = events(
        block(
            {"type": "tool_use", "id": "toolu_x", "name": "get_weather", "input": {}},
            {"type": "input_json_delta", "partial_json": '{"city": '},
        ),
        stop_reason="tool_use",
    )
    exchanges = Exchanges(sse_reply(*refusal), sse_reply(*malformed))
    *_, refused = await collect(model(exchanges), ask(), stream=True)
    assert refused.error_code == "refusal"
    *_, broken = await collect(model(exchanges), ask(tools=[WEATHER]), stream=True)
    assert broken.error_code == "malformed_function_call"
    assert broken.content is None


async def test_a3_stream_error_event_after_output_raises_and_yields_no_aggregate() -> None:
    head = events(block({"type": "text", "text": ""}, {"type": "text_delta", "text": "Hel"}))[:3]
    error = ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
    exchanges = Exchanges(sse_reply(*head, error), sse_reply(*events()))
    seen: list[ModelResponse] = []

    async def consume() -> None:
        async for response in model(exchanges).generate(ask(), stream=True):
            seen.append(response)

    with pytest.raises(ModelServerError, match="overloaded") as caught:
        await consume()
    assert caught.value.retryable is True
    assert isinstance(caught.value.__cause__, anthropic.APIStatusError)
    assert [r.partial for r in seen] == [True]
    assert len(exchanges.requests) == 1  # output was already out: never retried


async def test_overloaded_stream_before_any_output_is_retried() -> None:
    error = ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
    ok = events(block({"type": "text", "text": ""}, {"type": "text_delta", "text": "Hello"}))
    exchanges = Exchanges(sse_reply(*events()[:1], error), sse_reply(*ok))
    *_, final = await collect(model(exchanges), ask(), stream=True)
    assert final.content == Content.model("Hello")
    assert len(exchanges.requests) == 2


async def test_connection_reset_before_output_is_retried() -> None:
    ok = events(block({"type": "text", "text": ""}, {"type": "text_delta", "text": "Hi"}))
    exchanges = Exchanges(broken_sse_reply(), sse_reply(*ok))
    *_, final = await collect(model(exchanges), ask(), stream=True)
    assert final.content == Content.model("Hi")
    assert len(exchanges.requests) == 2


async def test_529_overloaded_is_retried() -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    exchanges = Exchanges(json_reply(overloaded, 529), json_reply(message(text("ok"))))
    [response] = await collect(model(exchanges), ask(), stream=False)
    assert response.content == Content.model("ok")
    assert len(exchanges.requests) == 2


# -- construction -------------------------------------------------------------------------------


def test_model_string_without_key_fails_when_the_agent_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY"):
        Agent(name="assistant", model="anthropic:claude-sonnet-4-5")


def test_model_string_reads_the_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    agent = Agent(name="assistant", model="anthropic:claude-haiku-4-5")
    assert isinstance(agent.model, AnthropicModel)
    assert agent.model.name == "claude-haiku-4-5"


# -- a full agent run ---------------------------------------------------------------------------


def get_weather(city: str) -> dict[str, str]:
    """The weather in a city."""
    return {"city": city, "forecast": "sunny, 21°C"}


@pytest.mark.parametrize("streaming", [False, True], ids=["plain", "sse"])
async def test_agent_tool_round_trip_over_the_wire(streaming: bool) -> None:
    if streaming:
        exchanges = Exchanges(
            sse_reply(
                *events(
                    block(
                        {"type": "thinking", "thinking": "", "signature": ""},
                        {"type": "thinking_delta", "thinking": "Use the tool."},
                        {"type": "signature_delta", "signature": "sig-r"},
                    ),
                    block(
                        {"type": "tool_use", "id": "toolu_w", "name": "get_weather", "input": {}},
                        {"type": "input_json_delta", "partial_json": '{"city": "Paris"}'},
                    ),
                    stop_reason="tool_use",
                )
            ),
            sse_reply(
                *events(
                    block(
                        {"type": "text", "text": ""}, {"type": "text_delta", "text": "Sunny, 21°C."}
                    )
                )
            ),
        )
    else:
        exchanges = Exchanges(
            json_reply(
                message(
                    {"type": "thinking", "thinking": "Use the tool.", "signature": "sig-r"},
                    tool_use("toolu_w", "get_weather", {"city": "Paris"}),
                    stop_reason="tool_use",
                )
            ),
            json_reply(message(text("Sunny, 21°C."))),
        )
    agent = Agent(name="forecaster", model=model(exchanges), tools=[get_weather])
    runner = Runner(agent=agent, app_name="weather")
    events_out = [
        event
        async for event in runner.run_async(
            user_id="u",
            session_id="s",
            new_message="Weather in Paris?",
            # The exact bodies: without the cache breakpoints (their own test covers them).
            run_config=RunConfig(
                streaming_mode="sse" if streaming else "none", prompt_caching=False
            ),
        )
    ]
    final = [e for e in events_out if not e.partial]
    assert final[0].get_function_calls()[0].id == "toolu_w"
    assert final[-1].content is not None
    assert final[-1].content.text == "Sunny, 21°C."
    second = exchanges.body(1)["messages"]
    # The signed thinking block goes back unchanged before the tool use (required by the API).
    assert second[1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Use the tool.", "signature": "sig-r"},
            {
                "type": "tool_use",
                "id": "toolu_w",
                "name": "get_weather",
                "input": {"city": "Paris"},
            },
        ],
    }
    assert second[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_w",
        "content": '{"city": "Paris", "forecast": "sunny, 21°C"}',
    }


async def test_v1_context_size_context_length_from_model_window_anthropic() -> None:
    """V1: the window comes from Anthropic's Models API (`max_input_tokens`), asked once per
    model object and only when a lifecycle consumer exists."""
    from rondo.lifecycle import ContextSize

    exchanges = Exchanges(
        json_reply({"id": "claude-test", "type": "model", "max_input_tokens": 200_000}),
        json_reply(message(text("one"))),
        json_reply(message(text("two"))),
    )
    m = model(exchanges)
    assert m.context_window is None
    runner = Runner(agent=Agent(name="a", model=m), app_name="app")
    for turn in ("hi", "again"):
        items = [
            e async for e in runner.stream_async(user_id="u", session_id="s", new_message=turn)
        ]
        [size] = [e for e in items if isinstance(e, ContextSize)]
        assert size.context_length == 200_000
    assert [(r.method, r.url.path) for r in exchanges.requests] == [
        ("GET", "/v1/models/claude-test"),
        ("POST", "/v1/messages"),
        ("POST", "/v1/messages"),
    ]
    # A provider that cannot say leaves it unknown, and never fails the run.
    failing = model(Exchanges(json_reply({"error": "nope"}, status=404)), retry=NO_WAIT)
    assert await failing.load_context_window() is None
