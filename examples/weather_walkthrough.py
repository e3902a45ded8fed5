"""The seed's walk-through (flow seed §3.3), reproduced: a deterministic model asks for
get_weather, the second request must contain the tool result, and the output shows the model
event reaching the consumer before the tool runs.

    python examples/weather_walkthrough.py
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from rondo import Agent, FunctionCall, Runner
from rondo.models import ModelRequest
from rondo.testing import ScriptedModel

log: list[str] = []


def get_weather(city: str) -> dict[str, Any]:
    """Returns the current temperature for a city."""
    log.append(f"TOOL get_weather city={city}")
    return {"city": city, "temperature": 26}


def second_call(request: ModelRequest) -> str:
    found = [
        p.function_response
        for c in request.contents
        for p in c.parts
        if p.function_response is not None and p.function_response.name == "get_weather"
    ]
    if not found:
        raise RuntimeError("second model request is missing the get_weather FunctionResponse")
    log.append(f"MODEL #2 sees FunctionResponse: {json.dumps(found[0].response)}")
    return "杭州当前气温为 26°C。"


def build() -> tuple[Runner, ScriptedModel]:
    model = ScriptedModel(
        [FunctionCall(name="get_weather", args={"city": "Hangzhou"}, id="weather-1"), second_call],
        name="offline-demo",
    )
    agent = Agent(
        name="weather_agent",
        model=model,
        instruction="Use get_weather to answer weather questions.",
        tools=[get_weather],
    )
    return Runner(agent=agent, app_name="flow_demo"), model


async def main() -> list[str]:
    runner, model = build()
    async for event in runner.run_async(
        user_id="user-1", session_id="session-1", new_message="杭州现在多少度？"
    ):
        if event.content is None:
            continue
        log.append(
            f"EVENT author={event.author} role={event.content.role} partial={event.partial} "
            f"final={event.is_final_response()}"
        )
        for part in event.content.parts:
            if part.function_call is not None:
                fc = part.function_call
                log.append(f"  FunctionCall name={fc.name} id={fc.id} args={json.dumps(fc.args)}")
            if part.function_response is not None:
                fr = part.function_response
                log.append(
                    f"  FunctionResponse name={fr.name} id={fr.id} "
                    f"response={json.dumps(fr.response)}"
                )
            if part.text:
                log.append(f"  Text: {part.text}")
    log.append(f"GenerateContent calls={model.calls}")
    return log


if __name__ == "__main__":
    for line in asyncio.run(main()):
        print(line)
