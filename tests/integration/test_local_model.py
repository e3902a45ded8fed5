"""`local:smollm2` for real: SmolLM2-135M in-process through llama.cpp (xllamacpp).

Outputs are short (a few tokens) to keep the suite fast on a small machine; the assertions are
about structure — constrained calls, streaming, usage, cancellation — not eloquence.
"""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import aclosing

import pytest

from rondo import Content, FunctionCall, FunctionResponse, Part
from rondo.errors import ModelError
from rondo.models import FunctionDeclaration, GenerateConfig, ModelRequest, ModelResponse
from rondo.models._shared import MALFORMED_FUNCTION_CALL
from rondo.models.local import LocalModel, _load, from_model_string
from rondo.models.local_weights import smollm2_path
from rondo.models.registry import resolve_model

from ._local import require_local_model

pytestmark = pytest.mark.integration

require_local_model()


WEATHER = FunctionDeclaration(
    name="get_weather",
    description="Returns the current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
TIME = FunctionDeclaration(
    name="get_time",
    description="Returns the current time in a time zone.",
    parameters={"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]},
)


@pytest.fixture(scope="module")
def model() -> LocalModel:
    found = resolve_model("local:smollm2")
    assert isinstance(found, LocalModel)
    return found


def ask(text: str, **config: object) -> ModelRequest:
    return ModelRequest(contents=[Content.user(text)], config=GenerateConfig.model_validate(config))


async def collect(model: LocalModel, request: ModelRequest, stream: bool) -> list[ModelResponse]:
    return [r async for r in model.generate(request, stream=stream)]


async def test_text_is_deterministic_and_reports_usage(model: LocalModel) -> None:
    request = ask("Say hello.", max_output_tokens=6)
    first = await collect(model, request, stream=False)
    second = await collect(model, request, stream=False)
    assert len(first) == 1
    response = first[0]
    assert response.content is not None
    assert response.content.text
    assert response.content.text == second[0].content.text  # type: ignore[union-attr]
    assert response.partial is False
    assert response.turn_complete is True
    assert response.usage is not None
    assert response.usage.input_tokens > 5
    assert 0 < response.usage.output_tokens <= 6
    assert response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens
    assert response.finish_reason in ("stop", "max_tokens")


async def test_streaming_yields_deltas_then_the_aggregate(model: LocalModel) -> None:
    responses = await collect(model, ask("Count to five.", max_output_tokens=8), stream=True)
    *deltas, final = responses
    assert deltas
    assert all(r.partial for r in deltas)
    assert all(r.content is not None and r.content.text for r in deltas)
    assert final.partial is False
    assert final.content is not None
    assert final.content.text == "".join(r.content.text for r in deltas if r.content)
    assert final.usage is not None
    assert final.usage.output_tokens <= 8
    assert final.finish_reason == "max_tokens"


async def test_a_question_with_tools_gets_a_well_formed_call(model: LocalModel) -> None:
    request = ask("What's the weather in Lisbon?", tools=[WEATHER, TIME])
    for stream in (False, True):
        final = (await collect(model, request, stream=stream))[-1]
        assert final.partial is False
        assert final.finish_reason == "tool_calls"
        assert final.content is not None
        calls = [p.function_call for p in final.content.parts]
        assert calls == [FunctionCall(name="get_weather", args={"city": "Lisbon"})]


async def test_a_message_that_needs_no_tool_gets_a_text_answer(model: LocalModel) -> None:
    """Issue 8.2: under tool_choice="auto" a greeting is answered, not turned into a weather
    call with an invented city (the call's arguments are not the user's words)."""
    request = ask("Hello", tools=[WEATHER, TIME], max_output_tokens=64)
    for stream in (False, True):
        final = (await collect(model, request, stream=stream))[-1]
        assert final.partial is False
        assert final.content is not None
        assert all(p.function_call is None for p in final.content.parts)
        assert final.content.text.strip()
        assert not final.content.text.startswith("<")
        assert final.usage is not None
        # The discarded call's tokens are counted too.
        assert final.usage.output_tokens > len(final.content.text.split())


async def test_without_grounding_the_small_model_calls_for_a_greeting() -> None:
    """What grounded_calls guards against (so the test above cannot pass by accident)."""
    ungrounded = LocalModel(smollm2_path(), name="smollm2", grounded_calls=False)
    request = ask("Hello", tools=[WEATHER], max_output_tokens=64)
    (response,) = await collect(ungrounded, request, stream=False)
    assert response.content is not None
    assert response.content.parts[0].function_call is not None


async def test_tool_choice_names_the_tool(model: LocalModel) -> None:
    request = ask("What's the weather in Lisbon?", tools=[WEATHER, TIME], tool_choice="get_time")
    (response,) = await collect(model, request, stream=False)
    assert response.content is not None
    assert [p.function_call.name for p in response.content.parts if p.function_call] == ["get_time"]


async def test_after_a_tool_result_auto_answers_but_required_calls(model: LocalModel) -> None:
    history = [
        Content.user("What's the weather in Lisbon?"),
        Content(
            role="model",
            parts=[Part(function_call=FunctionCall(name="get_weather", args={"city": "Lisbon"}))],
        ),
        Content(
            role="user",
            parts=[
                Part(
                    function_response=FunctionResponse(
                        name="get_weather", response={"report": "It is 23°C and sunny in Lisbon."}
                    )
                )
            ],
        ),
    ]
    auto = ModelRequest(
        contents=history, config=GenerateConfig(tools=[WEATHER], max_output_tokens=24)
    )
    (answer,) = await collect(model, auto, stream=False)
    assert answer.content is not None
    assert all(p.function_call is None for p in answer.content.parts)
    assert "23" in answer.content.text
    assert not answer.content.text.startswith("<")
    assert answer.finish_reason == "stop"  # the text grammar lets the model end its answer

    required = ModelRequest(
        contents=history, config=GenerateConfig(tools=[WEATHER], tool_choice="required")
    )
    (again,) = await collect(model, required, stream=False)
    assert again.content is not None
    assert again.content.parts[0].function_call is not None


async def test_tool_choice_none_answers_in_text(model: LocalModel) -> None:
    request = ask("Weather in Lisbon?", tools=[WEATHER], tool_choice="none", max_output_tokens=8)
    (response,) = await collect(model, request, stream=False)
    assert response.content is not None
    assert response.content.text
    assert not response.content.text.startswith("<tool_call>")


async def test_a_call_cut_off_by_the_token_limit_is_reported(model: LocalModel) -> None:
    request = ask(
        "Weather in Lisbon?", tools=[WEATHER], tool_choice="required", max_output_tokens=3
    )
    (response,) = await collect(model, request, stream=False)
    assert response.content is None
    assert response.error_code == MALFORMED_FUNCTION_CALL
    assert response.finish_reason == "max_tokens"


async def test_response_schema_constrains_the_answer(model: LocalModel) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "sunny": {"type": "boolean"}},
        "required": ["city", "sunny"],
    }
    request = ask(
        "Paris is sunny today. Describe it.", response_schema=schema, max_output_tokens=40
    )
    (response,) = await collect(model, request, stream=False)
    assert response.content is not None
    value = json.loads(response.content.text)
    assert set(value) == {"city", "sunny"}
    assert isinstance(value["sunny"], bool)


async def test_closing_the_stream_stops_the_generation(model: LocalModel) -> None:
    request = ask("Write a long story about a dragon.", max_output_tokens=400)
    started = time.perf_counter()
    async with aclosing(model.generate(request, stream=True)) as responses:
        first = await anext(responses)
        assert first.partial
    engine = _load(model.path, model.n_ctx, model.n_threads)
    # The worker thread stops at its next token and releases the model.
    assert await asyncio.to_thread(engine.lock.acquire, True, 5.0)
    engine.lock.release()
    assert time.perf_counter() - started < 30


async def test_cancelling_the_consumer_stops_the_generation(model: LocalModel) -> None:
    request = ask("Write a long story about a dragon.", max_output_tokens=400)

    async def consume() -> None:
        async for _ in model.generate(request, stream=False):
            pass

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    engine = _load(model.path, model.n_ctx, model.n_threads)
    assert await asyncio.to_thread(engine.lock.acquire, True, 5.0)
    engine.lock.release()


async def test_weights_load_once_per_process(model: LocalModel) -> None:
    other = from_model_string("smollm2")
    assert other is not model
    assert _load(other.path, other.n_ctx, other.n_threads) is _load(
        model.path, model.n_ctx, model.n_threads
    )
    assert model.capabilities.response_schema_with_tools


async def test_a_prompt_longer_than_the_context_is_an_error() -> None:
    small = LocalModel(smollm2_path(), n_ctx=256)
    with pytest.raises(ModelError, match="the local model's context holds 256"):
        await collect(small, ask("word " * 400), stream=False)


async def test_an_unsupported_response_schema_falls_back_to_any_json(model: LocalModel) -> None:
    request = ask("Paris is sunny today. Describe it.", response_schema={"type": "weird"})
    request.config.max_output_tokens = 12
    (response,) = await collect(model, request, stream=False)
    assert response.content is not None
    # Cut off by the token limit, but JSON from the first character.
    assert response.content.text.startswith("{")


async def test_every_grammar_compiles_in_the_runtime(model: LocalModel) -> None:
    """llama.cpp drops a grammar LLGuidance cannot parse and decodes freely: each one rondo
    builds must really constrain the output."""
    request = ask(
        "Tell me a story.",
        tools=[WEATHER, TIME],
        tool_choice="required",
        max_output_tokens=64,
    )
    (response,) = await collect(model, request, stream=False)
    assert response.content is not None
    assert response.content.parts[0].function_call is not None
    # Text-only turns with tools declared must not begin like a call, even when asked to.
    echo = ask(
        'Repeat exactly: <tool_call>[{"name": "get_time"}]</tool_call>',
        tools=[TIME],
        tool_choice="none",
        max_output_tokens=12,
    )
    (text,) = await collect(model, echo, stream=False)
    assert text.content is not None
    assert not text.content.text.startswith("<")
