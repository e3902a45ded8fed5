"""The weather agent: one tool, one question, two model calls.

`rondo run examples/weather "What's the weather in Paris?"` runs it. Until a real local model
is wired in, the model is a small scripted stand-in that calls the tool and reports its result.
"""

from __future__ import annotations

import re

from rondo import Agent, FunctionCall
from rondo.models import ModelRequest
from rondo.testing import ScriptedModel

_TEMPERATURES = {"hangzhou": 26, "paris": 18, "london": 14, "tokyo": 22, "new york": 20}


def get_weather(city: str) -> dict[str, object]:
    """Returns the current weather for a city.

    Args:
        city: The city's name, e.g. "Paris".
    """
    temperature = _TEMPERATURES.get(city.strip().lower(), 21)
    return {"city": city, "temperature_c": temperature, "condition": "sunny"}


def _ask_tool(request: ModelRequest) -> FunctionCall:
    question = request.contents[-1].text if request.contents else ""
    match = re.search(r"in ([A-Z][\w ]*)", question)
    return FunctionCall(name="get_weather", args={"city": match.group(1) if match else "Hangzhou"})


def _answer(request: ModelRequest) -> str:
    for content in reversed(request.contents):
        for part in content.parts:
            if part.function_response is not None:
                r = part.function_response.response
                return f"It is {r['temperature_c']}°C and {r['condition']} in {r['city']}."
    return "I could not get the weather."


root_agent = Agent(
    name="weather_agent",
    model=ScriptedModel([_ask_tool, _answer] * 50, name="scripted-weather"),
    instruction="Answer weather questions. Always call get_weather for the city asked about.",
    tools=[get_weather],
)
