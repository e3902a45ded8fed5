"""Issue 24.7, counted: the bench's tool loop with and without guard checks, in this process.

Run as `python -m tests.conformance._guard_counts` (a fresh interpreter: an OpenTelemetry SDK
another test installed would make every run record spans and change the counts). Prints one
JSON line: per variant ("none", "budgets", "guardrails", "both") the cProfile total of calls
over one warmed-up loop (builtins included, as `bench/run.py` counts) and how many of them
were the guardrail functions themselves (the user's own code, one call per check).
"""

from __future__ import annotations

import asyncio
import cProfile
import json
import pstats
from collections.abc import AsyncIterator
from itertools import count
from typing import Any

from rondo import Agent, Budget, FunctionCall, GuardrailFunctionOutput, RunConfig, Runner
from rondo.models import ModelRequest, ModelResponse
from rondo.types import Content, Part, Usage

_USAGE = Usage(input_tokens=10, output_tokens=5, total_tokens=15)
_ANSWER = "It is 18°C and sunny."
_PASS = GuardrailFunctionOutput()
# Every run limit but cost (the fake model's calls are unpriced, and an unknown spend stops a
# run with a cost budget), none of them reached: the bench's budget.
BUDGET = RunConfig(
    budget=Budget(
        model_calls=50,
        tool_calls=50,
        total_tokens=1_000_000,
        wall_time=600.0,
        repeated_calls=5,
    )
)


class _Fake:
    """Calls `get_weather` first, answers once the last content holds its result."""

    name = "fake"

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncIterator[ModelResponse]:
        last = request.contents[-1]
        if any(p.function_response is not None for p in last.parts):
            yield ModelResponse(content=Content.model(_ANSWER), usage=_USAGE)
            return
        call = FunctionCall(name="get_weather", args={"city": "Paris"})
        yield ModelResponse(content=Content(role="model", parts=[Part(function_call=call)]))


def get_weather(city: str) -> dict[str, Any]:
    """Returns the current weather for a city.

    Args:
        city: The city's name.
    """
    return {"city": city, "temperature_c": 18, "condition": "sunny"}


def _passes_input(ctx: Any, agent: Any, message: Any) -> GuardrailFunctionOutput:
    return _PASS


def _passes_output(ctx: Any, agent: Any, output: Any) -> GuardrailFunctionOutput:
    return _PASS


def _passes_tool_input(ctx: Any, tool: Any, args: Any) -> GuardrailFunctionOutput:
    return _PASS


def _passes_tool_output(ctx: Any, tool: Any, args: Any, result: Any) -> GuardrailFunctionOutput:
    return _PASS


GUARDRAIL_FUNCTIONS = {
    f.__code__ for f in (_passes_input, _passes_output, _passes_tool_input, _passes_tool_output)
}


async def _loop(runner: Runner, session_id: str, config: RunConfig | None) -> str:
    events = [
        e
        async for e in runner.run_async(
            user_id="u",
            session_id=session_id,
            new_message="What's the weather in Paris?",
            run_config=config,
        )
    ]
    return events[-1].text


async def count_calls() -> dict[str, dict[str, int]]:
    plain = Runner(agent=Agent(name="bench_agent", model=_Fake(), tools=[get_weather]))
    guarded = Runner(
        agent=Agent(
            name="bench_agent",
            model=_Fake(),
            tools=[get_weather],
            input_guardrails=[_passes_input],
            output_guardrails=[_passes_output],
            tool_input_guardrails=[_passes_tool_input],
            tool_output_guardrails=[_passes_tool_output],
        )
    )
    variants = {
        "none": (plain, None),
        "budgets": (plain, BUDGET),
        "guardrails": (guarded, None),
        "both": (guarded, BUDGET),
    }
    ids = count()
    out: dict[str, dict[str, int]] = {}
    for name, (runner, config) in variants.items():
        for _ in range(20):  # first-use costs (schemas, caches, worker threads) land here
            assert await _loop(runner, f"w{next(ids)}", config) == _ANSWER
        totals: list[tuple[int, int]] = []
        for _ in range(3):
            session = f"s{next(ids)}"
            await runner.session_service.create_session(
                app_name=runner.app_name, user_id="u", session_id=session
            )
            profiler = cProfile.Profile()
            profiler.enable()
            await _loop(runner, session, config)
            profiler.disable()
            stats: Any = pstats.Stats(profiler)
            rows: dict[tuple[str, int, str], tuple[Any, ...]] = stats.stats
            total = sum(row[1] for row in rows.values())
            own = sum(
                row[1]
                for (file, line, fn), row in rows.items()
                if any(
                    c.co_filename == file and c.co_firstlineno == line and c.co_name == fn
                    for c in GUARDRAIL_FUNCTIONS
                )
            )
            totals.append((total, own))
        total, own = min(totals)
        out[name] = {"calls": total, "guardrail_functions": own}
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(count_calls())))
