"""`OpenAIModel` against recorded Chat Completions exchanges (no network)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest

from tests._require import require_module

httpx2 = require_module("httpx2", what="OPENAI", install="pip install 'rondo-agents[openai]'")
openai = require_module("openai", what="OPENAI", install="pip install 'rondo-agents[openai]'")

from rondo import Agent, Blob, Content, FunctionCall, FunctionResponse, Part, RunConfig, Runner  # noqa: E402
from rondo.errors import (  # noqa: E402
    MissingAPIKeyError,
    ModelAuthError,
    ModelBadRequestError,
    ModelConnectionError,
    ModelError,
    ModelNotFoundError,
    ModelRateLimitError,
    ModelServerError,
)
from rondo.models import FunctionDeclaration, GenerateConfig, ModelRequest, ModelResponse  # noqa: E402
from rondo.models.openai import OpenAIModel, RetryPolicy  # noqa: E402

from ._http_fakes import Exchanges, broken_sse_reply, json_reply, sse_reply  # noqa: E402

NO_WAIT = RetryPolicy(max_attempts=3, initial_delay=0.0, max_delay=0.0)

WEATHER = FunctionDeclaration(
    name="get_weather",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def completion(
    content: str | None = None,
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str = "stop",
    refusal: str | None = None,
    extra: dict[str, Any] | None = None,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal}
    if tool_calls:
        message["tool_calls"] = tool_calls
    message.update(extra or {})
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage
        or {
            "prompt_tokens": 11,
            "completion_tokens": 7,
            "total_tokens": 18,
            "prompt_tokens_details": {"cached_tokens": 4},
            "completion_tokens_details": {"reasoning_tokens": 2},
        },
    }


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def chunk(
    delta: dict[str, Any] | None = None,
    finish_reason: str | None = None,
    *,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    choices = (
        [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    )
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": choices,
    }
    if usage is not None:
        body["usage"] = usage
    return body


def model(exchanges: Exchanges, **kwargs: Any) -> OpenAIModel:
    kwargs.setdefault("retry", NO_WAIT)
    return OpenAIModel("gpt-4o-mini", api_key="sk-test", http_client=exchanges.client(), **kwargs)


async def collect(m: OpenAIModel, request: ModelRequest, *, stream: bool) -> list[ModelResponse]:
    return [r async for r in m.generate(request, stream=stream)]


def ask(text: str = "Weather in Paris?", **config: Any) -> ModelRequest:
    return ModelRequest(
        model="gpt-4o-mini", contents=[Content.user(text)], config=GenerateConfig(**config)
    )


# -- request wire format ------------------------------------------------------------------------


async def test_request_maps_instruction_history_tools_and_config() -> None:
    exchanges = Exchanges(json_reply(completion("It is sunny.")))
    # Ids stripped by the loop (SPEC C7) are re-invented, so the call and its result still pair.
    history = [
        Content.user("Weather in Paris?"),
        Content(
            role="model",
            parts=[
                Part(text="thinking…", thought=True),
                Part(text="Let me look."),
                Part(function_call=FunctionCall(name="get_weather", args={"city": "Paris"})),
            ],
        ),
        Content(
            role="user",
            parts=[
                Part(
                    function_response=FunctionResponse(
                        name="get_weather", response={"forecast": "sunny"}
                    )
                ),
                Part(text="And a photo:"),
                Part(inline_data=Blob(mime_type="image/png", data=b"\x89PNG")),
            ],
        ),
    ]
    config = GenerateConfig(
        system_instruction="You are terse.",
        tools=[WEATHER],
        tool_choice="get_weather",
        temperature=0.2,
        top_p=0.9,
        top_k=40,
        max_output_tokens=64,
        stop_sequences=["END"],
        seed=7,
        response_schema={"type": "object", "properties": {"answer": {"type": "string"}}},
        extra={"user": "u-1"},
    )
    responses = await collect(
        model(exchanges), ModelRequest(contents=history, config=config), stream=False
    )

    assert len(responses) == 1
    body = exchanges.body()
    assert exchanges.requests[0].url.path == "/v1/chat/completions"
    assert body["model"] == "gpt-4o-mini"
    assert body["stream"] is False
    call_id = body["messages"][2]["tool_calls"][0]["id"]
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": '{"forecast": "sunny"}'},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "And a photo:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
            ],
        },
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "The weather in a city.",
                "parameters": WEATHER.parameters,
            },
        }
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": config.response_schema, "strict": False},
    }
    assert body["max_completion_tokens"] == 64
    assert "max_tokens" not in body
    assert (body["temperature"], body["top_p"], body["top_k"], body["seed"]) == (0.2, 0.9, 40, 7)
    assert body["stop"] == ["END"]
    assert body["user"] == "u-1"


async def test_compatible_server_gets_max_tokens_and_needs_no_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    exchanges = Exchanges(json_reply(completion("hi")))
    m = OpenAIModel("smollm2", base_url="http://127.0.0.1:8080/v1", http_client=exchanges.client())
    await collect(m, ask(max_output_tokens=5, tool_choice="required"), stream=False)
    body = exchanges.body()
    assert str(exchanges.requests[0].url) == "http://127.0.0.1:8080/v1/chat/completions"
    assert body["max_tokens"] == 5
    assert "max_completion_tokens" not in body
    assert "tool_choice" not in body  # no tools declared: a tool choice would be rejected


@pytest.mark.parametrize(
    ("choice", "wire"),
    [("auto", "auto"), ("none", "none"), ("required", "required")],
)
async def test_tool_choice_keywords(choice: str, wire: str) -> None:
    exchanges = Exchanges(json_reply(completion("ok")))
    await collect(model(exchanges), ask(tools=[WEATHER], tool_choice=choice), stream=False)
    assert exchanges.body()["tool_choice"] == wire


async def test_json_mime_type_without_schema_asks_for_a_json_object() -> None:
    exchanges = Exchanges(json_reply(completion("{}")))
    await collect(model(exchanges), ask(response_mime_type="application/json"), stream=False)
    assert exchanges.body()["response_format"] == {"type": "json_object"}


# -- responses ----------------------------------------------------------------------------------


async def test_text_response_with_usage_and_finish_reason() -> None:
    exchanges = Exchanges(json_reply(completion("It is sunny in Paris.")))
    [response] = await collect(model(exchanges), ask(), stream=False)
    assert not response.partial
    assert response.content == Content.model("It is sunny in Paris.")
    assert response.finish_reason == "stop"
    assert response.error_code is None
    assert response.model_version == "gpt-4o-mini-2024-07-18"
    assert response.usage is not None
    assert response.usage.model_dump() == {
        "input_tokens": 11,
        "output_tokens": 7,
        "total_tokens": 18,
        "thoughts_tokens": 2,
        "cached_tokens": 4,
        "cache_write_tokens": 0,
        "cost_usd": None,
        "free": False,
    }


async def test_tool_calls_keep_their_ids_and_parsed_arguments() -> None:
    reply = completion(
        None,
        tool_calls=[
            tool_call("call_a", "get_weather", '{"city": "Paris"}'),
            tool_call("call_b", "get_weather", '{"city": "Oslo"}'),
        ],
        finish_reason="tool_calls",
    )
    exchanges = Exchanges(json_reply(reply))
    [response] = await collect(model(exchanges), ask(tools=[WEATHER]), stream=False)
    assert response.content is not None
    calls = [p.function_call for p in response.content.parts]
    assert calls == [
        FunctionCall(name="get_weather", args={"city": "Paris"}, id="call_a"),
        FunctionCall(name="get_weather", args={"city": "Oslo"}, id="call_b"),
    ]
    assert response.finish_reason == "tool_calls"


async def test_reasoning_content_of_compatible_servers_is_a_thought_part() -> None:
    reply = completion("42", extra={"reasoning_content": "6 times 7"})
    exchanges = Exchanges(json_reply(reply), json_reply(reply))
    [response] = await collect(model(exchanges), ask(), stream=False)
    assert response.content is not None
    assert response.content.parts == [Part(text="6 times 7", thought=True), Part(text="42")]
    [hidden] = await collect(model(exchanges), ask(include_thoughts=False), stream=False)
    assert hidden.content == Content.model("42")


async def test_sparse_responses_of_compatible_servers_are_read() -> None:
    # The SDK does not validate; some servers leave out `model` or send a null finish reason.
    body = completion("hi")
    del body["model"]
    body["choices"][0]["finish_reason"] = None
    del body["usage"]
    exchanges = Exchanges(json_reply(body))
    [response] = await collect(model(exchanges), ask(), stream=False)
    assert response.content == Content.model("hi")
    assert (response.model_version, response.finish_reason, response.usage) == (None, None, None)


async def test_m5_content_filter_finish_is_an_error_code_not_an_exception() -> None:
    exchanges = Exchanges(json_reply(completion("", finish_reason="content_filter")))
    [response] = await collect(model(exchanges), ask(), stream=False)
    assert response.error_code == "content_filter"
    assert response.error_message
    assert response.finish_reason == "content_filter"


async def test_m5_refusal_is_an_error_code_not_an_exception() -> None:
    exchanges = Exchanges(json_reply(completion(None, refusal="I can't help with that.")))
    [response] = await collect(model(exchanges), ask(), stream=False)
    assert response.error_code == "refusal"
    assert response.error_message == "I can't help with that."
    assert response.content is None


async def test_m5_malformed_tool_arguments_are_an_error_code_and_no_call() -> None:
    reply = completion(
        None,
        tool_calls=[tool_call("call_a", "get_weather", '{"city": "Par')],
        finish_reason="tool_calls",
    )
    exchanges = Exchanges(json_reply(reply))
    [response] = await collect(model(exchanges), ask(tools=[WEATHER]), stream=False)
    assert response.error_code == "malformed_function_call"
    assert "get_weather" in (response.error_message or "")
    assert response.content is None


async def test_g4_http_error_raises_a_model_error_caused_by_the_sdk_exception() -> None:
    exchanges = Exchanges(
        json_reply({"error": {"message": "bad model", "type": "invalid_request_error"}}, 400)
    )
    with pytest.raises(ModelBadRequestError, match="bad model") as caught:
        await collect(model(exchanges), ask(), stream=False)
    assert isinstance(caught.value.__cause__, openai.BadRequestError)
    assert (caught.value.status_code, caught.value.retryable) == (400, False)
    assert len(exchanges.requests) == 1


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (401, ModelAuthError, False),
        (403, ModelAuthError, False),
        (404, ModelBadRequestError, False),
        (429, ModelRateLimitError, True),
        (500, ModelServerError, True),
        (503, ModelServerError, True),
    ],
)
async def test_g4_each_status_maps_to_its_model_error(
    status: int, kind: type[ModelError], retryable: bool
) -> None:
    exchanges = Exchanges(*(json_reply({"error": {"message": "no"}}, status) for _ in range(3)))
    with pytest.raises(kind) as caught:
        await collect(model(exchanges, retry=RetryPolicy(max_attempts=1)), ask(), stream=False)
    assert caught.value.status_code == status
    assert caught.value.retryable is retryable
    assert isinstance(caught.value.__cause__, openai.APIStatusError)


# -- streaming ----------------------------------------------------------------------------------


async def test_a1_stream_yields_deltas_then_one_aggregate() -> None:
    exchanges = Exchanges(
        sse_reply(
            chunk({"role": "assistant", "reasoning_content": "Paris… "}),
            chunk({"content": "Checking"}),
            chunk({"content": " now."}),
            # Two calls whose JSON arguments arrive in fragments, interleaved by index.
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": ""},
                        }
                    ]
                }
            ),
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": "call_b",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"ci'},
                        }
                    ]
                }
            ),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Pa'}}]}),
            chunk({"tool_calls": [{"index": 1, "function": {"arguments": 'ty": "Oslo"}'}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ris"}'}}]}),
            chunk({}, "tool_calls"),
            chunk(usage={"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14}),
            "[DONE]",
        )
    )
    responses = await collect(model(exchanges), ask(tools=[WEATHER]), stream=True)

    body = exchanges.body()
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    *partials, final = responses
    assert all(r.partial for r in partials)
    assert not final.partial
    # Deltas went out as they came, text and thought apart.
    texts = [(p.text, p.thought) for r in partials for p in (r.content.parts if r.content else [])]
    assert texts[:3] == [("Paris… ", True), ("Checking", False), (" now.", False)]
    assert final.content is not None
    assert final.content.parts == [
        Part(text="Paris… ", thought=True),
        Part(text="Checking now."),
        Part(function_call=FunctionCall(name="get_weather", args={"city": "Paris"}, id="call_a")),
        Part(function_call=FunctionCall(name="get_weather", args={"city": "Oslo"}, id="call_b")),
    ]
    assert final.finish_reason == "tool_calls"
    assert final.usage is not None
    assert final.usage.total_tokens == 14


async def test_a1_partial_tool_calls_are_never_released_half_received() -> None:
    exchanges = Exchanges(
        sse_reply(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"ci'},
                        }
                    ]
                }
            ),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Rome"}'}}]}),
            chunk({}, "tool_calls"),
            "[DONE]",
        )
    )
    responses = await collect(model(exchanges), ask(tools=[WEATHER]), stream=True)
    calls = [
        (r.partial, p.function_call)
        for r in responses
        for p in (r.content.parts if r.content else [])
        if p.function_call is not None
    ]
    expected = FunctionCall(name="get_weather", args={"city": "Rome"}, id="call_a")
    assert calls == [(True, expected), (False, expected)]


async def test_a1_stream_without_ids_or_finish_still_closes_its_calls() -> None:
    # Some compatible servers send no call id and end the stream without a finish reason.
    exchanges = Exchanges(
        sse_reply(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
                        }
                    ]
                }
            ),
            "[DONE]",
        )
    )
    *_, final = await collect(model(exchanges), ask(tools=[WEATHER]), stream=True)
    assert final.content is not None
    [part] = final.content.parts
    assert part.function_call is not None
    assert part.function_call.args == {"city": "Rome"}
    assert part.function_call.id  # invented, so the result can be paired with it


async def test_m5_streamed_refusal_and_filter_are_error_codes() -> None:
    exchanges = Exchanges(
        sse_reply(
            chunk({"refusal": "I can't"}), chunk({"refusal": " do that."}), chunk({}, "stop")
        ),
        sse_reply(chunk({"content": "Once upon"}), chunk({}, "content_filter")),
    )
    *_, refused = await collect(model(exchanges), ask(), stream=True)
    assert (refused.error_code, refused.error_message) == ("refusal", "I can't do that.")
    *_, filtered = await collect(model(exchanges), ask(), stream=True)
    assert filtered.error_code == "content_filter"
    assert filtered.content == Content.model("Once upon")


async def test_a3_stream_that_breaks_after_output_yields_no_aggregate_and_is_not_retried() -> None:
    exchanges = Exchanges(
        broken_sse_reply(chunk({"content": "Hel"})),
        sse_reply(chunk({"content": "never asked for"}), chunk({}, "stop")),
    )
    seen: list[ModelResponse] = []

    async def consume() -> None:
        async for response in model(exchanges).generate(ask(), stream=True):
            seen.append(response)

    with pytest.raises(ModelConnectionError):  # the SDK wraps the reset
        await consume()
    assert [r.partial for r in seen] == [True]
    assert len(exchanges.requests) == 1


async def test_stream_that_breaks_before_output_is_retried() -> None:
    exchanges = Exchanges(
        broken_sse_reply(),
        sse_reply(chunk({"content": "Hello"}), chunk({}, "stop"), "[DONE]"),
    )
    *_, final = await collect(model(exchanges), ask(), stream=True)
    assert final.content == Content.model("Hello")
    assert len(exchanges.requests) == 2


# -- retries ------------------------------------------------------------------------------------


async def test_rate_limit_and_server_errors_are_retried() -> None:
    exchanges = Exchanges(
        json_reply({"error": {"message": "slow down"}}, 429, headers={"retry-after": "0"}),
        json_reply({"error": {"message": "oops"}}, 503),
        json_reply(completion("finally")),
    )
    [response] = await collect(model(exchanges), ask(), stream=False)
    assert response.content == Content.model("finally")
    assert len(exchanges.requests) == 3
    # The SDK's own retries are off: every attempt above was one of ours.
    assert {r.headers.get("x-stainless-retry-count") for r in exchanges.requests} == {"0"}


async def test_connection_errors_are_retried_up_to_max_attempts() -> None:
    exchanges = Exchanges(*(httpx2.ConnectError("refused") for _ in range(3)))
    with pytest.raises(ModelConnectionError) as caught:
        await collect(model(exchanges), ask(), stream=False)
    assert caught.value.retryable is True
    assert isinstance(caught.value.__cause__, openai.APIConnectionError)
    assert len(exchanges.requests) == 3


async def test_retry_policy_with_one_attempt_disables_retries() -> None:
    exchanges = Exchanges(json_reply({"error": {"message": "busy"}}, 503))
    with pytest.raises(ModelServerError):
        await collect(model(exchanges, retry=RetryPolicy(max_attempts=1)), ask(), stream=False)
    assert len(exchanges.requests) == 1


# -- construction -------------------------------------------------------------------------------


def test_model_string_without_key_fails_when_the_agent_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(MissingAPIKeyError, match="OPENAI_API_KEY") as caught:
        Agent(name="assistant", model="openai:gpt-4o-mini")
    assert caught.value.variables == ("OPENAI_API_KEY",)
    assert not isinstance(caught.value, ModelNotFoundError)


def test_model_string_reads_key_and_base_url_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    agent = Agent(name="assistant", model="openai:my-model")
    assert isinstance(agent.model, OpenAIModel)
    assert agent.model.name == "my-model"
    assert agent.model.max_tokens_param == "max_tokens"


def test_unknown_provider_or_empty_model_fails_when_the_agent_is_built() -> None:
    with pytest.raises(ModelNotFoundError, match="unknown model provider"):
        Agent(name="assistant", model="openia:gpt-4o-mini")
    with pytest.raises(ModelNotFoundError, match="provider:model"):
        Agent(name="assistant", model="openai:")


def test_missing_sdk_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # `import openai` now fails
    monkeypatch.delitem(sys.modules, "rondo.models.openai", raising=False)
    with pytest.raises(ModelNotFoundError, match=r"rondo-agents\[openai\]"):
        Agent(name="assistant", model="openai:gpt-4o-mini")


async def test_a_ready_sdk_client_is_used_with_its_retries_off() -> None:
    exchanges = Exchanges(
        json_reply({"error": {"message": "busy"}}, 503), json_reply(completion("ok"))
    )
    client = openai.AsyncOpenAI(api_key="sk-own", http_client=exchanges.client(), max_retries=5)
    m = OpenAIModel("gpt-4o-mini", client=client, retry=NO_WAIT)
    [response] = await collect(m, ask(), stream=False)
    assert response.content == Content.model("ok")
    assert [r.headers["x-stainless-retry-count"] for r in exchanges.requests] == ["0", "0"]
    assert exchanges.requests[0].headers["authorization"] == "Bearer sk-own"


def test_a_new_event_loop_gets_a_new_sdk_client() -> None:
    # Sync entry points run each call on a fresh loop; a pooled client cannot cross loops.
    m = OpenAIModel("gpt-4o-mini", api_key="sk-test")

    async def current() -> object:
        return m._client()  # pyright: ignore[reportPrivateUsage]

    first, again = asyncio.run(current()), asyncio.run(current())
    assert first is not again


def test_capabilities_are_declared() -> None:
    caps = OpenAIModel("gpt-4o-mini", api_key="sk-test").capabilities
    assert caps.response_schema
    assert caps.response_schema_with_tools
    assert caps.streaming


def test_import_rondo_imports_no_provider_sdk() -> None:
    code = (
        "import sys, rondo, rondo.models\n"
        "rondo.Agent, rondo.Runner\n"
        "loaded = [m for m in ('openai', 'anthropic', 'google.genai') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- a full agent run ---------------------------------------------------------------------------


def get_weather(city: str) -> dict[str, str]:
    """The weather in a city."""
    return {"city": city, "forecast": "sunny, 21°C"}


@pytest.mark.parametrize("streaming", [False, True], ids=["plain", "sse"])
async def test_agent_tool_round_trip_over_the_wire(streaming: bool) -> None:
    if streaming:
        exchanges = Exchanges(
            sse_reply(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_w",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": ""},
                            }
                        ]
                    }
                ),
                chunk(
                    {"tool_calls": [{"index": 0, "function": {"arguments": '{"city":"Paris"}'}}]}
                ),
                chunk({}, "tool_calls"),
                "[DONE]",
            ),
            sse_reply(
                chunk({"content": "Sunny, "}), chunk({"content": "21°C."}), chunk({}, "stop")
            ),
        )
    else:
        exchanges = Exchanges(
            json_reply(
                completion(
                    None,
                    tool_calls=[tool_call("call_w", "get_weather", '{"city":"Paris"}')],
                    finish_reason="tool_calls",
                )
            ),
            json_reply(completion("Sunny, 21°C.")),
        )
    agent = Agent(
        name="forecaster",
        model=model(exchanges),
        instruction="Answer with the forecast.",
        tools=[get_weather],
    )
    runner = Runner(agent=agent, app_name="weather")
    events = [
        event
        async for event in runner.run_async(
            user_id="u",
            session_id="s",
            new_message="Weather in Paris?",
            run_config=RunConfig(streaming_mode="sse" if streaming else "none"),
        )
    ]

    final = [e for e in events if not e.partial]
    assert [e.get_function_calls()[0].id for e in final[:1]] == ["call_w"]
    assert final[-1].content is not None
    assert final[-1].content.text == "Sunny, 21°C."
    assert final[-1].is_final_response()
    # The second request carried the tool result, paired with the provider's call id.
    second = exchanges.body(1)["messages"]
    assert second[0]["role"] == "system"
    assert "Answer with the forecast." in second[0]["content"]
    assert second[-2]["tool_calls"][0]["id"] == "call_w"
    assert second[-1] == {
        "role": "tool",
        "tool_call_id": "call_w",
        "content": '{"city": "Paris", "forecast": "sunny, 21°C"}',
    }
    assert exchanges.body(0)["tools"][0]["function"]["name"] == "get_weather"
    session = await runner.session_service.get_session(
        app_name="weather", user_id="u", session_id="s"
    )
    assert session is not None
    assert all(not e.partial for e in session.events)
