"""`GeminiModel` against recorded Gemini API exchanges (no network)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests._require import require_module

errors = require_module(
    "google.genai.errors", what="GEMINI", install="pip install 'rondo-agents[gemini]'"
)

from rondo import Agent, Blob, Content, FunctionCall, FunctionResponse, Part, RunConfig, Runner  # noqa: E402
from rondo.errors import MissingAPIKeyError, ModelBadRequestError  # noqa: E402
from rondo.models import FunctionDeclaration, GenerateConfig, ModelRequest, ModelResponse  # noqa: E402
from rondo.models._gemini_wire import clean_schema  # noqa: E402
from rondo.models.gemini import GeminiModel, RetryPolicy  # noqa: E402

from ._http_fakes import Exchanges, broken_sse_reply, json_reply, sse_reply  # noqa: E402

NO_WAIT = RetryPolicy(max_attempts=3, initial_delay=0.0, max_delay=0.0)

WEATHER = FunctionDeclaration(
    name="get_weather",
    description="The weather in a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string", "title": "City"}},
        "required": ["city"],
        "additionalProperties": False,
    },
)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def reply(
    *parts: dict[str, Any],
    finish: str | None = "STOP",
    usage: dict[str, Any] | None = None,
    **candidate: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "candidates": [{"content": {"role": "model", "parts": list(parts)}, **candidate}],
        "modelVersion": "gemini-2.5-flash-001",
    }
    if finish is not None:
        body["candidates"][0]["finishReason"] = finish
    if usage is not None:
        body["usageMetadata"] = usage
    return body


USAGE = {
    "promptTokenCount": 30,
    "candidatesTokenCount": 8,
    "thoughtsTokenCount": 12,
    "cachedContentTokenCount": 10,
    "totalTokenCount": 50,
}


def model(exchanges: Exchanges, name: str = "gemini-2.5-flash", **kwargs: Any) -> GeminiModel:
    kwargs.setdefault("retry", NO_WAIT)
    return GeminiModel(name, api_key="gm-test", http_client=exchanges.client(), **kwargs)


async def collect(m: GeminiModel, request: ModelRequest, *, stream: bool) -> list[ModelResponse]:
    return [r async for r in m.generate(request, stream=stream)]


def ask(value: str = "Weather in Paris?", **config: Any) -> ModelRequest:
    return ModelRequest(contents=[Content.user(value)], config=GenerateConfig(**config))


# -- request wire format ------------------------------------------------------------------------


async def test_request_maps_history_tools_and_config() -> None:
    exchanges = Exchanges(json_reply(reply({"text": "Sunny."})))
    history = [
        Content.user("Weather in Paris?"),
        Content(
            role="model",
            parts=[
                Part(text="Use the tool.", thought=True, thought_signature=b"sig-t"),
                Part(
                    function_call=FunctionCall(
                        name="get_weather", args={"city": "Paris"}, id="fc-1"
                    ),
                    thought_signature=b"sig-c",
                ),
            ],
        ),
        Content(
            role="user",
            parts=[
                Part(
                    function_response=FunctionResponse(
                        name="get_weather", response={"forecast": "sunny"}, id="fc-1"
                    )
                ),
                Part(inline_data=Blob(mime_type="image/png", data=b"\x89PNG")),
            ],
        ),
    ]
    config = GenerateConfig(
        system_instruction="You are terse.",
        tools=[WEATHER],
        tool_choice="get_weather",
        temperature=0.1,
        top_k=3,
        max_output_tokens=128,
        thinking_budget=512,
        include_thoughts=True,
        labels={"team": "a"},
    )
    await collect(model(exchanges), ModelRequest(contents=history, config=config), stream=False)

    request = exchanges.requests[0]
    assert request.url.path.endswith("/models/gemini-2.5-flash:generateContent")
    assert request.headers["x-goog-api-key"] == "gm-test"
    body = exchanges.body()
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
        {
            "role": "model",
            "parts": [
                {"text": "Use the tool.", "thought": True, "thoughtSignature": b64(b"sig-t")},
                {
                    "functionCall": {
                        "name": "get_weather",
                        "args": {"city": "Paris"},
                        "id": "fc-1",
                    },
                    "thoughtSignature": b64(b"sig-c"),
                },
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "response": {"forecast": "sunny"},
                        "id": "fc-1",
                    }
                },
                # (the SDK itself spells this field in snake case)
                {"inlineData": {"mime_type": "image/png", "data": b64(b"\x89PNG")}},
            ],
        },
    ]
    assert body["systemInstruction"]["parts"] == [{"text": "You are terse."}]
    # `additionalProperties` and `title` are cleaned away: the Gemini API rejects them.
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "The weather in a city.",
                    "parameters": {
                        "type": "OBJECT",
                        "properties": {"city": {"type": "STRING"}},
                        "required": ["city"],
                    },
                }
            ]
        }
    ]
    assert body["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}
    }
    generation = body["generationConfig"]
    assert generation["temperature"] == 0.1
    assert generation["topK"] == 3
    assert generation["maxOutputTokens"] == 128
    # (the SDK itself spells this one in snake case)
    assert generation["thinkingConfig"] == {"thinking_budget": 512, "include_thoughts": True}
    assert body["labels"] == {"team": "a"}


async def test_response_schema_is_cleaned_and_sets_json_mime_type() -> None:
    exchanges = Exchanges(json_reply(reply({"text": '{"answer": "sunny"}'})))
    schema = {
        "type": "object",
        "properties": {"answer": {"$ref": "#/$defs/Answer"}},
        "$defs": {"Answer": {"type": "string", "enum": ["sunny", "rainy"]}},
        "additionalProperties": False,
    }
    await collect(model(exchanges), ask(response_schema=schema), stream=False)
    generation = exchanges.body()["generationConfig"]
    assert generation["responseMimeType"] == "application/json"
    assert generation["responseSchema"] == {
        "type": "OBJECT",
        "properties": {"answer": {"type": "STRING", "enum": ["sunny", "rainy"]}},
    }


@pytest.mark.parametrize(
    ("choice", "mode"), [("auto", "AUTO"), ("none", "NONE"), ("required", "ANY")]
)
async def test_tool_choice_keywords(choice: str, mode: str) -> None:
    exchanges = Exchanges(json_reply(reply({"text": "ok"})))
    await collect(model(exchanges), ask(tools=[WEATHER], tool_choice=choice), stream=False)
    assert exchanges.body()["toolConfig"] == {"functionCallingConfig": {"mode": mode}}


async def test_code_execution_and_file_parts_round_trip() -> None:
    body = reply(
        {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
        {"fileData": {"fileUri": "gs://b/report.pdf", "mimeType": "application/pdf"}},
    )
    exchanges = Exchanges(json_reply(body), json_reply(reply({"text": "done"})))
    [first] = await collect(model(exchanges), ask(), stream=False)
    assert first.content is not None
    assert [p.model_dump(exclude_defaults=True) for p in first.content.parts] == [
        {"executable_code": {"code": "print(1)"}},
        {"code_execution_result": {"output": "1"}},
        {"file_data": {"file_uri": "gs://b/report.pdf", "mime_type": "application/pdf"}},
    ]
    await collect(
        model(exchanges), ModelRequest(contents=[Content.user("run"), first.content]), stream=False
    )
    parts = exchanges.body()["contents"][1]["parts"]
    assert parts[0]["executableCode"] == {"code": "print(1)", "language": "PYTHON"}
    assert parts[1]["codeExecutionResult"] == {"outcome": "OUTCOME_OK", "output": "1"}
    assert "gs://b/report.pdf" in str(parts[2]["fileData"])


def test_clean_schema_handles_nulls_refs_consts_and_numeric_enums() -> None:
    schema = {
        "type": "object",
        "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
        "properties": {
            "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "either": {"type": ["string", "null"], "format": "email"},
            "kind": {"const": "fixed"},
            "level": {"type": "integer", "enum": [1, 2, 3], "description": "How loud."},
            "tree": {"$ref": "#/$defs/Node"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        },
        "required": ["kind", "missing"],
    }
    assert clean_schema(schema) == {
        "type": "OBJECT",
        "properties": {
            "maybe": {"type": "INTEGER", "nullable": True},
            "either": {"type": "STRING", "nullable": True},
            "kind": {"type": "STRING", "enum": ["fixed"]},
            "level": {"type": "INTEGER", "description": "How loud. Allowed values: 1, 2, 3."},
            "tree": {"type": "OBJECT", "properties": {"next": {"type": "OBJECT"}}},
            "tags": {"type": "ARRAY", "items": {"type": "STRING"}, "minItems": 1},
        },
        "required": ["kind"],
    }


# -- responses ----------------------------------------------------------------------------------


async def test_response_with_thought_function_call_and_usage() -> None:
    body = reply(
        {"text": "Need the tool.", "thought": True},
        {
            "functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "fc-9"},
            "thoughtSignature": b64(b"sig-9"),
        },
        usage=USAGE,
    )
    exchanges = Exchanges(json_reply(body))
    [response] = await collect(model(exchanges), ask(tools=[WEATHER]), stream=False)
    assert response.content is not None
    assert response.content.parts == [
        Part(text="Need the tool.", thought=True),
        Part(
            function_call=FunctionCall(name="get_weather", args={"city": "Paris"}, id="fc-9"),
            thought_signature=b"sig-9",
        ),
    ]
    # Gemini says STOP for a turn that ends in calls; rondo reports it like other providers.
    assert response.finish_reason == "tool_calls"
    assert response.model_version == "gemini-2.5-flash-001"
    assert response.usage is not None
    assert response.usage.model_dump() == {
        "input_tokens": 30,
        "output_tokens": 20,
        "total_tokens": 50,
        "thoughts_tokens": 12,
        "cached_tokens": 10,
        "cache_write_tokens": 0,
        "cost_usd": None,
        "free": False,
    }


async def test_grounding_and_citation_metadata_come_through() -> None:
    body = reply(
        {"text": "Paris is sunny."},
        groundingMetadata={"webSearchQueries": ["paris weather"]},
        citationMetadata={
            "citationSources": [{"startIndex": 0, "endIndex": 5, "uri": "https://x"}]
        },
    )
    exchanges = Exchanges(json_reply(body))
    [response] = await collect(model(exchanges), ask(), stream=False)
    assert response.grounding_metadata == {"web_search_queries": ["paris weather"]}
    assert response.citation_metadata is not None
    assert response.citation_metadata["citations"][0]["uri"] == "https://x"


@pytest.mark.parametrize(
    ("finish", "code"),
    [
        ("SAFETY", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("RECITATION", "recitation"),
        ("MALFORMED_FUNCTION_CALL", "malformed_function_call"),
    ],
)
async def test_m5_finish_reasons_are_error_codes_not_exceptions(finish: str, code: str) -> None:
    exchanges = Exchanges(json_reply(reply(finish=finish)))
    [response] = await collect(model(exchanges), ask(), stream=False)
    assert response.error_code == code
    assert finish in (response.error_message or "")


async def test_m5_blocked_prompt_is_an_error_code() -> None:
    body = {"promptFeedback": {"blockReason": "SAFETY", "blockReasonMessage": "unsafe"}}
    exchanges = Exchanges(json_reply(body))
    [response] = await collect(model(exchanges), ask(), stream=False)
    assert response.content is None
    assert response.error_code == "content_filter"
    assert "SAFETY" in (response.error_message or "")


async def test_max_tokens_is_a_finish_reason_not_an_error() -> None:
    exchanges = Exchanges(json_reply(reply({"text": "Par"}, finish="MAX_TOKENS")))
    [response] = await collect(model(exchanges), ask(), stream=False)
    assert (response.finish_reason, response.error_code) == ("max_tokens", None)


async def test_m5_http_error_raises_without_retry() -> None:
    error = {"error": {"code": 400, "message": "bad request", "status": "INVALID_ARGUMENT"}}
    exchanges = Exchanges(json_reply(error, 400))
    with pytest.raises(ModelBadRequestError, match="bad request") as caught:
        await collect(model(exchanges), ask(), stream=False)
    assert isinstance(caught.value.__cause__, errors.ClientError)
    assert caught.value.status_code == 400
    assert len(exchanges.requests) == 1


# -- streaming ----------------------------------------------------------------------------------


async def test_a1_stream_yields_deltas_then_one_aggregate() -> None:
    exchanges = Exchanges(
        sse_reply(
            reply({"text": "Thinking about ", "thought": True}, finish=None),
            reply({"text": "Paris.", "thought": True}, finish=None),
            reply({"text": "It is "}, finish=None),
            reply({"text": "sunny."}, finish=None),
            reply(
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                finish="STOP",
                usage=USAGE,
            ),
        )
    )
    responses = await collect(model(exchanges), ask(tools=[WEATHER]), stream=True)

    assert exchanges.requests[0].url.path.endswith(":streamGenerateContent")
    *partials, final = responses
    assert all(r.partial for r in partials)
    assert not final.partial
    deltas = [(p.text, p.thought) for r in partials for p in (r.content.parts if r.content else [])]
    assert deltas[:4] == [
        ("Thinking about ", True),
        ("Paris.", True),
        ("It is ", False),
        ("sunny.", False),
    ]
    assert final.content is not None
    assert final.content.parts == [
        Part(text="Thinking about Paris.", thought=True),
        Part(text="It is sunny."),
        Part(function_call=FunctionCall(name="get_weather", args={"city": "Paris"})),
    ]
    assert final.finish_reason == "tool_calls"
    assert final.usage is not None
    assert final.usage.total_tokens == 50


async def test_a1_streamed_function_call_arguments_are_assembled() -> None:
    # Vertex AI can stream a call's arguments as JSON-path fragments (streamFunctionCallArguments).
    def call_chunk(args: list[dict[str, Any]], more: bool, **extra: Any) -> dict[str, Any]:
        call = {"name": "get_weather", "partialArgs": args, "willContinue": more, **extra}
        return reply({"functionCall": call}, finish=None if more else "STOP")

    exchanges = Exchanges(
        sse_reply(
            call_chunk([{"jsonPath": "$.city", "stringValue": "Pa"}], True, id="fc-s"),
            call_chunk([{"jsonPath": "$.city", "stringValue": "ris"}], True, id="fc-s"),
            call_chunk([{"jsonPath": "$.days", "numberValue": 3}], False, id="fc-s"),
        )
    )
    *_, final = await collect(model(exchanges), ask(tools=[WEATHER]), stream=True)
    assert final.content is not None
    [part] = final.content.parts
    assert part.function_call == FunctionCall(
        name="get_weather", args={"city": "Paris", "days": 3}, id="fc-s"
    )


async def test_m5_streamed_safety_stop_is_an_error_code() -> None:
    exchanges = Exchanges(
        sse_reply(reply({"text": "Once"}, finish=None), reply({"text": ""}, finish="SAFETY"))
    )
    *_, final = await collect(model(exchanges), ask(), stream=True)
    assert final.error_code == "content_filter"
    assert final.content == Content.model("Once")


async def test_a3_stream_that_breaks_after_output_yields_no_aggregate_and_is_not_retried() -> None:
    exchanges = Exchanges(
        broken_sse_reply(reply({"text": "Hel"}, finish=None)),
        sse_reply(reply({"text": "never asked for"})),
    )
    seen: list[ModelResponse] = []

    async def consume() -> None:
        async for response in model(exchanges).generate(ask(), stream=True):
            seen.append(response)

    with pytest.raises(Exception, match="connection reset"):
        await consume()
    assert [r.partial for r in seen] == [True]
    assert len(exchanges.requests) == 1


async def test_server_errors_and_rate_limits_are_retried() -> None:
    busy = {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}
    limited = {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}
    exchanges = Exchanges(
        json_reply(busy, 503), json_reply(limited, 429), json_reply(reply({"text": "ok"}))
    )
    [response] = await collect(model(exchanges), ask(), stream=False)
    assert response.content == Content.model("ok")
    assert len(exchanges.requests) == 3


async def test_stream_reset_before_output_is_retried() -> None:
    exchanges = Exchanges(broken_sse_reply(), sse_reply(reply({"text": "Hello"})))
    *_, final = await collect(model(exchanges), ask(), stream=True)
    assert final.content == Content.model("Hello")
    assert len(exchanges.requests) == 2


# -- construction -------------------------------------------------------------------------------


def test_model_string_without_key_fails_when_the_agent_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(MissingAPIKeyError, match="GEMINI_API_KEY"):
        Agent(name="assistant", model="gemini:gemini-2.5-flash")


@pytest.mark.parametrize("variable", ["GEMINI_API_KEY", "GOOGLE_API_KEY"])
def test_model_string_reads_either_key_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, "gm-env")
    agent = Agent(name="assistant", model="gemini:gemini-2.5-flash")
    assert isinstance(agent.model, GeminiModel)
    assert agent.model.name == "gemini-2.5-flash"


def test_schema_with_tools_capability_follows_the_model_generation() -> None:
    older = GeminiModel("gemini-2.5-flash", api_key="k").capabilities
    newer = GeminiModel("gemini-3-pro-preview", api_key="k").capabilities
    assert older.response_schema
    assert not older.response_schema_with_tools
    assert newer.response_schema_with_tools


# -- a full agent run ---------------------------------------------------------------------------


def get_weather(city: str) -> dict[str, str]:
    """The weather in a city."""
    return {"city": city, "forecast": "sunny, 21°C"}


@pytest.mark.parametrize("streaming", [False, True], ids=["plain", "sse"])
async def test_agent_tool_round_trip_over_the_wire(streaming: bool) -> None:
    call = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}
    signed = {**call, "thoughtSignature": b64(b"sig-r")}
    if streaming:
        exchanges = Exchanges(
            sse_reply(
                reply({"text": "Let me check.", "thought": True}, finish=None), reply(signed)
            ),
            sse_reply(reply({"text": "Sunny, "}, finish=None), reply({"text": "21°C."})),
        )
    else:
        exchanges = Exchanges(
            json_reply(reply({"text": "Let me check.", "thought": True}, signed)),
            json_reply(reply({"text": "Sunny, 21°C."})),
        )
    agent = Agent(name="forecaster", model=model(exchanges), tools=[get_weather])
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
    assert final[-1].content is not None
    assert final[-1].content.text == "Sunny, 21°C."
    second = exchanges.body(1)["contents"]
    # Gemini gave no call id: the loop's own id is stripped again before the history goes back
    # (SPEC C7), and the call keeps its thought signature.
    assert second[1]["parts"][-1] == {
        "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
        "thoughtSignature": b64(b"sig-r"),
    }
    assert second[2]["parts"] == [
        {
            "functionResponse": {
                "name": "get_weather",
                "response": {"city": "Paris", "forecast": "sunny, 21°C"},
            }
        }
    ]


async def test_v1_context_size_context_length_from_model_window_gemini() -> None:
    """V1: the window comes from the Gemini API's model metadata (`inputTokenLimit`)."""
    exchanges = Exchanges(
        json_reply({"name": "models/gemini-2.5-flash", "inputTokenLimit": 1_048_576}),
    )
    m = model(exchanges)
    assert await m.load_context_window() == 1_048_576
    assert await m.load_context_window() == 1_048_576  # asked once
    assert [(r.method, r.url.path) for r in exchanges.requests] == [
        ("GET", "/v1/models/gemini-2.5-flash")
    ]
    m.context_window = 4096  # set by hand, it wins
    assert await m.load_context_window() == 4096
