"""The weather agent: one tool, one question, two model calls — offline, on a 135M model.

`./dev run examples/weather "What's the weather in Paris?"` runs it on SmolLM2-135M-Instruct
in-process (`local:smollm2`); set `RONDO_MODEL` (e.g. `openai:gpt-4o-mini`) for another model.

The tool returns a ready-made sentence and the instruction asks for it word for word: a 135M
model relays a sentence reliably, while composing one from separate fields often drops the
temperature (measured in bench/LOCAL_WEATHER.md).
"""

from __future__ import annotations

import os
import zlib

from rondo import Agent

_KNOWN = {
    "hangzhou": (26, "sunny"),
    "paris": (18, "sunny"),
    "london": (14, "rainy"),
    "tokyo": (22, "cloudy"),
    "new york": (20, "windy"),
}
_CONDITIONS = ("sunny", "cloudy", "rainy", "windy", "foggy")

INSTRUCTION = (
    "You are a weather assistant. Call get_weather for the city in the question, "
    "then reply with the report it returns, word for word."
)


def weather_for(city: str) -> tuple[int, str]:
    """The (temperature in °C, condition) of a city: fixed for a few, stable for the rest."""
    key = " ".join(city.lower().split())
    if key in _KNOWN:
        return _KNOWN[key]
    digest = zlib.crc32(key.encode())
    return 5 + digest % 26, _CONDITIONS[(digest // 26) % len(_CONDITIONS)]


def get_weather(city: str) -> dict[str, str]:
    """Returns the current weather report for a city.

    Args:
        city: The city's name, e.g. "Paris".
    """
    temperature, condition = weather_for(city)
    return {"report": f"It is {temperature}°C and {condition} in {city.strip()}."}


root_agent = Agent(
    name="weather_agent",
    model=os.environ.get("RONDO_MODEL") or "local:smollm2",
    instruction=INSTRUCTION,
    tools=[get_weather],
)
