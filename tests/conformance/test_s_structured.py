"""SPEC S: structured output, native and through set_model_response."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from rondo import Agent, FunctionCall, Runner
from rondo.models import ModelCapabilities
from rondo.testing import ScriptedModel


class Weather(BaseModel):
    city: str
    temperature_c: int


def get_weather(city: str) -> dict[str, Any]:
    """Returns the weather."""
    return {"city": city, "temperature_c": 21}


async def test_s1_native_schema_without_tools() -> None:
    model = ScriptedModel(['{"city": "Paris", "temperature_c": 18}'])
    agent = Agent(name="w", model=model, output_schema=Weather, output_key="weather")
    result = await agent.run("weather in Paris as JSON")
    config = model.requests[0].config
    assert config.response_mime_type == "application/json"
    assert config.response_schema is not None
    assert set(config.response_schema["properties"]) == {"city", "temperature_c"}
    assert result.output == Weather(city="Paris", temperature_c=18)
    # E3: output_key stores the text; the validated object is available too.
    final = result.events[-1]
    assert final.actions.state_delta["weather"] == '{"city": "Paris", "temperature_c": 18}'
    assert final.actions.state_delta["weather_parsed"] == {"city": "Paris", "temperature_c": 18}


async def test_s1_native_schema_with_tools_when_the_model_supports_it() -> None:
    model = ScriptedModel(
        [
            FunctionCall(name="get_weather", args={"city": "Oslo"}),
            '{"city":"Oslo","temperature_c":21}',
        ],
        capabilities=ModelCapabilities(response_schema_with_tools=True),
    )
    agent = Agent(name="w", model=model, tools=[get_weather], output_schema=Weather)
    result = await agent.run("weather in Oslo")
    assert model.requests[0].config.response_mime_type == "application/json"
    assert "set_model_response" not in model.requests[0].tools
    assert result.output == Weather(city="Oslo", temperature_c=21)


async def test_s2_fallback_injects_set_model_response_and_finishes_with_it() -> None:
    model = ScriptedModel(
        [
            FunctionCall(name="get_weather", args={"city": "Rome"}),
            FunctionCall(name="set_model_response", args={"city": "Rome", "temperature_c": 21}),
        ],
        capabilities=ModelCapabilities(response_schema_with_tools=False),
    )
    agent = Agent(name="w", model=model, tools=[get_weather], output_schema=Weather)
    runner = Runner(agent=agent, app_name="app")
    events = [e async for e in runner.run_async(user_id="u", session_id="s", new_message="Rome?")]
    request = model.requests[0]
    assert request.config.response_schema is None
    assert "set_model_response" in request.tools
    declared = {d.name for d in request.config.tools}
    assert declared == {"get_weather", "set_model_response"}
    assert "set_model_response" in (request.config.system_instruction or "")
    # The tool event first, then one final model-role text event built from its response.
    final = events[-1]
    assert final.content is not None
    assert final.content.role == "model"
    assert final.is_final_response()
    assert Weather.model_validate_json(final.text) == Weather(city="Rome", temperature_c=21)
    assert events[-2].get_function_responses()[0].name == "set_model_response"
    assert model.calls == 2


async def test_s2_invalid_structured_answer_goes_back_to_the_model() -> None:
    model = ScriptedModel(
        [
            FunctionCall(name="set_model_response", args={"city": "Rome", "temperature_c": "hot"}),
            FunctionCall(name="set_model_response", args={"city": "Rome", "temperature_c": 30}),
        ],
        capabilities=ModelCapabilities(response_schema_with_tools=False),
    )
    agent = Agent(name="w", model=model, tools=[get_weather], output_schema=Weather)
    result = await agent.run("Rome?")
    # The first answer was not passed off as valid: the model saw an error and fixed it.
    first_response = result.events[1].get_function_responses()[0]
    assert "error" in first_response.response
    assert "temperature_c" in first_response.response["error"]
    assert model.calls == 2
    assert result.output == Weather(city="Rome", temperature_c=30)


class _Verdict(BaseModel):
    bugs: int
    summary: str


async def test_s3_finish_task_carries_the_validated_structured_result() -> None:
    """S3: a task agent's result is finish_task's arguments, validated against its output
    schema; invalid arguments go back to the task agent as an error it can fix (S2 beyond)."""
    child_m = ScriptedModel(
        [
            FunctionCall(name="finish_task", args={"bugs": "many"}),  # not an int, no summary
            FunctionCall(name="finish_task", args={"bugs": 2, "summary": "two typos"}),
        ]
    )
    child = Agent(
        name="reviewer", model=child_m, mode="task", description="reviews", output_schema=_Verdict
    )
    parent_m = ScriptedModel([FunctionCall(name="reviewer", args={"request": "review"}), "done"])
    parent = Agent(name="lead", model=parent_m, sub_agents=[child])
    runner = Runner(agent=parent, app_name="app")
    events = [e async for e in runner.run_async(user_id="u", session_id="s", new_message="go")]

    # The declared parameters are the output schema itself.
    finish = next(d for d in child_m.requests[0].config.tools if d.name == "finish_task")
    assert set(finish.parameters["properties"]) == {"bugs", "summary"}
    # The first, invalid call is answered with an error naming the bad fields; the task goes on.
    first_answer = child_m.requests[1].contents[-1].parts[0].function_response
    assert first_answer is not None
    assert first_answer.name == "finish_task"
    error = str(first_answer.response.get("error", ""))
    assert "bugs" in error
    assert "summary" in error
    # The parent receives exactly the validated object, once.
    results = [r for e in events for r in e.get_function_responses() if r.name == "reviewer"]
    assert [r.response for r in results] == [{"bugs": 2, "summary": "two typos"}]
    assert len(child_m.requests) == 2
    assert events[-1].text == "done"
