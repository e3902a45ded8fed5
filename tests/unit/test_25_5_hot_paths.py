"""Issue 25.5: the hot paths, guarded by counts rather than timings.

- The tool loop of `bench/run.py` (one user message, a sync tool call, the answer; in-memory
  sessions) makes at most 700 Python calls, counted as the bench counts them (cProfile's
  total calls on the event-loop thread, builtins included). It was 1,088 before this issue's
  work and 793 on 2026-11-30.
- The first step on a long session allocates no object per stored event, so it neither
  walks nor sets off a collection of a history it only reads (the bench's first step on a
  loaded 5,000-event session cost 105-118 ms CPU when the 5,000 allocations set off a full
  collection, 4-5 ms without).

The fake model is the bench's minimal `Model` (not `ScriptedModel`, which records requests
and copies its script: the count would measure the test double).
"""

from __future__ import annotations

import asyncio
import cProfile
import gc
import json
import pstats
import subprocess
import sys
from collections.abc import AsyncIterator
from itertools import count
from pathlib import Path
from typing import Any

from rondo import Agent, Event, FunctionCall, Runner
from rondo.models import ModelRequest, ModelResponse
from rondo.types import Content, Part, Usage

TOOL_LOOP_CALLS = 700
ROOT = Path(__file__).resolve().parents[2]
_USAGE = Usage(input_tokens=10, output_tokens=5, total_tokens=15)


class _Fake:
    """Calls `get_weather` first, answers once the last content holds its result."""

    name = "fake"

    def __init__(self, calls: bool) -> None:
        self._calls = calls

    async def generate(
        self, request: ModelRequest, *, stream: bool = False
    ) -> AsyncIterator[ModelResponse]:
        last = request.contents[-1]
        if not self._calls or any(p.function_response is not None for p in last.parts):
            yield ModelResponse(content=Content.model("It is 18°C and sunny."), usage=_USAGE)
            return
        call = FunctionCall(name="get_weather", args={"city": "Paris"})
        yield ModelResponse(content=Content(role="model", parts=[Part(function_call=call)]))


def get_weather(city: str) -> dict[str, Any]:
    """Returns the current weather for a city.

    Args:
        city: The city's name.
    """
    return {"city": city, "temperature_c": 18, "condition": "sunny"}


async def _loop(runner: Runner, session_id: str) -> str:
    events = [
        e
        async for e in runner.run_async(
            user_id="u", session_id=session_id, new_message="What's the weather in Paris?"
        )
    ]
    return events[-1].text


def test_25_5_the_tool_loop_makes_at_most_700_python_calls() -> None:
    # In a fresh interpreter, as the bench runs it: an OpenTelemetry SDK that another test
    # installed (globally, for good) would make every run record spans, and triple the count.
    done = subprocess.run(
        [sys.executable, "-m", "tests.unit.test_25_5_hot_paths"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    totals = json.loads(done.stdout.strip().splitlines()[-1])
    print("CALLS", totals)
    assert min(totals) <= TOOL_LOOP_CALLS, totals


async def _count_tool_loop_calls() -> list[int]:
    runner = Runner(agent=Agent(name="bench_agent", model=_Fake(True), tools=[get_weather]))
    ids = count()
    for _ in range(20):  # first-use costs (schemas, caches, worker threads) land here
        assert await _loop(runner, f"w{next(ids)}") == "It is 18°C and sunny."
    totals: list[int] = []
    for _ in range(3):
        session = f"s{next(ids)}"
        await runner.session_service.create_session(app_name="app", user_id="u", session_id=session)
        profiler = cProfile.Profile()
        profiler.enable()
        await _loop(runner, session)
        profiler.disable()
        stats: Any = pstats.Stats(profiler)
        totals.append(sum(row[1] for row in stats.stats.values()))
    return totals


def _collect_earlier_garbage() -> None:
    """A full collection before counting objects. It also finalizes what earlier tests in
    this worker left in cycles (CI once met another test's unclosed loopback socket here):
    their finalizers' complaints are printed, not raised as this test's failure."""
    complaints: list[str] = []
    hook = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: complaints.append(repr(unraisable.exc_value))
    try:
        gc.collect()
    finally:
        sys.unraisablehook = hook
    for complaint in complaints:
        print("left by an earlier test:", complaint)


async def test_25_5_the_first_step_on_a_long_session_allocates_nothing_per_event() -> None:
    runner = Runner(agent=Agent(name="bench_agent", model=_Fake(False)))
    service = runner.session_service
    warm = await service.create_session(app_name="app", user_id="u", session_id="warm")
    await service.append_event(warm, Event(author="user", content=Content.user("hi")))
    await _loop(runner, "warm")  # first-use costs
    size = 2_000
    session = await service.create_session(app_name="app", user_id="u", session_id="long")
    for i in range(size):
        content = Content.user(f"message {i}") if i % 2 == 0 else Content.model(f"answer {i}")
        author = "user" if i % 2 == 0 else "bench_agent"
        await service.append_event(session, Event(author=author, content=content))
    _collect_earlier_garbage()
    gc.disable()
    try:
        before = len(gc.get_objects())
        await _loop(runner, "long")
        allocated = len(gc.get_objects()) - before
    finally:
        gc.enable()
    # The step's own records and contexts, a few hundred objects: not one per stored event.
    print("ALLOC", allocated)
    assert allocated < size // 4, allocated


if __name__ == "__main__":
    print(json.dumps(asyncio.run(_count_tool_loop_calls())))
