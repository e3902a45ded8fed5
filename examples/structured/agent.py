"""Structured output: the agent's answer is a validated `Forecast`, not free text.

    rondo run examples/structured "Forecast for Tokyo"

`output_schema=Forecast` sends the schema as the response format (or, when a model cannot
combine it with tools, gives it a `set_model_response` tool whose validation errors go back
to the model). `RunResult.output` is the `Forecast` object; `state["forecast"]` holds its
JSON (`output_key`). Offline on a `FunctionModel`; set `RONDO_MODEL` for a real model.
"""

from __future__ import annotations

import json
import os

from pydantic import BaseModel, Field

from rondo import Agent
from rondo.models import ModelRequest
from rondo.testing import FunctionModel

_KNOWN = {"tokyo": (22, "cloudy"), "paris": (18, "sunny"), "london": (14, "rainy")}


class Forecast(BaseModel):
    """Tomorrow's weather for one city."""

    city: str
    temperature_c: int = Field(ge=-90, le=60)
    condition: str
    umbrella: bool


def respond(request: ModelRequest) -> str:
    """The offline model: the forecast as JSON, as a model with a response schema answers."""
    words = [w.strip("?.!,") for w in request.contents[-1].text.split()]
    city = words[-1] if words else "Paris"
    temperature, condition = _KNOWN.get(city.lower(), (20, "sunny"))
    forecast = {
        "city": city,
        "temperature_c": temperature,
        "condition": condition,
        "umbrella": condition == "rainy",
    }
    return json.dumps(forecast)


root_agent = Agent(
    name="forecaster",
    model=os.environ.get("RONDO_MODEL") or FunctionModel(respond, name="structured-demo"),
    instruction="Give tomorrow's forecast for the city the user names.",
    output_schema=Forecast,
    output_key="forecast",
)
